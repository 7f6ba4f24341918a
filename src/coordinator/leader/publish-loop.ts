/**
 * The leader's publishing loop: when `publishAssignments` (publish.ts) runs.
 * A change starts a step as soon as the previous one has landed (substrate.md,
 * "Prefetch": decisions paced by what they cost, not a fixed interval;
 * decision 0053): one step is in flight, and the next waits for the view to
 * see its writes, so a small job decides within a turn of the event loop and
 * a large one as fast as its steps complete. A step that did not finish (a
 * write lost or failed) holds the next for its own duration, at least
 * RETRY_PACE_MS and at most MAX_PACE_MS. While a plan is being seeded, steps
 * are SEEDING_PUBLISH_MS apart. One step is in flight
 * at a time, and changes arriving during it trigger one more (latest wins).
 * The rebalance-delay window's next expiry sets one timer.
 *
 * Invariants:
 * - A step runs only on a view that has seen the leader's own last write: a
 *   decision before that would read its previous decision as absent and
 *   undo part of it (the write's watch event schedules the next step).
 * - A step of a term that has ended changes nothing (its result is dropped).
 * - It decides nothing itself and writes nothing itself: publishAssignments does,
 *   and the job summary's writer (job-summary.ts), poked by every change, throttled.
 */
import { wallTime, type Clock } from '../../clock.js';
import type { Config } from '../../config.js';
import type { ReservedWindowState } from '../../protocol/reserved.js';
import type { Compare, Store } from '../../store/store.js';
import { background, type OnUnexpected } from '../background.js';
import { SummaryWriter } from './job-summary.js';
import type { LeaderView } from './leader-view.js';
import type { Logger } from '../log.js';
import type { Metrics } from '../metrics.js';
import { publishAssignments, type Assigner, type ColumnarAssigner, type EngineReady, type Promote, type PublishFence } from './publish.js';

/** The longest a step that did not finish holds the next back (its own duration, capped). */
export const MAX_PACE_MS = 1000;
/**
 * The least pace after a step that did not finish (a write lost or failed, a promotion lost):
 * the same step at once would lose the same way, and on a store that answers at once (the
 * simulation's) it would never let time move.
 */
export const RETRY_PACE_MS = 25;
/**
 * While a plan is being seeded, decisions are spaced this far apart: every
 * batch of new splits drops the pool's cached order, and deciding on each
 * would re-sort a growing pool dozens of times a second for nothing.
 */
const SEEDING_PUBLISH_MS = 1000;

/** Counters for tests, benches and inspection. */
export interface LeaderStats {
  decisions: number;
  recordsWritten: number;
  terms: number;
  /** The engine's time, summed over decisions and at most (ms). */
  decisionMsTotal: number;
  decisionMsMax: number;
  /** The longest publishing step, from its start to its last write landing (ms). */
  stepMsMax: number;
}

/** The term a step publishes for: its generation, fence and leadership guard. */
export interface PublishingTerm {
  readonly generation: number;
  readonly fence: PublishFence;
  readonly guard: Compare;
}

export interface PublishLoopContext {
  store: Store;
  config: Config;
  clock: Clock;
  assigner: Assigner | undefined;
  decide: ColumnarAssigner;
  /** Readies `decide` for the pool before a decision is prepared. */
  ready?: EngineReady;
  /** A packed job's promotion before publication (packed-queue.ts). */
  promote?: Promote;
  metrics: Metrics;
  log: Logger;
  stats: LeaderStats;
  /** The current term (the same object for its whole length), or undefined when not leading. */
  term: () => object | undefined;
  /** What a step of the current term publishes with. */
  publishing: () => PublishingTerm | undefined;
  job: () => LeaderView | undefined;
  /** Why part of the job cannot move (the job summary carries it). */
  stuck?: () => string | undefined;
  seeding: () => boolean;
  /** An error that escaped a publishing step (background.ts). */
  unexpected: OnUnexpected;
}

export class PublishLoop {
  private running = false;
  private again = false;
  private cancelTimer: (() => void) | undefined;
  private cancelWindowTimer: (() => void) | undefined;
  private window: ReservedWindowState | undefined;
  /** Revision of our last assignment write: the next decision waits until the view has seen it. */
  private publishedRevision = 0;
  /** The pace: the clock time before which no new step starts (the last step's end plus its duration). */
  private notBefore = 0;

  /**
   * No publishing step is running and the view has seen the last one's writes: what the
   * view's assignment records say is what the store's say (a fold-back waits for it).
   */
  settled(viewRevision: number): boolean {
    return !this.running && viewRevision >= this.publishedRevision;
  }
  /** Splits given a previous assignee by the last decision (publishAssignments clears them). */
  readonly previousIds = new Set<string>();
  /** The job summary for the tools (decision 0040): every change pokes it; it writes at most every few seconds. */
  readonly summary: SummaryWriter;

