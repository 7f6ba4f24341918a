/**
 * Reading a decision back from engine memory: stats, the object-form
 * assignment (with reuse of the last result's lists), and the id order of
 * rows whose 64-bit keys collide. Pure; views come from wasm.ts.
 */
import { LAYOUT as L, type EngineViews } from './layout.js';
import type { MemberTable } from './members.js';
import type { AssignmentResult, AssignmentStats } from './types.js';

/**
 * After `sortOrder`: orders each run of rows with equal effective weight and
 * equal 64-bit key by id (JS string order), as reference.ts's comparator
 * does. Such runs need two ids whose keys collide; this is that rare path.
 */
export function orderCollisions(v: EngineViews, idOf: (row: number) => string): void {
  const rows = v.word(L.H_ROWS);
  const len = v.word(L.H_ORDER_LEN);
  const order = v.u32(L.H_ORDER, len);
  const weight = v.f64(L.H_WEIGHT, rows);
  const key = v.u32(L.H_KEY, 2 * rows);
  const eff = (r: number): number => (weight[r] === 0 ? 1 : weight[r]!);
  const same = (a: number, b: number): boolean =>
    eff(a) === eff(b) && key[2 * a] === key[2 * b] && key[2 * a + 1] === key[2 * b + 1];
  for (let i = 0; i < len; ) {
    let j = i + 1;
    while (j < len && same(order[i]!, order[j]!)) j++;
    if (j - i > 1) {
      const run = Array.from(order.subarray(i, j));
      run.sort((a, b) => (idOf(a) < idOf(b) ? -1 : idOf(a) > idOf(b) ? 1 : 0));
      order.set(run, i);
    }
    i = j;
  }
}

/** The stats of the last `decide`, as reference.ts reports them (computeMs 0). */
export function readStats(v: EngineViews, members: number): AssignmentStats {
  const loads = v.f64(L.H_LOAD, members);
  // quality.ts loadFigures / lowerBound, over the same sums.
  let maxLoad = 0;
  let minLoad = members > 0 ? Infinity : 0;
  for (let j = 0; j < members; j++) {
    const l = loads[j]!;
    if (l > maxLoad) maxLoad = l;
    if (l < minLoad) minLoad = l;
  }
  const total = v.float(L.F_ASSIGNED_TOTAL);
  const heaviest = v.float(L.F_HEAVIEST);
  const lowerBound = members <= 0 ? 0 : Math.max(heaviest, Math.ceil(total / members));
  return {
    assigned: v.word(L.H_ASSIGNED),
    queued: v.word(L.H_QUEUED),
    improvingMoves: v.word(L.H_MOVES),
    backstopHit: v.word(L.H_BACKSTOP_HIT) !== 0,
    maxLoad,
    minLoad,
    lowerBound,
    imbalance: lowerBound > 0 ? maxLoad / lowerBound : 1,
    computeMs: 0,
  };
}

/**
 * After `sortOutput`: the object form. Members in JS string order of id,
 * each list already in id order (OUT_ROWS), keys defined with
 * defineProperty so an id such as "__proto__" is an ordinary key.
 */
export function readAssignment(v: EngineViews, members: MemberTable, idOf: (row: number) => string): AssignmentResult {
  return readAssignmentKept(v, members, idOf, null).result;
}

/**
 * The lists of one object-form result, kept privately (the caller gets
 * copies) so that the next result can copy a member's list instead of
 * building it when its rows are the same rows of the same ids.
 */
export interface OutputMemo {
  members: MemberTable;
  ids: readonly string[];
  off: Uint32Array;
  rows: Uint32Array;
  lists: string[][];
}

/**
 * `readAssignment`, reusing `previous` lists where a member's rows repeat
 * (rows name `ids`). With nothing to reuse and the ids at hand (`byRow`:
 * row r's id is byRow.ids[r], for rows [0, n); `slot` a scratch of at least
 * 2n), every list is written row by row (`listsInRowOrder`).
 */
