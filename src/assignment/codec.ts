/**
 * Input ↔ columnar buffers for the WASM engine: the JS mirror of
 * assembly/layout.ts (a unit test compares the two), marshalling of the
 * object form (`AssignmentInput`), the columnar form a leader keeps between
 * decisions (`ColumnarPool`), and reading results back.
 *
 * Invariants: rows written here mean exactly what reference.ts computes from
 * the same input (effective weights, content keys from hash.ts, owners that
 * are not members map to −1, members in `canonicalMembers` order). Bad input
 * is refused with the reference validator's own error.
 *
 * Pure: no I/O, no clock, and it never touches `WebAssembly` (wasm.ts owns
 * the module; this file sees its memory as an ArrayBuffer).
 */
import { SplitfleetError } from '../errors.js';
import { hashInto, seedState } from '../hash.js';
import { canonicalMembers } from './reference.js';
import { DEFAULT_CAP, type AssignmentInput, type AssignmentResult, type AssignmentStats } from './types.js';
import { validateAssignmentInput } from './validate.js';

/** Mirror of assembly/layout.ts, name for name. */
export const LAYOUT = {
  LAYOUT_VERSION: 1,
  H_ROWS: 0, H_MEMBERS: 1, H_HANDLES: 2, H_CHARS: 3, H_WEIGHT: 4, H_KEY: 5, H_LEASE: 6,
  H_PREVIOUS: 7, H_RECORD: 8, H_FLAGS: 9, H_HANDLE_MAP: 10, H_CAP: 11, H_ORDER: 12,
  H_ORDER_LEN: 13, H_ASSIGNEE: 14, H_LOAD: 15, H_STR_OFF: 16, H_STR: 17, H_OUT_ROWS: 18,
  H_OUT_OFF: 19, H_NARROW: 20, H_POOL: 21, H_ASSIGNED: 22, H_QUEUED: 23, H_MOVES: 24,
  H_BACKSTOP_HIT: 25, H_COLLISIONS: 26, H_DUPLICATES: 27, H_SHIFT: 28, H_BY_RANK: 29, H_PERMUTED: 30, H_WORDS: 32,
  F_OFFSET: 128, F_ASSIGNED_TOTAL: 0, F_HEAVIEST: 1, F_WORDS: 4, HEADER_BYTES: 160,
  FLAG_LIVE: 1, FLAG_POOL: 2,
  STATUS_OK: 0, STATUS_NO_MEMORY: -1, STATUS_BAD_SIZE: -2,
} as const;
const L = LAYOUT;

const I32_MAX = 0x7fffffff;

/** Typed views of the engine's memory; stale once the memory grows. */
export class EngineViews {
  private readonly words: Uint32Array;
  private readonly floats: Float64Array;

  constructor(
    readonly buffer: ArrayBuffer,
    header: number,
  ) {
    this.words = new Uint32Array(buffer, header, L.H_WORDS);
    this.floats = new Float64Array(buffer, header + L.F_OFFSET, L.F_WORDS);
  }

  word(slot: number): number {
    return this.words[slot]!;
  }

  setWord(slot: number, v: number): void {
    this.words[slot] = v;
  }

  float(slot: number): number {
    return this.floats[slot]!;
  }

  f64(slot: number, length: number): Float64Array {
    return new Float64Array(this.buffer, this.words[slot]!, length);
  }

  u32(slot: number, length: number): Uint32Array {
    return new Uint32Array(this.buffer, this.words[slot]!, length);
  }

  i32(slot: number, length: number): Int32Array {
    return new Int32Array(this.buffer, this.words[slot]!, length);
  }

  u16(slot: number, length: number): Uint16Array {
    return new Uint16Array(this.buffer, this.words[slot]!, length);
  }

  u8(slot: number, length: number): Uint8Array {
    return new Uint8Array(this.buffer, this.words[slot]!, length);
  }
}

/** The engine's memory as the codec needs it (implemented by wasm.ts). */
export interface EngineMemory {
  /** Lays out columns for these sizes (may grow memory) and returns fresh views. */
  reserve(rows: number, members: number, handles: number, chars: number): EngineViews;
  /** Moves STR above the columns with room for `chars` units; returns fresh views. */
  reserveChars(chars: number): EngineViews;
  /** Views of the current memory. */
  views(): EngineViews;
}

