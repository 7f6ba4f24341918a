/**
 * The leader's job summary (decision 0040): `summaryFigures` reads the
 * figures off the leader's view (pure, and sparse: it costs the leases, the
 * waiting failures and the members, never the split count), and
 * `SummaryWriter` writes the record protocol/summary.ts builds from them.
 *
 * Invariants:
 * - Throttled: at most one write per SUMMARY_INTERVAL_MS, and none when the
 *   summary says what the last one this term wrote said.
 * - Off the decisions' path: a poke only sets a timer; the write runs in the
 *   background, guarded by leadership (summaryTxn). A failed write is logged
 *   and tried again at the next tick, never fatal; a lost one (leadership
 *   gone) is dropped, since the term is ending.
 * - A term's writer state ends with the term (`reset`): a new term writes its
 *   own summary, of its own generation, first thing.
 */
import { wallTime, type Clock } from '../../clock.js';
import { summaryRecord, summaryTxn, sameSummary, type SummaryFigures } from '../../protocol/summary.js';
import type { SummaryRecord } from '../../protocol/records.js';
import type { Compare, Store } from '../../store/store.js';
import { background, type OnUnexpected } from '../background.js';
import type { LeaderView } from './leader-view.js';
import type { Logger } from '../log.js';

/** Least time between two summary writes: "at most every few seconds". */
export const SUMMARY_INTERVAL_MS = 2000;

/** What of the leader's view the summary reads. */
export type SummaryView = Pick<LeaderView, 'backlog' | 'notBefore' | 'leases' | 'statusOf' | 'weightOf' | 'workers' | 'plan' | 'specCount' | 'parked' | 'fp' | 'residualCount' | 'history'>;

/** The summary's figures from the leader's view, at wall time `wallNow`. Pure. */
export function summaryFigures(view: SummaryView, generation: number, wallNow: number): SummaryFigures {
  const backlog = view.backlog();
  let waiting = 0;
  let waitingWeight = 0;
  for (const [id, notBefore] of view.notBefore) {
    if (notBefore <= wallNow || view.leases.has(id) || view.statusOf(id) !== 'runnable') continue;
    waiting++;
    waitingWeight += view.weightOf(id) ?? 0;
  }
  const lanes: number[] = [];
  for (const w of view.workers.values()) lanes.push(w.rec.maxInFlight);
  return {
    fp: view.fp, generation, writtenAt: wallNow, plan: view.plan?.rec, seeded: view.specCount,
    queued: backlog.queued, backoff: { splits: waiting, weight: waitingWeight },
    running: backlog.running, draining: backlog.draining, completed: backlog.completed, quarantined: backlog.quarantined,
    parked: view.parked.size, lanes, residuals: view.residualCount, history: view.history,
  };
}

export interface SummaryWriterContext {
  store: Store;
  clock: Clock;
  log: Logger;
  /** The current term (one object for its whole length), or undefined when not leading. */
  term: () => object | undefined;
  /** The term's generation and leadership guard (publish-loop.ts's PublishingTerm). */
  publishing: () => { readonly generation: number; readonly guard: Compare } | undefined;
  job: () => LeaderView | undefined;
  /** Why part of the job cannot move, as the leader last said it (stuck-parts.ts); undefined when all of it can. */
  stuck?: () => string | undefined;
  unexpected: OnUnexpected;
  /** Default SUMMARY_INTERVAL_MS. */
  intervalMs?: number;
}

/** Writes the job summary while leading, throttled (see the file's invariants). */
export class SummaryWriter {
  private cancelTimer: (() => void) | undefined;
  private writing = false;
  private dirty = false;
  /** When the last write was tried (clock ms), to space the next. */
  private lastTry = Number.NEGATIVE_INFINITY;
  /** What this term last wrote (undefined: nothing yet this term). */
  private written: SummaryRecord | undefined;
  /** Writes landed, for tests. */
  writes = 0;

  constructor(private readonly ctx: SummaryWriterContext) {}

  private get interval(): number {
    return this.ctx.intervalMs ?? SUMMARY_INTERVAL_MS;
  }

  /**
   * Something the summary may count changed: write within the interval, if it says anything new.
   * A final plan with nothing left to run is written at once: the fleet stops on its verdict, and
   * the last summary should be the finished job's.
   */
  poke(): void {
    this.dirty = true;
    if (this.writing || !this.ctx.term()) return;
    const job = this.ctx.job();
    const finished = job !== undefined && job.plan?.rec.final === true && job.splitCount > 0 && job.statusCounts.runnable === 0;
    if (finished) {
      // Sent now, ahead of the verdict the same change leads to (publish-loop pokes before the leader checks it).
      this.cancelTimer?.();
      this.cancelTimer = undefined;
      background('job summary', () => this.tick(), this.ctx.unexpected);
      return;
    }
    if (this.cancelTimer) return;
    const wait = Math.max(0, this.lastTry + this.interval - this.ctx.clock.now());
    this.cancelTimer = this.ctx.clock.setTimer(wait, () => {
      this.cancelTimer = undefined;
      background('job summary', () => this.tick(), this.ctx.unexpected);
    });
  }

  /** The term ended: drop its timer and what it wrote. */
  reset(): void {
    this.cancelTimer?.();
    this.cancelTimer = undefined;
    this.written = undefined;
    this.dirty = false;
    this.lastTry = Number.NEGATIVE_INFINITY;
  }

  private async tick(): Promise<void> {
    const { ctx } = this;
    const term = ctx.term();
    const publishing = ctx.publishing();
    const job = ctx.job();
    // A view still being listed (revision 0) would count half the job.
    if (!this.dirty || !term || !publishing || !job || job.revision === 0) return;
    this.dirty = false;
    const record = summaryRecord({ ...summaryFigures(job, publishing.generation, wallTime(ctx.clock)), stuck: ctx.stuck?.() });
    if (sameSummary(record, this.written)) return;
    this.writing = true;
    this.lastTry = ctx.clock.now();
    try {
      const res = await ctx.store.txn(summaryTxn(job.prefix, publishing.guard, record));
      if (ctx.term() !== term) return;
      if (res.won) {
        this.written = record;
        this.writes++;
      } else {
        ctx.log.debug({ generation: publishing.generation }, 'job summary not written: leadership moved');
      }
    } catch (e) {
      if (ctx.term() !== term) return;
      ctx.log.warn({ err: (e as Error).message }, 'writing the job summary failed; trying again at the next tick');
      this.dirty = true;
    } finally {
      this.writing = false;
      if (this.dirty && ctx.term() === term) this.poke();
    }
  }
}
