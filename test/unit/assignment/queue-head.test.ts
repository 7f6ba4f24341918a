/**
 * The queue's head (queue-head.ts) against its statement: whenever it can
 * answer, its first rows are the pool's first claimable rows without a hint
 * in pool order, counted from scratch. Over random changes (splits added,
 * reweighted, completed, made runnable again, removed; reserved sets;
 * hints) interleaved with refill steps of a few rows (and of a few offers to its heap), so that changes land
 * behind, on and ahead of a refill's scan, and heads of a few rows are
 * refilled, extended and cut back all the time. decision-slice.test.ts
 * holds the decisions read from it to the whole pool's.
 */
import { fc, test } from '@fast-check/vitest';
import { describe, expect, it } from 'vitest';
import { ColumnarPool } from '../../../src/assignment/codec.js';
import { firstRows } from '../../support/pool-order.js';

type Op =
  | { kind: 'status'; split: number; status: 'runnable' | 'completed' }
  | { kind: 'weight'; split: number; weight: number }
  | { kind: 'remove'; split: number }
  | { kind: 'hint'; split: number; on: boolean }
  | { kind: 'reserve'; splits: number[] }
  | { kind: 'step'; rows: number; offers: number }
  | { kind: 'pick' }
  | { kind: 'retryAll' };

const SPLITS = 40;
const split = fc.nat(SPLITS + 19);
const opArb: fc.Arbitrary<Op> = fc.oneof(
  { weight: 8, arbitrary: fc.record({ kind: fc.constant('status' as const), split, status: fc.constantFrom('runnable' as const, 'completed' as const) }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('weight' as const), split, weight: fc.nat(5) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('remove' as const), split }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('hint' as const), split, on: fc.boolean() }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('reserve' as const), splits: fc.array(split, { maxLength: 4 }) }) },
  { weight: 6, arbitrary: fc.record({ kind: fc.constant('step' as const), rows: fc.integer({ min: 1, max: 12 }), offers: fc.integer({ min: 1, max: 12 }) }) },
  { weight: 5, arbitrary: fc.constant({ kind: 'pick' as const }) },
  // A wave of retries: many rows join the head at once, mid-refill too (a cut must wait for the refill).
  { weight: 1, arbitrary: fc.constant({ kind: 'retryAll' as const }) },
);

const id = (i: number): string => `q-${i}`;

let answered = 0;

describe('the queue head', () => {
  const rules = fc.constantFrom({ minFill: 2, perNeed: 0 }, { minFill: 1, perNeed: 1 }, { minFill: 3, perNeed: 2 });
  test.prop([fc.array(opArb, { minLength: 40, maxLength: 200 }), fc.integer({ min: 1, max: 4 }), rules], { numRuns: 300 })(
    'holds the pool\'s first claimable rows in order, through refills', (ops, lanes, rule) => {
      const pool = new ColumnarPool('head-seed');
      for (let i = 0; i < SPLITS; i++) pool.upsertSplit(id(i), i % 4);
      const head = pool.queueHead(rule);
      const check = (): void => {
        const got = head.pick(lanes, pool.sliceSource().hinted);
        if (got === null) return;
        expect(got).toEqual(firstRows(pool, lanes));
        answered++;
      };
      for (const op of ops) {
        const r = pool.rowOf(id('split' in op ? op.split : 0));
        switch (op.kind) {
          case 'status': pool.upsertSplit(id(op.split), r < 0 ? op.split % 4 : pool.weightAt(r)!, op.status); break;
          case 'weight': pool.upsertSplit(id(op.split), op.weight, r < 0 ? 'runnable' : pool.statusAt(r) as 'runnable'); break;
          case 'remove': pool.removeSplit(id(op.split)); break;
          case 'hint': pool.setLeaseOwner(id(op.split), op.on ? 'm0' : null); break;
          case 'reserve': pool.setReserved(op.splits.map(id)); break;
          case 'step': head.step(op.rows, op.offers); break;
          case 'pick': check(); break;
          case 'retryAll':
            for (let i = 0; i < SPLITS + 20; i++) {
              const row = pool.rowOf(id(i));
              if (row >= 0 && pool.statusAt(row) === 'completed') pool.upsertSplit(id(i), pool.weightAt(row)!, 'runnable');
            }
            break;
        }
      }
      for (let k = 0; head.pick(lanes, pool.sliceSource().hinted) === null; k++) {
        expect(k).toBeLessThan(1000);
        head.step(5);
      }
      check();
    },
  );

  it('answered often above (the property must not pass by never answering)', () => {
    expect(answered).toBeGreaterThan(1000);
  });

  it('is built by a refill, and a row made claimable behind a refill\'s scan is found', () => {
    const pool = new ColumnarPool('head-seed');
    for (let i = 0; i < 10; i++) pool.upsertSplit(id(i), 1, i === 0 ? 'completed' : 'runnable');
    const head = pool.queueHead({ minFill: 1, perNeed: 0 });
    expect(head.pick(1, new Set())).toBeNull(); // not built: the first refill starts
    expect(head.step(100)).toBe(true);
    // Cut to its fill and refilled from its bound, a row at a time: row 0 turns runnable after the scan passed it.
    const expected = (): number[] => firstRows(pool, 10);
    let steps = 0;
    for (let round = 0; round < 10; round++) {
      const got = head.pick(10, new Set());
      if (got !== null) {
        expect(got).toEqual(expected());
        break;
      }
      head.step(1);
      if (++steps === 3) pool.upsertSplit(id(0), 1, 'runnable');
    }
    for (let k = 0; head.pick(10, new Set()) === null; k++) {
      expect(k).toBeLessThan(100);
      head.step(1);
    }
    expect(head.pick(10, new Set())).toEqual(expected());
  });
});
