/**
 * Start-up steps (reading the job, joining the fleet): each is retried while
 * it fails retryably (etcd down or electing, a timeout; `isRetryable` of
 * errors.ts decides), with a jittered doubling backoff up to 2 s, until
 * `startTimeoutMs` has passed; then, or on any other failure, the failure is
 * thrown. No step of its own: it runs what it is given.
 */
import type { Clock } from '../clock.js';
import { isRetryable } from '../errors.js';
import { backoffDelay } from '../protocol/backoff.js';
import type { Logger } from './log.js';

export interface StartupContext {
  clock: Clock;
  log: Logger;
  startTimeoutMs: number;
  /** Stop retrying (stopping, or a fatal error came). */
  giveUp: () => boolean;
  /** Reports the step (and each retry) for the coordinator's health. */
  observe: (startStep: string) => void;
  /** The jitter stream (protocol/backoff.ts); default: Math.random. */
  random?: () => number;
}

export async function untilStarted(what: string, step: () => Promise<void>, ctx: StartupContext): Promise<void> {
  const deadline = ctx.clock.now() + ctx.startTimeoutMs;
  ctx.observe(what);
  for (let attempt = 0; ; attempt++) {
    try {
      await step();
      return;
    } catch (e) {
      // Full jitter over 100 ms doubling to 2 s: a fleet started together does not retry together.
      const delay = backoffDelay(attempt, { base: 100, max: 2000, min: 10 }, ctx.random ?? Math.random);
      if (!isRetryable(e) || ctx.giveUp() || ctx.clock.now() + delay > deadline) throw e;
      ctx.log.warn({ err: (e as Error).message, retryInMs: delay }, `${what} failed; retrying`);
      ctx.observe(`${what}: retrying after ${(e as Error).message}`);
      await new Promise<void>((resolve) => ctx.clock.setTimer(delay, resolve));
    }
  }
}
