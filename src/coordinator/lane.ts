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
 */
import type { Clock } from '../clock.js';
import type { Config } from '../config.js';
import { SplitfleetError } from '../errors.js';
import {
  completedRecord, failedRecord, progressRecord, releasedRecord,
} from '../protocol/claims.js';
import { leaseKey, progressKey, splitKey } from '../protocol/keys.js';
import { encodeRecord, type Json, type ProgressRecord, type SpecRecord, type SplitRecord } from '../protocol/records.js';
import { cmp, op, type Op, type Store } from '../store/store.js';
import { withTimeout } from '../timeout.js';
import type { SplitHandle } from './types.js';

/** How often a lane's ending write (release, failure report, forced release) is retried while the store fails. */
const TERMINAL_RETRY_MS = 250;

/** One fenced write as sent: what it changes, and its exact bytes (to recognise it when read back). */
interface PendingWrite {
  what: string;
  record: SplitRecord | undefined;
  committed: ProgressRecord | undefined;
  terminal: boolean;
  endAs: LaneEnd | undefined;
  splitValue: string | undefined;
  progressValue: string | undefined;
}

export type LaneEnd = 'released' | 'completed' | 'failed' | 'lost' | 'forced';
export type LaneState = 'running' | 'draining' | 'ended';

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
  /** A write of unknown outcome was read back: what it turned out to be (metrics). */
  onSettled?: (resolution: 'landed' | 'not-landed' | 'moved') => void;
}

export class Lane {
  state: LaneState = 'running';
  /** When the drain began (clock ms); undefined while running. */
  drainStartedAt: number | undefined;
  /** The handler refused to drain, or its drain threw: force at once. */
  drainHandlerState: 'draining' | 'declined' | 'failed' = 'draining';
  /** Set when the worker, not the handler, ends the lane with a release (for the split-released event). */
  releaseCause: 'store-failure' | 'stopping' | undefined;
  readonly claimedAt: number;
  private readonly abort = new AbortController();
  private readonly drain = new AbortController();
  private chain: Promise<unknown> = Promise.resolve();
  private endedAs: LaneEnd | undefined;
  /** The last write's outcome was unknown (its reply was lost): what it wrote, to recognise it by. */
  private unknown: PendingWrite | undefined;
  readonly handle: SplitHandle;

  constructor(
    private readonly ctx: LaneContext,
    readonly id: string,
    readonly spec: SpecRecord,
    private rec: SplitRecord,
    private rev: number,
    private progress: Json,
    /** modRevision of `progress.{id}` as this lane last wrote or read it (0: no such key yet). */
    private progressRev: number,
    /** The `progress.{id}` record as read at the claim (its newer-minor fields are kept on rewrite). */
    private progressRecord?: ProgressRecord,
  ) {
    this.claimedAt = ctx.clock.now();
    const lane = this;
    const resumeFrom = progress;
    this.handle = {
      id,
      weight: spec.weight,
      descriptor: spec.descriptor,
      progress: resumeFrom,
      epoch: rec.epoch,
      attempts: rec.attempts,
      signal: this.abort.signal,
      drainSignal: this.drain.signal,
      commit: (progress) => lane.write('commit', undefined, progress, false),
      complete: (progress) =>
        lane.write('complete', (r) => completedRecord(r, ctx.config.instance), progress, true, 'completed'),
      fail: (reason) =>
        lane.write('fail', (r) => failedRecord(r, ctx.config.instance, String(reason), ctx.config.maxAttempts), undefined, true, 'failed'),
      release: (progress) =>
        lane.write('release', (r) => releasedRecord(r, ctx.config.instance), progress, true, 'released'),
      decline: () => {
        if (lane.state !== 'draining' || lane.drainHandlerState === 'declined') return;
        lane.drainHandlerState = 'declined';
        ctx.onDecline?.(lane);
      },
    };
  }

  get ended(): LaneEnd | undefined {
    return this.endedAs;
  }

  get record(): SplitRecord {
    return this.rec;
  }

  /** The last committed progress (what a takeover would resume from). */
  get committed(): Json {
    return this.progress;
  }

