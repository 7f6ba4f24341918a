/**
 * Lane: one held split inside a worker, and the fenced writes its handle
 * makes. Its life is one `LaneState` value that only this class changes,
 * through the methods named on each arrow (who calls each, in brackets):
 *
 *   running { timedOut, asked }
 *     │   timeOut [HeartbeatWatch]: sets timedOut (handler aborted; drains no more)
 *     │
 *     ├── beginDrain() [Revocations] ──▶ draining { drain: { startedAt, handler }, forced, asked }
 *     │                                    │   decline() [handler], drainFailed() [runLane]: drain.handler
 *     │                                    │   force() [Revocations]: forced (handler aborted)
 *     ▼                                    ▼
 *   ended { as, reason, write, drain, timedOut, asked }, from either: a terminal write lands,
 *     or lose() [Worker], a fence lost, a refusal for good
 *
 * The ending writes themselves are finishNormally() and finishWithError()
 * [runLane, Worker], force() and the handle's own complete/fail/release;
 * the lane stays running or draining until one lands. A timed-out lane is
 * still `running` to the worker (its handler may not have returned); it
 * drains no more. Nothing comes back from `ended` (decision 0073).
 *
 * Every write is one transaction guarded by the split record's
 * revision (the one this lane's claim wrote), by `progress.{id}` being at the
 * revision this lane last wrote (or read at its claim), and by `lease.{id}`
 * still being on this process's etcd lease; losing it writes nothing and
 * ends the lane. A commit writes `progress.{id}` only, so `split.{id}` (which
 * the leader and the split's next owner watch) moves only when ownership does.
 *
 * Writes of one lane are serialised, so each guard uses the revision of the
 * previous write. After the lane ends (released, completed, failed, lost) no
 * write of its handle lands.
 *
 * No lane is left open by a write the store refuses for good (not
 * retryable: too large, say): a refused commit or completion becomes a
 * failure report (one attempt, so the normal retry and quarantine rules
 * apply), a refused report is sent again with a short reason and then as a
 * release, a refused release ends the lane without a write (its split, still
 * on our session lease, goes to the orphan settler). Failure reasons are
 * bounded (protocol/reason.ts).
 *
 * With `heartbeatTimeoutMs` set, a HeartbeatWatch (heartbeat.ts) times out a
 * running lane whose handler neither commits nor heartbeats: `signal` aborts
 * (HEARTBEAT_TIMEOUT), every later write of the handle is refused, and the
 * lane reports the failure (reason `timeout: …`, one attempt) when the
 * handler returns or throws, or at the drain deadline, whichever is first.
 */
import { wallTime, type Clock } from '../../clock.js';
import type { Config } from '../../config.js';
import { isRetryable, storeFailure, SplitfleetError } from '../../errors.js';
import { backoffDelay, type BackoffPolicy } from '../../protocol/backoff.js';
import { timeoutReason } from '../../protocol/heartbeat.js';
import { laneWrite, type LaneEnd, type LaneWrite, type LaneWriteArgs, type LaneWriteKind } from '../../protocol/lanes.js';
import type { DrainHandlerState } from '../../protocol/reconcile.js';
import { failureOptionsProblem, type FailureKind, type FailureOptions } from '../../protocol/retry-policy.js';
import { boundReason } from '../../protocol/reason.js';
import type { Json, ProgressRecord, SpecRecord, SplitRecord } from '../../protocol/records.js';
import { joinTxns, laneTxn } from '../../protocol/txns.js';
import type { KeyValue, Store, Txn } from '../../store/store.js';
import { AutoCommit } from './auto-commit.js';
import { HeartbeatWatch } from './heartbeat.js';
import { LaneGuards, type WriteOutcome } from './lane-guards.js';
import { writeDivision, type DivisionLane, type DivisionWritten, type HeldParts } from './lane-division.js';
import type { DivideCallback, SplitHandle } from '../types.js';
import { commitProblem, partWeight } from '../../protocol/division.js';

/** How a lane's ending write (release, failure report, forced release) is retried while the store fails: jittered, 250 ms doubling to 4 s. */
export const TERMINAL_RETRY: BackoffPolicy = { base: 250, max: 4000, min: 25 };

export type { LaneEnd };

/** A drain under way: when it began (clock ms) and what the handler made of it (drainDecision reads both). */
export interface Drain {
  readonly startedAt: number;
  /** 'declined' (the handler said no) or 'failed' (it threw while draining): forced at once. */
  readonly handler: DrainHandlerState;
}

