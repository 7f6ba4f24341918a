/**
 * Marshalling of the object form (`AssignmentInput`) into engine memory, and
 * the memo one object-form decision keeps for the next (`InputMemo`).
 *
 * Invariants: rows written here mean exactly what reference.ts computes from
 * the same input (effective weights, content keys from hash.ts, owners that
 * are not members map to −1, members in `canonicalMembers` order). Bad input
 * is refused with the reference validator's own error.
 *
 * Pure: no I/O, no clock, and it never touches `WebAssembly`.
 */
import { SplitfleetError } from '../../errors.js';
import { seedState } from '../../hash.js';
import { fieldsFor, readIds, readSplits, sameIdsUpTo, sameStrings, type SplitFields } from './fields.js';
import { PAGE_BITS, PAGE_MASK, PAGE_ROWS } from './pages.js';
import { I32_MAX, LAYOUT as L, type EngineMemory, type EngineViews } from '../layout.js';
import { memberTable, type MemberTable } from '../members.js';
import type { OutputMemo } from '../results.js';
import type { AssignmentInput, AssignmentStats } from '../types.js';
import { isCap, isId, validateAssignmentInput } from '../validate.js';

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
  /** The last result's stats (computeMs 0): with `out`, the whole last result. */
  stats: AssignmentStats | null;
  /**
   * The fields of the input this memo was made from, as read (a buffer of
   * the engine's MarshalScratch; the next call that may repeat this input
   * reads over it, and a failed call drops the memo), and its reserved ids:
   * equal fields, members and reserved ids are the same input.
   */
  read: SplitFields | null;
  reserved: readonly string[] | null;
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
  /**
   * The input equals the one the memo's decision was made from: every field
   * of every split as read, the members and caps, the reserved ids. The
   * engine would be given the same columns, so its result is that
   * decision's (the engine is a function of its columns). Nothing was
   * written to engine memory.
   */
  unchanged: boolean;
  /** The memo for the next decision; keep it only once the input is known valid. */
  memo: InputMemo;
}

/** Runs the reference validator, which throws the exact error; a fast check flagged the input. */
export function refuse(input: unknown): never {
  validateAssignmentInput(input);
  throw new SplitfleetError('ENGINE_FAILURE', 'codec: a fast input check refused input the validator accepts');
}

const capOrAbsent = (v: unknown): boolean => v === undefined || isCap(v);