  /** Asks the handler to drain (cooperative revocation). Idempotent. */
  beginDrain(): void {
    if (this.state !== 'running') return;
    this.state = 'draining';
    this.drainStartedAt = this.ctx.clock.now();
    this.drain.abort();
  }

  /** The handler returned normally: release with the last committed progress. */
  async finishNormally(): Promise<void> {
    await this.untilWritten(() => this.handle.release());
  }

  /** The handler threw: a failure report (one attempt), unless already ended. */
  async finishWithError(error: unknown): Promise<void> {
    const reason = error instanceof Error ? error.message : String(error);
    await this.untilWritten(() => this.handle.fail(reason));
  }

  /** Forced release: the last committed progress, owner cleared; the handler is aborted. */
  async force(): Promise<void> {
    if (this.endedAs) return;
    this.abort.abort(new SplitfleetError('LEASE_LOST', `split ${this.id}: revocation forced`));
    await this.untilWritten(() => this.write('release', (r) => releasedRecord(r, this.ctx.config.instance), undefined, true, 'forced', true));
  }

  /**
   * Runs a lane's ending write until it lands or the lane ends some other way
   * (fenced, or dropped with the session). A store outage must not leave a
   * lane open with no handler behind it: its split would stay held, and
   * unprocessed, for as long as the session lives. A retryable failure is
   * retried every TERMINAL_RETRY_MS; a first attempt that landed unseen makes
   * the retry's guard stale, so it is fenced and the lane ends as lost.
   */
  private async untilWritten(write: () => Promise<void>): Promise<void> {
    while (!this.endedAs) {
      try {
        await write();
        return;
      } catch (e) {
        if (this.endedAs || !(e instanceof SplitfleetError) || !e.retryable) return;
        await new Promise<void>((resolve) => this.ctx.clock.setTimer(TERMINAL_RETRY_MS, resolve));
      }
    }
  }

  /** The lane is gone without a write (our lease expired or was fenced). */
  lose(reason: string): void {
    if (this.endedAs) return;
    this.end('lost', reason);
  }

  /**
   * One fenced write: `next` (when given) rewrites `split.{id}`, `progress`
   * (when given) rewrites `progress.{id}`, a terminal write deletes the lease
   * key. All or nothing, guarded by the three revisions this lane knows.
   */
  private write(
    what: string,
    next: ((r: SplitRecord) => SplitRecord) | undefined,
    progress: Json | undefined,
    terminal: boolean,
    endAs?: LaneEnd,
    internal = false,
  ): Promise<void> {
    const run = async (): Promise<void> => {
      if (this.endedAs || (this.abort.signal.aborted && !internal)) {
        throw new SplitfleetError('LEASE_LOST', `split ${this.id}: cannot ${what}, this lane no longer holds the split`);
      }
      const { store, prefix, leaseId, config } = this.ctx;
      const sk = splitKey(prefix, this.id);
      const pk = progressKey(prefix, this.id);
      const lk = leaseKey(prefix, this.id);
      // A previous write of unknown outcome first: did it land? Then its revisions are our guards
      // (and, if it was terminal, the lane has ended with it). A read that fails fails this write.
      if (this.unknown) {
        const pending = this.unknown;
        const settled = await this.settleUnknown().catch((e: unknown) => {
          if (e instanceof SplitfleetError && e.code === 'TIMEOUT' && this.unknown === undefined) return 'not landed' as const;
          throw e;
        });
        if (settled !== 'not landed') this.apply(pending, settled);
        if (this.endedAs) {
          throw new SplitfleetError('LEASE_LOST', `split ${this.id}: cannot ${what}, this lane no longer holds the split`);
        }
      }
      const record = next?.(this.rec);
      // Checked before anything is sent: a lane that does not own its record is a bug, not a race.
      const committed = progress === undefined ? undefined : progressRecord(this.rec, config.instance, progress, this.progressRecord);
      const write: PendingWrite = {
        what, record, committed, terminal, endAs,
        splitValue: record ? encodeRecord('split', record) : undefined,
        progressValue: committed ? encodeRecord('progress', committed) : undefined,
      };
      const success: Op[] = [];
      if (write.splitValue !== undefined) success.push(op.put(sk, write.splitValue));
      if (write.progressValue !== undefined) success.push(op.put(pk, write.progressValue));
      if (terminal) success.push(op.delete(lk));
      const compares = [cmp.modRevision(sk, this.rev), cmp.modRevision(pk, this.progressRev), cmp.lease(lk, leaseId)];
      let res: { won: boolean; revision: number };
      try {
        res = await withTimeout(store.txn({ compares, success }), config.opTimeoutMs, `${what} of split ${this.id}`, this.ctx.clock);
      } catch (e) {
        if (!(e instanceof SplitfleetError) || !e.retryable) throw e;
        // Unknown outcome: the write may have landed with its reply lost. Read it back: landed,
        // it counts as won (no later write fenced by our own, no lane lost, no attempt spent);
        // not landed, the caller may send it again; moved on, the lane is lost.
        this.unknown = write;
        let settled: { won: boolean; revision: number } | undefined;
        try {
          settled = await this.settleUnknown();
        } catch {
          throw e; // still unknown (or not landed): retryable, settled before the next write
        }
        res = settled;
      }
      this.apply(write, res);
    };
    const p = this.chain.then(run, run);
    this.chain = p.catch(() => undefined);
    return p;
  }