/**
 * The members of a decision in canonical order (reference.ts
 * `canonicalMembers`: by content key, then id), with their effective caps,
 * an id → index map, and the order by id in which results are written.
 * Kept between calls and reused while the members, caps and seed repeat.
 */
export interface MemberTable {
  seed: string;
  /** As given (input order) with effective caps: what reuse is checked against. */
  given: string[];
  givenCaps: number[];
  /** Canonical order. */
  ids: string[];
  caps: number[];
  index: Map<string, number>;
  /** Member indices by id in JS string order. */
  byId: number[];
}

/** The member table of `input`, or `prior` when it has the same members, caps and seed. */
export function memberTable(
  input: { seed: string; defaultCap?: number; members: readonly { id: string; cap?: number }[] },
  prior: MemberTable | null,
): MemberTable {
  const defaultCap = input.defaultCap ?? DEFAULT_CAP;
  const ms = input.members;
  if (prior !== null && prior.seed === input.seed && prior.given.length === ms.length) {
    let i = 0;
    while (i < ms.length && ms[i]!.id === prior.given[i] && (ms[i]!.cap ?? defaultCap) === prior.givenCaps[i]) i++;
    if (i === ms.length) return prior;
  }
  const canon = canonicalMembers({ seed: input.seed, defaultCap: input.defaultCap, members: ms.slice(), splits: [] });
  const ids = canon.map((c) => c.id);
  const byId = ids.map((_, j) => j).sort((a, b) => (ids[a]! < ids[b]! ? -1 : ids[a]! > ids[b]! ? 1 : 0));
  return {
    seed: input.seed,
    given: ms.map((mm) => mm.id),
    givenCaps: ms.map((mm) => mm.cap ?? defaultCap),
    ids,
    caps: canon.map((c) => c.cap),
    index: new Map(ids.map((id, j) => [id, j])),
    byId,
  };
}

/**
 * What one object-form decision keeps for the next (wasm.ts holds one per
 * engine). First only the ids; once a call repeats them, also per row the
 * content key, code units, weight and claimability, then the engine's pool
 * order and id order. Keys, code units and id order are functions of
 * (seed, ids); the pool order of (seed, ids, weights, claimability). Each is
 * reused only when those are equal row for row, so reuse never changes an
 * output, and a one-off input costs no copies.
 */
export interface InputMemo {
  seed: string;
  members: MemberTable;
  ids: string[];
  /** The rest is null until the ids repeat. */
  rows: {
    keys: Uint32Array;
    strOff: Uint32Array;
    chars: Uint16Array;
    narrow: boolean;
    weights: Float64Array;
    pool: Uint8Array;
    /** Each claimable row's lease owner as last seen, and its member index under `owners.table`. */
    owners: { table: MemberTable; lease: unknown[]; index: Int32Array };
  } | null;
  order: Uint32Array | null;
  byRank: Uint32Array | null;
  /** The last result's lists. */
  out: OutputMemo | null;
}

/** What `marshalInput` leaves behind for the engine calls and for reading the result. */
export interface MarshalledInput {
  /** The members (index = member index in the engine). */
  members: MemberTable;
  /** Row r is `splits[r]`; `ids[r]` its id. */
  ids: readonly string[];
  idOf: (row: number) => string;
  /** Every id equals the memo's, row for row: uniqueness and id order carry over. */
  sameIds: boolean;
  /** ...and every weight and claimability too: the memo's pool order holds. */
  sameOrder: boolean;
  /** The memo for the next decision; keep it only once the input is known valid. */
  memo: InputMemo;
}

/** Runs the reference validator, which throws the exact error; a fast check flagged the input. */
export function refuse(input: unknown): never {
  validateAssignmentInput(input);
  throw new SplitfleetError('ENGINE_FAILURE', 'codec: a fast input check refused input the validator accepts');
}

const isOwner = (v: unknown): boolean => v === undefined || v === null || typeof v === 'string';
const isCap = (v: unknown): boolean => v === undefined || (Number.isSafeInteger(v) && (v as number) >= 1);