/** Why the worker, not the handler, released the split (the split-released event's cause). */
export type WorkerReleaseCause = 'store-failure' | 'stopping';

/** What the lane has been asked to end as so far, for the end's events and metrics. */
export interface EndAsked {
  /** Set when the worker ends the lane with a release (finishNormally's cause). */
  readonly releaseCause: WorkerReleaseCause | undefined;
  /** How the failure report last asked for came about ('error', 'permanent'), set as it is asked. */
  readonly failure: FailureKind | undefined;
}

/** The terminal write that ended a lane: the split record it put (encoded) at `revision`, where it also deleted the lease key. */
export interface TerminalWrite {
  readonly splitValue: string | undefined;
  readonly revision: number;
}

/** A lane that has ended, and everything its end's events and metrics read. */
export interface EndedLane {
  readonly kind: 'ended';
  readonly as: LaneEnd;
  /** The write that ended it, or why it was lost. */
  readonly reason: string;
  /**
   * The terminal write, when one landed. The worker hands it to its view, which may not have
   * seen it yet: a split still named would otherwise look like ours to reclaim.
   */
  readonly write: TerminalWrite | undefined;
  /** The drain it ended in, if it was draining. */
  readonly drain: Drain | undefined;
  /** The heartbeat timeout's failure reason, if it had timed out. */
  readonly timedOut: string | undefined;
  readonly asked: EndAsked;
}

/** A lane's life (see the header's diagram); only Lane changes it. */
export type LaneState =
  /** The handler runs. `timedOut`: the heartbeat timeout aborted it; its writes are refused and the lane owes that failure report. */
  | { readonly kind: 'running'; readonly timedOut: string | undefined; readonly asked: EndAsked }
  /** Asked to let go (`drainSignal` aborted). `forced`: the handler was aborted and the forced release is being written. */
  | { readonly kind: 'draining'; readonly drain: Drain; readonly forced: boolean; readonly asked: EndAsked }
  | EndedLane;

/** The writes a handle (and the shell's ending of a lane) makes: all but a division's two. */
type HandleWriteKind = Exclude<LaneWriteKind, 'divide' | 'decline'>;

export type { DivisionWritten, HeldParts };

/** What became of a claim that rode in a completion: its reads are the claim's own (the completion has none). */
export type RideOutcome = { kind: 'won'; revision: number; reads: (KeyValue | undefined)[] } | { kind: 'lost' } | { kind: 'unknown' };

/**
 * A claim to send in the same transaction as a lane's completion (decision 0055): its compares
 * and ops are joined to the completion's, so the lane that frees is taken again in the same round
 * trip. `settle` is called exactly once with what became of it.
 */
export interface RidingClaim {
  readonly txn: Txn;
  settle(outcome: RideOutcome): void;
}

export interface LaneContext {
  store: Store;
  config: Config;
  clock: Clock;
  prefix: string;
  leaseId: string;
  /** Called once when the lane ends, however it ends, with its ended state (`reason`: the write that ended it, or why it was lost). */
  onEnd: (lane: Lane, ended: EndedLane) => void;
  /** Called when the handler declines a drain: the release is forced at once. */
  onDecline?: (lane: Lane) => void;
  /** A write of unknown outcome was read back: what it turned out to be (metrics; lane-guards.ts). */
  onSettled?: (resolution: 'landed' | 'not-landed' | 'moved') => void;
  /** A `commit()` write landed (metrics: `splitfleet_commits_total`). */
  onCommitted?: () => void;
  /** The store refused a write for good (not retryable): logged and counted by the caller; the lane ends. */
  onRefused?: (lane: Lane, write: 'commit' | 'complete' | 'fail' | 'release', error: SplitfleetError) => void;
  /** The jitter stream of the ending write's retries (protocol/backoff.ts); default: Math.random. */
  random?: () => number;
  /** The claim that may ride in this lane's completion (decision 0055); none, or undefined, sends the completion alone. */
  ride?: (lane: Lane) => RidingClaim | undefined;
  /** The handler set its onDivide callback (an ask that came before it is answered now). */
  onDivider?: (lane: Lane) => void;
  /** The handler was silent past heartbeatTimeoutMs and its signal aborted (logging); `details`: its last heartbeat's. */
  onTimeout?: (lane: Lane, silentMs: number, details: Json | undefined) => void;
}

