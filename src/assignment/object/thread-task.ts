/**
 * The thread's side of an object task (object-task.ts builds it in the
 * caller): `writeObjectTask` writes its rows into engine memory and keeps a
 * memo of what the next task may reuse, copying whatever lives in the
 * caller's shared buffers (TaskBuffers), which the caller writes again.
 *
 * Invariants: the rows written mean what marshal.ts writes for the same
 * input; the memo never holds a view into a task's shared memory, and a
 * new memo's copies overwrite the memory of the one it replaces (kept-copies.ts),
 * which is never read again.
 */
import { seedState } from '../../hash.js';
import { I32_MAX, LAYOUT as L, type EngineMemory } from '../layout.js';
import { memberTable, type MemberTable } from '../members.js';
import { keptCopy, owned } from '../kept-copies.js';
import { sameBytes } from './object-task.js';
import type { ObjectTask } from '../wire.js';

/** What a thread keeps from one object task for the next: reused only where the new one is equal. */
export interface TaskMemo {
  seed: string;
  members: MemberTable;
  idUnits: Uint16Array;
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

/**
 * Writes `t` into engine memory (rows in input order, owners as handles with
 * their handle → member map). Returns the member table and the memo with
 * `sameIds` (keys and id order carry over) and `sameOrder` (the pool order
 * too, already written to ORDER).
 */
export function writeObjectTask(
  t: ObjectTask, mem: EngineMemory, memo: TaskMemo | null, prepared: MemberTable | null = null,
): { members: MemberTable; memo: TaskMemo; sameIds: boolean; sameOrder: boolean } {
  const n = t.weight.length;
  const members = taskMembers(t, prepared ?? memo?.members ?? null);
  const m = members.ids.length;
  const H = t.ownerIds.length;
  const chars = t.idOff[n]!;
  const units = t.idUnits.subarray(0, chars);
  const sameIds = memo !== null && memo.seed === t.seed && sameBytes(memo.idOff, t.idOff) && sameBytes(memo.idUnits, units);
  const v = mem.reserve(n, m, H, chars);
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
  const str = v.u16(L.H_STR, chars);
  str.set(units);
  const key = v.u32(L.H_KEY, 2 * n);
  let keys: Uint32Array;
  const narrow = t.narrow;
  if (sameIds) {
    keys = memo!.keys;
    key.set(keys);
  } else {
    mem.hashKeys(seedState(t.seed), 0);
    keys = keptCopy(key, memo?.keys ?? null);
  }
  v.setWord(L.H_NARROW, narrow ? 1 : 0);
  // Weights and claimability matter only to reuse the order, which needs the same ids: other tasks just copy them.
  const sameWeights = sameIds && memo!.weight !== null && sameBytes(memo!.weight, t.weight);
  const sameFlags = sameIds && memo!.flags !== null && sameBytes(memo!.flags, t.flags);
  const sameOrder = sameIds && memo!.order !== null && sameWeights && sameFlags;
  if (sameOrder) {
    v.u32(L.H_ORDER, memo!.order!.length).set(memo!.order!);
    v.setWord(L.H_ORDER_LEN, memo!.order!.length);
  }
  // The caller reuses shared task columns for its next task: keep copies of those, over the last memo's.
  const weight = sameWeights ? memo!.weight! : owned(t.weight, memo?.weight ?? null);
  const flags = sameFlags ? memo!.flags! : owned(t.flags, memo?.flags ?? null);
  const next: TaskMemo = sameIds
    ? { ...memo!, members, order: sameOrder ? memo!.order : null, weight, flags }
    : {
        seed: t.seed, members, idUnits: owned(units, memo?.idUnits ?? null), idOff: owned(t.idOff, memo?.idOff ?? null), keys, narrow,
        byRank: null, order: null, weight, flags,
      };
  return { members, memo: next, sameIds, sameOrder };
}

/** The member table of a task's members (`prior` when they, their caps and the seed are its). */
export function taskMembers(t: Pick<ObjectTask, 'seed' | 'memberIds' | 'memberCaps'>, prior: MemberTable | null): MemberTable {
  return memberTable({ seed: t.seed, members: t.memberIds.map((id, j) => ({ id, cap: t.memberCaps[j]! })) }, prior);
}

/** Row r's id from a task's code units (the rare paths: key collisions). */
export function taskId(t: ObjectTask, r: number): string {
  let id = '';
  for (let k = t.idOff[r]!; k < t.idOff[r + 1]!; k++) id += String.fromCharCode(t.idUnits[k]!);
  return id;
}
