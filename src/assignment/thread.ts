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
 * not piscina (STYLE rule 3); so its replies are copied, not transferred
 * (piscina's move marker is a private symbol): at 1M splits that is the 4 MB
 * of rows, about 2 ms on the caller.
 */
import { SplitfleetError } from '../errors.js';
import { ColumnarPool } from './columnar.js';
import { columnarDecisionOrNull, decideObjectTask } from './wasm.js';
import type { ColumnarTask, ThreadReply, ThreadTask } from './wire.js';

function runColumnar(t: ColumnarTask): ThreadReply {
  const pool = ColumnarPool.fromSnapshot(t.snapshot);
  const d = columnarDecisionOrNull(pool);
  if (d === null) return { ok: true, kind: 'needs-ids' };
  // The thread lays the sorted columns out, so that the caller adopts them without gathering 1M rows.
  const sorted = t.snapshot.order === null ? pool.sortedState() : null;
  return { ok: true, kind: 'columnar', members: d.members.slice(), assignee: d.assignee as Int32Array<ArrayBuffer>, stats: d.stats, sorted };
}

/** Runs one task; never throws. Exported for the in-thread tests of the wire format. */
export function runTask(t: ThreadTask): ThreadReply {
  try {
    return t.kind === 'object' ? decideObjectTask(t) : runColumnar(t);
  } catch (e) {
    if (e instanceof SplitfleetError) return { ok: false, code: e.code, message: e.message };
    return { ok: false, code: 'ENGINE_FAILURE', message: `pool thread: ${e instanceof Error ? e.message : String(e)}` };
  }
}

/** Piscina's handler. */
export default function handler(t: ThreadTask): ThreadReply {
  return runTask(t);
}
