/**
 * The object form through a pool thread, as row columns: the caller builds an
 * `ObjectTask` a chunk of splits per turn of its event loop
 * (`readObjectTask`: fields read with fields.ts, owners as handles; then
 * `joinIds`, unless `sameTask` finds the last task repeated), the thread
 * writes it straight into engine memory (`writeObjectTask`) without
 * rebuilding any object, and the caller turns the reply's row indices back
 * into its own id strings.
 *
 * Invariants: the rows written mean what marshal.ts writes for the same input
 * (same keys: `hashUnits` is hash.ts `hashInto` over code units in engine
 * memory); the caller checks every rule of validate.ts except
 * split-id uniqueness, which the thread checks on the keys. Pure: the only
 * waiting is through the `turn` the caller passes in.
 */
import { hashUnits, seedState } from '../hash.js';
import { OwnerHandles } from './handles.js';
import { fieldsFor, readSplits, type SplitFields } from './fields.js';
import { I32_MAX, LAYOUT as L, type EngineMemory } from './layout.js';
import { shapeIsValid } from './marshal.js';
import { memberTable, type MemberTable } from './members.js';
import { DEFAULT_CAP, type AssignmentInput } from './types.js';
import type { ObjectTask } from './wire.js';

/** An ObjectTask before its ids are joined: what the caller compares with its last task. */
export type TaskColumns = Omit<ObjectTask, 'idChars'>;

/**
 * `input` as the columns of an ObjectTask, `chunk` splits per turn; null when
 * a rule is broken (the caller runs the validator for the exact error).
 * `ids` are the input's split ids by row, for reading the reply and for
 * `joinIds`.
 */
export async function readObjectTask(
  input: AssignmentInput, chunk: number, turn: () => Promise<void>,
): Promise<{ columns: TaskColumns; ids: string[] } | null> {
  if (!shapeIsValid(input)) return null;
  const splits = input.splits;
  const n = splits.length;
  const defaultCap = input.defaultCap ?? DEFAULT_CAP;
  const memberIds = input.members.map((mm) => mm.id);
  const memberCaps = Float64Array.from(input.members, (mm) => mm.cap ?? defaultCap);
  const reserved = input.reserved !== undefined && input.reserved.length > 0 ? new Set(input.reserved) : null;
  const c: Columns = {
    ids: new Array<string>(n), idOff: new Uint32Array(n + 1), weight: new Float64Array(n), flags: new Uint8Array(n),
    lease: new Int32Array(n), prev: new Int32Array(n), rec: new Int32Array(n), owners: new OwnerHandles(), reserved, chars: 0,
  };
  const f = fieldsFor(null, Math.min(n, chunk));
  for (let from = 0; from < n; from += chunk) {
    if (from > 0) await turn();
    const to = Math.min(n, from + chunk);
    // A plain function per chunk: an async function's loop resumes unoptimised after each await.
    if (!fillChunk(splits, from, to, f, c)) return null;
  }
  c.idOff[n] = c.chars;
  const columns: TaskColumns = {
    kind: 'object', seed: input.seed, memberIds, memberCaps, idOff: c.idOff, weight: c.weight, flags: c.flags,
    lease: c.lease, prev: c.prev, rec: c.rec, ownerIds: c.owners.ids,
  };
  return { columns, ids: c.ids };
}

/** The ids joined into one string (a native join per chunk, one turn between chunks). */
export async function joinIds(ids: readonly string[], chunk: number, turn: () => Promise<void>): Promise<string> {
  const parts: string[] = [];
  for (let from = 0; from < ids.length; from += chunk) {
    if (from > 0) await turn();
    parts.push(ids.slice(from, from + chunk).join(''));
  }
  return parts.join('');
}

/** A copy of `c` that survives the transfer of its buffers to a thread. */
export function copyColumns(c: TaskColumns): TaskColumns {
  return {
    ...c, memberIds: c.memberIds.slice(), memberCaps: c.memberCaps.slice(), idOff: c.idOff.slice(), weight: c.weight.slice(),
    flags: c.flags.slice(), lease: c.lease.slice(), prev: c.prev.slice(), rec: c.rec.slice(), ownerIds: c.ownerIds.slice(),
  };
}

