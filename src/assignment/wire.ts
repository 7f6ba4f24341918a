/**
 * What crosses the pool/thread boundary, imported by both pool.ts (the
 * caller) and thread.ts (the Piscina entry), which never import each other:
 * the task and reply types. (The split-status numbering of the columns is a
 * fact of the split model: src/split-model.ts.)
 *
 * Invariants: a task carries numbers and strings only (typed arrays are
 * transferred, never cloned); a reply is `{ ok: true, ... }` or
 * `{ ok: false, code, message }`, never a thrown error (Node drops an error's
 * class and `code` on a postMessage). Types and constants only: no imports
 * of piscina, of the engine, or of either side.
 */
import type { SortedState } from './sorted-order.js';
import type { AssignmentStats } from './types.js';

/**
 * The object form as row columns (built by pool.ts, a chunk per turn): row i
 * is `input.splits[i]`. Validated on the caller except split-id uniqueness,
 * which the thread checks on the keys (reply `duplicates`).
 */
export interface ObjectTask {
  kind: 'object';
  seed: string;
  /** Members as given, with effective caps (defaultCap applied). */
  memberIds: string[];
  memberCaps: Float64Array<ArrayBuffer>;
  /**
   * Row i's id is the UTF-16 code units idUnits[idOff[i], idOff[i+1]),
   * written on the caller a chunk per turn and transferred (a joined string
   * would be copied, and flattened, in one turn of the caller's loop). The
   * row columns are in shared memory when the caller reuses them between
   * tasks (task-buffers.ts TaskBuffers): the thread copies what it keeps.
   */
  idUnits: Uint16Array<ArrayBufferLike>;
  /** Every code unit is below 256. */
  narrow: boolean;
  idOff: Uint32Array<ArrayBufferLike>;
  weight: Float64Array<ArrayBufferLike>;
  /** Engine flags per row (layout.ts FLAG_LIVE, plus FLAG_POOL when claimable: runnable and not reserved). */
  flags: Uint8Array<ArrayBufferLike>;
  /** Owner handles: indices into `ownerIds`, or −1 (none). */
  lease: Int32Array<ArrayBufferLike>;
  prev: Int32Array<ArrayBufferLike>;
  rec: Int32Array<ArrayBufferLike>;
  ownerIds: string[];
  /**
   * Where the thread writes the reply's `slot` (at least one per row), when
   * the caller lends it from its task buffers (shared memory, read by the caller
   * before its next task); null: the thread allocates one.
   */
  slot: Uint32Array<ArrayBufferLike> | null;
}

/** A decision on a `ColumnarPool`. */
export interface ColumnarDecision {
  /** Member ids in canonical order; `assignee` holds indices into this. */
  readonly members: readonly string[];
  /** Per pool row (`ColumnarPool.rowOf`): member index, or −1 (queued, not claimable, or no split). */
  readonly assignee: Int32Array;
  readonly stats: AssignmentStats;
}

/** @internal A `ColumnarPool`'s decision state in transferable buffers, or a pool's shared ones (`ColumnarPool.snapshot`, snapshot-buffers.ts). */
export interface ColumnarSnapshot {
  seed: string;
  defaultCap: number | undefined;
  members: { id: string; cap?: number }[];
  handleIds: string[];
  rows: number;
  epoch: number;
  /** The cached order (then the columns below are in that order), or null (then they are per row). */
  order: Uint32Array<ArrayBufferLike> | null;
  weight: Float64Array<ArrayBufferLike>;
  lease: Int32Array<ArrayBufferLike>;
  prev: Int32Array<ArrayBufferLike>;
  rec: Int32Array<ArrayBufferLike>;
  flags: Uint8Array<ArrayBufferLike>;
  /** Without an order: two key words per row, and row r's id is the code units idUnits[idOff[r], idOff[r+1]). */
  key: Uint32Array<ArrayBufferLike> | null;
  idUnits: Uint16Array<ArrayBufferLike> | null;
  idOff: Uint32Array<ArrayBufferLike> | null;
}

