/**
 * The weight rule past 2^53.
 *
 * Loads are sums of weights and weights may each be as large as
 * Number.MAX_SAFE_INTEGER, so loads can pass 2^53 where f64 stops being exact
 * and the move test `load(from) > load(to) + w` could admit a move that does
 * not reduce the sum of squared loads. Both engines therefore balance in
 * *scaled units*: with n splits in the pool and W the heaviest effective
 * weight, k is the smallest shift such that n × ceil(W / 2^k) ≤ 2^53, and each
 * weight becomes ceil(w / 2^k). Every load is then an integer ≤ 2^53, exact in
 * f64, so every admitted move strictly reduces the potential and the pass
 * ends on its own. k depends only on (n, W), not on input order. For any pool
 * whose n × W fits in 2^53 (every realistic one) k = 0 and nothing changes.
 * Ordering ("heaviest first") always uses the unscaled effective weight
 * (the weight rule and the hand-out order: hand-out-order.ts).
 */

export const TWO_53 = 9007199254740992;

/** The shift k for a pool of `n` splits whose heaviest effective weight is `maxWeight`. */
export function weightShift(n: number, maxWeight: number): number {
  let k = 0;
  let scale = 1;
  while (n * Math.ceil(maxWeight / scale) > TWO_53) {
    k++;
    scale *= 2;
  }
  return k;
}

/** ceil(w / 2^k), exact in f64 (division by a power of two is exact). */
export function scaleWeight(w: number, k: number): number {
  return k === 0 ? w : Math.ceil(w / 2 ** k);
}
