/**
 * Lane: one held split inside a worker, and the fenced writes its handle
 * makes. Every write is one transaction guarded by the split record's
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
export type LaneState = 'running' | 'draining' | 'ended';

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
  /** Called once when the lane ends, however it ends; `reason` is the write that ended it, or why it was lost. */
  onEnd: (lane: Lane, end: LaneEnd, reason: string) => void;
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
  /**
   * The terminal write that ended this lane, once it landed: the split record it put (encoded)
   * at `revision`, where it also deleted the lease key. The worker hands it to its view, which
   * may not have seen it yet: a split still named would otherwise look like ours to reclaim.
   */
  terminalWrite: { splitValue: string | undefined; revision: number } | undefined;
  state: LaneState = 'running';
  /** When the drain began (clock ms); undefined while running. */
  drainStartedAt: number | undefined;
  /** The handler refused to drain, or its drain threw: force at once. */
  drainHandlerState: DrainHandlerState = 'draining';
  /** Set when the worker, not the handler, ends the lane with a release (for the split-released event). */
  releaseCause: 'store-failure' | 'stopping' | undefined;
  /** How the failure report the handler asked for came about ('error' or 'permanent'); set with the report. */
  private failureAsked: FailureKind | undefined;
  readonly claimedAt: number;
  private readonly abort = new AbortController();
  private readonly drain = new AbortController();
  private chain: Promise<unknown> = Promise.resolve();
  private endedAs: LaneEnd | undefined;
  /** What the next write is guarded by, and the write of unknown outcome. */
  private readonly guards: LaneGuards;
  readonly handle: SplitHandle;
  /** The handler's answer to division requests (`onDivide`), if it gave one (answer-division.ts). */
  divider: DivideCallback | undefined;
  /** The commits of `advance()` (auto-commit.ts). */
  private readonly autoCommit: AutoCommit;
  /** Present when heartbeatTimeoutMs is set. */
  private readonly watch: HeartbeatWatch | undefined;
  /** Set when the heartbeat timeout aborted the handler: the failure report this lane owes. */
  private timeoutFailure: string | undefined;
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
      decline: () => {
        if (lane.state !== 'draining' || lane.drainHandlerState === 'declined') return;
        lane.drainHandlerState = 'declined';
        ctx.onDecline?.(lane);
      },
      heartbeat: (details) => {
        if (lane.endedAs || lane.abort.signal.aborted) return;
        lane.watch?.touch(details);
      },
      onDivide: (callback) => {
        lane.divider = callback;
        // An ask that came before the callback stands: answer it now.
        ctx.onDivider?.(lane);
      },
    };
    const timeoutMs = ctx.config.heartbeatTimeoutMs;
    this.watch = timeoutMs === undefined ? undefined : new HeartbeatWatch({
      clock: ctx.clock,
      timeoutMs,
      drainDeadlineMs: ctx.config.drainDeadlineMs,
      running: () => this.state === 'running',
      onTimeout: (silentMs) => this.timeOut(silentMs, timeoutMs),
      onReportDue: () => void this.reportTimeout().catch(() => undefined),
    });
  }

  /** The heartbeat timeout's failure reason when this lane timed out (`timeout: …`); undefined otherwise. */
  get timedOut(): string | undefined {
    return this.timeoutFailure;
  }

  /** The handler was silent too long: abort it; the failure is reported when it returns, or at the drain deadline. */
  private timeOut(silentMs: number, timeoutMs: number): void {
    if (this.endedAs || this.abort.signal.aborted) return;
    this.timeoutFailure = timeoutReason(silentMs, timeoutMs);
    this.ctx.onTimeout?.(this, silentMs, this.watch?.details);
    this.abort.abort(new SplitfleetError('HEARTBEAT_TIMEOUT', `split ${this.id}: ${this.timeoutFailure}`));
  }

  /** The failure report a timed-out lane owes (one attempt), written once, however many paths ask for it. */
  private reportTimeout(): Promise<void> {
    const reason = this.timeoutFailure!;
    this.reportingTimeout ??= this.untilWritten(() => this.fail(reason, undefined, 'timeout'));
    return this.reportingTimeout;
  }

  get ended(): LaneEnd | undefined {
    return this.endedAs;
  }

  get record(): SplitRecord {
    return this.guards.record;
  }

  /** The last committed progress (what a takeover would resume from). */
  get committed(): Json {
    return this.guards.committed;
  }

  /** Asks the handler to drain (cooperative revocation). Idempotent. */
  beginDrain(): void {
    // A timed-out lane's end is decided already (its failure report, by the drain deadline at the latest).
    if (this.state !== 'running' || this.timeoutFailure !== undefined) return;
    this.state = 'draining';
    this.drainStartedAt = this.ctx.clock.now();
    this.drain.abort();
  }

  /** The handler returned normally: release with the last committed progress. */
  async finishNormally(): Promise<void> {
    if (this.timeoutFailure !== undefined) return this.reportTimeout();
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
    if (this.timeoutFailure !== undefined) return this.reportTimeout();
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
    if (!this.endedAs) this.failureAsked = kind ?? (options?.permanent === true ? 'permanent' : 'error');
    const failure = options === undefined ? undefined : { ...options };
    return this.write('fail', { reason: boundReason(reason), ...(failure ? { failure } : {}) }, kind === 'timeout');
  }

  /** How this lane's failure report came about (for a lane that ended 'failed'): a heartbeat timeout, a permanent failure, an error. */
  get failureKind(): FailureKind {
    if (this.timeoutFailure !== undefined) return 'timeout';
    return this.failureAsked ?? 'error';
  }

  /** Forced release: the last committed progress, owner cleared; the handler is aborted. */
  async force(): Promise<void> {
    if (this.endedAs) return;
    if (this.timeoutFailure !== undefined) return this.reportTimeout();
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
    for (let attempt = 0; !this.endedAs; attempt++) {
      try {
        await write();
        return;
      } catch (e) {
        if (this.endedAs || (typeof e === 'object' && e !== null && this.answered.has(e))) return; // a refusal: `refused` took it from there
        if (!isRetryable(e)) {
          // Aborted: a forced release is under way and ends the lane itself (a timeout's report has no one behind it).
          if (!this.abort.signal.aborted || this.timeoutFailure !== undefined) this.end('lost', `an ending write failed for good: ${storeFailure(e).message}`);
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
    if (this.endedAs) return;
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
      if (this.endedAs || (this.abort.signal.aborted && !internal)) {
        const why = this.timeoutFailure !== undefined ? `the lane timed out (${this.timeoutFailure})` : 'this lane no longer holds the split';
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
    if (this.endedAs) {
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
      closed: () => this.endedAs !== undefined,
      ended: () => this.endedAs !== undefined || this.abort.signal.aborted || this.state === 'ended',
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
    if (w.terminal) {
      this.terminalWrite = { splitValue: w.splitValue, revision: res.revision };
      this.end(w.endAs!, what);
    }
  }

  private end(as: LaneEnd, reason: string): void {
    if (this.endedAs) return;
    this.autoCommit.stop();
    this.endedAs = as;
    this.state = 'ended';
    this.watch?.stop();
    if (!this.abort.signal.aborted) {
      this.abort.abort(new SplitfleetError('LEASE_LOST', `split ${this.id}: lane ended (${as})`));
    }
    this.ctx.onEnd(this, as, reason);
  }
}

export type { Json };
