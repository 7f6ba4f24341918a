/**
 * Start-up steps (reading the job, joining the fleet): each is retried while
 * it fails retryably (etcd down or electing, a timeout; `isRetryable` of
 * errors.ts decides), with a doubling backoff up to 2 s, until
 * `startTimeoutMs` has passed; then, or on any other failure, the failure is
 * thrown. No step of its own: it runs what it is given.
 */
import type { Clock } from '../clock.js';
import { isRetryable } from '../errors.js';
import type { Logger } from './log.js';

export interface StartupContext {
  clock: Clock;
  log: Logger;
  startTimeoutMs: number;
  /** Stop retrying (stopping, or a fatal error came). */
  giveUp: () => boolean;
  /** Reports the step (and each retry) for the coordinator's health. */
  observe: (startStep: string) => void;
}

export async function untilStarted(what: string, step: () => Promise<void>, ctx: StartupContext): Promise<void> {
  const deadline = ctx.clock.now() + ctx.startTimeoutMs;
  let delay = 100;
  ctx.observe(what);
  for (;;) {
    try {
      await step();
      return;
    } catch (e) {
      if (!isRetryable(e) || ctx.giveUp() || ctx.clock.now() + delay > deadline) throw e;
      ctx.log.warn({ err: (e as Error).message, retryInMs: delay }, `${what} failed; retrying`);
      ctx.observe(`${what}: retrying after ${(e as Error).message}`);
      await new Promise<void>((resolve) => ctx.clock.setTimer(delay, resolve));
      delay = Math.min(2 * delay, 2000);
    }
  }
}
