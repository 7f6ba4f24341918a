/**
 * A pool's first claimable rows without an owner hint in pool order,
 * counted from scratch in the hand-out order (hand-out-order.ts: effective
 * weight descending, then the content key, then the id): what the queue's head
 * (queue-head.ts) and a decision slice must agree with.
 */
import type { ColumnarPool } from '../../src/assignment/codec.js';
import { handOutOrder } from '../../src/assignment/hand-out-order.js';
import { hashInto, seedState } from '../../src/hash.js';

/** The first `lanes` claimable rows without a hint in pool order, from scratch. */
export function firstRows(pool: ColumnarPool, lanes: number): number[] {
  const input = pool.toInput();
  const reserved = new Set(input.reserved);
  const state = seedState(pool.seed);
  const key = new Uint32Array(2);
  const rows = input.splits
    .filter((x) => x.status === 'runnable' && !reserved.has(x.id) && x.leaseOwner === null && x.recordOwner === null && x.previous === null)
    .map((x) => {
      hashInto(state, x.id, key, 0);
      return { id: x.id, weight: x.weight, lo: key[0]!, hi: key[1]!, row: pool.rowOf(x.id) };
    });
  rows.sort(handOutOrder);
  return rows.slice(0, lanes).map((x) => x.row);
}
