/**
 * The user-facing shapes of a coordinated job: the planner the leader runs
 * and the split handler every worker runs in each lane.
 *
 * `Descriptor` and `Progress` type a job's descriptors and committed
 * progress; both default to `Json`, so untyped callers see what they always
 * did. They are promises the job's own code keeps, not runtime checks: the
 * store holds JSON, and a handler is given whatever the planner wrote and
 * the split's previous owner committed (possibly an older build of the job).
 * Both must be JSON types: use `type` aliases, not `interface`s (an interface
 * has no index signature, so TypeScript does not treat it as `Json`).
 */
import type { DivisionProposal } from '../protocol/division.js';
import type { Json } from '../protocol/records.js';

export type { DivisionProposal, Json };

/**
 * One split as the planner reports it. `descriptor` may be left out (it is
 * stored as `null`) only when `Descriptor` admits `null`, as the default
 * `Json` does: a handler typed for a descriptor always gets one.
 */
export type PlannedSplit<Descriptor extends Json = Json> = {
  /** Deterministic id: re-planning the same work yields the same id. */
  id: string;
  /** Integer cost estimate (bytes, rows), 0 ≤ weight ≤ Number.MAX_SAFE_INTEGER. */
  weight: number;
} & (null extends Descriptor
  ? {
      /** Everything a worker needs to start the split (JSON); left out, it is `null`. */
      descriptor?: Descriptor;
    }
  : {
      /** Everything a worker needs to start the split (JSON). */
      descriptor: Descriptor;
    });

/** What one run of the planner returns. */
export interface PlanResult<Descriptor extends Json = Json> {
  /** Every split of the job known so far; splits already created are left as they are. */
  splits: PlannedSplit<Descriptor>[];
  /** True for a bounded job: no split will ever be added. */
  final: boolean;
  /** Opaque planner state, handed back on the next plan (open plans, and pages). */
  cursor?: Json;
  /**
   * A page of a larger listing (`final: false`): the leader seeds it, keeps
   * `cursor` on the plan record, and calls the planner again at once with it
   * (not after `replanIntervalMs`), until a result without `more`. So a 10M
   * job is planned a page at a time, and never held whole in the leader.
   * Ignored on a final result.
   */
  more?: boolean;
  /**
   * How many splits the whole listing is expected to hold, for a paged
   * planner that knows (an integer ≥ 0; a hint, not a promise). The leader
   * makes room for that many at once instead of growing its tables page by
   * page: each growth copies them, and at millions of splits a copy holds
   * its event loop for hundreds of milliseconds. Honoured up to 16,777,216
   * splits, or 64 times the splits known after the page if that is more.
   */
  expected?: number;
}

/** What the leader hands the planner on each run. */
export interface PlannerContext {
  /** The cursor the previous plan returned (stored on the plan record). */
  cursor: Json | undefined;
  /** The leader generation planning now. */
  generation: number;
  /** Aborted when this process stops leading. */
  signal: AbortSignal;
}

/**
 * User code that enumerates splits. Runs only on the leader, and again every
 * `replanIntervalMs` while the plan is open; must be idempotent (same ids for
 * the same work): existing splits are never re-created.
 */
export type Planner<Descriptor extends Json = Json> =
  (context: PlannerContext) => Promise<PlanResult<Descriptor>> | PlanResult<Descriptor>;

/** What `split.fail(reason, options)` may ask for. */
export interface FailOptions {
  /** The split can never be processed: quarantine it at once (one attempt consumed, the reason kept). */
  permanent?: boolean;
  /** Offer the split again after exactly this long (ms), instead of the `retryBackoff` policy's wait. */
  retryInMs?: number;
}

