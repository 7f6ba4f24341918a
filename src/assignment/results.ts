/**
 * Reading a decision back from engine memory: stats, the object-form
 * assignment (with reuse of the last result's lists), and the id order of
 * rows whose 64-bit keys collide. Pure; views come from wasm.ts.
 */
import { LAYOUT as L, type EngineViews } from './layout.js';
import type { MemberTable } from './members.js';
import type { AssignmentResult, AssignmentStats } from './types.js';
import { jsStringOrder } from '../js-order.js';
import { handOutOrderByKey } from './hand-out-order.js';

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
  const same = (a: number, b: number): boolean =>
    handOutOrderByKey(weight[a]!, key[2 * a + 1]!, key[2 * a]!, weight[b]!, key[2 * b + 1]!, key[2 * b]!) === 0;
  for (let i = 0; i < len; ) {
    let j = i + 1;
    while (j < len && same(order[i]!, order[j]!)) j++;
    if (j - i > 1) {
      const run = Array.from(order.subarray(i, j));
      run.sort((a, b) => jsStringOrder(idOf(a), idOf(b)));
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
 * (rows name `ids`). With the ids at hand as a list (`byRow`: row r's id is
 * byRow[r]), the others are gathered from it directly.
 *
 * Why gather: at 1M × 10k a cold call's lists took 12–20 ms gathered from
 * the flat ids and 20–48 ms through `idOf`; written in row order instead
 * (each member's list at the places a scratch of two words a row named, or
 * sliced from one list of all places) they took 45–88 ms, with ~2,260 page
 * faults a call against ~150–275 gathered (Node 22, loads 0.9–1.3, tenth
 * pass). Fresh memory costs ~3 ms a MB on the machines we measure on.
 */
export function readAssignmentKept(
  v: EngineViews, members: MemberTable, idOf: (row: number) => string,
  kept: { ids: readonly string[]; previous: OutputMemo | null } | null,
  byRow: readonly string[] | null = null,
): { result: AssignmentResult; memo: OutputMemo | null } {
  const m = members.ids.length;
  const off = v.u32(L.H_OUT_OFF, m + 1);
  const rows = v.u32(L.H_OUT_ROWS, off[m]!);
  const prev = kept?.previous ?? null;
  const reuse = prev !== null && prev.members === members && prev.ids === kept!.ids ? prev : null;
  const lists = new Array<string[]>(m);
  const assignment: Record<string, string[]> = {};
  for (const j of members.byId) {
    const s = off[j]!;
    const len = off[j + 1]! - s;
    let list: string[] | null = null;
    if (reuse !== null && reuse.off[j + 1]! - reuse.off[j]! === len) {
      const ps = reuse.off[j]!;
      let k = 0;
      while (k < len && reuse.rows[ps + k] === rows[s + k]) k++;
      if (k === len) list = reuse.lists[j]!;
    }
    if (list === null) {
      list = new Array<string>(len);
      if (byRow !== null) for (let k = 0; k < len; k++) list[k] = byRow[rows[s + k]!]!;
      else for (let k = 0; k < len; k++) list[k] = idOf(rows[s + k]!);
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