/** Where a `ColumnarPool`'s decision state travels (pool.ts builds it, thread.ts decides on it). */
export interface ColumnarTask {
  kind: 'columnar';
  snapshot: ColumnarSnapshot;
  /** Reply with the rows the decision assigns (`kind: 'assigned'`), not a dense `assignee` per row. */
  assignedOnly?: boolean;
}

/**
 * @internal A columnar decision as the rows it assigns, ascending, with each
 * one's member index (into `members`): what a leader publishes. A reply the
 * size of the fleet's lanes rather than of the queue: at 1M splits a dense
 * `assignee` is 4 MB a decision for the caller to take in and collect, for
 * a few hundred assigned rows (issue 30, decision 0041).
 */
export interface AssignedRows {
  readonly members: readonly string[];
  readonly rows: Int32Array;
  readonly assignees: Int32Array;
  readonly stats: AssignmentStats;
}

/** The rows `assignee` assigns (member index ≥ 0), ascending, and their member indices. */
export function assignedRowsOf(assignee: Int32Array): { rows: Int32Array; assignees: Int32Array } {
  let n = 0;
  for (let r = 0; r < assignee.length; r++) if (assignee[r]! >= 0) n++;
  const rows = new Int32Array(n);
  const assignees = new Int32Array(n);
  for (let r = 0, k = 0; r < assignee.length; r++) {
    const j = assignee[r]!;
    if (j < 0) continue;
    rows[k] = r;
    assignees[k++] = j;
  }
  return { rows, assignees };
}

/**
 * Sent as an object task's read begins (pool.ts): the thread builds the
 * member table meanwhile, while it would otherwise wait for the task
 * (members.ts; 8–30 ms at 10k members). Only a hint: a thread keeps the
 * table, and the next object task uses it when its members, caps and seed
 * are the same (with several threads it may reach another one).
 */
export interface MembersTask {
  kind: 'members';
  seed: string;
  memberIds: string[];
  memberCaps: Float64Array<ArrayBuffer>;
}

export type ThreadTask = ObjectTask | ColumnarTask | MembersTask;

/** A row no output place holds (ThreadReply `slot`). */
export const NO_SLOT = 0xffffffff;

export type ThreadReply =
  | {
      ok: true;
      kind: 'object';
      /** Per output key (the result's key order): the index of that member in `memberIds`. */
      memberOrder: Int32Array;
      /** Key k's splits are places off[k] .. off[k+1]) of the output, in output order. */
      off: Uint32Array;
      /**
       * Per row of `input.splits`: its place in the output, or NO_SLOT
       * (not assigned). Why not rows per place: the caller then reads its
       * ids in row order and writes each to its place, where gathering ids
       * place by place read them at random (object-result.ts `rebuild`).
       * In the task's `slot` memory when it lent some.
       */
      slot: Uint32Array<ArrayBufferLike>;
      stats: AssignmentStats;
    }
  | {
      ok: true;
      kind: 'columnar';
      members: string[];
      assignee: Int32Array;
      stats: AssignmentStats;
      /** The sort of a snapshot that had no cached order, laid out (the caller's pool adopts it: `adoptSorted`). */
      sorted: SortedState | null;
    }
  /** A ColumnarTask's decision with `assignedOnly`: the rows it assigns (AssignedRows), and `sorted` as above. */
  | {
      ok: true;
      kind: 'assigned';
      members: string[];
      rows: Int32Array;
      assignees: Int32Array;
      stats: AssignmentStats;
      sorted: SortedState | null;
    }
  /** A MembersTask's table is built (nothing else to say). */
  | { ok: true; kind: 'members' }
  /** Two rows share a 64-bit key: the caller validates (a duplicate id) or decides in-thread (a true collision). */
  | { ok: true; kind: 'duplicates' }
  /** A columnar snapshot without ids had colliding keys: the caller sends it again with ids. */
  | { ok: true; kind: 'needs-ids' }
  | { ok: false; code: string; message: string };