export class Lane {
  private s: LaneState = { kind: 'running', timedOut: undefined, asked: { releaseCause: undefined, failure: undefined } };
  readonly claimedAt: number;
  private readonly abort = new AbortController();
  private readonly drain = new AbortController();
  private chain: Promise<unknown> = Promise.resolve();
  /** What the next write is guarded by, and the write of unknown outcome. */
  private readonly guards: LaneGuards;
  readonly handle: SplitHandle;
  /** The handler's answer to division requests (`onDivide`), if it gave one (answer-division.ts). */
  private divideCallback: DivideCallback | undefined;
  /** The commits of `advance()` (auto-commit.ts). */
  private readonly autoCommit: AutoCommit;
  /** Present when heartbeatTimeoutMs is set. */
  private readonly watch: HeartbeatWatch | undefined;
  /** The timed-out lane's failure report once asked for: one write, however many paths ask. */
  private reportingTimeout: Promise<void> | undefined;

  constructor(
    private readonly ctx: LaneContext,
    readonly id: string,
    readonly spec: SpecRecord,
    rec: SplitRecord,
    rev: number,
    progress: Json,
    /** modRevision of `progress.{id}` as read at the claim (0: no such key yet). */
    progressRev: number,
    /** The `progress.{id}` record as read at the claim (its newer-minor fields are kept on rewrite). */
    progressRecord?: ProgressRecord,
  ) {
    this.claimedAt = ctx.clock.now();
    this.guards = new LaneGuards(
      ctx.store,
      { prefix: ctx.prefix, id, leaseId: ctx.leaseId, record: rec, revision: rev, progress, progressRevision: progressRev, progressRecord },
      ctx.onSettled,
    );
    const lane = this;
    const resumeFrom = progress;
    this.autoCommit = new AutoCommit(ctx.clock, ctx.config.autoCommitMs, (a) => lane.write('commit', { progress: a.progress, ...(a.done !== undefined ? { done: a.done } : {}) }));
    this.handle = {
      id,
      get weight() {
        return partWeight(spec, lane.guards.progressRecord);
      },
      get end() {
        return lane.guards.progressRecord?.end;
      },
      descriptor: spec.descriptor,
      progress: resumeFrom,
      epoch: rec.epoch,
      attempts: rec.attempts,
      signal: this.abort.signal,
      drainSignal: this.drain.signal,
      commit: (progress, options) => {
        const problem = commitProblem(progress, options, lane.guards.progressRecord?.end);
        if (problem !== undefined) return Promise.reject(new SplitfleetError('INVALID_INPUT', `split ${id}: ${problem}`));
        lane.autoCommit.noteCommitted(progress);
        return lane.write('commit', { progress, ...(options?.done !== undefined ? { done: options.done } : {}) });
      },
      advance: (progress, options) => {
        const problem = commitProblem(progress, options, lane.guards.progressRecord?.end);
        if (problem !== undefined) throw new SplitfleetError('INVALID_INPUT', `split ${id}: ${problem}`);
        lane.autoCommit.advance({ progress, done: options?.done });
      },
      // Without progress: at the latest advance, if the handler advanced.
      complete: (progress) => lane.write('complete', { progress: progress ?? lane.autoCommit.last?.progress }),
      fail: (reason, options) => lane.fail(String(reason), options),
      release: (progress) => lane.write('release', { progress }),
      decline: () => lane.declineDrain(),
      heartbeat: (details) => {
        if (lane.handlerAborted) return;
        lane.watch?.touch(details);
      },
      onDivide: (callback) => {
        lane.divideCallback = callback;
        // An ask that came before the callback stands: answer it now.
        ctx.onDivider?.(lane);
      },
    };
    const timeoutMs = ctx.config.heartbeatTimeoutMs;
    this.watch = timeoutMs === undefined ? undefined : new HeartbeatWatch({
      clock: ctx.clock,
      timeoutMs,
      drainDeadlineMs: ctx.config.drainDeadlineMs,
      running: () => this.s.kind === 'running',
      onTimeout: (silentMs) => this.timeOut(silentMs, timeoutMs),
      onReportDue: () => void this.reportTimeout().catch(() => undefined),
    });
  }

  /** The handler's answer to division requests (`onDivide`), if it gave one (answer-division.ts). */
  get divider(): DivideCallback | undefined {
    return this.divideCallback;
  }

