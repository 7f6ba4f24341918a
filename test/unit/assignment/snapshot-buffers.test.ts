/**
 * Kept snapshot buffers (snapshot-buffers.ts) patched from the cached
 * order's position log (sorted-order.ts `copyInto`): over any sequence of
 * pool changes, decisions (which cache an order) and snapshots into a few
 * kept sets taken in any order, every snapshot equals a fresh copy of the
 * pool, column for column; and a set that holds the current order is
 * patched, not copied, when it is taken again.
 */
import { fc, test } from '@fast-check/vitest';
import { describe, expect, it } from 'vitest';
import { ColumnarPool } from '../../../src/assignment/codec.js';
import { SnapshotBuffers } from '../../../src/assignment/snapshot-buffers.js';
import { columnarAssignment } from '../../../src/assignment/wasm.js';
import type { ColumnarSnapshot } from '../../../src/assignment/wire.js';

type Op =
  | { kind: 'upsert'; split: number; reweight: boolean; status: 'runnable' | 'completed' | 'quarantined' }
  | { kind: 'remove'; split: number }
  | { kind: 'lease' | 'record' | 'previous'; split: number; member: number | null }
  | { kind: 'reserve'; splits: number[] }
  | { kind: 'decide' }
  | { kind: 'snapshot'; set: number };

const SPLITS = 40;
const MEMBERS = 4;
const split = fc.nat(SPLITS - 1);
const opArb: fc.Arbitrary<Op> = fc.oneof(
  // Mostly status changes at the split's own weight (the order stays cached); sometimes a new weight (it is dropped).
  { weight: 4, arbitrary: fc.record({ kind: fc.constant('upsert' as const), split, reweight: fc.nat(9).map((n) => n === 0), status: fc.constantFrom('runnable' as const, 'completed' as const, 'quarantined' as const) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('remove' as const), split }) },
  { weight: 3, arbitrary: fc.record({ kind: fc.constantFrom('lease' as const, 'record' as const, 'previous' as const), split, member: fc.option(fc.nat(MEMBERS - 1), { nil: null }) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('reserve' as const), splits: fc.array(split, { maxLength: 5 }) }) },
  { weight: 2, arbitrary: fc.constant({ kind: 'decide' as const }) },
  { weight: 4, arbitrary: fc.record({ kind: fc.constant('snapshot' as const), set: fc.nat(2) }) },
);

const COLUMNS = ['order', 'weight', 'lease', 'prev', 'rec', 'flags', 'key'] as const;

function expectSameSnapshot(got: ColumnarSnapshot, want: ColumnarSnapshot): void {
  expect(got.rows).toBe(want.rows);
  expect(got.epoch).toBe(want.epoch);
  for (const c of COLUMNS) {
    const g = got[c];
    const w = want[c];
    expect(g === null ? null : Array.from(g), c).toEqual(w === null ? null : Array.from(w));
  }
}

const weightOf = (i: number): number => 1 + (i % 5);

function apply(pool: ColumnarPool, op: Exclude<Op, { kind: 'snapshot' }>): void {
  const id = (i: number) => `split-${i}`;
  const member = (j: number | null) => (j === null ? null : `m${j}`);
  switch (op.kind) {
    case 'upsert': return pool.upsertSplit(id(op.split), op.reweight ? 100 + op.split : weightOf(op.split), op.status);
    case 'remove': return void pool.removeSplit(id(op.split));
    case 'lease': return void pool.setLeaseOwner(id(op.split), member(op.member));
    case 'record': return void pool.setRecordOwner(id(op.split), member(op.member));
    case 'previous': return void pool.setPrevious(id(op.split), member(op.member));
    case 'reserve': return pool.setReserved(op.splits.map(id));
    case 'decide': return void columnarAssignment(pool);
  }
}

describe('kept snapshot buffers', () => {
  test.prop([fc.array(opArb, { maxLength: 120 })])('every snapshot into a kept set equals a fresh copy of the pool', (ops) => {
    const pool = new ColumnarPool('job', { defaultCap: 3 });
    pool.setMembers(Array.from({ length: MEMBERS }, (_, j) => ({ id: `m${j}` })));
    for (let i = 0; i < SPLITS; i++) pool.upsertSplit(`split-${i}`, weightOf(i));
    columnarAssignment(pool);
    const sets = [new SnapshotBuffers(), new SnapshotBuffers(), new SnapshotBuffers()];
    for (const op of ops) {
      if (op.kind !== 'snapshot') apply(pool, op);
      else expectSameSnapshot(pool.snapshot(false, sets[op.set]!), pool.snapshot(false, null));
    }
  });

  it('patches a set that holds the current order, and copies one that does not', () => {
    const pool = new ColumnarPool('job', { defaultCap: 3 });
    pool.setMembers([{ id: 'a' }, { id: 'b' }]);
    for (let i = 0; i < 100; i++) pool.upsertSplit(`s${i}`, 1 + (i % 7));
    columnarAssignment(pool); // caches the order
    const set = new SnapshotBuffers();
    const first = pool.snapshot(false, set);
    expect(set.mirror?.version).toBeDefined();
    pool.setLeaseOwner('s3', 'a');
    pool.upsertSplit('s4', 5, 'completed');
    const second = pool.snapshot(false, set);
    // The same shared memory, brought up to date: no new buffer.
    expect(second.weight.buffer).toBe(first.weight.buffer);
    expectSameSnapshot(second, pool.snapshot(false, null));
    // A new split drops the order: the set now gets the row columns, and mirrors nothing.
    pool.upsertSplit('s100', 3);
    expectSameSnapshot(pool.snapshot(false, set), pool.snapshot(false, null));
    expect(set.mirror).toBeNull();
  });
});
