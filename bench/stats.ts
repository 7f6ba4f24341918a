/**
 * The benches' two statistics, written once (issue 51): the median of a
 * sample (the mean of the two middle values when the count is even) and a
 * quantile by the nearest-rank rule (the ⌈q·n⌉-th smallest value, so p99 of
 * 100 samples is the 99th and p50 of 4 the 2nd). NaN for an empty sample.
 *
 * Why nearest rank and not linear interpolation: a reported p99 is then a
 * latency that was measured, never a value between two runs that no run
 * took, and with fewer than 100 samples p99 is plainly the maximum. The
 * median keeps the usual mean of the two middle values (tinybench's p50 is the
 * same figure). Every file under bench/ takes these two; none sorts and
 * indexes a sample by hand.
 */

/** The median: the middle value, or the mean of the two middle values. */
export function median(xs: readonly number[]): number {
  if (xs.length === 0) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  const mid = s.length >> 1;
  return s.length % 2 === 1 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
}

/** The q-quantile (0 ≤ q ≤ 1) by nearest rank: the ⌈q·n⌉-th smallest value (the smallest for q = 0). */
export function quantile(xs: readonly number[], q: number): number {
  if (xs.length === 0) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil(q * s.length) - 1))]!;
}