  /** The lane's life: running, draining or ended (see the header's diagram). */
  get state(): LaneState {
    return this.s;
  }

  /** How the lane ended; undefined while it has not. */
  get ended(): LaneEnd | undefined {
    return this.s.kind === 'ended' ? this.s.as : undefined;
  }

  /** The heartbeat timeout's failure reason when this lane timed out (`timeout: …`); undefined otherwise. */
  get timedOut(): string | undefined {
    return this.s.kind === 'draining' ? undefined : this.s.timedOut;
  }

  /** The handler's `signal` has aborted (timed out, forced, or ended): its own writes are refused from then on. */
  private get handlerAborted(): boolean {
    switch (this.s.kind) {
      case 'running': return this.s.timedOut !== undefined;
      case 'draining': return this.s.forced;
      case 'ended': return true;
    }
  }

  /** running → running, timed out: the handler was silent too long; abort it. Its failure is reported when it returns, or at the drain deadline. */
  private timeOut(silentMs: number, timeoutMs: number): void {
    const s = this.s;
    // HeartbeatWatch times out a running lane only (a drain's deadline bounds a draining one).
    if (s.kind !== 'running' || s.timedOut !== undefined) return;
    const reason = timeoutReason(silentMs, timeoutMs);
    this.s = { ...s, timedOut: reason };
    this.ctx.onTimeout?.(this, silentMs, this.watch?.details);
    this.abort.abort(new SplitfleetError('HEARTBEAT_TIMEOUT', `split ${this.id}: ${reason}`));
  }

  /** The failure report a timed-out lane owes (one attempt), written once, however many paths ask for it. */
  private reportTimeout(): Promise<void> {
    const reason = this.timedOut!;
    this.reportingTimeout ??= this.untilWritten(() => this.fail(reason, undefined, 'timeout'));
    return this.reportingTimeout;
  }

  get record(): SplitRecord {
    return this.guards.record;
  }

  /** The last committed progress (what a takeover would resume from). */
  get committed(): Json {
    return this.guards.committed;
  }

  /** running → draining: asks the handler to drain (cooperative revocation). Idempotent. True when a drain began. */
  beginDrain(): boolean {
    const s = this.s;
    // A timed-out lane's end is decided already (its failure report, by the drain deadline at the latest).
    if (s.kind !== 'running' || s.timedOut !== undefined) return false;
    this.s = { kind: 'draining', drain: { startedAt: this.ctx.clock.now(), handler: 'draining' }, forced: false, asked: s.asked };
    this.drain.abort();
    return true;
  }

  /** Draining, the handler declined (`handle.decline()`): the release is forced at once (onDecline). */
  private declineDrain(): void {
    const s = this.s;
    if (s.kind !== 'draining' || s.drain.handler === 'declined') return;
    this.s = { ...s, drain: { ...s.drain, handler: 'declined' } };
    this.ctx.onDecline?.(this);
  }

  /** Draining, the handler threw (runLane): the release is forced at once, by the next serviceRevocations. */
  drainFailed(): void {
    const s = this.s;
    if (s.kind !== 'draining') return;
    this.s = { ...s, drain: { ...s.drain, handler: 'failed' } };
  }

  /** The end asked for so far, changed while the lane has not ended (after, its end's facts are fixed). */
  private ask(change: Partial<EndAsked>): void {
    const s = this.s;
    if (s.kind !== 'ended') this.s = { ...s, asked: { ...s.asked, ...change } };
  }

  /**
   * The handler returned normally (or the worker ends the lane, `cause` saying why): release
   * with the last committed progress.
   */
  async finishNormally(cause?: WorkerReleaseCause): Promise<void> {
    if (cause !== undefined) this.ask({ releaseCause: cause });
    if (this.timedOut !== undefined) return this.reportTimeout();
    this.watch?.stop(); // the handler is done: a slow ending write is the store's, not a hung handler
    this.autoCommit.stop();
    // Released at the latest advance (a cooperative drain replays nothing), else at the last commit.
    const advanced = this.autoCommit.uncommitted;
    await this.untilWritten(() => this.handle.release(advanced?.progress));
  }