/** The top-level and member rules of validate.ts; false when any is broken. */
export function shapeIsValid(input: AssignmentInput): boolean {
  const o = input as unknown as Record<string, unknown>;
  if (typeof o !== 'object' || o === null || Array.isArray(o)) return false;
  if (typeof o.seed !== 'string' || !capOrAbsent(o.defaultCap)) return false;
  if (!Array.isArray(o.members) || !Array.isArray(o.splits)) return false;
  const ids = new Set<string>();
  for (const m of o.members as unknown[]) {
    if (typeof m !== 'object' || m === null) return false;
    const mm = m as Record<string, unknown>;
    if (!isId(mm.id) || ids.has(mm.id) || !capOrAbsent(mm.cap)) return false;
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

/**
 * Buffers one engine reuses between object-form calls, grown by doubling and
 * never shrunk: the splits' fields as read (fields.ts) and the ids' code
 * units. Owned by the engine instance (wasm.ts), so two engines never share.
 */
export class MarshalScratch {
  /** The one read buffer: each call reads into it, over the last call's read. */
  private read: SplitFields | null = null;
  private chars: Uint16Array = new Uint16Array(1 << 16);

  /**
   * The read buffer, for a read of n rows. Given `last` (the memo's read,
   * which this buffer holds, when the memo's decision may repeat), the read
   * goes over it with `repeats` true: rows equal to what it holds are not
   * stored again, and `repeats` is still true at the end when every row
   * was. Why over it: comparing in a second pass, or reading into a second
   * buffer, cost a repeat at 1M ~30 ms more. Why one buffer: with no
   * decision to repeat, nothing compares with the old read again (the
   * memo's ids are its flat `ids`), and a second buffer's pages were 32 MB
   * at 1M, written by the call that first repeats a new input's ids
   * (160–240 ms of its 640–900).
   */
  readBuffer(last: SplitFields | null, n: number): SplitFields {
    const g = (this.read = fieldsFor(this.read, n));
    g.repeats = last !== null && g === last;
    return g;
  }

  /** The code-unit buffer, holding at least `need` units and its first `keep` kept. */
  charBuffer(need: number, keep: number): Uint16Array {
    if (need > this.chars.length) {
      const grown = new Uint16Array(Math.max(need, 2 * this.chars.length));
      grown.set(this.chars.subarray(0, keep));
      this.chars = grown;
    }
    return this.chars;
  }
}

/**
 * Writes the object form into engine memory: one row per split in input
 * order (claimable ones flagged POOL, with owners), every row's weight,
 * content key and id code units, and the canonical members. Checks every
 * rule of validate.ts except split-id uniqueness, which the engine checks on
 * the keys (`countDuplicateKeys`); any broken rule throws the validator's
 * error. With a `memo` of the previous input, rows whose ids match reuse
 * its keys and code units instead of computing them. The memo is consumed
 * (the caller keeps the returned one): when the ids differ, its list of
 * ids is written over with the new ones.
 *
 * Each pass over the rows is a function of its own (`copyUnits`,
 * `writeRows`): a loop inside this function ran as on-stack-replaced code
 * that this function's other branches deoptimized, and a first call's
 * passes at 1M took 45–100 ms for the first few calls where they now take
 * what they take once warm (issue 30).
 */
export function marshalInput(
  input: AssignmentInput, mem: EngineMemory, memo: InputMemo | null = null, scratch: MarshalScratch = new MarshalScratch(),
): MarshalledInput {
  if (!shapeIsValid(input)) refuse(input);
  const splits = input.splits;
  const n = splits.length;
  const table = memberTable(input, memo?.members ?? null);
  const reserved = input.reserved !== undefined && input.reserved.length > 0 ? new Set(input.reserved) : null;
  const prior = memo !== null && memo.seed === input.seed && memo.ids.length === n ? memo : null;
  let v = mem.reserve(n, table.ids.length, table.ids.length, 0);
  writeMembers(v, table);

  // Every field of every split, read once whatever the objects' hidden classes
  // (fields.ts); over the memo's read, which then says whether every row repeats.
  const given = input.reserved ?? null;
  const last = prior !== null && prior.out !== null && prior.stats !== null && prior.members === table
    && sameStrings(prior.reserved, given) ? prior.read : null;
  const f = scratch.readBuffer(last, n);
  if (readSplits(splits, 0, n, f) >= 0) refuse(input);
  if (f.repeats && prior !== null) {
    // The same input as the memo's decision, field for field: nothing needs writing.
    const ids = prior.ids;
    return {
      members: table, ids, idOf: (row) => ids[row]!, sameIds: true, sameOrder: true, unchanged: true,
      memo: { ...prior, read: f },
    };
  }

  const kept = prior?.rows ?? null;
  // The first row whose id differs from the memo's (n: none).
  const k = prior === null ? 0 : sameIdsUpTo(f, prior.ids, n);
  const same = prior !== null && k === n;
  const ids: string[] = same ? prior!.ids : readIds(f, n, memo?.ids ?? null);
  // Keys and code units, unless the memo's hold for every row.
  const units = same && kept !== null ? null : writeUnits(v, ids, kept, k, scratch);

  // Lease owners seen by the memo (kept across calls while ids repeat): an
  // owner equal to the row's last one has the same index under the same table.
  const owners = !same ? null
    : kept !== null ? kept.owners
    : { table, lease: new Array<unknown>(n).fill(UNSEEN), index: new Int32Array(n) };
  const ownersHold = owners !== null && owners.table === table;
  const sameOrder = writeRows(v, f, ids, n, table.index, reserved, owners, ownersHold,
    same && kept !== null && prior!.order !== null ? kept : null);
  if (owners !== null && !ownersHold) forgetUnclaimable(owners, v.u8(L.H_FLAGS, n), table);

  let next: InputMemo;
  if (units === null) {
    v = mem.reserveChars(kept!.chars.length);
    v.u16(L.H_STR, kept!.chars.length).set(kept!.chars);
    v.u32(L.H_STR_OFF, n + 1).set(kept!.strOff);
    v.setWord(L.H_NARROW, kept!.narrow ? 1 : 0);
    // Keys are read only to sort (and sorting is skipped when the order holds).
    if (!sameOrder) v.u32(L.H_KEY, 2 * n).set(kept!.keys);
    next = sameOrder ? { ...prior!, members: table, rows: kept, read: f, reserved: copyOf(given) } : {
      ...prior!, members: table, order: null, read: f, reserved: copyOf(given),
      rows: { ...kept!, weights: v.f64(L.H_WEIGHT, n).slice(), pool: v.u8(L.H_FLAGS, n).slice() },
    };
  } else {
    const { p, narrow, str, from } = units;
    v.u32(L.H_STR_OFF, n + 1)[n] = p;
    v = mem.reserveChars(p);
    v.u16(L.H_STR, p).set(str.subarray(0, p));
    v.setWord(L.H_NARROW, narrow ? 1 : 0);
    mem.hashKeys(seedState(input.seed), from);
    // Ids seen twice in a row: keep what they determine; else only the ids.
    const rows = !same ? null : {
      keys: v.u32(L.H_KEY, 2 * n).slice(), strOff: v.u32(L.H_STR_OFF, n + 1).slice(), chars: str.slice(0, p),
      narrow, weights: v.f64(L.H_WEIGHT, n).slice(), pool: v.u8(L.H_FLAGS, n).slice(), owners: owners!,
    };
    next = { seed: input.seed, members: table, ids, rows, order: null, byRank: null, out: null, stats: null, read: f, reserved: copyOf(given) };
  }
  return { members: table, ids, idOf: (row) => ids[row]!, sameIds: same, sameOrder, unchanged: false, memo: next };
}

type KeptRows = NonNullable<InputMemo['rows']>;

/** The canonical members' caps, and the identity handle map. */
function writeMembers(v: EngineViews, table: MemberTable): void {
  const m = table.ids.length;
  const cap = v.i32(L.H_CAP, m);
  const map = v.i32(L.H_HANDLE_MAP, m);
  for (let j = 0; j < m; j++) {
    cap[j] = Math.min(table.caps[j]!, I32_MAX);
    map[j] = j;
  }
}

/**
 * The ids' code units in the scratch (STR_OFF written for rows [0, n)):
 * the memo's keys and units for the first `k` rows when it has them (their
 * ids are the memo's), the rest copied from `ids`, to be hashed from `from`.
 */
function writeUnits(
  v: EngineViews, ids: readonly string[], kept: KeptRows | null, k: number, scratch: MarshalScratch,
): { p: number; narrow: boolean; str: Uint16Array; from: number } {
  const n = ids.length;
  const strOff = v.u32(L.H_STR_OFF, n + 1);
  let p = 0;
  let wide = false;
  let from = 0;
  if (kept !== null) {
    from = k;
    v.u32(L.H_KEY, 2 * n).set(kept.keys.subarray(0, 2 * k));
    p = kept.strOff[k]!;
    scratch.charBuffer(p, 0).set(kept.chars.subarray(0, p));
    strOff.set(kept.strOff.subarray(0, k));
    wide = !kept.narrow;
  }
  const copied = copyUnits(ids, from, strOff, p, scratch);
  return { p: copied.p, narrow: !wide && copied.units < 256, str: copied.str, from };
}

/** Code units of ids[from..] into the scratch from unit p, with their offsets; the OR of every unit. */
function copyUnits(ids: readonly string[], from: number, strOff: Uint32Array, p: number, scratch: MarshalScratch): { p: number; units: number; str: Uint16Array } {
  let str = scratch.charBuffer(p, p);
  let units = 0;
  for (let i = from; i < ids.length; i++) {
    const id = ids[i]!;
    strOff[i] = p;
    if (p + id.length > str.length) str = scratch.charBuffer(p + id.length, p);
    for (let c = 0; c < id.length; c++) {
      const u = id.charCodeAt(c);
      units |= u;
      str[p++] = u;
    }
  }
  return { p, units, str };
}

/** Lease owners of claimable rows as last seen, with their member index under `table` (InputMemo rows.owners). */
type Owners = KeptRows['owners'];

/**
 * Every row's weight and flags, and each claimable row's owners as member
 * indices (−1: none, or not a member), from the read `f`. With `owners`
 * (the ids repeat), a lease owner equal to the row's last one reuses its
 * index when `ownersHold` (same table), and every looked-up one is noted.
 * True when `order` (the memo's rows whose pool order holds) is given and
 * every weight and claimability equals its.
 */
function writeRows(
  v: EngineViews, f: SplitFields, ids: readonly string[], n: number, memberIndex: ReadonlyMap<string, number>,
  reserved: ReadonlySet<string> | null, owners: Owners | null, ownersHold: boolean, order: KeptRows | null,
): boolean {
  const weight = v.f64(L.H_WEIGHT, n);
  const lease = v.i32(L.H_LEASE, n);
  const prev = v.i32(L.H_PREVIOUS, n);
  const rec = v.i32(L.H_RECORD, n);
  const flags = v.u8(L.H_FLAGS, n);
  let sameOrder = order !== null;
  const { weight: fw, status: fs } = f;
  for (let i = 0; i < n; ) {
    // The owners are paged (fields.ts): one page's rows at a time.
    const base = i & ~PAGE_MASK;
    const end = Math.min(n, base + PAGE_ROWS);
    const { lease: flo, prev: fpr, rec: fro } = f.pages[base >>> PAGE_BITS]!;
    for (; i < end; i++) {
      const w = fw[i]!;
      let inPool = fs[i] === 0;
      if (inPool && reserved !== null && reserved.has(ids[i]!)) inPool = false;
      weight[i] = w;
      const fl = inPool ? L.FLAG_LIVE | L.FLAG_POOL : L.FLAG_LIVE;
      flags[i] = fl;
      if (sameOrder && (w !== order!.weights[i] || fl !== order!.pool[i])) sameOrder = false;
      if (!inPool) continue;
      const lo = flo[i - base]!;
      const pr = fpr[i - base]!;
      const ro = fro[i - base]!;
      let l: number;
      if (ownersHold && lo === owners!.lease[i]) {
        l = owners!.index[i]!;
      } else {
        l = lo === null ? -1 : (memberIndex.get(lo) ?? -1);
        if (owners !== null) {
          owners.lease[i] = lo;
          owners.index[i] = l;
        }
      }
      lease[i] = l;
      const q = pr === null ? -1 : pr === lo ? l : (memberIndex.get(pr) ?? -1);
      prev[i] = q;
      rec[i] = ro === null ? -1 : ro === pr ? q : ro === lo ? l : (memberIndex.get(ro) ?? -1);
    }
  }
  return sameOrder;
}

/**
 * After `writeRows` looked every claimable row up under a new table: rows
 * that were not claimable keep entries of the old one, so forget those.
 */
function forgetUnclaimable(owners: Owners, flags: Uint8Array, table: MemberTable): void {
  for (let i = 0; i < flags.length; i++) if ((flags[i]! & L.FLAG_POOL) === 0) owners.lease[i] = UNSEEN;
  owners.table = table;
}

const copyOf = (xs: readonly string[] | null): readonly string[] | null => (xs === null ? null : xs.slice());