  constructor(private readonly ctx: PublishLoopContext) {
    this.summary = new SummaryWriter(ctx);
  }

  /** A change the decision may depend on: publish after the quiet period. */
  schedule(): void {
    if (!this.ctx.term() || !this.ctx.job()) return;
    this.summary.poke();
    if (this.running) {
      this.again = true;
      return;
    }
    if (this.cancelTimer) return;
    const delay = this.ctx.seeding() ? SEEDING_PUBLISH_MS : Math.max(0, this.notBefore - this.ctx.clock.now());
    // A timer even at 0: the changes of this turn (a watch batch, several completions) are
    // coalesced into the one step it starts.
    this.cancelTimer = this.ctx.clock.setTimer(delay, () => {
      this.cancelTimer = undefined;
      background('publish', () => this.step(), this.ctx.unexpected);
    });
  }

  /**
   * Decide now (the whole plan is seeded), rather than when a seeding-paced timer would fire, or
   * the pace of a step taken while seeding (an empty pool's: a new job's first decision waited
   * ~20 ms for it on an idle etcd).
   */
  now(): void {
    this.notBefore = 0;
    if (this.cancelTimer) {
      this.cancelTimer();
      this.cancelTimer = undefined;
    }
    this.schedule();
  }

  /** The term ended: drop its timers and its window state. */
  reset(): void {
    this.notBefore = 0;
    this.summary.reset();
    this.cancelWindowTimer?.();
    this.cancelWindowTimer = undefined;
    this.cancelTimer?.();
    this.cancelTimer = undefined;
    this.window = undefined;
  }

  /** A new term's view: previous assignees are set afresh on it. */
  newView(): void {
    this.previousIds.clear();
  }

  private async step(): Promise<void> {
    const { ctx } = this;
    const term = ctx.term();
    const publishing = ctx.publishing();
    const job = ctx.job();
    if (!term || !publishing || !job || this.running) return;
    if (job.revision < this.publishedRevision) return;
    this.running = true;
    this.again = false;
    const started = ctx.clock.now();
    /** The step did not finish (a write lost or failed): the next waits at least RETRY_PACE_MS. */
    let retry = false;
    try {
      // Before the decision is prepared: `decide` reads the pool as prepared, before its first await.
      if (!ctx.assigner && ctx.ready) {
        await ctx.ready(job.pool);
        if (ctx.term() !== term) return;
      }
      const res = await publishAssignments({
        store: ctx.store, fence: publishing.fence, view: job, fingerprint: ctx.config.fingerprint, generation: publishing.generation,
        guard: publishing.guard, rebalanceDelayMs: ctx.config.rebalanceDelayMs, now: ctx.clock.now(), wallNow: wallTime(ctx.clock), window: this.window,
        assigner: ctx.assigner, decide: ctx.decide, metrics: ctx.metrics, log: ctx.log, ...(ctx.promote ? { promote: ctx.promote } : {}),
      }, this.previousIds);
      if (ctx.term() !== term) return;
      this.window = res.window;
      this.publishedRevision = Math.max(this.publishedRevision, res.revision);
      const { stats } = ctx;
      stats.decisions++;
      stats.recordsWritten += res.written + res.deleted;
      stats.decisionMsTotal += res.stats.computeMs;
      stats.decisionMsMax = Math.max(stats.decisionMsMax, res.stats.computeMs);
      stats.stepMsMax = Math.max(stats.stepMsMax, ctx.clock.now() - started);
      ctx.metrics.publishSeconds.observe((ctx.clock.now() - started) / 1000);
      if (!res.complete) this.again = retry = true;
      this.cancelWindowTimer?.();
      this.cancelWindowTimer = undefined;
      if (res.nextChangeAt !== undefined) {
        this.cancelWindowTimer = ctx.clock.setTimer(Math.max(0, res.nextChangeAt - ctx.clock.now()), () => {
          this.cancelWindowTimer = undefined;
          this.schedule();
        });
      }
    } catch (e) {
      ctx.log.error({ err: (e as Error).message }, 'publishing failed');
      this.again = retry = true;
    } finally {
      this.running = false;
      // A step that finished is followed at once by the next change's (its cost paced it: one in
      // flight, and the next waits for the view to see this one's writes). Pacing by the step's own
      // duration as well halved the decision rate where a step waits on the store (a 1M packed fleet:
      // 0.3 decisions a second against 1.5 with a fixed 25 ms); only a step that did not finish waits.
      const ended = ctx.clock.now();
      this.notBefore = retry ? ended + Math.max(RETRY_PACE_MS, Math.min(MAX_PACE_MS, ended - started)) : ended;
      if (this.again && ctx.term() === term) {
        this.again = false;
        this.schedule();
      }
    }
  }
}
