/**
 * backoffDelay (protocol/backoff.ts): full jitter over a doubling ceiling,
 * bounded by the policy, drawn only from the injected random; retryRandom
 * gives each instance its own stream and the same one on replay.
 */
import { describe, expect, it } from 'vitest';
import { backoffDelay, retryRandom, storeRetryPolicy } from '../../../src/protocol/backoff.js';

const policy = { base: 100, max: 2000, min: 10 };

describe('backoffDelay', () => {
  it('stays within [min, min(max, base * 2^attempt)) and the ceiling grows then stops', () => {
    const ceilings = [100, 200, 400, 800, 1600, 2000, 2000];
    ceilings.forEach((ceiling, attempt) => {
      expect(backoffDelay(attempt, policy, () => 0)).toBe(10);
      // The largest draw below 1 stays below the ceiling.
      const top = backoffDelay(attempt, policy, () => 0.999999);
      expect(top).toBeLessThan(ceiling);
      expect(top).toBeGreaterThanOrEqual(ceiling - 1);
    });
    expect(backoffDelay(10_000, policy, () => 0.5)).toBe(Math.floor(10 + 0.5 * (2000 - 10)));
  });

  it('is the injected random, scaled: different draws give different delays (jitter), the same draw the same', () => {
    expect(backoffDelay(3, policy, () => 0.25)).toBe(Math.floor(10 + 0.25 * 790));
    expect(backoffDelay(3, policy, () => 0.75)).toBe(Math.floor(10 + 0.75 * 790));
    expect(backoffDelay(3, policy, () => 0.25)).toBe(backoffDelay(3, policy, () => 0.25));
  });

  it('clamps a random out of [0, 1) and a negative or fractional attempt', () => {
    expect(backoffDelay(0, policy, () => -5)).toBe(10);
    expect(backoffDelay(0, policy, () => 7)).toBe(100);
    expect(backoffDelay(-3, policy, () => 0.5)).toBe(backoffDelay(0, policy, () => 0.5));
    expect(backoffDelay(1.9, policy, () => 0.5)).toBe(backoffDelay(1, policy, () => 0.5));
  });

  it('retryRandom: the same instance draws the same stream, two instances different ones', () => {
    const a1 = retryRandom('w0');
    const a2 = retryRandom('w0');
    const b = retryRandom('w1');
    const xs = Array.from({ length: 8 }, () => a1());
    expect(Array.from({ length: 8 }, () => a2())).toEqual(xs);
    expect(Array.from({ length: 8 }, () => b())).not.toEqual(xs);
    // A fleet of instances restarting at once spreads its first retries out.
    const firsts = new Set(Array.from({ length: 50 }, (_, i) => backoffDelay(0, storeRetryPolicy(30_000), retryRandom(`w${i}`))));
    expect(firsts.size).toBeGreaterThan(20);
  });

  it('storeRetryPolicy never waits longer than the old fixed wait: min(1 s, lease / 6)', () => {
    for (const lease of [300, 3000, 30_000]) {
      const p = storeRetryPolicy(lease);
      const old = Math.min(1000, Math.max(50, Math.floor(lease / 6)));
      expect(backoffDelay(50, p, () => 0.999999)).toBeLessThan(old);
      expect(backoffDelay(0, p, () => 0)).toBeGreaterThan(0);
    }
  });
});
