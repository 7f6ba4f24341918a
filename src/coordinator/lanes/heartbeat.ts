/**
 * HeartbeatWatch: the timer half of a lane's heartbeat timeout, on the
 * coordinator's injected clock. It records the handler's activity (a commit
 * or a `heartbeat(details?)`, a write in flight) and asks the pure rule
 * (protocol/heartbeat.ts) what to do whenever its one timer fires: look
 * again later, or time the lane out; after a timeout, one more timer for the
 * drain deadline, when the lane reports the failure if the handler has not
 * returned by then.
 *
 * Invariants: at most one timer per lane; activity never touches a timer
 * (a handler heartbeating per record costs an assignment, not a timer):
 * the timer, when it fires, re-arms at the last activity + the timeout.
 * Heartbeat details stay in this process's memory (the last one, for the
 * log line of a timeout); nothing here writes to the store. It decides
 * nothing itself and does not know the lane.
 */
import type { Clock } from '../../clock.js';
import { heartbeatVerdict, timeoutReportAt } from '../../protocol/heartbeat.js';
import type { Json } from '../../protocol/records.js';

export interface HeartbeatWatchOptions {
  clock: Clock;
  /** heartbeat_timeout (ms). */
  timeoutMs: number;
  /** drain_deadline (ms): how long a timed-out handler may take to return before its failure is reported anyway. */
  drainDeadlineMs: number;
  /** Whether the lane is running (not draining, not ended): a draining lane's drain deadline bounds it instead. */
  running: () => boolean;
  /** The handler was silent for `silentMs`: abort it. */
  onTimeout: (silentMs: number) => void;
  /** The drain deadline after the timeout passed with the handler still out: report the failure now. */
  onReportDue: () => void;
}

export class HeartbeatWatch {
  /** Clock time of the last commit or heartbeat (the claim, before either). */
  lastActivityAt: number;
  /** The details of the last heartbeat that gave any. */
  details: Json | undefined;
  /** When the lane timed out (clock ms); undefined while it has not. */
  timedOutAt: number | undefined;
  private writing = 0;
  private cancel: (() => void) | undefined;
  private stopped = false;

  constructor(private readonly o: HeartbeatWatchOptions) {
    this.lastActivityAt = o.clock.now();
    this.check();
  }

  /** The handler showed it is alive (a commit, a heartbeat). */
  touch(details?: Json): void {
    this.lastActivityAt = this.o.clock.now();
    if (details !== undefined) this.details = details;
  }

  /** A handle write the handler started: activity until it settles (call the returned function then). */
  writeStarted(): () => void {
    this.touch();
    this.writing++;
    let done = false;
    return () => {
      if (done) return;
      done = true;
      this.writing--;
      this.touch();
    };
  }

  /** The lane ended: no more timers. Idempotent. */
  stop(): void {
    this.stopped = true;
    this.cancel?.();
    this.cancel = undefined;
  }

  private arm(at: number, fn: () => void): void {
    this.cancel?.();
    this.cancel = this.o.clock.setTimer(Math.max(0, at - this.o.clock.now()), () => {
      this.cancel = undefined;
      if (!this.stopped) fn();
    });
  }

  private check(): void {
    if (this.stopped || this.timedOutAt !== undefined) return;
    const now = this.o.clock.now();
    const v = heartbeatVerdict({ timeoutMs: this.o.timeoutMs, lastActivityAt: this.lastActivityAt, now, writing: this.writing > 0, running: this.o.running() });
    switch (v.kind) {
      case 'off':
        // Draining: the drain deadline ends the lane; should the drain somehow not, look again a timeout on.
        this.arm(now + this.o.timeoutMs, () => this.check());
        return;
      case 'wait':
        this.arm(v.at, () => this.check());
        return;
      case 'timeout':
        this.timedOutAt = now;
        this.o.onTimeout(v.silentMs);
        if (!this.stopped) this.arm(timeoutReportAt(now, this.o.drainDeadlineMs), () => this.o.onReportDue());
        return;
      default: {
        const never: never = v;
        throw new Error(`unhandled heartbeat verdict ${JSON.stringify(never)}`);
      }
    }
  }
}
