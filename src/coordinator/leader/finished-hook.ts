/**
 * FinishedHook: the job's `onJobFinished` hook, run once per verdict across
 * the fleet (issue 50, item 3; decision 0065). The leader that writes the
 * verdict writes `hook: 'pending'` with it when it has a hook; whichever
 * leader then sees a verdict with the hook pending runs the hook and marks
 * it `ran` (guarded by leadership and the plan's revision). The job's
 * processes stay, idle, while it is pending (completion.ts `jobOutcome`), so
 * a leader lost while running it is replaced by one that runs it again:
 * at least once; `key` names the verdict, for a hook that must be idempotent.
 *
 * Invariants:
 * - One run at a time per process; a hook that throws is retried (1 s,
 *   doubling to 60 s) while this process leads, and logged each time.
 * - A leader without a hook that finds one pending (a fleet configured
 *   unevenly) marks it `ran` and says so: it cannot run it, and the fleet
 *   must not wait forever.
 */
import type { Clock } from '../../clock.js';
import { backoffDelay, type BackoffPolicy } from '../../protocol/backoff.js';
import { hookRanTxn } from '../../protocol/leader-txns.js';
import type { JobVerdictRecord, PlanRecord } from '../../protocol/records.js';
import type { Compare, Store } from '../../store/store.js';
import type { Logger } from '../log.js';
import type { Seen } from '../views/seen.js';

/** What `onJobFinished` is given. */
export interface JobFinished {
  /** The job's root and name. */
  root: string;
  job: string;
  verdict: JobVerdictRecord;
  planned: number;
  /** Names this verdict (written with it: the deciding generation and revision): the same on every run of the hook for it. */
  key: string;
}

const RETRY: BackoffPolicy = { base: 1000, max: 60_000, min: 250 };

export interface FinishedHookContext {
  store: Store;
  clock: Clock;
  log: Logger;
  root: string;
  job: string;
  prefix: string;
  hook: ((finished: JobFinished) => unknown) | undefined;
  /** The leadership guard while leading, else undefined. */
  guard: () => Compare | undefined;
  random: () => number;
}

export class FinishedHook {
  private running = false;
  /** The plan revision this process ran the hook for: its view may show it pending a while after the 'ran' write. */
  private ranFor: number | undefined;
  private failures = 0;
  private retry: (() => void) | undefined;

  constructor(private readonly ctx: FinishedHookContext) {}

  /** Whether a leader should write the verdict with the hook pending. */
  get configured(): boolean {
    return this.ctx.hook !== undefined;
  }

  /** The plan as this leader sees it: a verdict with the hook pending is run (or marked, without a hook). */
  check(plan: Seen<PlanRecord> | undefined): void {
    if (!plan || plan.rec.verdict === undefined || plan.rec.hook !== 'pending' || this.running || this.retry || plan.modRevision === this.ranFor) return;
    const guard = this.ctx.guard();
    if (!guard) return;
    this.running = true;
    void this.run(plan, guard).finally(() => {
      this.running = false;
    });
  }

  stop(): void {
    this.retry?.();
    this.retry = undefined;
  }

  private async run(plan: Seen<PlanRecord>, guard: Compare): Promise<void> {
    const finished: JobFinished = { root: this.ctx.root, job: this.ctx.job, verdict: plan.rec.verdict!, planned: plan.rec.planned, key: plan.rec.hookKey ?? `${this.ctx.prefix}plan@${plan.modRevision}` };
    if (!this.ctx.hook) {
      this.ctx.log.warn({ key: finished.key }, 'the job\'s onJobFinished hook is pending, and this leader has none: marking it ran (configure the hook on every process of the job)');
    } else {
      try {
        await this.ctx.hook(finished);
      } catch (e) {
        const delay = backoffDelay(this.failures++, RETRY, this.ctx.random);
        this.ctx.log.error({ err: (e as Error)?.message ?? String(e), retryInMs: delay }, 'onJobFinished threw; running it again');
        this.retry = this.ctx.clock.setTimer(delay, () => {
          this.retry = undefined;
          this.check(plan);
        });
        return;
      }
    }
    try {
      const res = await this.ctx.store.txn(hookRanTxn(this.ctx.prefix, guard, plan));
      if (res.won) {
        this.ranFor = plan.modRevision;
        this.ctx.log.info({ key: finished.key }, 'onJobFinished ran');
      }
      // Lost: leadership went (the next leader runs it again), or the plan moved (seen again).
    } catch (e) {
      this.ctx.log.warn({ err: (e as Error).message }, 'recording that onJobFinished ran failed; the hook runs again');
    }
  }
}
