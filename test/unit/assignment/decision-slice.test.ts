/**
 * A decision's slice (decision-slice.ts) decides exactly as the whole pool:
 * over any sequence of pool changes (splits added, reweighted, completed,
 * removed; lease, record and previous owners, members of the fleet or not;
 * reserved sets; members and caps) interleaved with the steps of the queue
 * head's refills (queue-head.ts; a head of a few rows here, so that it is
 * refilled, extended and cut back all the time), whenever the head can
 * answer, the slice's assigned rows, members and stats equal the whole
 * pool's decision, row for row, and the head's first rows are the pool's
 * first claimable rows in pool order, counted from scratch. Also: the
 * claimable count and the hinted rows are kept right, and a slice whose
 * weight units would differ is not taken.
 */
import { fc, test } from '@fast-check/vitest';
import { describe, expect, it } from 'vitest';
import { ColumnarPool } from '../../../src/assignment/codec.js';
import { firstRows } from '../../support/pool-order.js';
import { decisionSlice, sliceRows } from '../../../src/assignment/decision-slice.js';
import { columnarAssignment } from '../../../src/assignment/wasm.js';
import { assignedRowsOf } from '../../../src/assignment/wire.js';

type Op =
  | { kind: 'upsert'; split: number; weight: number; status: 'runnable' | 'completed' | 'quarantined' }
  | { kind: 'remove'; split: number }
  | { kind: 'lease' | 'record' | 'previous'; split: number; member: number | null }
  | { kind: 'reserve'; splits: number[] }
  | { kind: 'members'; count: number; cap: number | undefined }
  | { kind: 'decide' }
  | { kind: 'step'; rows: number }
  | { kind: 'settle' };

const SPLITS = 60;
/** Splits past SPLITS are added along the way (new rows while a refill scans). */
const split = fc.nat(SPLITS + 29);
const opArb: fc.Arbitrary<Op> = fc.oneof(
  // Mostly a status change at the split's own weight (the cached order stays); now and then a new weight.
  { weight: 6, arbitrary: fc.record({ kind: fc.constant('upsert' as const), split, weight: fc.oneof({ weight: 12, arbitrary: fc.constant(-1) }, { weight: 1, arbitrary: fc.nat(6) }, { weight: 1, arbitrary: fc.constant(2 ** 51) }), status: fc.constantFrom('runnable' as const, 'runnable' as const, 'completed' as const, 'quarantined' as const) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('remove' as const), split }) },
  // Member 6 is never a live member: a hint that names a departed instance.
  { weight: 4, arbitrary: fc.record({ kind: fc.constantFrom('lease' as const, 'record' as const, 'previous' as const), split, member: fc.option(fc.nat(6), { nil: null }) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('reserve' as const), splits: fc.array(split, { maxLength: 6 }) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('members' as const), count: fc.integer({ min: 1, max: 5 }), cap: fc.option(fc.integer({ min: 1, max: 4 }), { nil: undefined }) }) },
  { weight: 2, arbitrary: fc.constant({ kind: 'decide' as const }) },
  { weight: 4, arbitrary: fc.record({ kind: fc.constant('step' as const), rows: fc.oneof(fc.integer({ min: 1, max: 30 }), fc.constant(1 << 20)) }) },
  // What the leader's engine does (decide.ts): step until the head can answer.
  { weight: 3, arbitrary: fc.constant({ kind: 'settle' as const }) },
);

function apply(pool: ColumnarPool, op: Op): void {
  const id = (i: number) => `split-${i}`;
  const member = (j: number | null) => (j === null ? null : `m${j}`);
  switch (op.kind) {
    case 'upsert': return pool.upsertSplit(id(op.split), op.weight < 0 ? pool.weightAt(pool.rowOf(id(op.split))) ?? op.split % 7 : op.weight, op.status);
    case 'remove': return void pool.removeSplit(id(op.split));
    case 'lease': return void pool.setLeaseOwner(id(op.split), member(op.member));
    case 'record': return void pool.setRecordOwner(id(op.split), member(op.member));
    case 'previous': return void pool.setPrevious(id(op.split), member(op.member));
    case 'reserve': return pool.setReserved(op.splits.map(id));
    case 'members': return pool.setMembers(Array.from({ length: op.count }, (_, j) => (op.cap === undefined || j % 2 ? { id: `m${j}` } : { id: `m${j}`, cap: op.cap })));
    case 'decide': return void columnarAssignment(pool);
    case 'step': return void pool.queueHead().step(op.rows);
    case 'settle':
      for (let k = 0; decisionSlice(pool) === null; k++) {
        expect(k).toBeLessThan(1000);
        pool.queueHead().step(7);
      }
      return;
  }
}