/** The top-level and member rules of validate.ts; false when any is broken. */
function shapeIsValid(input: AssignmentInput): boolean {
  const o = input as unknown as Record<string, unknown>;
  if (typeof o !== 'object' || o === null || Array.isArray(o)) return false;
  if (typeof o.seed !== 'string' || !isCap(o.defaultCap)) return false;
  if (!Array.isArray(o.members) || !Array.isArray(o.splits)) return false;
  const ids = new Set<string>();
  for (const m of o.members as unknown[]) {
    if (typeof m !== 'object' || m === null) return false;
    const mm = m as Record<string, unknown>;
    if (typeof mm.id !== 'string' || mm.id === '' || ids.has(mm.id) || !isCap(mm.cap)) return false;
    ids.add(mm.id);
  }
  if (o.reserved !== undefined) {
    if (!Array.isArray(o.reserved)) return false;
    for (const r of o.reserved as unknown[]) if (typeof r !== 'string') return false;
  }
  return true;
}

/** A lease owner no input can have: "not seen yet" in InputMemo's owners. */
const UNSEEN = Symbol('unseen');

/** Code units of the ids being marshalled (reused between calls, grown by doubling). */
let charBuf: Uint16Array = new Uint16Array(1 << 16);

function charRoom(need: number, keep: number): Uint16Array {
  if (need > charBuf.length) {
    const grown = new Uint16Array(Math.max(need, 2 * charBuf.length));
    grown.set(charBuf.subarray(0, keep));
    charBuf = grown;
  }
  return charBuf;
}

/**
 * Writes the object form into engine memory: one row per split in input
 * order (claimable ones flagged POOL, with owners), every row's weight,
 * content key and id code units, and the canonical members. Checks every
 * rule of validate.ts except split-id uniqueness, which the engine checks on
 * the keys (`countDuplicateKeys`); any broken rule throws the validator's
 * error. With a `memo` of the previous input, rows whose ids match reuse
 * its keys and code units instead of computing them.
 */