const sameStrings = (a: readonly string[], b: readonly string[]): boolean => {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
};

/**
 * True when two tasks would give the engine the same columns: same seed,
 * members and caps, ids row for row, weights, flags, and owners (handles
 * that name the same owner ids). The engine is a function of its columns,
 * so the second task's decision is the first's.
 */
export function sameTask(a: TaskColumns, aIds: readonly string[], b: TaskColumns, bIds: readonly string[]): boolean {
  return a.seed === b.seed && sameStrings(a.memberIds, b.memberIds) && sameBytes(a.memberCaps, b.memberCaps)
    && sameStrings(aIds, bIds) && sameBytes(a.weight, b.weight) && sameBytes(a.flags, b.flags)
    && sameStrings(a.ownerIds, b.ownerIds) && sameBytes(a.lease, b.lease) && sameBytes(a.prev, b.prev) && sameBytes(a.rec, b.rec);
}

/** What `readObjectTask` fills, chunk by chunk: the task's row columns, and what builds them. */
type Columns = Pick<ObjectTask, 'idOff' | 'weight' | 'flags' | 'lease' | 'prev' | 'rec'> & {
  ids: string[];
  owners: OwnerHandles;
  reserved: Set<string> | null;
  /** Id characters so far. */
  chars: number;
};

/** Rows [from, to) of `splits` into `c`; false when a rule is broken. */
function fillChunk(splits: readonly unknown[], from: number, to: number, f: SplitFields, c: Columns): boolean {
  // readSplits fills rows [0, to − from) of the chunk's scratch.
  if (readSplits(splits.slice(from, to), 0, to - from, f) >= 0) return false;
  const { ids: fid, weight: fw, status: fs, lease: flo, prev: fpr, rec: fro } = f;
  const { ids, idOff, weight, flags, lease, prev, rec, reserved } = c;
  let p = c.chars;
  for (let k = 0, i = from; i < to; k++, i++) {
    const id = fid[k]!;
    ids[i] = id;
    idOff[i] = p;
    p += id.length;
    weight[i] = fw[k]!;
    flags[i] = fs[k] === 0 && (reserved === null || !reserved.has(id)) ? L.FLAG_LIVE | L.FLAG_POOL : L.FLAG_LIVE;
    // Owners usually agree (lease = previous = record): one lookup for all three.
    const lo = flo[k]!;
    const pr = fpr[k]!;
    const ro = fro[k]!;
    const hl = lo === null ? -1 : c.owners.of(lo);
    const hp = pr === null ? -1 : pr === lo ? hl : c.owners.of(pr);
    lease[i] = hl;
    prev[i] = hp;
    rec[i] = ro === null ? -1 : ro === pr ? hp : ro === lo ? hl : c.owners.of(ro);
  }
  c.chars = p;
  return true;
}

/** What a thread keeps from one object task for the next: reused only where the new one is equal. */
export interface TaskMemo {
  seed: string;
  members: MemberTable;
  idChars: string;
  idOff: Uint32Array;
  keys: Uint32Array;
  narrow: boolean;
  /** Set once the ids repeat. */
  byRank: Uint32Array | null;
  /** The pool order, and the weights and claimability it was computed from. */
  order: Uint32Array | null;
  weight: Float64Array | null;
  flags: Uint8Array | null;
}

/** Byte-for-byte equality of two typed arrays, compared as i32 words (one monomorphic loop for every element type). */
function sameBytes(a: ArrayBufferView, b: ArrayBufferView): boolean {
  if (a.byteLength !== b.byteLength) return false;
  const words = a.byteLength >>> 2;
  const aligned = a.byteOffset % 4 === 0 && b.byteOffset % 4 === 0;
  let from = 0;
  if (aligned) {
    const x = new Int32Array(a.buffer, a.byteOffset, words);
    const y = new Int32Array(b.buffer, b.byteOffset, words);
    for (let i = 0; i < words; i++) if (x[i] !== y[i]) return false;
    from = words * 4;
  }
  const x = new Uint8Array(a.buffer, a.byteOffset, a.byteLength);
  const y = new Uint8Array(b.buffer, b.byteOffset, b.byteLength);
  for (let i = from; i < x.length; i++) if (x[i] !== y[i]) return false;
  return true;
}

