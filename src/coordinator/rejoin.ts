/**
 * Rejoining the fleet after a session loss. First the lost session's lease is
 * revoked: loss is declared when renewals go unconfirmed, so it may still
 * live on etcd (an etcd restart even extends it), and its presence key would
 * otherwise look like a live duplicate of this instance; its lanes are
 * already dropped, so revoking only frees their splits sooner. A store
 * outage is what usually ends a session, so a retryable failure is retried
 * (jittered backoff up to leaseDuration / 6, at most 1 s) rather than ending
 * the process; LEASE_LOST here means the new lease lapsed before its presence
 * key was written, and a fresh grant fixes it. Anything else is fatal.
 */
import type { Clock } from '../clock.js';
import { storeFailure, type SplitfleetError } from '../errors.js';
import { backoffDelay, storeRetryPolicy } from '../protocol/backoff.js';
import type { Store } from '../store/store.js';
import { background, type OnUnexpected } from './background.js';
import type { Logger } from './log.js';

export interface RejoinContext {
  store: Store;
  clock: Clock;
  log: Logger;
  leaseDurationMs: number;
  random: () => number;
  unexpected: OnUnexpected;
  /** Opens the new session and its parts (the coordinator's own step, also its first). */
  openSession: () => Promise<void>;
  /** Nothing is left to rejoin: stopping, or already failed. */
  giveUp: () => boolean;
  /** A rejoin failed and is retried: the reason, for health. */
  retrying: (error: string) => void;
  fail: (e: SplitfleetError) => void;
}

export class Rejoiner {
  private attempts = 0;

  constructor(private readonly ctx: RejoinContext) {}

  /** Revokes `lostLease` (once), then opens a new session, retried as the header says. */
  rejoin(lostLease: string | undefined): void {
    const { ctx } = this;
    background('rejoin', () => (async () => {
      if (lostLease !== undefined) {
        await ctx.store.revokeLease(lostLease);
        lostLease = undefined;
      }
      await ctx.openSession();
    })().catch((e) => {
      // A graceful stop must not turn into a fatal error because the store was slow meanwhile.
      if (ctx.giveUp()) return;
      const err = storeFailure(e);
      if (err.retryable || err.code === 'LEASE_LOST') {
        ctx.log.warn({ err: err.message }, 'rejoining the fleet failed; retrying');
        ctx.retrying(err.message);
        const delay = backoffDelay(this.attempts++, storeRetryPolicy(ctx.leaseDurationMs), ctx.random);
        ctx.clock.setTimer(delay, () => this.rejoin(lostLease));
        return;
      }
      ctx.fail(err);
    }), ctx.unexpected);
  }

  /** A new session is open: the next loss starts its backoff afresh. */
  rejoined(): void {
    this.attempts = 0;
  }
}
