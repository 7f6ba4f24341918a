/**
 * What crosses the sandbox's thread boundary, imported by both sandbox.ts
 * (the main side) and sandbox-thread.ts (the Piscina entry), which never
 * import each other: the tasks, the replies, the messages of a split's
 * MessagePort, and the layout of its shared flags.
 *
 * Invariants: nothing is thrown across the boundary (Node drops an error's
 * class and `code` on a postMessage): an error travels as a `WireError` and
 * each side rebuilds it with `fromWire` (in the thread, the thread's own
 * SplitfleetError class, so `isSplitfleetError` works there). Types,
 * constants and the two error conversions only: no imports of piscina or of
 * either side.
 */
import type { MessagePort } from 'node:worker_threads';
import { isPermanentFailure, PermanentFailure, SplitfleetError, type SplitfleetErrorCode } from '../../errors.js';
import type { Json } from '../../protocol/records.js';

/**
 * Int32 slots of a split task's SharedArrayBuffer, set by the main side and
 * read by the thread when its handler reads `split.signal` or
 * `split.drainSignal`: a handler that never yields still sees a drain.
 */
export const FLAG_ABORTED = 0;
export const FLAG_DRAINING = 1;
export const FLAG_SLOTS = 2;

/** An error as data. `code` and `retryable` are set for a SplitfleetError, `permanent` for a PermanentFailure. */
export interface WireError {
  message: string;
  name?: string;
  code?: string;
  retryable?: boolean;
  permanent?: boolean;
}

/** The copied fields of a SplitHandle. */
export interface SplitFields {
  id: string;
  weight: number;
  descriptor: Json;
  progress: Json;
  epoch: number;
  attempts: number;
  /** The split's end after a division (decision 0063); absent while whole. */
  end?: Json;
}

/** Imports the module and checks the export, nothing else (`ready()`). */
export interface ProbeTask {
  kind: 'probe';
  module: string;
  exportName: string;
}

/** Runs the handler on one split. */
export interface SplitTask {
  kind: 'split';
  module: string;
  exportName: string;
  split: SplitFields;
  /** FLAG_SLOTS Int32 slots (shared, not transferred). */
  flags: SharedArrayBuffer;
  /** The thread's end of the split's channel (transferred). */
  port: MessagePort;
}

export type SandboxTask = ProbeTask | SplitTask;

/** A task's outcome: `load` when the module or its export could not be had, `handler` when the handler threw. */
export type SandboxReply = { ok: true } | { ok: false; stage: 'load' | 'handler'; error: WireError };

/** The handle's methods the thread calls on the real handle. */
export type HandleMethod = 'commit' | 'advance' | 'complete' | 'fail' | 'release' | 'decline' | 'heartbeat'
  /** Division (decision 0063): the handler set a callback; it proposed a division of request n; it returned without one. */
  | 'onDivide' | 'divide' | 'undivided';

/** Main → thread: the leader asks the split to divide; `request` numbers it for the thread's answer. */
export interface DivideRequestMessage {
  type: 'divide-request';
  request: number;
  seq: number;
  share: number;
  weight: number;
  progress: Json;
  end?: Json;
}

/** The reply value of a `divide` call: whether it landed, and the part's end and weight as they are now. */
export interface DivideOutcome {
  landed: boolean;
  end?: Json;
  weight: number;
}

/** The thread forwards at most one heartbeat per this many ms (the latest details win), so a per-record heartbeat does not flood the port. */
export const HEARTBEAT_FORWARD_MS = 100;

/** Thread → main: a call of the real handle's method. */
export interface CallMessage {
  type: 'call';
  id: number;
  method: HandleMethod;
  args: unknown[];
}

/** Main → thread: a call's outcome, or a signal that aborted. */
export type MainMessage =
  | { type: 'reply'; id: number; ok: true; value?: DivideOutcome }
  | DivideRequestMessage
  | { type: 'reply'; id: number; ok: false; error: WireError }
  | { type: 'drain' }
  | { type: 'abort'; reason: WireError };

/** `e` as data, keeping a SplitfleetError's code and retryability. */
export function toWire(e: unknown): WireError {
  if (e instanceof SplitfleetError) return { message: e.message, name: e.name, code: e.code, retryable: e.retryable };
  // The thread's handler module may import its own copy of the library: recognised by its brand.
  if (isPermanentFailure(e)) return { message: e.message, name: 'PermanentFailure', permanent: true };
  if (e instanceof Error) return { message: e.message, name: e.name };
  return { message: String(e) };
}

/** The error again: a SplitfleetError when it had a code, a PermanentFailure when it was one, else an Error with the same message and name. */
export function fromWire(w: WireError): Error {
  if (w.permanent === true) return new PermanentFailure(w.message);
  if (w.code !== undefined) return new SplitfleetError(w.code as SplitfleetErrorCode, w.message, { retryable: w.retryable ?? false });
  const e = new Error(w.message);
  if (w.name !== undefined) e.name = w.name;
  return e;
}
