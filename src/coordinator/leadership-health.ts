/**
 * Leadership health: every process, worker or standby, watches its job's
 * `leader` and `plan` keys (its own view has them) and says `degraded` once
 * the job has had no working leader for LEADERLESS_LEASES leases, so no
 * process reports itself ready in a fleet nobody leads (the spec's
 * "Hostile records"). The rule is health.ts's `leaderVerdict`; this keeps
 * when it began and one timer to look again when it falls due.
 */
import type { Clock } from '../clock.js';
import { leaderVerdict, leaderWorking, type LeadershipSeen } from './health.js';

export class LeadershipHealth {
  /** Since when no working leader has been seen (undefined: one is). */
  private since: number | undefined;
  private cancelRecheck: (() => void) | undefined;
  private closed = false;

  constructor(
    private readonly ctx: {
      clock: Clock;
      leaseDurationMs: number;
      seen: () => LeadershipSeen;
      /** Sets (a reason) or clears (undefined) health's `leaderless` observation. */
      setHealthReason: (reason: string | undefined) => void;
    },
  ) {}

  /** Looks at the keys again (on start, and on every change of the `leader` or `plan` key). */
  check(): void {
    if (this.closed) return;
    const { clock } = this.ctx;
    const now = clock.now();
    const seen = this.ctx.seen();
    if (leaderWorking(seen)) {
      this.since = undefined;
      this.cancelRecheck?.();
      this.cancelRecheck = undefined;
      this.ctx.setHealthReason(undefined);
      return;
    }
    this.since ??= now;
    const verdict = leaderVerdict(seen, this.since, now, this.ctx.leaseDurationMs);
    this.ctx.setHealthReason(verdict.reason);
    if (verdict.recheckAt !== undefined && !this.cancelRecheck) {
      this.cancelRecheck = clock.setTimer(verdict.recheckAt - now, () => {
        this.cancelRecheck = undefined;
        this.check();
      });
    }
  }

  close(): void {
    this.closed = true;
    this.cancelRecheck?.();
    this.cancelRecheck = undefined;
  }
}
