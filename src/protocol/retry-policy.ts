/**
 * The retry policy of a failed split (substrate.md, "Releasing, completing,
 * failing"; docs/decisions/0032): how long a failure report makes its split
 * wait (`notBefore` on its record), and whether a split is due yet.
 *
 * Invariants:
 * - The wait after the failure that brought `attempts` to n is drawn in
 *   [c · (1 − jitter), c) with c = min(maxMs, initialMs · factor^(n−1)): the
 *   ceiling never shrinks as attempts grow and never passes maxMs (full
 *   jitter by default, as protocol/backoff.ts draws it).
 * - `retryInMs`, when the report asks, replaces the policy for that failure
 *   exactly (no jitter, no cap).
 * - A split whose `notBefore` is after `now` is not claimable, by any worker,
 *   and not assignable, by the leader; `notBefore` is epoch ms on the writer's
 *   clock, so a reader whose clock lags waits a little longer, never less
 *   than the writer's clock says (correctness rests on the fences, not on it).
 *
 * Pure: the time (`now`) and the random draw come in as arguments.
 */
import { MAX_RETRY_FACTOR, MAX_TIMER_MS, RETRY_BACKOFF_DEFAULTS, type RetryBackoff } from '../config.js';
import { backoffDelay } from './backoff.js';
import type { SplitRecord } from './records.js';
import { jsStringOrder } from '../js-order.js';

export type { RetryBackoff };
export { MAX_RETRY_FACTOR, RETRY_BACKOFF_DEFAULTS };

/** The ceiling of the wait after the failure that brought the split's attempts to `attempts` (≥ 1). */
export function retryCeiling(attempts: number, policy: Readonly<Required<RetryBackoff>>): number {
  return backoffDelay(Math.max(0, attempts - 1), { base: policy.initialMs, max: policy.maxMs, factor: policy.factor, min: 0 }, () => 1);
}

/**
 * The wait after the failure that brought the split's attempts to
 * `attempts`, for a draw in [0, 1): in [ceiling · (1 − jitter), ceiling],
 * the ceiling itself for jitter 0 (backoffDelay's full jitter above the floor).
 */
export function retryDelay(attempts: number, policy: Readonly<Required<RetryBackoff>>, draw: number): number {
  const ceiling = retryCeiling(attempts, policy);
  if (policy.jitter <= 0) return ceiling;
  const floor = Math.floor(ceiling * (1 - Math.min(1, policy.jitter)));
  return backoffDelay(Math.max(0, attempts - 1), { base: policy.initialMs, max: policy.maxMs, factor: policy.factor, min: floor }, () => draw);
}

/** What a failure report asks for, as the handler said it. */
export interface FailureOptions {
  /** Quarantine at once: the split can never be processed (one attempt consumed). */
  permanent?: boolean;
  /** Wait exactly this long (ms) before the split is offered again, instead of the policy's backoff. */
  retryInMs?: number;
}

/** How a failure came about: the handler's report or throw, a permanent one, a heartbeat timeout. */
export type FailureKind = 'error' | 'permanent' | 'timeout';

/** A failure report as the lane writes it (failedRecord's input). */
export interface FailureReport {
  readonly reason: string;
  readonly permanent: boolean;
  /** When the split may be offered again (epoch ms); ignored when the report quarantines it. */
  readonly notBefore: number;
  /** The wait itself (ms): what a reader's own clock bounds the wait by (`dueAt`). */
  readonly waitMs: number;
}

/**
 * The report a lane writes for a failure at `now`: permanent as asked, and
 * `notBefore` from `retryInMs` when given, else from the policy, for the
 * attempt count the report reaches.
 */
export function failureReport(
  reason: string, options: FailureOptions, attemptsAfter: number, now: number, policy: Readonly<Required<RetryBackoff>>, draw: number,
): FailureReport {
  const wait = options.retryInMs !== undefined ? options.retryInMs : retryDelay(attemptsAfter, policy, draw);
  return { reason, permanent: options.permanent === true, notBefore: now + wait, waitMs: wait };
}

