/**
 * Revocations: the worker's drains, from the moment a lane is told to let go
 * (the leader named the split for someone else, or this process is stopping)
 * until the lane has released its split. `serviceRevocations` consults
 * `drainDecision` (protocol/reconcile.ts) for every draining lane and either
 * forces it or sets one timer to look again at its deadline.
 *
 * Invariant: a drain, once begun, finishes (released cooperatively, or forced
 * at drain_deadline, or at once when the handler declined or failed); nothing
 * here cancels one. A timer is cancelled only when its lane has ended or the
 * worker has stopped waiting for any.
 */
import type { Clock } from '../../clock.js';
import { drainDecision } from '../../protocol/reconcile.js';
import { background, type OnUnexpected } from '../background.js';
import type { DrainReason, Emit } from '../events.js';
import type { Lane } from '../lanes/lane.js';
import type { Logger } from '../log.js';

/** What Revocations works with: the worker's lanes (read, never changed here) and its clock and reporters. */
export interface RevocationsContext {
  lanes: ReadonlyMap<string, Lane>;
  clock: Clock;
  drainDeadlineMs: number;
  log: Logger;
  emit: () => Emit;
  unexpected: OnUnexpected;
}

export class Revocations {
  /** One timer per draining lane that waits for its drain_deadline. */
  private readonly timers = new Map<string, () => void>();

  constructor(private readonly ctx: RevocationsContext) {}

  /** Begins a cooperative drain of a running lane, and services it. */
  revoke(id: string): void {
    const lane = this.ctx.lanes.get(id);
    if (!lane || lane.state.kind !== 'running') return;
    this.ctx.log.info({ split: id }, 'revoking split (cooperative drain)');
    this.begin(lane, 'revoked');
    this.serviceRevocations();
  }

  /** Begins a drain of every running lane (a graceful stop); a lane already draining was reported when it began. */
  drainAll(reason: DrainReason): void {
    for (const lane of this.ctx.lanes.values()) if (lane.state.kind === 'running') this.begin(lane, reason);
    this.serviceRevocations();
  }

  /**
   * Moves every drain in progress along: forced when the handler declined or
   * failed, or at drain_deadline; otherwise one timer to look again then.
   */
  serviceRevocations(): void {
    const { clock, lanes, drainDeadlineMs } = this.ctx;
    const now = clock.now();
    for (const lane of lanes.values()) {
      const { state } = lane;
      if (state.kind !== 'draining') continue;
      const d = drainDecision(state.drain.startedAt, now, drainDeadlineMs, state.drain.handler);
      switch (d.kind) {
        case 'force':
          this.ctx.log.info({ split: lane.id, reason: d.reason }, 'revocation forced');
          background('forced release', () => lane.force(), this.ctx.unexpected);
          break;
        case 'wait':
          if (!this.timers.has(lane.id)) {
            this.timers.set(
              lane.id,
              clock.setTimer(d.forceAt - now, () => {
                this.timers.delete(lane.id);
                this.serviceRevocations();
              }),
            );
          }
          break;
      }
    }
  }

  /** The lane has ended (released, forced, lost, …): its deadline timer has nothing left to force. */
  ended(id: string): void {
    this.timers.get(id)?.();
    this.timers.delete(id);
  }

  /** Every lane has ended or been dropped: no timer is needed any more. */
  clear(): void {
    for (const cancel of this.timers.values()) cancel();
    this.timers.clear();
  }

  private begin(lane: Lane, reason: DrainReason): void {
    // A timed-out lane drains no more (its end is its failure report): no drain-started without a drain-ended.
    if (lane.beginDrain()) this.ctx.emit()('drain-started', { id: lane.id, epoch: lane.handle.epoch, reason });
  }
}
