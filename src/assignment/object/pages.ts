/**
 * Lists of many rows kept as pages of PAGE_ROWS rows (row i is
 * `pages[i >>> PAGE_BITS][i & PAGE_MASK]`), for the caller-side lists of
 * the object path: the splits' ids and owners as read (fields.ts) and the
 * places of a result (pool.ts, object-result.ts).
 *
 * Why: V8 writes a fresh list whole when it allocates it (holes or the fill
 * value), and the first write of fresh memory costs ~3 ms a MB on the
 * machines we measure on: one list of 1M rows (8 MB) held a pool caller's
 * loop 25–80 ms in one turn, and a pool's first calls allocated nine. A page
 * of 16k rows (128 KB) costs under 1 ms, and is allocated in a turn of its
 * own before the rows are written (decision 0023). Typed arrays need no pages: their memory
 * is mapped lazily and faults as it is written, row by row.
 *
 * Invariants: page p holds rows [p·PAGE_ROWS, (p + 1)·PAGE_ROWS) of the
 * list; every page but the last of a list's capacity has PAGE_ROWS rows.
 */
/** The caller's turns (object-task.ts `LoopSlices`, stated here so that pages.ts imports nothing). */
interface LoopSlices {
  due(): boolean;
  next(): Promise<void>;
}

/** 16k rows: a page of one list is 128 KB; four (a read's page) took 1.9 ms at the median, 6.5 at the 90th percentile, with 2M objects alive (32k: 4.3 and 8.3 ms; 8k: 0.2 ms, but young objects the scavenger then copies, up to 78 ms). */
export const PAGE_BITS = 14;
export const PAGE_ROWS = 1 << PAGE_BITS;
export const PAGE_MASK = PAGE_ROWS - 1;

/** Pages spanning rows [0, n). */
export function pageCount(n: number): number {
  return (n + PAGE_MASK) >>> PAGE_BITS;
}

/** Rows of page p of a list of `capacity` rows (the last page holds the rest). */
export function pageLength(capacity: number, p: number): number {
  return Math.min(PAGE_ROWS, capacity - p * PAGE_ROWS);
}

/**
 * Every page of `capacity` rows filled with `fill`, allocated in turns (a
 * turn ends once `loop.due()`): for a list written at random rows.
 */
export async function pagesInSlices<T>(capacity: number, fill: T, loop: LoopSlices): Promise<T[][]> {
  const pages: T[][] = [];
  for (let p = 0; p < pageCount(capacity); p++) {
    if (p > 0 && loop.due()) await loop.next();
    pages.push(new Array<T>(pageLength(capacity, p)).fill(fill));
  }
  return pages;
}

/** Rows [from, to) of a paged list (every page in the range allocated), as one fresh list. */
export function pagedSlice<T>(pages: readonly (readonly T[] | null)[], from: number, to: number): T[] {
  if (from >= to) return [];
  const p = from >>> PAGE_BITS;
  if (to <= (p + 1) << PAGE_BITS) return pages[p]!.slice(from & PAGE_MASK, to - (p << PAGE_BITS));
  const out: T[] = [];
  for (let i = from; i < to; i++) out.push(pages[i >>> PAGE_BITS]![i & PAGE_MASK]!);
  return out;
}

/** Rows [0, n) of a paged list as one list (for a caller that keeps them flat). */
export function flatten<T>(pages: readonly (readonly T[] | null)[], n: number): T[] {
  const count = pageCount(n);
  if (count === 0) return [];
  const whole = pages.slice(0, count) as T[][];
  const rest = n - (count - 1) * PAGE_ROWS;
  if (whole[count - 1]!.length > rest) whole[count - 1] = whole[count - 1]!.slice(0, rest);
  // One concat: as fast as one slice of a flat list (31–36 ms at 1M); a push per row took 140 ms.
  return ([] as T[]).concat(...whole);
}