  /**
   * The handler threw: a failure report (one attempt), unless already ended.
   * `kind` 'permanent' (a PermanentFailure) quarantines at once.
   */
  async finishWithError(error: unknown, kind: FailureKind = 'error'): Promise<void> {
    if (this.timedOut !== undefined) return this.reportTimeout();
    this.watch?.stop();
    const reason = error instanceof Error ? error.message : String(error);
    await this.untilWritten(() => this.fail(reason, kind === 'permanent' ? { permanent: true } : undefined, kind));
  }

  /**
   * A failure report: the handle's `fail(reason, options)`, and the shell's
   * (`kind` 'timeout' for a heartbeat timeout). Bad options reject with
   * INVALID_INPUT, naming the field, before anything is sent.
   */
  fail(reason: string, options?: FailureOptions, kind?: FailureKind): Promise<void> {
    const problem = failureOptionsProblem(options);
    if (problem !== undefined) return Promise.reject(new SplitfleetError('INVALID_INPUT', `split ${this.id}: ${problem}`));
    this.ask({ failure: kind ?? (options?.permanent === true ? 'permanent' : 'error') });
    const failure = options === undefined ? undefined : { ...options };
    return this.write('fail', { reason: boundReason(reason), ...(failure ? { failure } : {}) }, kind === 'timeout');
  }

  /** How this lane's failure report came about (for a lane that ended 'failed'): a heartbeat timeout, a permanent failure, an error. */
  get failureKind(): FailureKind {
    if (this.timedOut !== undefined) return 'timeout';
    return this.s.asked.failure ?? 'error';
  }

  /**
   * draining → draining, forced: the handler is aborted and the release written (the last
   * committed progress, owner cleared). Only a draining lane is forced (serviceRevocations).
   */
  async force(): Promise<void> {
    const s = this.s;
    if (s.kind === 'ended') return;
    if (this.timedOut !== undefined) return this.reportTimeout();
    if (s.kind !== 'draining') return;
    this.s = { ...s, forced: true };
    this.abort.abort(new SplitfleetError('LEASE_LOST', `split ${this.id}: revocation forced`));
    await this.untilWritten(() => this.write('force', {}, true));
  }

  /**
   * Runs a lane's ending write until it lands or the lane ends some other way
   * (fenced, or dropped with the session). A store outage must not leave a
   * lane open with no handler behind it: its split would stay held, and
   * unprocessed, for as long as the session lives. A retryable failure is
   * retried with jittered backoff (TERMINAL_RETRY); a first attempt that
   * landed unseen makes the retry's guard stale, so it is fenced and the lane
   * ends as lost. A refusal for good is `refused`'s to answer; anything else
   * that fails it for good ends the lane without a write.
   */
  private async untilWritten(write: () => Promise<void>): Promise<void> {
    for (let attempt = 0; this.s.kind !== 'ended'; attempt++) {
      try {
        await write();
        return;
      } catch (e) {
        const s = this.state; // read again: the write awaited may have ended the lane
        if (s.kind === 'ended' || (typeof e === 'object' && e !== null && this.answered.has(e))) return; // a refusal: `refused` took it from there
        if (!isRetryable(e)) {
          // Forced: that release is under way and ends the lane itself (a timeout's report has no one behind it).
          if (!(s.kind === 'draining' && s.forced)) this.end('lost', `an ending write failed for good: ${storeFailure(e).message}`);
          return;
        }
        const delay = backoffDelay(attempt, TERMINAL_RETRY, this.ctx.random ?? Math.random);
        await new Promise<void>((resolve) => this.ctx.clock.setTimer(delay, resolve));
      }
    }
  }

  /** Refusals `refused` answers: the write that was refused must not end the lane a second time. */
  private readonly answered = new WeakSet<object>();

  /**
   * The store refused `kind` for good. Counted and logged (`onRefused`), then
   * the lane ends, as the header says: a commit or completion refused is
   * reported as the split's failure, a report refused is sent again with a
   * short reason and then released, a release refused ends the lane.
   */
  private refused(kind: HandleWriteKind, args: LaneWriteArgs, raw: unknown): void {
    if (typeof raw === 'object' && raw !== null) this.answered.add(raw);
    const e = storeFailure(raw);
    const what = kind === 'force' ? 'release' : kind;
    this.ctx.onRefused?.(this, what, e);
    if (e.code === 'LEASE_LOST') {
      this.end('lost', `${what} found the session lease gone: ${e.message}`);
      return;
    }
    const short = `${what} refused: ${e.code}`;
    let next: (() => Promise<void>) | undefined;
    if (kind === 'commit' || kind === 'complete') next = () => this.write('fail', { reason: boundReason(`${short}: ${e.message}`, 1024) });
    else if (kind === 'fail' && args.reason !== short) next = () => this.write('fail', { reason: short, ...(args.failure ? { failure: args.failure } : {}) });
    else if (kind === 'fail') next = () => this.write('force', {}, true);
    if (!next) {
      this.end('lost', `${short}: ${e.message}`);
      return;
    }
    void this.untilWritten(next).catch(() => undefined);
  }

