/**
 * The pool thread's entry (AssignmentPool runs the compiled
 * dist/src/assignment/thread.js): decides a task of row columns with the
 * WASM engine and returns numbers only — for the object form each member's
 * row indices (the caller reads its own id strings), for the columnar form
 * `assignee` per row. It writes the object form's columns straight into
 * engine memory (object-task.ts) and never rebuilds input objects.
 *
 * Invariants: nothing is thrown across the thread boundary (a failure is
 * `{ ok: false, code, message }`, which the pool turns back into a
 * SplitfleetError). It imports the wire types (wire.ts), never pool.ts.
 * A reply's arrays are copied here into buffers of their own and **moved**
 * to the caller with piscina's `move` (the one piscina import of this file:
 * its move marker is a private symbol), so they cross without a copy (a
 * cloned reply is copied on the caller's thread, in one turn of its loop:
 * the columnar reply's ~30 MB of sorted columns at 1M took 30–50 ms there).
 * Not SharedArrayBuffers: V8 charges a shared buffer only to the thread that
 * made it, so the caller, which drops them, never felt their memory and did
 * not collect them; at 1M splits that kept ~31 MB a decision alive, and a
 * leader's RSS climbed by gigabytes in a minute (issue 30).
 */
import { move, transferableSymbol, valueSymbol } from 'piscina';
import { SplitfleetError } from '../errors.js';
import { ColumnarPool } from './columnar.js';
import { columnarDecisionOrNull, decideObjectTask, prepareMembers } from './wasm.js';
import { assignedRowsOf, type ColumnarTask, type ThreadReply, type ThreadTask } from './wire.js';

function runColumnar(t: ColumnarTask): ThreadReply {
  const pool = ColumnarPool.fromSnapshot(t.snapshot);
  const d = columnarDecisionOrNull(pool);
  if (d === null) return { ok: true, kind: 'needs-ids' };
  // The thread lays the sorted columns out, so that the caller adopts them without gathering 1M rows.
  const sorted = t.snapshot.order === null ? pool.sortedState() : null;
  if (t.assignedOnly === true) {
    const { rows, assignees } = assignedRowsOf(d.assignee);
    return { ok: true, kind: 'assigned', members: d.members.slice(), rows, assignees, stats: d.stats, sorted };
  }
  return { ok: true, kind: 'columnar', members: d.members.slice(), assignee: d.assignee, stats: d.stats, sorted };
}

type Column = Int32Array | Uint32Array | Float64Array | Uint8Array;

/** A copy of `a` in a buffer of its own, listed in `moved` (this thread keeps no reference to it). */
function movable<A extends Column>(a: A, moved: ArrayBuffer[]): A {
  const c = a.slice() as A;
  moved.push(c.buffer as ArrayBuffer);
  return c;
}

/** `a` itself, listed in `moved` (it is a fresh array whose buffer is its own). */
function moveAs<A extends Column>(a: A, moved: ArrayBuffer[]): A {
  moved.push(a.buffer as ArrayBuffer);
  return a;
}

/** `r` with its arrays in buffers of their own, each listed in `moved` (to move to the caller). */
function movableReply(r: ThreadReply, moved: ArrayBuffer[]): ThreadReply {
  if (!r.ok) return r;
  const m = <A extends Column>(a: A): A => movable(a, moved);
  // A slot in the caller's lent memory is the caller's already.
  if (r.kind === 'object') return { ...r, memberOrder: m(r.memberOrder), off: m(r.off), slot: r.slot.buffer instanceof SharedArrayBuffer ? r.slot : m(r.slot) };
  if (r.kind !== 'columnar' && r.kind !== 'assigned') return r;
  const s = r.sorted;
  const sorted = s === null ? null : {
    order: m(s.order), pos: m(s.pos),
    sorted: { weight: m(s.sorted.weight), lease: m(s.sorted.lease), prev: m(s.sorted.prev), rec: m(s.sorted.rec), flags: m(s.sorted.flags) },
  };
  // Assigned rows are fresh arrays of this thread's already: moved as they are.
  if (r.kind === 'assigned') return { ...r, rows: moveAs(r.rows, moved), assignees: moveAs(r.assignees, moved), sorted };
  return { ...r, assignee: m(r.assignee), sorted };
}

/** Runs one task; never throws. Exported for the in-thread tests of the wire format. */
export function runTask(t: ThreadTask): ThreadReply {
  try {
    if (t.kind === 'members') {
      prepareMembers(t);
      return { ok: true, kind: 'members' };
    }
    return t.kind === 'object' ? decideObjectTask(t) : runColumnar(t);
  } catch (e) {
    if (e instanceof SplitfleetError) return { ok: false, code: e.code, message: e.message };
    return { ok: false, code: 'ENGINE_FAILURE', message: `pool thread: ${e instanceof Error ? e.message : String(e)}` };
  }
}

/** Piscina's handler: the reply, its arrays moved to the caller. */
export default function handler(t: ThreadTask): ThreadReply {
  const moved: ArrayBuffer[] = [];
  const reply = movableReply(runTask(t), moved);
  if (moved.length === 0) return reply;
  // piscina's transferable form: the value, and the buffers to move with it.
  return move({ [transferableSymbol]: moved, [valueSymbol]: reply } as never) as unknown as ThreadReply;
}
