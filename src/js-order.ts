/**
 * The one string order of splitfleet's records and decisions: JavaScript's
 * `<` on strings, which compares UTF-16 code units (not code points, not a
 * locale's collation). Assignment records list their split ids in this order,
 * and the protocol's choices (claims, revokes, the reserved window) are made
 * in it, so every process, whatever its locale, sorts the same ids the same
 * way. It is also `Array.prototype.sort`'s default order for strings.
 *
 * A leaf: imports nothing.
 */

/** A comparator for `sort`: negative when `a` comes first in UTF-16 code unit order, 0 when equal. */
export function jsStringOrder(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
