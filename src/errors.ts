/**
 * The one error type splitfleet throws. Every failure carries a string `code`
 * from the documented union (docs/errors.md), whether retrying can help, and
 * the underlying cause. Messages name the field, key or option and the rule.
 */

export type SplitfleetErrorCode =
  /** Input to the assignment (members, splits, weights, caps) breaks a rule. */
  | 'INVALID_INPUT'
  /** A configuration knob is missing, malformed or an impossible combination. */
  | 'INVALID_CONFIG'
  /** A record on the store cannot be read by this build (schema, JSON, id). */
  | 'INVALID_RECORD'
  /** A record belongs to a job with a different fingerprint. */
  | 'FINGERPRINT_MISMATCH'
  /** A record or request would exceed the store's size or operation limits. */
  | 'RECORD_TOO_LARGE'
  /** Another live process already runs under this instance id. */
  | 'DUPLICATE_INSTANCE'
  /** The store could not be reached or answered with an error. */
  | 'STORE_UNAVAILABLE'
  /** etcd is out of space (its NOSPACE alarm): it refuses writes until an operator compacts, defragments and disarms it. */
  | 'STORE_FULL'
  /** An operation took longer than `op_timeout`. */
  | 'TIMEOUT'
  /** This process's etcd lease expired or was revoked. */
  | 'LEASE_LOST'
  /** A split handler neither committed nor heartbeated within `heartbeatTimeoutMs`: its lane was aborted (the reason of its `signal`). */
  | 'HEARTBEAT_TIMEOUT'
  /** The WASM engine or its thread pool failed. */
  | 'ENGINE_FAILURE'
  /** The user's planner threw or returned something invalid. */
  | 'PLANNER_FAILURE'
  /** The coordinator or pool was used after it was closed. */
  | 'CLOSED'
  /** A job of that name is already defined differently (another kind or parameters), or runs under another fingerprint: nothing was written (decision 0064). */
  | 'JOB_CONFLICT'
  /** The job was deleted under a running process (`splitfleet delete --force`): it stops. */
  | 'JOB_DELETED'
  /** The store answered below a revision it had already reported: restored from an old snapshot (or another cluster). The process stops. */
  | 'STORE_RESTORED'
  /** A queued assignment request was replaced by a newer one before it ran (AssignmentPool, latest-wins). */
  | 'SUPERSEDED';

export class SplitfleetError extends Error {
  readonly code: SplitfleetErrorCode;
  readonly retryable: boolean;

  constructor(
    code: SplitfleetErrorCode,
    message: string,
    options: { retryable?: boolean; cause?: unknown } = {},
  ) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'SplitfleetError';
    this.code = code;
    this.retryable = options.retryable ?? false;
  }
}

/**
 * The one classification of a failure of a store call (or of anything the
 * coordinator awaits on the store's behalf): a SplitfleetError keeps its own
 * `code` and `retryable`; anything else (a backend bug, a foreign store that
 * breaks the contract's one-error-type rule) is STORE_UNAVAILABLE, retryable,
 * with the original as `cause`. Retryable because retrying never costs
 * safety (every write is fenced), while a fatal verdict would stop a healthy
 * process over one odd reply (docs/decisions/0017-unknown-errors-are-retryable.md).
 * Not for the user's own code: a planner or handler that throws is judged by
 * its own rule (PLANNER_FAILURE; `handlerFailure` in protocol/lanes.ts).
 */
export function storeFailure(e: unknown): SplitfleetError {
  if (e instanceof SplitfleetError) return e;
  const message = e instanceof Error ? e.message : String(e);
  return new SplitfleetError('STORE_UNAVAILABLE', message, { cause: e, retryable: true });
}

/** Whether retrying the store call that failed with `e` can help (see `storeFailure`). */
export function isRetryable(e: unknown): boolean {
  return storeFailure(e).retryable;
}

/** True when `e` is a SplitfleetError, optionally with the given code. */
export function isSplitfleetError(e: unknown, code?: SplitfleetErrorCode): e is SplitfleetError {
  return e instanceof SplitfleetError && (code === undefined || e.code === code);
}

/** Marks a PermanentFailure across copies of the library (a sandbox thread loads its own). */
const PERMANENT = Symbol.for('splitfleet.PermanentFailure');

/**
 * Thrown by a split handler that knows its split can never be processed
 * (undecodable input, a deleted source object): the split is quarantined at
 * once with this message as its reason, one attempt consumed, no retry
 * (`split.fail(reason, { permanent: true })` for a handler that does not throw).
 */
export class PermanentFailure extends Error {
  readonly [PERMANENT] = true;

  constructor(reason: string, options: { cause?: unknown } = {}) {
    super(reason, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'PermanentFailure';
  }
}

/** True when `e` is a PermanentFailure, from this copy of the library or another (a sandbox thread's). */
export function isPermanentFailure(e: unknown): e is PermanentFailure {
  return typeof e === 'object' && e !== null && (e as { [PERMANENT]?: unknown })[PERMANENT] === true;
}