  /** The lane is gone without a write (our lease expired or was fenced). */
  lose(reason: string): void {
    if (this.s.kind === 'ended') return;
    this.end('lost', reason);
  }

  /**
   * One fenced write, as `laneWrite` (protocol/lanes.ts) decides it and
   * `laneTxn` (protocol/txns.ts) guards it by the three revisions this lane
   * knows. All or nothing.
   */
  private write(kind: HandleWriteKind, args: LaneWriteArgs, internal = false): Promise<void> {
    // A forced release is a release on the wire and in every message.
    const what = kind === 'force' ? 'release' : kind;
    const run = async (): Promise<void> => {
      if (this.s.kind === 'ended' || (this.handlerAborted && !internal)) {
        const timedOut = this.timedOut;
        const why = timedOut !== undefined ? `the lane timed out (${timedOut})` : 'this lane no longer holds the split';
        throw new SplitfleetError('LEASE_LOST', `split ${this.id}: cannot ${what}, ${why}`);
      }
      await this.settleUnknown(what);
      // Checked before anything is sent: a lane that does not own its record is a bug, not a race.
      let write: LaneWrite;
      try {
        write = laneWrite(kind, this.writerState(kind), args);
      } catch (e) {
        // Refused before it is sent (a record that cannot be encoded, too large): a refusal like the store's.
        this.refused(kind, args, e);
        throw e;
      }
      const { res, ride, rode } = await this.send(kind, args, write);
      this.apply(write, res);
      // The lane has ended (the completion landed): the claim that rode with it opens the next.
      if (rode) ride!.settle(rode);
    };
    // The handler's own writes are activity for the heartbeat timeout while they are queued or in flight.
    const settled = internal ? undefined : this.watch?.writeStarted();
    const p = this.chain.then(run, run);
    this.chain = p.catch(() => undefined);
    if (settled) void p.then(settled, settled);
    return p;
  }

  /**
   * A previous write of unknown outcome first: did it land? Then its revisions are our guards
   * (and, if it was terminal, the lane has ended with it). A read that fails fails this write.
   */
  private async settleUnknown(what: string): Promise<void> {
    const { guards } = this;
    if (!guards.unknown) return;
    const pending = guards.unknown;
    const settled = await guards.readBack().catch((e: unknown) => {
      if (e instanceof SplitfleetError && e.code === 'TIMEOUT' && guards.unknown === undefined) return 'not landed' as const;
      throw e;
    });
    if (settled !== 'not landed') this.apply(pending, settled);
    if (this.s.kind === 'ended') {
      throw new SplitfleetError('LEASE_LOST', `split ${this.id}: cannot ${what}, this lane no longer holds the split`);
    }
  }

  /**
   * A division or a decline of this lane's split, in this lane's write order: see
   * lane-division.ts (`writeDivision`) for what each answer means.
   */
  writeDivision(kind: 'divide' | 'decline', build: (held: HeldParts) => NonNullable<LaneWriteArgs['division']>): Promise<DivisionWritten> {
    const lane: DivisionLane = {
      id: this.id,
      store: this.ctx.store,
      prefix: this.ctx.prefix,
      clock: this.ctx.clock,
      random: this.ctx.random ?? Math.random,
      guards: this.guards,
      readBackRetry: TERMINAL_RETRY,
      closed: () => this.s.kind === 'ended',
      ended: () => this.handlerAborted,
      settleUnknown: (what) => this.settleUnknown(what),
      writerState: () => this.writerState('commit'),
      apply: (w, res) => this.apply(w, res),
      lose: (reason) => this.end('lost', reason),
    };
    const run = () => writeDivision(lane, kind, build);
    const p = this.chain.then(run, run);
    this.chain = p.catch(() => undefined);
    return p;
  }