  /** The outcome of a write, known at last: adopt its revisions, or end the lane as fenced. */
  private apply(w: PendingWrite, res: { won: boolean; revision: number }): void {
    if (!res.won) {
      this.end('lost', `${w.what} lost the fenced swap`);
      throw new SplitfleetError('LEASE_LOST', `split ${this.id}: ${w.what} was fenced out (the split is no longer ours); nothing was written`);
    }
    if (w.record) {
      this.rec = w.record;
      this.rev = res.revision;
    }
    if (w.committed) {
      this.progress = w.committed.progress;
      this.progressRecord = w.committed;
      this.progressRev = res.revision;
    }
    if (w.terminal) this.end(w.endAs!, w.what);
  }

  /**
   * Reads back the write whose outcome was unknown: the three keys in one
   * transaction. Landed (our bytes at a newer revision) → `{ won: true }`
   * at its revision; moved on (someone else's write) → `{ won: false }`;
   * not landed (every guard still as we knew it) → rejects with a retryable
   * TIMEOUT, and the write may be sent again. A read that fails rejects and
   * leaves the question open (`unknown` kept) for the next write.
   */
  private async settleUnknown(): Promise<{ won: boolean; revision: number }> {
    const u = this.unknown!;
    const { store, prefix, leaseId, config } = this.ctx;
    const read = await withTimeout(
      store.txn({ compares: [], success: [op.get(splitKey(prefix, this.id)), op.get(progressKey(prefix, this.id)), op.get(leaseKey(prefix, this.id))] }),
      config.opTimeoutMs, `reading back split ${this.id}`, this.ctx.clock,
    );
    this.unknown = undefined;
    const [split, progress, lease] = read.reads;
    const splitLanded = u.splitValue !== undefined && split?.value === u.splitValue && split.modRevision > this.rev;
    const progressLanded = u.progressValue !== undefined && progress?.value === u.progressValue && progress.modRevision > this.progressRev;
    // What one transaction wrote shares one revision: either key tells.
    const settled = this.ctx.onSettled ?? (() => undefined);
    if (splitLanded || (u.splitValue === undefined && progressLanded)) {
      settled('landed');
      return { won: true, revision: splitLanded ? split!.modRevision : progress!.modRevision };
    }
    const untouched = (split?.modRevision ?? 0) === this.rev && (progress?.modRevision ?? 0) === this.progressRev && lease?.lease === leaseId;
    if (untouched) {
      settled('not-landed');
      throw new SplitfleetError('TIMEOUT', `split ${this.id}: ${u.what} did not land; it may be sent again`, { retryable: true });
    }
    settled('moved');
    return { won: false, revision: read.revision };
  }

  private end(as: LaneEnd, reason: string): void {
    if (this.endedAs) return;
    this.endedAs = as;
    this.state = 'ended';
    if (!this.abort.signal.aborted) {
      this.abort.abort(new SplitfleetError('LEASE_LOST', `split ${this.id}: lane ended (${as})`));
    }
    this.ctx.onEnd(this, as, reason);
  }
}

export type { Json };