/** The most `retryInMs` may be (Node's longest timer, as config.ts's MAX_TIMER_MS). */
export const MAX_RETRY_IN_MS = MAX_TIMER_MS;

/**
 * What is wrong with the options a handler passed to `fail()`, or undefined
 * when nothing is (the message names the field and the rule).
 */
export function failureOptionsProblem(options: unknown): string | undefined {
  if (options === undefined) return undefined;
  if (typeof options !== 'object' || options === null || Array.isArray(options)) return `fail options: must be an object (got ${describe(options)})`;
  const o = options as Record<string, unknown>;
  for (const k of Object.keys(o)) {
    if (k !== 'permanent' && k !== 'retryInMs') return `fail options: unknown field ${JSON.stringify(k)}; known fields are permanent, retryInMs`;
  }
  if (o.permanent !== undefined && typeof o.permanent !== 'boolean') return `fail options.permanent: must be a boolean (got ${describe(o.permanent)})`;
  const r = o.retryInMs;
  if (r !== undefined && (typeof r !== 'number' || !Number.isSafeInteger(r) || r < 0 || r > MAX_RETRY_IN_MS)) {
    return `fail options.retryInMs: must be an integer from 0 to ${MAX_RETRY_IN_MS} (ms) (got ${describe(r)})`;
  }
  return undefined;
}

function describe(v: unknown): string {
  return typeof v === 'number' || typeof v === 'boolean' || v === null || v === undefined ? String(v) : typeof v === 'string' ? JSON.stringify(v) : typeof v;
}

/**
 * When a failed split falls due for a reader that first saw its record at
 * `seenAt` (the reader's own clock, epoch ms): the record's `notBefore`, but
 * never later than `seenAt + waitMs`. `notBefore` is on the writer's clock; a
 * writer whose clock runs ahead, or a reader whose clock lags, would
 * otherwise park the split for the skew. A record without `waitMs` (an older
 * build's) is due at its `notBefore` (decision 0060). Undefined: no backoff.
 */
export function dueAt(record: Pick<SplitRecord, 'notBefore' | 'waitMs'>, seenAt: number): number | undefined {
  if (record.notBefore === undefined) return undefined;
  return record.waitMs === undefined ? record.notBefore : Math.min(record.notBefore, seenAt + record.waitMs);
}

/** `record` as a reader that first saw it at `seenAt` must treat it: its `notBefore` moved to `dueAt` (the same object when nothing moves). */
export function withDue<R extends Pick<SplitRecord, 'notBefore' | 'waitMs'>>(record: R, seenAt: number | undefined): R {
  if (record.notBefore === undefined || record.waitMs === undefined || seenAt === undefined) return record;
  const due = dueAt(record, seenAt)!;
  return due === record.notBefore ? record : { ...record, notBefore: due };
}

/** Whether a runnable split still waits out its backoff at `now`. */
export function isWaiting(record: Pick<SplitRecord, 'status' | 'notBefore'> | undefined, now: number): boolean {
  return record !== undefined && record.status === 'runnable' && record.notBefore !== undefined && record.notBefore > now;
}

/**
 * The splits of `notBefore` (split id → notBefore) still waiting at `now`,
 * sorted, and the earliest time one becomes due (undefined when none waits):
 * the leader withholds the first from its decision and decides again at the second.
 */
export function waitingSplits(notBefore: Iterable<readonly [string, number]>, now: number): { waiting: string[]; nextDueAt: number | undefined } {
  const waiting: string[] = [];
  let nextDueAt: number | undefined;
  for (const [id, at] of notBefore) {
    if (at <= now) continue;
    waiting.push(id);
    if (nextDueAt === undefined || at < nextDueAt) nextDueAt = at;
  }
  waiting.sort(jsStringOrder);
  return { waiting, nextDueAt };
}