/**
 * Writes `t` into engine memory (rows in input order, owners as handles with
 * their handle → member map). Returns the member table and the memo with
 * `sameIds` (keys and id order carry over) and `sameOrder` (the pool order
 * too, already written to ORDER).
 */
export function writeObjectTask(
  t: ObjectTask, mem: EngineMemory, memo: TaskMemo | null,
): { members: MemberTable; memo: TaskMemo; sameIds: boolean; sameOrder: boolean } {
  const n = t.weight.length;
  const given = t.memberIds.map((id, j) => ({ id, cap: t.memberCaps[j]! }));
  const members = memberTable({ seed: t.seed, members: given }, memo?.members ?? null);
  const m = members.ids.length;
  const H = t.ownerIds.length;
  const chars = t.idChars;
  const sameIds = memo !== null && memo.seed === t.seed && memo.idChars === chars && sameBytes(memo.idOff, t.idOff);
  const v = mem.reserve(n, m, H, chars.length);
  const cap = v.i32(L.H_CAP, m);
  for (let j = 0; j < m; j++) cap[j] = Math.min(members.caps[j]!, I32_MAX);
  const map = v.i32(L.H_HANDLE_MAP, H);
  for (let h = 0; h < H; h++) map[h] = members.index.get(t.ownerIds[h]!) ?? -1;
  v.f64(L.H_WEIGHT, n).set(t.weight);
  v.i32(L.H_LEASE, n).set(t.lease);
  v.i32(L.H_PREVIOUS, n).set(t.prev);
  v.i32(L.H_RECORD, n).set(t.rec);
  v.u8(L.H_FLAGS, n).set(t.flags);
  v.u32(L.H_STR_OFF, n + 1).set(t.idOff);
  const str = v.u16(L.H_STR, chars.length);
  const key = v.u32(L.H_KEY, 2 * n);
  let keys: Uint32Array;
  let narrow: boolean;
  if (sameIds) {
    keys = memo!.keys;
    narrow = memo!.narrow;
    key.set(keys);
    for (let k = 0; k < chars.length; k++) str[k] = chars.charCodeAt(k);
  } else {
    let units = 0;
    for (let k = 0; k < chars.length; k++) {
      const c = chars.charCodeAt(k);
      units |= c;
      str[k] = c;
    }
    narrow = units < 256;
    const state = seedState(t.seed);
    for (let i = 0; i < n; i++) hashUnits(state, str, t.idOff[i]!, t.idOff[i + 1]!, key, 2 * i);
    keys = key.slice();
  }
  v.setWord(L.H_NARROW, narrow ? 1 : 0);
  const sameOrder = sameIds && memo!.order !== null && sameBytes(memo!.weight!, t.weight) && sameBytes(memo!.flags!, t.flags);
  if (sameOrder) {
    v.u32(L.H_ORDER, memo!.order!.length).set(memo!.order!);
    v.setWord(L.H_ORDER_LEN, memo!.order!.length);
  }
  const next: TaskMemo = sameIds
    ? { ...memo!, members, order: sameOrder ? memo!.order : null, weight: t.weight, flags: t.flags }
    : { seed: t.seed, members, idChars: chars, idOff: t.idOff, keys, narrow, byRank: null, order: null, weight: t.weight, flags: t.flags };
  return { members, memo: next, sameIds, sameOrder };
}

/** Row r's id from a task's code units (the rare paths: key collisions). */
export function taskId(t: ObjectTask, r: number): string {
  return t.idChars.slice(t.idOff[r]!, t.idOff[r + 1]!);
}