export function marshalInput(input: AssignmentInput, mem: EngineMemory, memo: InputMemo | null = null): MarshalledInput {
  if (!shapeIsValid(input)) refuse(input);
  const splits = input.splits;
  const n = splits.length;
  const table = memberTable(input, memo?.members ?? null);
  const m = table.ids.length;
  const memberIndex = table.index;
  const reserved = input.reserved !== undefined && input.reserved.length > 0 ? new Set(input.reserved) : null;
  const prior = memo !== null && memo.seed === input.seed && memo.ids.length === n ? memo : null;

  let v = mem.reserve(n, m, m, 0);
  const weight = v.f64(L.H_WEIGHT, n);
  const key = v.u32(L.H_KEY, 2 * n);
  const lease = v.i32(L.H_LEASE, n);
  const prev = v.i32(L.H_PREVIOUS, n);
  const rec = v.i32(L.H_RECORD, n);
  const flags = v.u8(L.H_FLAGS, n);
  const strOff = v.u32(L.H_STR_OFF, n + 1);
  const cap = v.i32(L.H_CAP, m);
  const map = v.i32(L.H_HANDLE_MAP, m);
  for (let j = 0; j < m; j++) {
    cap[j] = Math.min(table.caps[j]!, I32_MAX);
    map[j] = j;
  }

  const state = seedState(input.seed);
  const kept = prior?.rows ?? null;
  let same = prior !== null;
  let sameOrder = kept !== null && prior!.order !== null;
  let ids: string[] = prior !== null ? prior.ids : new Array<string>(n);
  let str: Uint16Array = charBuf;
  let p = 0;
  let units = 0;
  // Lease owners seen by the memo (kept across calls while ids repeat): an
  // owner equal to the row's last one has the same index under the same table.
  const owners = prior === null ? null
    : kept !== null ? kept.owners
    : { table, lease: new Array<unknown>(n).fill(UNSEEN), index: new Int32Array(n) };
  const ownersHold = owners !== null && owners.table === table;
  for (let i = 0; i < n; i++) {
    const s = splits[i]!;
    if (typeof s !== 'object' || s === null) refuse(input);
    const id = s.id;
    const w = s.weight;
    const status = s.status;
    const lo = s.leaseOwner;
    const pr = s.previous;
    const ro = s.recordOwner;
    if (typeof id !== 'string' || id === '' || !Number.isSafeInteger(w) || w < 0) refuse(input);
    if (!isOwner(lo) || !isOwner(pr) || !isOwner(ro)) refuse(input);
    let inPool = status === undefined || status === 'runnable';
    if (!inPool && status !== 'completed' && status !== 'quarantined') refuse(input);
    if (same && id !== prior!.ids[i]) {
      // From here on, ids differ from the memo's: keep its prefix, compute the rest.
      same = false;
      sameOrder = false;
      ids = prior!.ids.slice(0, i);
      ids.length = n;
      if (kept !== null) {
        key.set(kept.keys.subarray(0, 2 * i));
        p = kept.strOff[i]!;
        str = charRoom(p, 0);
        str.set(kept.chars.subarray(0, p));
        strOff.set(kept.strOff.subarray(0, i));
        units = kept.narrow ? 0 : 0x100;
      }
    }
    if (same && kept !== null) {
      // The memo's key, copied in bulk below if anything will read it.
    } else {
      hashInto(state, id, key, 2 * i);
      ids[i] = id;
      strOff[i] = p;
      if (p + id.length > str.length) str = charRoom(p + id.length, p);
      for (let k = 0; k < id.length; k++) {
        const c = id.charCodeAt(k);
        units |= c;
        str[p++] = c;
      }
    }
    if (inPool && reserved !== null && reserved.has(id)) inPool = false;
    weight[i] = w;
    const f = inPool ? L.FLAG_LIVE | L.FLAG_POOL : L.FLAG_LIVE;
    flags[i] = f;
    if (sameOrder && (w !== kept!.weights[i] || f !== kept!.pool[i])) sameOrder = false;
    if (!inPool) continue;
    let l: number;
    if (ownersHold && lo === owners!.lease[i]) {
      l = owners!.index[i]!;
    } else {
      l = lo === undefined || lo === null ? -1 : (memberIndex.get(lo) ?? -1);
      if (same) {
        owners!.lease[i] = lo;
        owners!.index[i] = l;
      }
    }
    lease[i] = l;
    const q = pr === undefined || pr === null ? -1 : pr === lo ? l : (memberIndex.get(pr) ?? -1);
    prev[i] = q;
    rec[i] = ro === undefined || ro === null ? -1 : ro === pr ? q : ro === lo ? l : (memberIndex.get(ro) ?? -1);
  }

  if (owners !== null && !ownersHold && same) {
    // Every claimable row was looked up under the new table; rows that were
    // not claimable keep entries of the old one: forget those.
    for (let i = 0; i < n; i++) if ((flags[i]! & L.FLAG_POOL) === 0) owners.lease[i] = UNSEEN;
    owners.table = table;
  }
  let next: InputMemo;
  if (same && kept !== null) {
    v = mem.reserveChars(kept.chars.length);
    v.u16(L.H_STR, kept.chars.length).set(kept.chars);
    v.u32(L.H_STR_OFF, n + 1).set(kept.strOff);
    v.setWord(L.H_NARROW, kept.narrow ? 1 : 0);
    // Keys are read only to sort (and sorting is skipped when the order holds).
    if (!sameOrder) v.u32(L.H_KEY, 2 * n).set(kept.keys);
    next = sameOrder ? { ...prior!, members: table } : {
      ...prior!, members: table, rows: { ...kept, weights: v.f64(L.H_WEIGHT, n).slice(), pool: v.u8(L.H_FLAGS, n).slice() }, order: null,
    };
  } else {
    strOff[n] = p;
    v = mem.reserveChars(p);
    v.u16(L.H_STR, p).set(str.subarray(0, p));
    v.setWord(L.H_NARROW, units < 256 ? 1 : 0);
    // Ids seen twice in a row: keep what they determine; else only the ids.
    const rows = !same ? null : {
      keys: v.u32(L.H_KEY, 2 * n).slice(), strOff: v.u32(L.H_STR_OFF, n + 1).slice(), chars: str.slice(0, p),
      narrow: units < 256, weights: v.f64(L.H_WEIGHT, n).slice(), pool: v.u8(L.H_FLAGS, n).slice(), owners: owners!,
    };
    next = { seed: input.seed, members: table, ids, rows, order: null, byRank: null, out: null };
  }
  const final = ids;
  return { members: table, ids: final, idOf: (row) => final[row]!, sameIds: same, sameOrder, memo: next };
}

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

