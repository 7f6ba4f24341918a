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
 * SplitfleetError). It imports the wire types (wire.ts), never pool.ts, and
 * not piscina (STYLE rule 3), so it cannot mark a reply's buffers to be
 * moved (piscina's move marker is a private symbol). It shares them
 * instead: a reply's arrays are copied here into SharedArrayBuffers, which
 * cross without a copy, where a cloned reply is copied on the caller's
 * thread, in one turn of its loop (the columnar reply's ~30 MB of sorted
 * columns at 1M took 30–50 ms there).
 */
import { SplitfleetError } from '../errors.js';
import { ColumnarPool } from './columnar.js';
import { columnarDecisionOrNull, decideObjectTask, prepareMembers } from './wasm.js';
import type { ColumnarTask, ThreadReply, ThreadTask } from './wire.js';

function runColumnar(t: ColumnarTask): ThreadReply {
  const pool = ColumnarPool.fromSnapshot(t.snapshot);
  const d = columnarDecisionOrNull(pool);
  if (d === null) return { ok: true, kind: 'needs-ids' };
  // The thread lays the sorted columns out, so that the caller adopts them without gathering 1M rows.
  const sorted = t.snapshot.order === null ? pool.sortedState() : null;
  return { ok: true, kind: 'columnar', members: d.members.slice(), assignee: d.assignee, stats: d.stats, sorted };
}

type Column = Int32Array | Uint32Array | Float64Array | Uint8Array;

/** A copy of `a` in shared memory (this thread keeps no reference to it). */
function shared<A extends Column>(a: A): A {
  const Make = a.constructor as new (buffer: SharedArrayBuffer) => A;
  const s = new Make(new SharedArrayBuffer(a.byteLength));
  (s as Column).set(a as never);
  return s;
}

/** `r` with its arrays in shared memory. */
function sharedReply(r: ThreadReply): ThreadReply {
  if (!r.ok) return r;
  // A slot in the caller's lent memory is the caller's already.
  if (r.kind === 'object') return { ...r, memberOrder: shared(r.memberOrder), off: shared(r.off), slot: r.slot.buffer instanceof SharedArrayBuffer ? r.slot : shared(r.slot) };
  if (r.kind !== 'columnar') return r;
  const s = r.sorted;
  const sorted = s === null ? null : {
    order: shared(s.order), pos: shared(s.pos),
    sorted: { weight: shared(s.sorted.weight), lease: shared(s.sorted.lease), prev: shared(s.sorted.prev), rec: shared(s.sorted.rec), flags: shared(s.sorted.flags) },
  };
  return { ...r, assignee: shared(r.assignee), sorted };
}

/** Runs one task; never throws. Exported for the in-thread tests of the wire format. */
export function runTask(t: ThreadTask): ThreadReply {
  try {
    if (t.kind === 'members') {
      prepareMembers(t);
      return { ok: true, kind: 'members' };
    }
    return sharedReply(t.kind === 'object' ? decideObjectTask(t) : runColumnar(t));
  } catch (e) {
    if (e instanceof SplitfleetError) return { ok: false, code: e.code, message: e.message };
    return { ok: false, code: 'ENGINE_FAILURE', message: `pool thread: ${e instanceof Error ? e.message : String(e)}` };
  }
}

/** Piscina's handler. */
export default function handler(t: ThreadTask): ThreadReply {
  return runTask(t);
}