  /** What `laneWrite` needs of this lane for a write of `kind`. */
  private writerState(kind: LaneWriteKind): Parameters<typeof laneWrite>[1] {
    const { config } = this.ctx;
    const { guards } = this;
    return {
      me: config.instance, record: guards.record, progressRecord: guards.progressRecord, maxAttempts: config.maxAttempts,
      retryBackoff: config.retryBackoff, now: wallTime(this.ctx.clock), draw: kind === 'fail' ? (this.ctx.random ?? Math.random)() : 0,
    };
  }

  /**
   * Sends one lane write and finds out its outcome: a write of unknown outcome is read back
   * (landed, it counts as won). A completion may carry the claim of the lane's next split
   * (decision 0055); joined, a loss does not say which part's compares failed, so the completion
   * is then sent alone. Rejects when the write was refused for good or is still unknown.
   */
  private async send(kind: HandleWriteKind, args: LaneWriteArgs, write: LaneWrite): Promise<{ res: WriteOutcome; ride: RidingClaim | undefined; rode: Extract<RideOutcome, { kind: 'won' }> | undefined }> {
    const { store } = this.ctx;
    const { guards } = this;
    const txn = laneTxn(guards.fence, write);
    // A completion may carry the claim of the lane's next split (decision 0055). Joined, a loss
    // does not say which part's compares failed: the completion is then sent alone, below.
    const ride = write.what === 'complete' ? this.ctx.ride?.(this) : undefined;
    let rode: Extract<RideOutcome, { kind: 'won' }> | undefined;
    let res: WriteOutcome | undefined;
    if (ride) {
      try {
        const joined = await store.txn(joinTxns([txn, ride.txn]));
        if (joined.won) {
          res = { won: true, revision: joined.revision };
          rode = { kind: 'won', revision: joined.revision, reads: joined.reads.slice(txn.success.filter((o) => o.op === 'get').length) };
        } else ride.settle({ kind: 'lost' });
      } catch (e) {
        if (!isRetryable(e)) {
          // Refused before it was applied (the joined request, say): the completion goes alone.
          ride.settle({ kind: 'lost' });
        } else {
          // Unknown: the claim's split goes to the orphan settler; the completion is read back.
          ride.settle({ kind: 'unknown' });
          guards.unknown = write;
          try {
            res = await guards.readBack();
          } catch {
            throw e;
          }
        }
      }
    }
    if (res === undefined) try {
      res = await store.txn(txn);
    } catch (e) {
      if (!isRetryable(e)) {
        this.refused(kind, args, e);
        throw e;
      }
      // Unknown outcome: the write may have landed with its reply lost. Read it back: landed,
      // it counts as won (no later write fenced by our own, no lane lost, no attempt spent);
      // not landed, the caller may send it again; moved on, the lane is lost.
      guards.unknown = write;
      let settled: WriteOutcome | undefined;
      try {
        settled = await guards.readBack();
      } catch {
        throw e; // still unknown (or not landed): retryable, settled before the next write
      }
      res = settled;
    }
    return { res, ride, rode };
  }

  /** The outcome of a write, known at last: adopt its revisions, or end the lane as fenced. */
  private apply(w: LaneWrite, res: WriteOutcome): void {
    const what = w.what === 'force' ? 'release' : w.what;
    if (!res.won) {
      this.end('lost', `${what} lost the fenced swap`);
      throw new SplitfleetError('LEASE_LOST', `split ${this.id}: ${what} was fenced out (the split is no longer ours); nothing was written`);
    }
    if (w.what === 'commit') this.ctx.onCommitted?.();
    this.guards.adopt(w, res.revision);
    if (w.terminal) this.end(w.endAs!, what, { splitValue: w.splitValue, revision: res.revision });
  }

  /** running or draining → ended: `write` is the terminal write that landed, if one did. */
  private end(as: LaneEnd, reason: string, write?: TerminalWrite): void {
    const s = this.s;
    if (s.kind === 'ended') return;
    this.autoCommit.stop();
    const ended: EndedLane = {
      kind: 'ended', as, reason, write,
      drain: s.kind === 'draining' ? s.drain : undefined,
      timedOut: s.kind === 'running' ? s.timedOut : undefined,
      asked: s.asked,
    };
    this.s = ended;
    this.watch?.stop();
    if (!this.abort.signal.aborted) {
      this.abort.abort(new SplitfleetError('LEASE_LOST', `split ${this.id}: lane ended (${as})`));
    }
    this.ctx.onEnd(this, ended);
  }
}

export type { Json };
