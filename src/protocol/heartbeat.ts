/**
 * The heartbeat timeout rule (substrate.md, "Heartbeat timeout"; decision
 * 0033): a lane whose handler has neither committed nor heartbeated for
 * `heartbeat_timeout` is aborted; the failure report it then owes (one
 * attempt) is written when the handler returns or throws, or at the drain
 * deadline after the abort, whichever comes first.
 *
 * Invariants: activity is the handler's own doing (a `commit`, `heartbeat`,
 * or a handle write it started that is still in flight: a slow store is not a
 * hung handler). A draining lane is never timed out: its drain deadline
 * already bounds it. The reason of a timeout's failure report starts
 * `timeout:`, so it is told apart from the handler's own failures wherever
 * only the reason travels.
 *
 * Pure: times come in as arguments.
 */

/** What the heartbeat watch does next. */
export type HeartbeatVerdict =
  /** No timeout configured, or the lane is draining or ended: nothing to watch. */
  | { kind: 'off' }
  /** Not silent long enough: look again at `at` (clock ms). */
  | { kind: 'wait'; at: number }
  /** Silent for `silentMs` ≥ the timeout: abort the handler now. */
  | { kind: 'timeout'; silentMs: number };

/** What the rule looks at. */
export interface HeartbeatInput {
  /** `heartbeat_timeout` (ms); undefined: off. */
  readonly timeoutMs: number | undefined;
  /** The clock time (ms) of the handler's last commit or heartbeat, or of the claim. */
  readonly lastActivityAt: number;
  readonly now: number;
  /** A handle write the handler started is still in flight. */
  readonly writing: boolean;
  /** The lane is running (not draining, not ended). */
  readonly running: boolean;
}

/** The heartbeat timeout decision for one lane. */
export function heartbeatVerdict(input: HeartbeatInput): HeartbeatVerdict {
  const { timeoutMs, lastActivityAt, now, writing, running } = input;
  if (timeoutMs === undefined || !running) return { kind: 'off' };
  // A write in flight is activity until it settles (it is bounded by op_timeout): look again a full timeout on.
  if (writing) return { kind: 'wait', at: now + timeoutMs };
  const silentMs = now - lastActivityAt;
  if (silentMs >= timeoutMs) return { kind: 'timeout', silentMs };
  return { kind: 'wait', at: lastActivityAt + timeoutMs };
}

/** When a timed-out lane reports its failure if the handler has not returned: the drain deadline after the abort. */
export function timeoutReportAt(timedOutAt: number, drainDeadlineMs: number): number {
  return timedOutAt + drainDeadlineMs;
}

/** The prefix every heartbeat timeout's failure reason starts with. */
export const TIMEOUT_REASON_PREFIX = 'timeout:';

/** The failure reason of a heartbeat timeout. */
export function timeoutReason(silentMs: number, timeoutMs: number): string {
  return `${TIMEOUT_REASON_PREFIX} the handler neither committed nor heartbeated for ${silentMs} ms (heartbeatTimeoutMs ${timeoutMs})`;
}

/** Whether a failure reason is a heartbeat timeout's. */
export function isTimeoutReason(reason: string): boolean {
  return reason.startsWith(TIMEOUT_REASON_PREFIX);
}