export function readAssignmentKept(
  v: EngineViews, members: MemberTable, idOf: (row: number) => string,
  kept: { ids: readonly string[]; previous: OutputMemo | null } | null,
  byRow: { ids: readonly string[]; n: number; slot: Int32Array } | null = null,
): { result: AssignmentResult; memo: OutputMemo | null } {
  const m = members.ids.length;
  const off = v.u32(L.H_OUT_OFF, m + 1);
  const rows = v.u32(L.H_OUT_ROWS, off[m]!);
  const prev = kept?.previous ?? null;
  const reuse = prev !== null && prev.members === members && prev.ids === kept!.ids ? prev : null;
  const lists = reuse === null && byRow !== null ? listsInRowOrder(byRow.ids, byRow.n, byRow.slot, off, rows, m) : new Array<string[]>(m);
  const written = reuse === null && byRow !== null;
  const assignment: Record<string, string[]> = {};
  for (const j of members.byId) {
    const s = off[j]!;
    const len = off[j + 1]! - s;
    let list: string[] | null = written ? lists[j]! : null;
    if (reuse !== null && reuse.off[j + 1]! - reuse.off[j]! === len) {
      const ps = reuse.off[j]!;
      let k = 0;
      while (k < len && reuse.rows[ps + k] === rows[s + k]) k++;
      if (k === len) list = reuse.lists[j]!;
    }
    if (list === null) {
      list = new Array<string>(len);
      for (let k = 0; k < len; k++) list[k] = idOf(rows[s + k]!);
    }
    lists[j] = list;
    const value = kept === null ? list : list.slice();
    Object.defineProperty(assignment, members.ids[j]!, { value, enumerable: true, writable: true, configurable: true });
  }
  const result = { assignment, stats: readStats(v, m) };
  if (kept === null) return { result, memo: null };
  return { result, memo: { members, ids: kept.ids, off: off.slice(), rows: rows.slice(), lists } };
}


/**
 * Each member's list (`lists[j]`: the ids of rows[off[j]..off[j + 1]]),
 * written in row order: `slot` says, per row, its list and place in it.
 * Why: reading ids place by place is a random read per id, one cache miss
 * each (the pool's result build at 1M: 85–139 ms that way, 25–48 ms in row
 * order, object-result.ts `rebuild`); and writing the lists directly, not
 * slicing them from one list of places, leaves no 8 MB list to allocate
 * (fresh memory costs ~3 ms a MB here, pages.ts) and no second copy.
 */
function listsInRowOrder(ids: readonly string[], n: number, slot: Int32Array, off: Uint32Array, rows: Uint32Array, m: number): string[][] {
  const lists = new Array<string[]>(m);
  for (let i = 0; i < 2 * n; i += 2) slot[i] = -1;
  for (let j = 0; j < m; j++) {
    const s = off[j]!;
    const len = off[j + 1]! - s;
    lists[j] = new Array<string>(len);
    for (let k = 0; k < len; k++) {
      const r = rows[s + k]!;
      slot[2 * r] = j;
      slot[2 * r + 1] = k;
    }
  }
  for (let r = 0; r < n; r++) {
    const j = slot[2 * r]!;
    if (j >= 0) lists[j]![slot[2 * r + 1]!] = ids[r]!;
  }
  return lists;
}

/**
 * The result `readAssignmentKept` returned with `out` as its memo, again:
 * fresh copies of the same lists and stats (the caller may mutate them).
 */
export function repeatedAssignment(out: OutputMemo, stats: AssignmentStats): AssignmentResult {
  const { members, lists } = out;
  const assignment: Record<string, string[]> = {};
  for (const j of members.byId) {
    Object.defineProperty(assignment, members.ids[j]!, { value: lists[j]!.slice(), enumerable: true, writable: true, configurable: true });
  }
  return { assignment, stats: { ...stats } };
}
