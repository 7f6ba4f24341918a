/**
 * The hand-out order and the weight rule: the one statement of the order in
 * which the engines fill (the pool order) and of what a weight counts as.
 *
 * - **Weight rule.** A weight of 0 counts as 1 (`effectiveWeight`): a split
 *   the planner weighed at nothing still takes a lane and a share of a load.
 * - **Hand-out order.** Heaviest effective weight first (longest-processing-
 *   time fill), then the split's seeded 64-bit content key ascending (hi,
 *   then lo: hash.ts `hashInto`, keyed by the job fingerprint so that ties
 *   break the same way on every leader), then the id in JS string order
 *   (only two ids whose keys collide get that far).
 *
 * Who follows it: the reference engine's pool sort (reference.ts), the queue
 * head's heap and bound (queue-head.ts), the WebAssembly engine's radix sort
 * (assembly/sort.ts: `effective` and the key digits; an exact tie is left to
 * the JS side, results.ts `orderCollisions`, which orders it by id here).
 * The differential tests (test/unit/assignment/wasm-differential.test.ts)
 * hold the WebAssembly order to this one output for output, and
 * test/unit/assignment/hand-out-order.test.ts holds each JS follower to it.
 *
 * Pure: no I/O, no clock.
 */
import { jsStringOrder } from '../js-order.js';

/** Weight 0 counts as 1. */
export function effectiveWeight(w: number): number {
  return w === 0 ? 1 : w;
}

/**
 * Two splits by hand-out order up to their ids (negative: a first; 0: a tie only ids can
 * break, `handOutOrder` does). Weights are raw (the rule is applied here); keys are hi, lo.
 */
export function handOutOrderByKey(aWeight: number, aHi: number, aLo: number, bWeight: number, bHi: number, bLo: number): number {
  const wa = effectiveWeight(aWeight), wb = effectiveWeight(bWeight);
  if (wa !== wb) return wa > wb ? -1 : 1;
  if (aHi !== bHi) return aHi < bHi ? -1 : 1;
  if (aLo !== bLo) return aLo < bLo ? -1 : 1;
  return 0;
}

/** A split as the hand-out order reads it. */
export interface HandOutKey {
  readonly weight: number;
  readonly hi: number;
  readonly lo: number;
  readonly id: string;
}

/** Two splits in hand-out order (negative: a is handed out first). */
export function handOutOrder(a: HandOutKey, b: HandOutKey): number {
  return handOutOrderByKey(a.weight, a.hi, a.lo, b.weight, b.hi, b.lo) || jsStringOrder(a.id, b.id);
}
