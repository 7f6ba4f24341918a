/**
 * Retry delays: every retry loop of a process (watch re-establish, start-up,
 * campaign, rejoin, orphan settling, a lane's ending write) waits
 * `backoffDelay`, full jitter over a doubling ceiling, so a fleet that lost
 * its store at one instant does not come back in lock-step
 * (docs/decisions/0029-jittered-backoff.md).
 *
 * Pure: the randomness comes in as an argument. `retryRandom` gives each
 * process its own seeded stream (from its instance id), so a simulation
 * still replays from its seed alone.
 */
import { seedState } from '../hash.js';
import { prng } from '../prng.js';

export interface BackoffPolicy {
  /** The first attempt's ceiling (ms). */
  base: number;
  /** The ceiling never grows past this (ms). */
  max: number;
  /** The shortest delay returned (ms): a floor keeps a retry from spinning on a zero draw. Default 0. */
  min?: number;
  /** How much the ceiling grows per attempt. Default 2. */
  factor?: number;
}

/**
 * The delay before retry number `attempt` (0 for the first retry): uniform in
 * [min, min(max, base · factor^attempt)) as drawn from `random` (values in [0, 1)).
 */
export function backoffDelay(attempt: number, policy: BackoffPolicy, random: () => number): number {
  const min = policy.min ?? 0;
  const n = Math.max(0, Math.min(Math.floor(attempt), 52));
  const ceiling = Math.max(min, Math.min(policy.max, policy.base * (policy.factor ?? 2) ** n));
  const r = Math.min(Math.max(random(), 0), 1);
  return Math.floor(min + r * (ceiling - min));
}

/** A process's jitter stream: seeded by its instance id (different instances draw differently; a replay draws the same). */
export function retryRandom(instance: string): () => number {
  return prng(seedState(`retry:${instance}`));
}

/**
 * The coordinator's store-retry loops (campaign, rejoin, orphan settling):
 * a ceiling of an eighth of the old fixed wait, doubling to it, min(1 s,
 * lease / 6), so a lease is never outlived by the wait between two tries.
 */
export function storeRetryPolicy(leaseDurationMs: number): BackoffPolicy {
  const max = Math.min(1000, Math.max(50, Math.floor(leaseDurationMs / 6)));
  return { base: Math.max(10, Math.floor(max / 8)), max, min: Math.min(10, max) };
}
