/**
 * The object form through a pool thread, as row columns: the caller builds an
 * `ObjectTask` a chunk of splits per turn of its event loop
 * (`buildObjectTask`), the thread writes it straight into engine memory
 * (`writeObjectTask`) without rebuilding any object, and the caller turns
 * the reply's row indices back into its own id strings.
 *
 * Invariants: the rows written mean what marshal.ts writes for the same input
 * (same keys: `hashUnits` is hash.ts `hashInto` over code units, and a test
 * holds them equal); the caller checks every rule of validate.ts except
 * split-id uniqueness, which the thread checks on the keys. Pure: the only
 * waiting is through the `turn` the caller passes in.
 */
import { seedState } from '../hash.js';
import { fieldsFor, readSplits } from './fields.js';
import { I32_MAX, LAYOUT as L, type EngineMemory } from './layout.js';
import { shapeIsValid } from './marshal.js';
import { memberTable, type MemberTable } from './members.js';
import { DEFAULT_CAP, type AssignmentInput } from './types.js';
import type { ObjectTask } from './wire.js';

/** hash.ts `hashInto` of the id whose code units are units[from, to). */
export function hashUnits(state: number, units: Uint16Array, from: number, to: number, into: Uint32Array, at: number): void {
  let h1 = 0xdeadbeef ^ state;
  let h2 = 0x41c6ce57 ^ state;
  for (let i = from; i < to; i++) {
    const ch = units[i]!;
    h1 = Math.imul(h1 ^ ch, 2654435761);
    h2 = Math.imul(h2 ^ ch, 1597334677);
  }
  h1 = Math.imul(h1 ^ (h1 >>> 16), 2246822507);
  h1 ^= Math.imul(h2 ^ (h2 >>> 13), 3266489909);
  h2 = Math.imul(h2 ^ (h2 >>> 16), 2246822507);
  h2 ^= Math.imul(h1 ^ (h1 >>> 13), 3266489909);
  into[at] = h1 >>> 0;
  into[at + 1] = h2 >>> 0;
}

/**
 * `input` as an ObjectTask, `chunk` splits per turn; null when a rule is
 * broken (the caller runs the validator for the exact error). `ids` are the
 * input's split ids by row, for reading the reply.
 */
export async function buildObjectTask(
  input: AssignmentInput, chunk: number, turn: () => Promise<void>,
): Promise<{ task: ObjectTask; ids: string[] } | null> {
  if (!shapeIsValid(input)) return null;
  const splits = input.splits;
  const n = splits.length;
  const defaultCap = input.defaultCap ?? DEFAULT_CAP;
  const memberIds = input.members.map((mm) => mm.id);
  const memberCaps = Float64Array.from(input.members, (mm) => mm.cap ?? defaultCap);
  const reserved = input.reserved !== undefined && input.reserved.length > 0 ? new Set(input.reserved) : null;
  const ids = new Array<string>(n);
  const idOff = new Uint32Array(n + 1);
  const weight = new Float64Array(n);
  const pool = new Uint8Array(n);
  const lease = new Int32Array(n);
  const prev = new Int32Array(n);
  const rec = new Int32Array(n);
  const ownerIds: string[] = [];
  const owners = new Map<string, number>();
  const handle = (v: string | null): number => {
    if (v === null) return -1;
    let h = owners.get(v);
    if (h === undefined) {
      h = ownerIds.length;
      owners.set(v, h);
      ownerIds.push(v);
    }
    return h;
  };
  let units = new Uint16Array(Math.max(16, 12 * n));
  let p = 0;
  const f = fieldsFor(null, Math.min(n, chunk));
  for (let from = 0; from < n; from += chunk) {
    if (from > 0) await turn();
    const to = Math.min(n, from + chunk);
    // readSplits fills rows [0, to − from) of the chunk's scratch.
    if (readSplits(splits.slice(from, to), 0, to - from, f) >= 0) return null;
    for (let i = from; i < to; i++) {
      const c = i - from;
      const id = f.ids[c]!;
      ids[i] = id;
      idOff[i] = p;
      if (p + id.length > units.length) {
        const grown = new Uint16Array(Math.max(p + id.length, 2 * units.length));
        grown.set(units.subarray(0, p));
        units = grown;
      }
      for (let k = 0; k < id.length; k++) units[p++] = id.charCodeAt(k);
      weight[i] = f.weight[c]!;
      pool[i] = f.status[c] === 0 && (reserved === null || !reserved.has(id)) ? 1 : 0;
      lease[i] = handle(f.lease[c]!);
      prev[i] = handle(f.prev[c]!);
      rec[i] = handle(f.rec[c]!);
    }
  }
  idOff[n] = p;
  const task: ObjectTask = {
    kind: 'object', seed: input.seed, memberIds, memberCaps, idUnits: units.slice(0, p), idOff, weight, pool, lease, prev, rec, ownerIds,
  };
  return { task, ids };
}

