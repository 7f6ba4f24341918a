/**
 * A fake `SplitHandle` for unit tests of a handler: no store, no fleet. It
 * keeps the rules a handler meets in a lane (coordinator/lanes/lane.ts), so a test
 * shows what the handler would write:
 * - `commit` records the progress, which becomes what a takeover resumes from;
 * - `complete`, `fail` and `release` end the lane, and `signal` aborts then;
 * - after the lane ended (or `signal` aborted) every write rejects with
 *   LEASE_LOST and is recorded as refused, as a fenced write would be;
 * - `decline()` while draining forces the release at once (signal aborted);
 * - `heartbeat` is recorded, and ignored once `signal` has aborted;
 * - `divide()` asks the handler's `onDivide` callback as the leader would; a
 *   division lands unless the lane ended, and a number commit past a number
 *   `end` is refused, as in a lane.
 * The test drives it with `drain()` and `abort()`, or lets `runHandler`
 * (run-handler.ts) do so at given commits.
 */
import { SplitfleetError } from '../errors.js';
import type { CommitOptions, DivideCallback, DivisionProposal, DivisionRequest, Json, SplitHandle } from '../coordinator/types.js';
import { commitProblem, proposalProblem } from '../protocol/division.js';
import { residualId } from '../protocol/residual-ids.js';

/** The split a fake handle holds. */
export interface FakeSplitOptions<Descriptor extends Json = Json, Progress extends Json = Json> {
  /** The planner's descriptor. */
  descriptor: Descriptor;
  /** The committed progress to resume from (default null: a fresh split). */
  progress?: Progress | null;
  /** Default 'split-0'. */
  id?: string;
  /** Default 1. */
  weight?: number;
  /** Tenancy number (default 1). */
  epoch?: number;
  /** Delivery attempts consumed before this claim (default 0). */
  attempts?: number;
  /** The split's end after an earlier division (default: whole, undefined). */
  end?: Json;
}

/** One division the fake handle was asked for, and what the handler made of it. */
export type FakeDivision =
  | { kind: 'divided'; seq: number; end: Json; residual: { id: string; descriptor: Json; weight: number }; weight: number }
  | { kind: 'declined'; seq: number }
  /** The handler proposed one after the lane ended: nothing landed, and `divide()` rejected with LEASE_LOST. */
  | { kind: 'lost'; seq: number };

/** One call the handler made, or one thing done to it, in order. */
export type FakeHandleEvent<Progress extends Json = Json> =
  | { kind: 'commit'; progress: Progress }
  | { kind: 'complete'; progress: Progress | undefined }
  | { kind: 'fail'; reason: string; options: object | undefined }
  | { kind: 'release'; progress: Progress | undefined }
  | { kind: 'decline' }
  | { kind: 'heartbeat'; details: Json | undefined }
  | { kind: 'divide'; division: FakeDivision }
  | { kind: 'drain' }
  | { kind: 'abort'; reason: string }
  | { kind: 'refused'; write: 'commit' | 'complete' | 'fail' | 'release'; reason: string };

/** How the lane ended, as far as the handle saw it (undefined while it is open). */
export type FakeHandleEnd<Progress extends Json = Json> =
  | { kind: 'completed'; progress: Progress | undefined }
  | { kind: 'failed'; reason: string; options: object | undefined }
  | { kind: 'released'; progress: Progress | undefined }
  | { kind: 'declined' }
  | { kind: 'aborted'; reason: string };

/** A fake handle and its controls (`fakeSplitHandle`). */
export interface FakeSplit<Descriptor extends Json = Json, Progress extends Json = Json> {
  /** What the handler is given. */
  readonly handle: SplitHandle<Descriptor, Progress>;
  /** Every commit that landed, in order. */
  readonly commits: readonly Progress[];
  /** The last committed progress (a takeover resumes from it); the initial progress before any commit. */
  readonly committed: Progress | null;
  /** Everything in order: the handler's calls, drains, aborts, refused writes. */
  readonly events: readonly FakeHandleEvent<Progress>[];
  /** How the lane ended, if it has. */
  readonly ended: FakeHandleEnd<Progress> | undefined;
  /** True once a drain was requested. */
  readonly draining: boolean;
  /** Requests a cooperative drain (`drainSignal` aborts). Idempotent; nothing once ended. */
  drain(): void;
  /** The lane is lost or forced: `signal` aborts and every later write is refused. */
  abort(reason?: string): void;
  /**
   * Asks the handler to divide, as the leader would (`share` of what is left, default 0.5):
   * resolves with what it did once its callback has returned (declined when it set none). A
   * division lands unless the lane has ended; the handle's `end` and `weight` are then the
   * primary part's, and the residual is what a worker would be given.
   */
  divide(share?: number): Promise<FakeDivision>;
  /** Every division asked for, in order. */
  readonly divisions: readonly FakeDivision[];
  /**
   * Called after each commit lands, before the handler's `await` returns (runHandler drains here).
   * @internal runHandler's hook.
   */
  onCommit?: (count: number) => void;
  /**
   * Called before each commit is written; returning a reason fences it out (LEASE_LOST, the lane lost).
   * @internal runHandler's hook.
   */
  fenceCommit?: (count: number, progress: Progress) => string | undefined;
}