/** A held split, as the handler sees it. */
export interface SplitHandle<Descriptor extends Json = Json, Progress extends Json = Json> {
  /** The split's id, as the planner gave it. */
  readonly id: string;
  /** The split's weight, as the planner gave it; after a division, its primary part's (decision 0063). */
  readonly weight: number;
  /**
   * The end of this split's part after a division (what the handler's own proposal said), or
   * undefined while the split is whole. A handler that takes over a divided split stops here.
   */
  readonly end: Json | undefined;
  /** The planner's descriptor for this split. */
  readonly descriptor: Descriptor;
  /** The last committed progress (null for a fresh split): resume from here. */
  readonly progress: Progress | null;
  /** Tenancy number of this claim. */
  readonly epoch: number;
  /** Delivery attempts consumed before this claim. */
  readonly attempts: number;
  /**
   * Aborted when the lane must stop at once: the split was lost (a fenced
   * commit failed), its revocation was forced, the process is stopping
   * without a drain, or the handler was silent past `heartbeatTimeoutMs`
   * (then `signal.reason` is a SplitfleetError with code HEARTBEAT_TIMEOUT).
   * Nothing the handler writes afterwards lands.
   */
  readonly signal: AbortSignal;
  /**
   * Aborted when the split is being revoked cooperatively: stop intake at a
   * safe boundary, make a final `commit`, then return from the handler.
   */
  readonly drainSignal: AbortSignal;
  /**
   * Fenced progress commit. Throws SplitfleetError('LEASE_LOST') when the split is no longer ours (nothing written).
   * `options.done` (0 to 1): the share of this split's part now done, which the leader reads to
   * choose what to divide (decision 0063). A number `progress` past a number `end` is refused (INVALID_INPUT).
   */
  commit(progress: Progress, options?: CommitOptions): Promise<void>;
  /**
   * Says the handler has processed up to `progress`, without waiting for a write: the lane commits
   * the latest advance every `autoCommitMs` (default 1 s), and its release (the handler returning,
   * a drain) carries it, so a handler needs no commit timer. `complete()` without progress
   * completes at the latest advance. Bad options throw INVALID_INPUT.
   */
  advance(progress: Progress, options?: CommitOptions): void;
  /** Terminal commit: the split is done. */
  complete(progress?: Progress): Promise<void>;
  /**
   * The split cannot be processed now: consumes one attempt; quarantined at
   * the cap. Otherwise it is offered again after `retryBackoff` (or exactly
   * `options.retryInMs`); `options.permanent` quarantines it at once (it can
   * never be processed). Bad options reject with INVALID_INPUT.
   */
  fail(reason: string, options?: FailOptions): Promise<void>;
  /** Gives the split up now (its final progress optional). */
  release(progress?: Progress): Promise<void>;
  /** Declines a requested drain: the release is forced at once and the uncommitted tail replays elsewhere. */
  decline(): void;
  /**
   * Says the handler is alive without committing (`heartbeatTimeoutMs`: a
   * lane silent that long, no commit and no heartbeat, is aborted with
   * reason HEARTBEAT_TIMEOUT and reports a failure). Cheap: nothing is
   * written to the store; `details` (small JSON, optional) is kept in this
   * process's memory only, the last one logged if the lane times out.
   * Ignored once `signal` has aborted.
   */
  heartbeat(details?: Json): void;
  /**
   * Makes this split divisible (substrate.md, "Dividing a running split"): when the leader asks,
   * `callback` gets the request and either calls `request.divide(proposal)` (its promise says
   * whether the division landed; the handler must not process past the proposed end before it
   * resolves) or returns without calling it, which declines. One callback per lane; a later call
   * replaces it. Without one, a request is left unanswered and nothing is written: the split
   * runs whole.
   */
  onDivide(callback: DivideCallback<Progress>): void;
}

/** `commit`'s options. */
export interface CommitOptions {
  /** The share of the split's current part done, 0 to 1 (what the leader reads to choose a split to divide). */
  done?: number;
}

/** What a handler is asked when the leader would like its split divided (decision 0063). */
export interface DivisionRequest<Progress extends Json = Json> {
  /** The division's sequence number on this split (1 for its first): the residual's id ends in `÷{seq}`. */
  readonly seq: number;
  /** The share of the weight left the leader would like moved (0.5: half). */
  readonly share: number;
  /** The weight of the split's current part. */
  readonly weight: number;
  /** The last committed progress, and the current part's end (undefined while whole). */
  readonly progress: Progress | null;
  readonly end: Json | undefined;
  /**
   * Divides: one fenced transaction records `proposal.end` and creates the residual. Resolves true
   * once it landed (the handle's `end` and `weight` are the primary part's from then on), false
   * when it did not and the split is still ours and whole (go on to the old end). Rejects with
   * LEASE_LOST when the split is no longer ours (stop: the outcome may be either), and with
   * INVALID_INPUT, naming the field, for a bad proposal (nothing written).
   */
  divide(proposal: DivisionProposal): Promise<boolean>;
}

/** A handler's answer to division requests: call `request.divide`, or return without calling it to decline. */
export type DivideCallback<Progress extends Json = Json> = (request: DivisionRequest<Progress>) => void | Promise<void>;

/**
 * Processes one split in one lane. Returning without `complete`/`fail`/
 * `release` releases the split with its last committed progress (the normal
 * end of a cooperative drain). Throwing counts as `fail(error.message)`
 * (a `PermanentFailure` as `fail(error.message, { permanent: true })`),
 * except rethrowing a retryable SplitfleetError (a store failure one of the
 * handle's own writes raised): that releases the split without consuming a
 * delivery attempt, since a store outage says nothing about the split.
 */
export type SplitHandler<Descriptor extends Json = Json, Progress extends Json = Json> =
  (split: SplitHandle<Descriptor, Progress>) => Promise<void>;

/** How a job ended, for a final plan. */
export type JobVerdict = 'complete' | 'stalled';

/**
 * How one coordinator's membership ended (`done`, `run()`): the job's verdict,
 * or `'stopped'` when it ended before one (stop(), close(), a signal to
 * `run()`; an open plan ends only so). A fatal error rejects instead.
 */
export type RunOutcome = JobVerdict | 'stopped';
