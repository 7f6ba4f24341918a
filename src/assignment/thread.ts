/**
 * The pool thread's entry (AssignmentPool runs the compiled
 * dist/src/assignment/thread.js): decodes a task of numeric columns and
 * joined id strings, runs the WASM engine, and returns numbers only — for the
 * object form each member's split indices (the caller rebuilds the lists from
 * its own input), for the columnar form `assignee` per row.
 *
 * Invariants: nothing is thrown across the thread boundary (a failure is
 * `{ ok: false, code, message }`, which the pool turns back into a
 * SplitfleetError); result buffers are transferred, never cloned.
 * It must not import piscina (pool.ts's `movable` wraps the transfer).
 */
import { SplitfleetError } from '../errors.js';
import { ColumnarPool, type ColumnarSnapshot } from './codec.js';
import { desiredAssignment } from './engine.js';
import { movable } from './pool.js';
import type { AssignmentInput, AssignmentStats, MemberInput, SplitInput, SplitStatus } from './types.js';
import { columnarAssignment } from './wasm.js';

/** Statuses on the wire: 0 means "not given". */
export const STATUS_WIRE: readonly (SplitStatus | undefined)[] = [undefined, 'runnable', 'completed', 'quarantined'];

/** An `AssignmentInput` as columns: strings joined (`chars`) with offsets (`off`, length n + 1). */
export interface ObjectTask {
  kind: 'object';
  seed: string;
  defaultCap: number | undefined;
  memberChars: string;
  memberOff: Uint32Array;
  /** 1 where the member states a cap (then `memberCap` holds it). */
  memberHasCap: Uint8Array;
  memberCap: Float64Array;
  idChars: string;
  idOff: Uint32Array;
  weight: Float64Array;
  /** Index into STATUS_WIRE. */
  status: Uint8Array;
  /** Index into the owner names, or −1 (no owner). */
  lease: Int32Array;
  rec: Int32Array;
  prev: Int32Array;
  ownerChars: string;
  ownerOff: Uint32Array;
  /** Null when `reserved` was not given. */
  reservedChars: string | null;
  reservedOff: Uint32Array | null;
}

export interface ColumnarTask {
  kind: 'columnar';
  snapshot: ColumnarSnapshot;
}

export type ThreadTask = ObjectTask | ColumnarTask;

export type ThreadReply =
  | {
      ok: true;
      kind: 'object';
      /** Per output key (the result's key order): the index of that member in `input.members`. */
      memberOrder: Int32Array;
      /** Key k's splits are rows[off[k] .. off[k+1]), indices into `input.splits`, in output order. */
      off: Uint32Array;
      rows: Uint32Array;
      stats: AssignmentStats;
    }
  | {
      ok: true;
      kind: 'columnar';
      members: string[];
      assignee: Int32Array;
      stats: AssignmentStats;
      /** The sort of a snapshot that had no cached order (the caller's pool adopts it). */
      order: Uint32Array | null;
    }
  | { ok: false; code: string; message: string };

function split(chars: string, off: Uint32Array): string[] {
  const n = off.length - 1;
  const out = new Array<string>(n);
  for (let i = 0; i < n; i++) out[i] = chars.slice(off[i]!, off[i + 1]!);
  return out;
}

/** The last task's split ids (and their index), reused while the joined ids repeat. */
let lastIds: { chars: string; off: Uint32Array; ids: string[]; index: Map<string, number> | null } | null = null;

function splitIds(t: ObjectTask): { ids: string[]; index: () => Map<string, number> } {
  const last = lastIds;
  let same = last !== null && last.chars === t.idChars && last.off.length === t.idOff.length;
  if (same) {
    const a = last!.off;
    const b = t.idOff;
    for (let i = 0; i < b.length && same; i++) same = a[i] === b[i];
  }
  const memo = same ? last! : (lastIds = { chars: t.idChars, off: t.idOff, ids: split(t.idChars, t.idOff), index: null });
  return {
    ids: memo.ids,
    index: () => {
      if (memo.index === null) {
        const m = new Map<string, number>();
        memo.ids.forEach((id, i) => m.set(id, i));
        memo.index = m;
      }
      return memo.index;
    },
  };
}