/**
 * A fake handle holding `options`' split, driven by the test (see the module comment for its rules).
 *
 * Why one function: the handle and the test's side of it (`split`) are two faces of one lane: they
 * share its state (the controllers, the commits, the events, the end) as closures and call each other
 * (a commit asks `split`'s hooks; `split.abort` ends the handle's lane); apart, that state would be
 * an object passed to both and every method would reach into it.
 */
export function fakeSplitHandle<Descriptor extends Json = Json, Progress extends Json = Json>(
  options: FakeSplitOptions<Descriptor, Progress>,
): FakeSplit<Descriptor, Progress> {
  if (options === null || typeof options !== 'object' || !('descriptor' in options)) {
    throw new SplitfleetError('INVALID_CONFIG', 'fakeSplitHandle: options.descriptor is required (the planner\'s descriptor; null if it has none)');
  }
  const id = options.id ?? 'split-0';
  if (typeof id !== 'string' || id.length === 0) throw new SplitfleetError('INVALID_CONFIG', `fakeSplitHandle: id must be a non-empty string, got ${JSON.stringify(id)}`);
  for (const field of ['weight', 'epoch', 'attempts'] as const) {
    const v = options[field];
    if (v !== undefined && (!Number.isSafeInteger(v) || v < 0)) {
      throw new SplitfleetError('INVALID_CONFIG', `fakeSplitHandle: ${field} must be a non-negative integer, got ${String(v)}`);
    }
  }
  const abort = new AbortController();
  const drain = new AbortController();
  const commits: Progress[] = [];
  const events: FakeHandleEvent<Progress>[] = [];
  let committed: Progress | null = options.progress ?? null;
  let ended: FakeHandleEnd<Progress> | undefined;

  const lost = (what: string) => new SplitfleetError('LEASE_LOST', `split ${id}: cannot ${what}, this lane no longer holds the split`);
  const end = (how: FakeHandleEnd<Progress>): void => {
    ended = how;
    if (!abort.signal.aborted) abort.abort(new SplitfleetError('LEASE_LOST', `split ${id}: lane ended (${how.kind})`));
  };
  /** A write after the end (or the abort) is fenced: refused, recorded, nothing lands. */
  const refuse = (write: 'commit' | 'complete' | 'fail' | 'release'): Promise<never> | undefined => {
    if (!ended && !abort.signal.aborted) return undefined;
    const e = lost(write);
    events.push({ kind: 'refused', write, reason: e.message });
    return Promise.reject(e);
  };
  const jsonCopy = <T>(v: T): T => (v === undefined ? v : (JSON.parse(JSON.stringify(v)) as T));
  let weight = options.weight ?? 1;
  let partEnd: Json | undefined = options.end;
  let divider: DivideCallback<Progress> | undefined;
  let advanced: Progress | undefined;
  const divisions: FakeDivision[] = [];

  // Built apart from `split`: a method the handle type of an older build lacks is no excess property.
  const handle = {
    id,
    get weight() {
      return weight;
    },
    get end() {
      return partEnd;
    },
    descriptor: options.descriptor,
    progress: options.progress ?? null,
    epoch: options.epoch ?? 1,
    attempts: options.attempts ?? 0,
    signal: abort.signal,
    drainSignal: drain.signal,
    async commit(progress: Progress, commitOptions?: CommitOptions) {
      await (refuse('commit') ?? Promise.resolve());
      const problem = commitProblem(progress, commitOptions, partEnd);
      if (problem !== undefined) throw new SplitfleetError('INVALID_INPUT', `split ${id}: ${problem}`);
      const count = commits.length + 1;
      const fenced = split.fenceCommit?.(count, progress);
      if (fenced !== undefined) {
        split.abort(fenced);
        return refuse('commit')!;
      }
      // A copy, as the store would keep: a handler mutating its object after the commit changes nothing.
      const kept = jsonCopy(progress);
      commits.push(kept);
      committed = kept;
      events.push({ kind: 'commit', progress: kept });
      split.onCommit?.(count);
    },
    // As a commit that lands at once (a lane commits advances on a timer; a test sees each as a commit).
    advance(progress: Progress, commitOptions?: CommitOptions) {
      if (ended || abort.signal.aborted) return;
      const problem = commitProblem(progress, commitOptions, partEnd);
      if (problem !== undefined) throw new SplitfleetError('INVALID_INPUT', `split ${id}: ${problem}`);
      const kept = jsonCopy(progress);
      commits.push(kept);
      committed = kept;
      advanced = kept;
      events.push({ kind: 'commit', progress: kept });
      split.onCommit?.(commits.length);
    },
    async complete(progress?: Progress) {
      await (refuse('complete') ?? Promise.resolve());
      const kept = jsonCopy(progress ?? advanced);
      if (kept !== undefined) committed = kept;
      events.push({ kind: 'complete', progress: kept });
      end({ kind: 'completed', progress: kept });
    },
    async fail(reason: string, failOptions?: object) {
      await (refuse('fail') ?? Promise.resolve());
      const why = String(reason);
      events.push({ kind: 'fail', reason: why, options: jsonCopy(failOptions) });
      end({ kind: 'failed', reason: why, options: jsonCopy(failOptions) });
    },
    async release(progress?: Progress) {
      await (refuse('release') ?? Promise.resolve());
      const kept = jsonCopy(progress);
      if (kept !== undefined) committed = kept;
      events.push({ kind: 'release', progress: kept });
      end({ kind: 'released', progress: kept });
    },
    decline() {
      // As a lane: only a drain can be declined, once.
      if (ended || !drain.signal.aborted) return;
      events.push({ kind: 'decline' });
      end({ kind: 'declined' });
    },
    heartbeat(details?: Json) {
      if (abort.signal.aborted) return;
      events.push({ kind: 'heartbeat', details: jsonCopy(details) });
    },
    onDivide(callback: DivideCallback<Progress>) {
      divider = callback;
    },
  };
  /** One request, answered as a lane answers it (answer-division.ts): the callback, then a decline if it proposed nothing. */
  const askDivision = async (share: number): Promise<FakeDivision> => {
    const seq = divisions.length + 1;
    let outcome: FakeDivision | undefined;
    const request: DivisionRequest<Progress> = {
      seq, share, weight, progress: committed, end: partEnd,
      divide: async (proposal: DivisionProposal) => {
        if (outcome) throw new SplitfleetError('INVALID_INPUT', `split ${id}: divide() may be called once per request`);
        const problem = proposalProblem(proposal);
        if (problem !== undefined) throw new SplitfleetError('INVALID_INPUT', `split ${id}: ${problem}`);
        if (ended || abort.signal.aborted) {
          // As a lane: the split is no longer ours, so the handler must stop.
          outcome = { kind: 'lost', seq };
          throw lost('divide');
        }
        weight = proposal.weight ?? Math.max(1, weight - proposal.residual.weight);
        partEnd = jsonCopy(proposal.end);
        outcome = { kind: 'divided', seq, end: partEnd, weight, residual: { id: residualId(id, seq), descriptor: jsonCopy(proposal.residual.descriptor), weight: proposal.residual.weight } };
        return true;
      },
    };
    try {
      if (divider && !ended) await divider(request);
    } catch {
      // a callback that throws declines, as in a lane
    }
    outcome ??= { kind: 'declined', seq };
    divisions.push(outcome);
    events.push({ kind: 'divide', division: outcome });
    return outcome;
  };
  const split: FakeSplit<Descriptor, Progress> = {
    get commits() {
      return commits;
    },
    get committed() {
      return committed;
    },
    get events() {
      return events;
    },
    get ended() {
      return ended;
    },
    get draining() {
      return drain.signal.aborted;
    },
    get divisions() {
      return divisions;
    },
    divide(share = 0.5) {
      return askDivision(share);
    },
    drain() {
      if (ended || drain.signal.aborted) return;
      events.push({ kind: 'drain' });
      drain.abort();
    },
    abort(reason = 'aborted by the test') {
      if (ended) return;
      events.push({ kind: 'abort', reason });
      end({ kind: 'aborted', reason });
    },
    handle,
  };
  return split;
}
