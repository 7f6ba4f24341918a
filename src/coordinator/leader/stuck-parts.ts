/**
 * StuckParts: what the leader says, while it leads, about the parts of the
 * job that cannot move while the rest does (issue 49, "partial stalls"):
 * parked splits and unreadable queue pages on every change of its view, and
 * splits named but left unclaimed by a member with a free lane on a timer
 * (unclaimed.ts: that look costs a pass over the assignment records), as
 * are splits a final plan counts that no record in view holds (a pass over
 * the parked splits; decision 0072). The
 * reason is health.ts's `stuckReason`; it is reported only when it changes.
 */
import { wallTime, type Clock } from '../../clock.js';
import { stuckReason } from '../health.js';
import type { Logger } from '../log.js';
import type { LeaderView } from './leader-view.js';
import { UNCLAIMED_INTERVALS, UnclaimedWatch } from './unclaimed.js';

export interface StuckPartsContext {
  clock: Clock;
  reconcileIntervalMs: number;
  log: Logger;
  /** The reason, or undefined once all of the job can move again. */
  onStuck?: (reason: string | undefined) => void;
}

export class StuckParts {
  private reported: string | undefined;
  private readonly unclaimed = new UnclaimedWatch();
  private unclaimedReason: string | undefined;
  private unaccounted = 0;
  private cancel: (() => void) | undefined;

  constructor(private readonly ctx: StuckPartsContext) {}

  /** The reason last reported (undefined: all of the job can move), for the job summary. */
  get reason(): string | undefined {
    return this.reported;
  }

  /** The leader's view changed: parked splits and unreadable pages, with the last unclaimed look. */
  viewChanged(job: LeaderView): void {
    this.report(stuckReason(job.parked, job.unreadablePages, this.unclaimedReason, this.unaccounted));
  }

  /** A term's view is built: look for unclaimed splits every reconcile interval while `current()` holds. */
  start(job: LeaderView, current: () => boolean): void {
    const interval = this.ctx.reconcileIntervalMs;
    const look = (): void => {
      if (!current()) return;
      this.unclaimedReason = this.unclaimed.look(job, this.ctx.clock.now(), wallTime(this.ctx.clock), UNCLAIMED_INTERVALS * interval);
      this.unaccounted = job.unaccountedSplits();
      this.viewChanged(job);
      this.cancel = this.ctx.clock.setTimer(interval, look);
    };
    this.cancel?.();
    this.cancel = this.ctx.clock.setTimer(interval, look);
  }

  /** No longer leading: nothing is reported as stuck by this process. */
  stop(): void {
    this.cancel?.();
    this.cancel = undefined;
    this.unclaimed.clear();
    this.unclaimedReason = undefined;
    this.unaccounted = 0;
    this.report(undefined);
  }

  private report(reason: string | undefined): void {
    if (reason === this.reported) return;
    this.reported = reason;
    if (reason !== undefined) this.ctx.log.warn({ reason }, 'part of the job cannot move');
    this.ctx.onStuck?.(reason);
  }
}