/** The object form back from its columns, equal field for field where it matters to the engine. */
export function decodeInput(t: ObjectTask, ids: string[]): AssignmentInput {
  const memberIds = split(t.memberChars, t.memberOff);
  const members: MemberInput[] = memberIds.map((id, j) => (t.memberHasCap[j] === 1 ? { id, cap: t.memberCap[j]! } : { id }));
  const owners = split(t.ownerChars, t.ownerOff);
  const owner = (h: number): string | null => (h < 0 ? null : owners[h]!);
  const n = ids.length;
  const splits = new Array<SplitInput>(n);
  for (let i = 0; i < n; i++) {
    const s: SplitInput = {
      id: ids[i]!, weight: t.weight[i]!, leaseOwner: owner(t.lease[i]!), recordOwner: owner(t.rec[i]!), previous: owner(t.prev[i]!),
    };
    const status = STATUS_WIRE[t.status[i]!];
    if (status !== undefined) s.status = status;
    splits[i] = s;
  }
  const input: AssignmentInput = { seed: t.seed, members, splits };
  if (t.defaultCap !== undefined) input.defaultCap = t.defaultCap;
  if (t.reservedChars !== null && t.reservedOff !== null) input.reserved = split(t.reservedChars, t.reservedOff);
  return input;
}

function runObject(t: ObjectTask): ThreadReply {
  const { ids, index } = splitIds(t);
  const input = decodeInput(t, ids);
  const result = desiredAssignment(input);
  const memberIndex = new Map(input.members.map((mm, j) => [mm.id, j]));
  const keys = Object.keys(result.assignment);
  const memberOrder = new Int32Array(keys.length);
  const off = new Uint32Array(keys.length + 1);
  let total = 0;
  for (const k of keys) total += result.assignment[k]!.length;
  const rows = new Uint32Array(total);
  const at = index();
  let p = 0;
  keys.forEach((k, i) => {
    memberOrder[i] = memberIndex.get(k)!;
    off[i] = p;
    for (const id of result.assignment[k]!) rows[p++] = at.get(id)!;
  });
  off[keys.length] = p;
  return { ok: true, kind: 'object', memberOrder, off, rows, stats: result.stats };
}

function runColumnar(t: ColumnarTask): ThreadReply {
  const pool = ColumnarPool.fromSnapshot(t.snapshot);
  const d = columnarAssignment(pool);
  const order = t.snapshot.order === null ? pool.cachedOrder() : null;
  return { ok: true, kind: 'columnar', members: d.members.slice(), assignee: d.assignee, stats: d.stats, order };
}

/** Runs one task; never throws. Exported for the in-thread tests of the wire format. */
export function runTask(t: ThreadTask): ThreadReply {
  try {
    return t.kind === 'object' ? runObject(t) : runColumnar(t);
  } catch (e) {
    if (e instanceof SplitfleetError) return { ok: false, code: e.code, message: e.message };
    return { ok: false, code: 'ENGINE_FAILURE', message: `pool thread: ${e instanceof Error ? e.message : String(e)}` };
  }
}

/** Piscina's handler: the reply, its buffers transferred. */
export default function handler(t: ThreadTask): unknown {
  const reply = runTask(t);
  if (!reply.ok) return reply;
  const transfer: ArrayBufferLike[] =
    reply.kind === 'object'
      ? [reply.memberOrder.buffer, reply.off.buffer, reply.rows.buffer]
      : [reply.assignee.buffer, ...(reply.order === null ? [] : [reply.order.buffer])];
  return movable(reply, transfer as ArrayBuffer[]);
}