/** What a thread keeps from one object task for the next: reused only where the new one is equal. */
export interface TaskMemo {
  seed: string;
  members: MemberTable;
  idUnits: Uint16Array;
  idOff: Uint32Array;
  keys: Uint32Array;
  /** Set once the ids repeat. */
  byRank: Uint32Array | null;
  /** The pool order, and the weights and claimability it was computed from. */
  order: Uint32Array | null;
  weight: Float64Array | null;
  pool: Uint8Array | null;
}

const equalArrays = (a: ArrayLike<number>, b: ArrayLike<number>): boolean => {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
};

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
  const sameIds = memo !== null && memo.seed === t.seed && equalArrays(memo.idOff, t.idOff) && equalArrays(memo.idUnits, t.idUnits);
  const v = mem.reserve(n, m, H, t.idUnits.length);
  const cap = v.i32(L.H_CAP, m);
  for (let j = 0; j < m; j++) cap[j] = Math.min(members.caps[j]!, I32_MAX);
  const map = v.i32(L.H_HANDLE_MAP, H);
  for (let h = 0; h < H; h++) map[h] = members.index.get(t.ownerIds[h]!) ?? -1;
  v.f64(L.H_WEIGHT, n).set(t.weight);
  v.i32(L.H_LEASE, n).set(t.lease);
  v.i32(L.H_PREVIOUS, n).set(t.prev);
  v.i32(L.H_RECORD, n).set(t.rec);
  const flags = v.u8(L.H_FLAGS, n);
  for (let i = 0; i < n; i++) flags[i] = t.pool[i] === 1 ? L.FLAG_LIVE | L.FLAG_POOL : L.FLAG_LIVE;
  v.u16(L.H_STR, t.idUnits.length).set(t.idUnits);
  v.u32(L.H_STR_OFF, n + 1).set(t.idOff);
  let wide = 0;
  for (let i = 0; i < t.idUnits.length; i++) wide |= t.idUnits[i]!;
  v.setWord(L.H_NARROW, wide < 256 ? 1 : 0);
  const key = v.u32(L.H_KEY, 2 * n);
  let keys: Uint32Array;
  if (sameIds) {
    keys = memo!.keys;
    key.set(keys);
  } else {
    const state = seedState(t.seed);
    for (let i = 0; i < n; i++) hashUnits(state, t.idUnits, t.idOff[i]!, t.idOff[i + 1]!, key, 2 * i);
    keys = key.slice();
  }
  const sameOrder = sameIds && memo!.order !== null && equalArrays(memo!.weight!, t.weight) && equalArrays(memo!.pool!, t.pool);
  if (sameOrder) {
    v.u32(L.H_ORDER, memo!.order!.length).set(memo!.order!);
    v.setWord(L.H_ORDER_LEN, memo!.order!.length);
  }
  const next: TaskMemo = sameIds
    ? { ...memo!, members, order: sameOrder ? memo!.order : null, weight: t.weight, pool: t.pool }
    : { seed: t.seed, members, idUnits: t.idUnits, idOff: t.idOff, keys, byRank: null, order: null, weight: t.weight, pool: t.pool };
  return { members, memo: next, sameIds, sameOrder };
}

/** Row r's id from a task's code units (the rare paths: key collisions). */
export function taskId(t: ObjectTask, r: number): string {
  return String.fromCharCode(...t.idUnits.subarray(t.idOff[r]!, t.idOff[r + 1]!));
}