/** The whole pool's claimable rows, counted from scratch. */
function claimableCount(pool: ColumnarPool): number {
  const input = pool.toInput();
  const reserved = new Set(input.reserved);
  return input.splits.filter((s) => s.status === 'runnable' && !reserved.has(s.id)).length;
}

/** Decisions compared over every run: the property must not pass by never finding a slice. */
let comparedTotal = 0;

describe('a decision slice', () => {
  const rules = fc.constantFrom({ minFill: 3, perNeed: 0 }, { minFill: 1, perNeed: 1 }, { minFill: 2, perNeed: 4 });
  test.prop([fc.array(opArb, { minLength: 30, maxLength: 150 }), fc.integer({ min: 1, max: 3 }), rules])('a_slice_decides_as_the_whole_pool', (ops, defaultCap, rule) => {
    const pool = new ColumnarPool('slice-seed', { defaultCap });
    pool.setMembers([{ id: 'm0' }, { id: 'm1', cap: 2 }]);
    for (let i = 0; i < SPLITS; i++) pool.upsertSplit(`split-${i}`, i % 7);
    // A head that refills a few rows at a time: refills, extensions and cuts all the time.
    const head = pool.queueHead(rule);
    let compared = 0;
    for (const op of ops) {
      apply(pool, op);
      expect(pool.sliceSource().claimable).toBe(claimableCount(pool));
      const lanes = 3;
      const first = head.pick(lanes, pool.sliceSource().hinted);
      if (first !== null) expect(first).toEqual(firstRows(pool, lanes));
      const slice = decisionSlice(pool);
      if (slice === null) continue;
      // Sliced first: a whole decision caches the order again, and the slice must not lean on that.
      const got = sliceRows(slice, columnarAssignment(slice.pool));
      const whole = columnarAssignment(pool);
      const want = assignedRowsOf(whole.assignee);
      const byRow = (rows: Int32Array, assignees: Int32Array) => [...rows].map((r, k) => [r, assignees[k]!] as const).sort((a, b) => a[0] - b[0]);
      expect(byRow(got.rows, got.assignees)).toEqual(byRow(want.rows, want.assignees));
      expect([...got.rows]).toEqual([...want.rows]); // ascending, as AssignedRows are
      expect(got.stats).toEqual({ ...whole.stats, computeMs: got.stats.computeMs });
      expect(columnarAssignment(slice.pool).members).toEqual(whole.members);
      compared++;
    }
    comparedTotal += compared;
  });

  it('compared many decisions above (a slice was there to take)', () => {
    expect(comparedTotal).toBeGreaterThan(1000);
  });

  it('is not taken before the queue\'s head is built; taken, it balances in the whole pool\'s weight units', () => {
    const pool = new ColumnarPool('slice-seed', { defaultCap: 2 });
    pool.setMembers([{ id: 'm0' }, { id: 'm1' }]);
    // 10 × ~2^50 > 2^53: the whole pool balances in units of 2^k, k > 0; a slice of 4 rows alone would not.
    for (let i = 0; i < 10; i++) pool.upsertSplit(`s${i}`, 2 ** 50 + 3 * i + 1);
    expect(decisionSlice(pool)).toBeNull(); // the head's first refill starts here
    expect(pool.queueHead().step()).toBe(true);
    const whole = columnarAssignment(pool);
    const slice = decisionSlice(pool)!;
    expect(slice.pool.size).toBe(4); // four lanes: the four heaviest
    expect(slice.claimable).toBe(10);
    const got = sliceRows(slice, columnarAssignment(slice.pool));
    expect([...got.rows]).toEqual([...assignedRowsOf(whole.assignee).rows]);
    expect(got.stats).toEqual({ ...whole.stats, computeMs: got.stats.computeMs });
    expect(got.stats.queued).toBe(6);
  });
});
