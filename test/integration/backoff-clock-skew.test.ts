/**
 * Issue 49, clocks (decision 0060): a failed split's `notBefore` is written
 * on the failing worker's clock. A writer whose clock runs an hour ahead used
 * to park the split for that hour, and nothing but time could clear it. Now
 * the record carries the wait itself (`waitMs`) and each reader waits at most
 * that long from when it first saw the record, on its own clock; `retry`
 * clears a waiting split's backoff. MemoryStore on a VirtualClock; the
 * skewed member's wall clock is the virtual time plus an hour.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { VirtualClock, type Clock } from '../../src/clock.js';
import { defaultFingerprint } from '../../src/config.js';
import { startCoordinator, type Coordinator } from '../../src/coordinator/coordinator.js';
import { silentLogger } from '../../src/coordinator/log.js';
import type { SplitHandle } from '../../src/coordinator/types.js';
import { retrySplits } from '../../src/operator/retry.js';
import { jobPrefix, splitKey } from '../../src/protocol/keys.js';
import { decodeRecord, fingerprintHash } from '../../src/protocol/records.js';
import { MemoryStore } from '../../src/store/memory.js';
import { settle, stepUntil } from '../support/virtual-time.js';

const LEASE = 3000;
const HOUR = 3_600_000;

let running: Coordinator[] = [];
afterEach(async () => {
  for (const c of running) await c.close().catch(() => undefined);
  running = [];
});

function start(store: MemoryStore, time: VirtualClock, clock: Clock, job: string, instance: string, handler: (h: SplitHandle) => Promise<void>): Promise<Coordinator> {
  return settle(time, startCoordinator({
    store, clock, job, instance, logger: silentLogger, maxInFlight: 1, layout: 'keys',
    leaseDurationMs: LEASE, opTimeoutMs: 1000, rebalanceDelayMs: 0, reconcileIntervalMs: 1000, drainDeadlineMs: 1000,
    planner: () => ({ splits: [{ id: 's-0', weight: 1 }], final: true }),
    handler,
  })).then((c) => {
    running.push(c);
    return c;
  });
}

/** A member whose wall clock runs an hour ahead fails s-0 once, asking to wait 2 s, and stops. */
async function failedAheadOfTime(job: string): Promise<{ clock: VirtualClock; store: MemoryStore; prefix: string; fp: string }> {
  const clock = new VirtualClock();
  const store = new MemoryStore({ clock });
  const ahead: Clock = { now: () => clock.now(), setTimer: (ms, fn) => clock.setTimer(ms, fn), wallNow: () => clock.now() + HOUR };
  let failed = false;
  const a = await settle(clock, start(store, clock, ahead, job, 'ahead', async (h) => {
    failed = true;
    await h.fail('try again in 2 s', { retryInMs: 2000 });
  }));
  expect(await stepUntil(clock, () => failed && a.held.length === 0, 10 * LEASE, 50)).toBe(true);
  await settle(clock, a.close());
  running = running.filter((c) => c !== a);
  const prefix = jobPrefix('splitfleet', job);
  const fp = fingerprintHash(defaultFingerprint('splitfleet', job));
  const rec = decodeRecord('split', splitKey(prefix, 's-0'), (await store.get(splitKey(prefix, 's-0')))!.value, fp);
  // Written on the fast clock: due an hour and 2 s from now by it, with the wait beside it.
  expect(rec).toMatchObject({ status: 'runnable', attempts: 1, waitMs: 2000 });
  expect(rec.notBefore! - clock.now()).toBeGreaterThan(HOUR);
  return { clock, store, prefix, fp };
}

describe('a backoff survives clock skew between processes', () => {
  it('a split failed by a member whose clock runs an hour ahead waits the 2 s it asked, not the hour', async () => {
    const { clock, store } = await failedAheadOfTime('skew-ahead');
    const startedAt = clock.now();
    let ranAt: number | undefined;
    const b = await start(store, clock, clock, 'skew-ahead', 'on-time', async (h) => {
      ranAt = clock.now();
      await h.complete(1);
    });
    let verdict: string | undefined;
    void b.done.then((v) => (verdict = v));
    expect(await stepUntil(clock, () => verdict !== undefined, 10 * LEASE, 50)).toBe(true);
    expect(verdict).toBe('complete');
    // The wait was honoured on this member's clock (from when it first saw the record), and bounded by it.
    expect(ranAt! - startedAt).toBeGreaterThanOrEqual(2000);
    expect(ranAt! - startedAt).toBeLessThan(2000 + 2 * LEASE);
  });

  it('retry clears a waiting split\'s backoff: it runs at once', async () => {
    const { clock, store } = await failedAheadOfTime('skew-retry');
    const result = await settle(clock, retrySplits({ store, job: 'skew-retry', splits: ['s-0'] }));
    expect(result.retried).toEqual(['s-0']);
    const startedAt = clock.now();
    let ranAt: number | undefined;
    const b = await start(store, clock, clock, 'skew-retry', 'on-time', async (h) => {
      ranAt = clock.now();
      expect(h.attempts).toBe(0);
      await h.complete(1);
    });
    let verdict: string | undefined;
    void b.done.then((v) => (verdict = v));
    expect(await stepUntil(clock, () => verdict !== undefined, 10 * LEASE, 50)).toBe(true);
    expect(ranAt! - startedAt).toBeLessThan(2000);
  });
});
