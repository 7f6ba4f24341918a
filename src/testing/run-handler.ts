/**
 * runHandler: one run of a handler on a fake handle (fake-handle.ts), with a
 * drain or a loss at a given commit, and what a lane would make of its end:
 * returning releases at the last commit, throwing reports a failure (a
 * retryable SplitfleetError releases without consuming an attempt), a drain
 * the handler does not finish within `drainDeadlineMs` is forced. So a unit
 * test shows a handler's drain and commit paths without a fleet or a store,
 * and, with `divideAt`, its division: both parts, as a worker would run them.
 */
import { isSplitfleetError, SplitfleetError } from '../errors.js';
import type { Json, SplitHandler } from '../coordinator/types.js';
import { fakeSplitHandle, type FakeDivision, type FakeHandleEnd, type FakeHandleEvent, type FakeSplitOptions } from './fake-handle.js';

/** At which commit (1 for the first; 0: before the handler starts), or a test of each commit's count and progress (asked at commits only). */
export type CommitTrigger<Progress extends Json = Json> = number | ((count: number, progress: Progress) => boolean);

/** The split, and when to drain or lose it. */
export interface RunHandlerOptions<Descriptor extends Json = Json, Progress extends Json = Json> extends FakeSplitOptions<Descriptor, Progress> {
  /** Request a drain right after this commit lands (before the handler's `await` returns); 0: before it starts. */
  drainAt?: CommitTrigger<Progress>;
  /** This commit is fenced out (LEASE_LOST, nothing written, `signal` aborted), as when the split was lost; 0: lost before it starts. */
  abortAt?: CommitTrigger<Progress>;
  /** Ask the handler to divide right after this commit lands, as the leader would (decision 0063); 0: before it starts. */
  divideAt?: CommitTrigger<Progress>;
  /** The share of what is left each division asks to move (default 0.5, the leader's). */
  divideShare?: number;
  /** A drain not finished this long after it was requested is forced (`signal` aborted). Default 10 000, as the coordinator's. */
  drainDeadlineMs?: number;
}

/** How the lane ended: what the coordinator would write. */
export type HandlerOutcome<Progress extends Json = Json> =
  | FakeHandleEnd<Progress>
  /** The handler returned without ending the lane: released at its last commit (the end of a cooperative drain). */
  | { kind: 'returned' }
  /** The handler threw: reported as `fail(message)`, or released without an attempt when `retryable` (a store failure it rethrew). */
  | { kind: 'threw'; error: unknown; retryable: boolean }
  /** The drain deadline passed first: the release was forced at the last commit. */
  | { kind: 'forced' };

/** What one run recorded. */
export interface HandlerRun<Progress extends Json = Json> {
  outcome: HandlerOutcome<Progress>;
  /** Every commit that landed, in order. */
  commits: Progress[];
  /** The last committed progress: what the split's next owner resumes from. */
  committed: Progress | null;
  /** True if a drain was requested. */
  drained: boolean;
  /** Commits that landed after the drain was requested (a cooperative drain makes one final commit). */
  commitsAfterDrain: number;
  /** Everything in order: the handler's calls, the drain, the abort, refused writes. */
  events: FakeHandleEvent<Progress>[];
  /** Each division asked for (`divideAt`), and what became of it: a landed one gives the residual a worker would run. */
  divisions: FakeDivision[];
  /** The split's end after its divisions (undefined while whole). */
  end: Json | undefined;
}

function trigger<Progress extends Json>(field: string, t: CommitTrigger<Progress> | undefined): ((count: number, progress: Progress) => boolean) | undefined {
  if (t === undefined) return undefined;
  if (typeof t === 'function') return t;
  if (!Number.isSafeInteger(t) || t < 0) {
    throw new SplitfleetError('INVALID_CONFIG', `runHandler: ${field} must be a commit number (0 or more) or a function of (count, progress), got ${String(t)}`);
  }
  return (count) => count === t;
}

/** Runs `handler` once on a fake handle of `options`' split; resolves when the handler has settled. */
export async function runHandler<Descriptor extends Json = Json, Progress extends Json = Json>(
  handler: SplitHandler<Descriptor, Progress>,
  options: RunHandlerOptions<Descriptor, Progress>,
): Promise<HandlerRun<Progress>> {
  if (typeof handler !== 'function') throw new SplitfleetError('INVALID_CONFIG', 'runHandler: handler must be a function (split) => Promise<void>');
  const drainAt = trigger('drainAt', options.drainAt);
  const abortAt = trigger('abortAt', options.abortAt);
  const divideAt = trigger('divideAt', options.divideAt);
  const share = options.divideShare ?? 0.5;
  if (!(typeof share === 'number' && share > 0 && share < 1)) throw new SplitfleetError('INVALID_CONFIG', `runHandler: divideShare must be a number 0 < x < 1, got ${String(share)}`);
  const asked: Promise<unknown>[] = [];
  const deadline = options.drainDeadlineMs ?? 10_000;
  if (!Number.isSafeInteger(deadline) || deadline < 0) {
    throw new SplitfleetError('INVALID_CONFIG', `runHandler: drainDeadlineMs must be a non-negative integer, got ${String(deadline)}`);
  }
  const split = fakeSplitHandle(options);
  let drainedAtCommit: number | undefined;
  let forced = false;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const drain = (): void => {
    if (split.draining || split.ended) return;
    drainedAtCommit = split.commits.length;
    split.drain();
    timer = setTimeout(() => {
      if (split.ended) return;
      forced = true;
      split.abort(`drain deadline (${deadline} ms) passed: release forced`);
    }, deadline);
  };
  split.fenceCommit = (count, progress) => (abortAt?.(count, progress) ? `commit ${count} fenced out (abortAt)` : undefined);
  split.onCommit = (count) => {
    if (drainAt?.(count, split.committed!)) drain();
    if (divideAt?.(count, split.committed!)) asked.push(split.divide(share));
  };
  if (options.abortAt === 0) split.abort('lost before the handler started (abortAt: 0)');
  else if (options.drainAt === 0) drain();

  let outcome: HandlerOutcome<Progress>;
  try {
    // Asked before it starts: the handler's first turn sets its callback, the request comes after it.
    if (options.divideAt === 0) asked.push(Promise.resolve().then(() => split.divide(share)));
    await handler(split.handle);
    await Promise.all(asked);
    outcome = split.ended ? endOf(split.ended, forced) : { kind: 'returned' };
  } catch (error) {
    outcome = split.ended ? endOf(split.ended, forced) : { kind: 'threw', error, retryable: isSplitfleetError(error) && error.retryable };
  } finally {
    clearTimeout(timer);
  }
  return {
    outcome,
    commits: [...split.commits],
    committed: split.committed,
    drained: drainedAtCommit !== undefined,
    commitsAfterDrain: drainedAtCommit === undefined ? 0 : split.commits.length - drainedAtCommit,
    events: [...split.events],
    divisions: [...split.divisions],
    end: split.handle.end,
  };
}

/** The lane ended before the handler settled: as the handle saw it, or forced by the deadline. */
function endOf<Progress extends Json>(end: FakeHandleEnd<Progress>, forced: boolean): HandlerOutcome<Progress> {
  return forced && end.kind === 'aborted' ? { kind: 'forced' } : end;
}
