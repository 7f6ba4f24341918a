/**
 * Growing a typed array: one helper for every column that grows (the pool's
 * columns, the id arena's rows, the packed locations by row).
 *
 * Pure: no I/O, no clock.
 */

/**
 * `a` in an array of `n` elements, its first `used` copied: the rest is at its
 * initial zero in both. A reservation ahead of a large plan grows arrays that
 * are mostly unused, and copying them whole (and faulting in the new ones'
 * pages) held a 10M seeding's loop 2.6 s when a paged planner's hint raised
 * the reservation from 6.4M to 10M rows (decision 0049).
 */
export function grown<T extends Float64Array | Int32Array | Uint32Array | Uint8Array>(a: T, n: number, used: number): T {
  const b = new (a.constructor as new (n: number) => T)(n);
  b.set(used >= a.length ? a : a.subarray(0, used));
  return b;
}
