/**
 * A decision's slice (issue 30, item 3): the rows of a large pool that a
 * decision can touch, as a pool of their own, so that a decision costs the
 * fleet's lanes and the owned splits, not the queue.
 *
 * Why the slice decides exactly as the whole pool does (passes.ts,
 * reference.ts): pass 1 (sticky) reads only rows with an owner hint; pass 2
 * (fill) takes the claimable rows left unowned, in order, while some member
 * has a free lane, so it takes at most the members' total capacity K of
 * them; pass 3 (improve) moves only assigned rows. A slice holding every
 * claimable hinted row and the first K claimable unhinted rows in the
 * pool order therefore meets every row the whole pool's passes would read,
 * in the same relative order (the slice's pool sorts by the same key). What
 * the passes read of the rest is one figure: the claimable count n, which
 * sets the weight units' shift (units.ts) and the queued count; the slice's
 * pool carries n for the engine's units (H_UNITS_N), and `queued` is
 * restated from it.
 *
 * Pure: no I/O. Differential tests hold a slice's decision to the whole
 * pool's, row for row.
 */
import { ColumnarPool } from './columnar.js';
import type { SliceSource } from './slice-source.js';
import { LAYOUT as L } from './layout.js';
import { DEFAULT_CAP } from './types.js';
import type { ColumnarDecision } from './wire.js';

/** A pool's slice: its own pool, and the whole pool's row of each of its rows. */
export interface DecisionSlice {
  readonly pool: ColumnarPool;
  /** `rows[r]`: the whole pool's row of the slice's row r. */
  readonly rows: Int32Array;
  /** Claimable rows of the whole pool. */
  readonly claimable: number;
}

/**
 * The slice of `pool` a decision needs, or null when there is none to take
 * yet: the queue's head (queue-head.ts) is not built, or ran out before its
 * bound. Step its refill (`pool.queueHead().step()`) and ask again.
 */
export function decisionSlice(pool: ColumnarPool): DecisionSlice | null {
  const s = pool.sliceSource();
  const head = s.head ?? pool.queueHead();
  let lanes = 0;
  for (const m of s.members) lanes += m.cap ?? s.defaultCap ?? DEFAULT_CAP;
  // The first K claimable rows without a hint, in pool order: the head holds them (or says it cannot yet).
  const first = head.pick(lanes, s.hinted);
  if (first === null) return null;
  const picked: number[] = [];
  for (const r of s.hinted) if ((s.flags[r]! & L.FLAG_POOL) !== 0) picked.push(r);
  for (const r of first) picked.push(r);
  const slice = new ColumnarPool(s.seed, s.defaultCap === undefined ? {} : { defaultCap: s.defaultCap });
  // The weight units follow the claimable count (units.ts): the whole pool's, not the slice's.
  slice.unitsCount = s.claimable;
  // Room for every row at once: growing by doubling re-indexes the ids each time (6-10 ms a decision at 1M).
  slice.reserve(picked.length);
  const rows = new Int32Array(picked.length);
  const owner = (h: number): string | null => (h < 0 ? null : s.handleIds[h]!);
  for (const r of picked) {
    const id = pool.idAt(r)!;
    slice.upsertSplit(id, s.weight[r]!, 'runnable');
    rows[slice.rowOf(id)] = r;
    if (s.lease[r]! >= 0) slice.setLeaseOwner(id, owner(s.lease[r]!));
    if (s.prev[r]! >= 0) slice.setPrevious(id, owner(s.prev[r]!));
    if (s.rec[r]! >= 0) slice.setRecordOwner(id, owner(s.rec[r]!));
  }
  slice.setMembers(s.members);
  return { pool: slice, rows, claimable: s.claimable };
}

/** The slice's decision as the whole pool's assigned rows (ascending, as AssignedRows are), their member indices, and stats. */
export function sliceRows(slice: DecisionSlice, d: ColumnarDecision): { rows: Int32Array; assignees: Int32Array; stats: ColumnarDecision['stats'] } {
  const mine: number[] = [];
  for (let r = 0; r < d.assignee.length; r++) if (d.assignee[r]! >= 0) mine.push(r);
  mine.sort((a, b) => slice.rows[a]! - slice.rows[b]!);
  const rows = new Int32Array(mine.length);
  const assignees = new Int32Array(mine.length);
  mine.forEach((r, k) => {
    rows[k] = slice.rows[r]!;
    assignees[k] = d.assignee[r]!;
  });
  // The rows the slice left out are claimable and unassigned: queued.
  return { rows, assignees, stats: { ...d.stats, queued: slice.claimable - d.stats.assigned } };
}
