/**
 * Background work: every fire-and-forget path of a process (claims,
 * reconcile, publish, settling orphans, the backstop, a campaign, a rejoin,
 * a lane's writes) runs through `background`, so an error nobody expected
 * (a bug, a contract-breaking store, a record that cannot be written back)
 * is logged, counted and shown in health, and never rejects unhandled: an
 * unhandled rejection ends a Node process (docs/decisions/0028-no-background-rejection.md).
 */
import type { Clock } from '../clock.js';
import type { Logger } from './log.js';

/** Reports an error that escaped a background path: `where` names the path. */
export type OnUnexpected = (where: string, error: unknown) => void;

/**
 * Runs `run` now; a synchronous throw, or a rejection of the promise it
 * returns, goes to `onUnexpected` (and nothing escapes, not even from the
 * reporter itself).
 */
export function background(where: string, run: () => unknown, onUnexpected: OnUnexpected): void {
  const report = (e: unknown): void => {
    try {
      onUnexpected(where, e);
    } catch {
      // The reporter failed (a logger that throws): nothing is left to tell, and nothing may escape.
    }
  };
  let result: unknown;
  try {
    result = run();
  } catch (e) {
    report(e);
    return;
  }
  if (result !== null && typeof result === 'object' && typeof (result as PromiseLike<unknown>).then === 'function') {
    (result as PromiseLike<unknown>).then(undefined, report);
  }
}

/** How long an unexpected error stays in health after the last one (ms). */
export const UNEXPECTED_SHOWN_MS = 60_000;
/** The longest message health repeats (characters); the log has it whole. */
const REASON_CHARS = 300;

/**
 * The coordinator's reporter: logs the error with its stack, counts it by
 * where, and sets health's `unexpected` observation, cleared once
 * UNEXPECTED_SHOWN_MS pass without another.
 */
export class UnexpectedErrors {
  private cancelClear: (() => void) | undefined;

  constructor(
    private readonly ctx: {
      log: Logger;
      clock: Clock;
      count: (where: string) => void;
      /** Sets (a reason) or clears (undefined) health's `unexpected` observation. */
      setHealthReason: (reason: string | undefined) => void;
    },
  ) {}

  readonly report: OnUnexpected = (where, error) => {
    const message = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
    this.ctx.count(where);
    this.ctx.log.error({ where, err: error }, `unexpected error in ${where}; the process carries on`);
    const short = message.length > REASON_CHARS ? `${message.slice(0, REASON_CHARS)}…` : message;
    this.ctx.setHealthReason(`unexpected error in ${where}: ${short}`);
    this.cancelClear?.();
    this.cancelClear = this.ctx.clock.setTimer(UNEXPECTED_SHOWN_MS, () => {
      this.cancelClear = undefined;
      this.ctx.setHealthReason(undefined);
    });
  };

  close(): void {
    this.cancelClear?.();
    this.cancelClear = undefined;
  }
}