/** `readAssignment`, reusing `previous` lists where a member's rows repeat (rows name `ids`). */
export function readAssignmentKept(
  v: EngineViews, members: MemberTable, idOf: (row: number) => string,
  kept: { ids: readonly string[]; previous: OutputMemo | null } | null,
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

// ---------------------------------------------------------------------------
// The columnar form a leader keeps between decisions.

const STATUS_CODES: Record<string, number> = { runnable: 0, completed: 1, quarantined: 2 };
const STATUS_NAMES = ['runnable', 'completed', 'quarantined'] as const;

/** A decision on a `ColumnarPool`. */
export interface ColumnarDecision {
  /** Member ids in canonical order; `assignee` holds indices into this. */
  readonly members: readonly string[];
  /** Per pool row (`ColumnarPool.rowOf`): member index, or −1 (queued, not claimable, or no split). */
  readonly assignee: Int32Array;
  readonly stats: AssignmentStats;
}

/** What `ColumnarPool.write` leaves behind for the engine call. */
export interface WrittenPool {
  members: MemberTable;
  /** True when ORDER holds the cached sorted rows; false when the engine must sort. */
  sorted: boolean;
}

/** @internal A `ColumnarPool`'s decision state in transferable buffers (`ColumnarPool.snapshot`). */
export interface ColumnarSnapshot {
  seed: string;
  defaultCap: number | undefined;
  members: { id: string; cap?: number }[];
  handleIds: string[];
  rows: number;
  epoch: number;
  /** The cached order (then the columns below are in that order), or null (then they are per row). */
  order: Uint32Array<ArrayBuffer> | null;
  weight: Float64Array<ArrayBuffer>;
  lease: Int32Array<ArrayBuffer>;
  prev: Int32Array<ArrayBuffer>;
  rec: Int32Array<ArrayBuffer>;
  flags: Uint8Array<ArrayBuffer>;
  /** Without an order: two key words per row, and row r's id is idChars[idOff[r], idOff[r+1]). */
  key: Uint32Array<ArrayBuffer> | null;
  idChars: string | null;
  idOff: Uint32Array<ArrayBuffer> | null;
}

/**
 * The decision input kept incrementally as watch events arrive. Each split
 * has a row (reused after removal); its content key is hashed once, and the
 * sorted order of rows is cached between decisions and dropped only when a
 * split is added or its effective weight changes. Owner, status, reserve and
 * membership changes keep it: the engine filters the cached order.
 * Equivalent to `toInput()` given to `desiredAssignment`, output for output.
 */
export class ColumnarPool {
  private readonly state: number;
  private readonly rowById = new Map<string, number>();
  private ids: (string | undefined)[] = [];
  private freeRows: number[] = [];
  private rows = 0;
  private chars = 0;
  private weight = new Float64Array(16);
  private key = new Uint32Array(32);
  private lease = new Int32Array(16);
  private prev = new Int32Array(16);
  private rec = new Int32Array(16);
  private flags = new Uint8Array(16);
  private status = new Uint8Array(16);
  private reserved = new Set<string>();
  private readonly handles = new Map<string, number>();
  private readonly handleIds: string[] = [];
  private members: { id: string; cap?: number }[] = [];
  private table: MemberTable | null = null;
  /** The cached sorted order of the live rows, each row's position in it (−1: none), and the columns in that order. */
  private order: Uint32Array | null = null;
  private pos = new Int32Array(0);
  private sorted: { weight: Float64Array; lease: Int32Array; prev: Int32Array; rec: Int32Array; flags: Uint8Array } | null = null;
  /** Bumped whenever the cached order is dropped (a thread's sort is adopted only if it still matches). */
  private epoch = 0;

  constructor(
    readonly seed: string,
    readonly options: { defaultCap?: number } = {},
  ) {
    validateAssignmentInput({ seed, defaultCap: options.defaultCap, members: [], splits: [] });
    this.state = seedState(seed);
  }

  /** Number of splits held. */
  get size(): number {
    return this.rowById.size;
  }

  /** Rows in use (the length of a decision's `assignee`). */
  get rowCount(): number {
    return this.rows;
  }

  /** The row of split `id`, or −1. */
  rowOf(id: string): number {
    return this.rowById.get(id) ?? -1;
  }

  /** The split held in `row`, if any. */
  idAt(row: number): string | undefined {
    return this.ids[row];
  }

  /** Adds a split or updates its weight and status. */
  upsertSplit(id: string, weight: number, status: 'runnable' | 'completed' | 'quarantined' = 'runnable'): void {
    if (typeof id !== 'string' || id === '') fail('upsertSplit', 'id must be a non-empty string', id);
    if (!Number.isSafeInteger(weight) || weight < 0) {
      fail('upsertSplit', `weight of "${id}" must be an integer 0 ≤ weight ≤ ${Number.MAX_SAFE_INTEGER}`, weight);
    }
    const code = STATUS_CODES[status];
    if (code === undefined || !Object.hasOwn(STATUS_CODES, status)) {
      fail('upsertSplit', `status of "${id}" must be one of runnable, completed, quarantined`, status);
    }
    let r = this.rowById.get(id);
    if (r === undefined) {
      r = this.freeRows.pop() ?? this.newRow();
      this.rowById.set(id, r);
      this.ids[r] = id;
      this.chars += id.length;
      hashInto(this.state, id, this.key, 2 * r);
      this.lease[r] = this.prev[r] = this.rec[r] = -1;
      this.weight[r] = weight;
      this.dropOrder();
    } else if ((this.weight[r] === 0 ? 1 : this.weight[r]) !== (weight === 0 ? 1 : weight)) {
      this.dropOrder();
    }
    this.weight[r] = weight;
    if (this.sorted !== null) this.sorted.weight[this.pos[r]!] = weight;
    this.status[r] = code;
    this.refreshFlag(r);
  }

  /** Forgets a split; false when it was not held. */
  removeSplit(id: string): boolean {
    const r = this.rowById.get(id);
    if (r === undefined) return false;
    this.rowById.delete(id);
    this.ids[r] = undefined;
    this.chars -= id.length;
    this.flags[r] = 0;
    if (this.sorted !== null) this.sorted.flags[this.pos[r]!] = 0;
    this.freeRows.push(r);
    return true;
  }

  /** The member named by the split's live lease key (null: none); false when the split is unknown. */
  setLeaseOwner(id: string, member: string | null): boolean {
    return this.setOwner('lease', id, member);
  }

  /** The `owner` field of the split's record (null: none); false when the split is unknown. */
  setRecordOwner(id: string, member: string | null): boolean {
    return this.setOwner('rec', id, member);
  }

  /** The member whose published assignment named the split (null: none); false when unknown. */
  setPrevious(id: string, member: string | null): boolean {
    return this.setOwner('prev', id, member);
  }

  /** The live members and their lane budgets (validated as `AssignmentInput.members`). */
  setMembers(members: readonly { id: string; cap?: number }[]): void {
    const copy = members.map((mm) => (mm.cap === undefined ? { id: mm.id } : { id: mm.id, cap: mm.cap }));
    validateAssignmentInput({ seed: this.seed, defaultCap: this.options.defaultCap, members: copy, splits: [] });
    this.members = copy;
  }

  /** The split ids withheld from the next decisions (the rebalance delay). */
  setReserved(ids: Iterable<string>): void {
    const next = new Set<string>();
    for (const id of ids) {
      if (typeof id !== 'string') fail('setReserved', 'ids must be split id strings', id);
      next.add(id);
    }
    const before = this.reserved;
    this.reserved = next;
    for (const id of before) if (!next.has(id)) this.refreshId(id);
    for (const id of next) if (!before.has(id)) this.refreshId(id);
  }

  /** The member `decision` gives split `id`, or null. */
  assigneeOf(decision: ColumnarDecision, id: string): string | null {
    const r = this.rowById.get(id);
    const j = r === undefined ? -1 : (decision.assignee[r] ?? -1);
    return j < 0 ? null : decision.members[j]!;
  }

  /** The same state as the object form. */
  toInput(): AssignmentInput {
    const owner = (h: number): string | null => (h < 0 ? null : this.handleIds[h]!);
    const splits = [];
    for (let r = 0; r < this.rows; r++) {
      const id = this.ids[r];
      if (id === undefined) continue;
      splits.push({
        id, weight: this.weight[r]!, status: STATUS_NAMES[this.status[r]!]!,
        leaseOwner: owner(this.lease[r]!), recordOwner: owner(this.rec[r]!), previous: owner(this.prev[r]!),
      });
    }
    const input: AssignmentInput = { seed: this.seed, members: this.members.map((mm) => ({ ...mm })), splits, reserved: [...this.reserved] };
    if (this.options.defaultCap !== undefined) input.defaultCap = this.options.defaultCap;
    return input;
  }

  /**
   * @internal (wasm.ts) Writes the columns into engine memory: rows, owner
   * handles with their handle → member map, caps, the cached order when
   * there is one (else the keys, for the engine to sort), and with `withIds`
   * the claimable rows' ids.
   */
  write(mem: EngineMemory, withIds: boolean): WrittenPool {
    const table = (this.table = memberTable({ seed: this.seed, defaultCap: this.options.defaultCap, members: this.members }, this.table));
    const R = this.rows;
    const m = table.ids.length;
    const H = this.handleIds.length;
    const v = mem.reserve(R, m, H, withIds ? this.chars : 0);
    const cap = v.i32(L.H_CAP, m);
    for (let j = 0; j < m; j++) cap[j] = Math.min(table.caps[j]!, I32_MAX);
    const map = v.i32(L.H_HANDLE_MAP, H);
    for (let h = 0; h < H; h++) map[h] = table.index.get(this.handleIds[h]!) ?? -1;
    if (this.order !== null && this.sorted !== null) {
      // The cached order, and the columns in it: the engine reads them in sequence.
      const n = this.order.length;
      const p = this.sorted;
      v.u32(L.H_ORDER, n).set(this.order);
      v.setWord(L.H_ORDER_LEN, n);
      v.f64(L.H_WEIGHT, n).set(p.weight);
      v.i32(L.H_LEASE, n).set(p.lease);
      v.i32(L.H_PREVIOUS, n).set(p.prev);
      v.i32(L.H_RECORD, n).set(p.rec);
      v.u8(L.H_FLAGS, n).set(p.flags);
      v.setWord(L.H_PERMUTED, 1);
    } else {
      v.f64(L.H_WEIGHT, R).set(this.weight.subarray(0, R));
      v.i32(L.H_LEASE, R).set(this.lease.subarray(0, R));
      v.i32(L.H_PREVIOUS, R).set(this.prev.subarray(0, R));
      v.i32(L.H_RECORD, R).set(this.rec.subarray(0, R));
      v.u8(L.H_FLAGS, R).set(this.flags.subarray(0, R));
      v.u32(L.H_KEY, 2 * R).set(this.key.subarray(0, 2 * R));
    }
    if (withIds) {
      const strOff = v.u32(L.H_STR_OFF, R + 1);
      const str = v.u16(L.H_STR, this.chars);
      let p = 0;
      let units = 0;
      for (let r = 0; r < R; r++) {
        strOff[r] = p;
        const id = this.ids[r];
        if (id === undefined || (this.flags[r]! & L.FLAG_POOL) === 0) continue;
        for (let k = 0; k < id.length; k++) {
          const c = id.charCodeAt(k);
          units |= c;
          str[p++] = c;
        }
      }
      strOff[R] = p;
      v.setWord(L.H_NARROW, units < 256 ? 1 : 0);
    }
    return { members: table, sorted: this.sorted !== null };
  }

  /**
   * @internal (pool.ts) The numeric state a decision needs, copied into fresh
   * buffers the caller may transfer: with a cached order, that order and the
   * columns in it; without, the row columns, keys and ids (joined, with
   * offsets: the sort breaks ties by id).
   */
  snapshot(): ColumnarSnapshot {
    const R = this.rows;
    const base = {
      seed: this.seed, defaultCap: this.options.defaultCap, members: this.members.map((mm) => ({ ...mm })),
      handleIds: this.handleIds.slice(), rows: R, epoch: this.epoch,
    };
    if (this.order !== null && this.sorted !== null) {
      const p = this.sorted;
      return {
        ...base, order: this.order.slice(), weight: p.weight.slice(), lease: p.lease.slice(), prev: p.prev.slice(),
        rec: p.rec.slice(), flags: p.flags.slice(), key: null, idChars: null, idOff: null,
      };
    }
    const idOff = new Uint32Array(R + 1);
    const parts: string[] = [];
    let at = 0;
    for (let r = 0; r < R; r++) {
      idOff[r] = at;
      const id = this.ids[r];
      if (id !== undefined) {
        parts.push(id);
        at += id.length;
      }
    }
    idOff[R] = at;
    return {
      ...base, order: null, weight: this.weight.slice(0, R), lease: this.lease.slice(0, R), prev: this.prev.slice(0, R),
      rec: this.rec.slice(0, R), flags: this.flags.slice(0, R), key: this.key.slice(0, 2 * R), idChars: parts.join(''), idOff,
    };
  }

  /** @internal (thread.ts) A pool holding `s`, enough to decide on (not to be updated). */
  static fromSnapshot(s: ColumnarSnapshot): ColumnarPool {
    const p = new ColumnarPool(s.seed, s.defaultCap === undefined ? {} : { defaultCap: s.defaultCap });
    p.members = s.members;
    for (const id of s.handleIds) p.handle(id);
    p.rows = s.rows;
    p.epoch = s.epoch;
    if (s.order !== null) {
      p.order = s.order;
      p.sorted = { weight: s.weight, lease: s.lease, prev: s.prev, rec: s.rec, flags: s.flags };
    } else {
      p.weight = s.weight;
      p.lease = s.lease;
      p.prev = s.prev;
      p.rec = s.rec;
      p.flags = s.flags;
      p.key = s.key!;
      const off = s.idOff!;
      const chars = s.idChars!;
      for (let r = 0; r < s.rows; r++) if (off[r + 1]! > off[r]!) p.ids[r] = chars.slice(off[r]!, off[r + 1]!);
    }
    return p;
  }

  /** @internal (pool.ts, thread.ts) The cached sorted order of the live rows, if any. */
  cachedOrder(): Uint32Array | null {
    return this.order;
  }

  /** @internal (pool.ts) Keeps a thread's sort of a snapshot taken at `epoch`, if nothing has dropped the order since. */
  adoptOrder(epoch: number, order: Uint32Array): void {
    if (this.epoch === epoch && this.order === null) this.keepOrder(order);
  }

  /** @internal (wasm.ts) Keeps the engine's sorted order of the live rows for later decisions. */
  keepOrder(order: Uint32Array): void {
    const n = order.length;
    this.order = order.slice();
    this.pos = new Int32Array(this.weight.length).fill(-1);
    const p = {
      weight: new Float64Array(n), lease: new Int32Array(n), prev: new Int32Array(n), rec: new Int32Array(n), flags: new Uint8Array(n),
    };
    for (let k = 0; k < n; k++) {
      const r = order[k]!;
      this.pos[r] = k;
      p.weight[k] = this.weight[r]!;
      p.lease[k] = this.lease[r]!;
      p.prev[k] = this.prev[r]!;
      p.rec[k] = this.rec[r]!;
      p.flags[k] = this.flags[r]!;
    }
    this.sorted = p;
  }

  private dropOrder(): void {
    this.epoch++;
    this.order = null;
    this.sorted = null;
  }

  private newRow(): number {
    const r = this.rows++;
    if (r >= this.weight.length) {
      const size = 2 * this.weight.length;
      const grow = <T extends Float64Array | Int32Array | Uint32Array | Uint8Array>(a: T, n: number): T => {
        const b = new (a.constructor as new (n: number) => T)(n);
        b.set(a);
        return b;
      };
      this.weight = grow(this.weight, size);
      this.key = grow(this.key, 2 * size);
      this.lease = grow(this.lease, size);
      this.prev = grow(this.prev, size);
      this.rec = grow(this.rec, size);
      this.flags = grow(this.flags, size);
      this.status = grow(this.status, size);
    }
    return r;
  }

  private setOwner(which: 'lease' | 'prev' | 'rec', id: string, member: string | null): boolean {
    const r = this.rowById.get(id);
    if (r === undefined) return false;
    const h = this.handle(member);
    this[which][r] = h;
    if (this.sorted !== null) this.sorted[which][this.pos[r]!] = h;
    return true;
  }

  private handle(member: string | null | undefined): number {
    if (member === null || member === undefined) return -1;
    if (typeof member !== 'string') fail('owner', 'must be a member id string or null', member);
    let h = this.handles.get(member);
    if (h === undefined) {
      h = this.handleIds.length;
      this.handles.set(member, h);
      this.handleIds.push(member);
    }
    return h;
  }

  private refreshId(id: string): void {
    const r = this.rowById.get(id);
    if (r !== undefined) this.refreshFlag(r);
  }

  private refreshFlag(r: number): void {
    const claimable = this.status[r] === 0 && !this.reserved.has(this.ids[r]!);
    this.flags[r] = L.FLAG_LIVE | (claimable ? L.FLAG_POOL : 0);
    if (this.sorted !== null) this.sorted.flags[this.pos[r]!] = this.flags[r]!;
  }
}

function fail(where: string, rule: string, got: unknown): never {
  let shown: string;
  if (typeof got === 'number') shown = String(got);
  else if (typeof got === 'bigint') shown = `${got}n`;
  else {
    try {
      shown = JSON.stringify(got) ?? String(got);
    } catch {
      shown = typeof got;
    }
  }
  throw new SplitfleetError('INVALID_INPUT', `${where}: ${rule} (got ${shown})`);
}
