/**
 * Issue 28: failure writes always land or free the lane. A handler that
 * throws an Error whose message is 2 MB used to make its failure report
 * exceed the store's request limit: refused as not retryable, the lane gave
 * up silently and the split stayed held under a live lease. Now the reason
 * is cut to REASON_MAX_BYTES with a marker, the report lands, the lane is
 * freed and the split is retried, or quarantined, by the normal rules.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { startCoordinator, type Coordinator } from '../../src/coordinator/coordinator.js';
import { silentLogger } from '../../src/coordinator/log.js';
import type { SplitHandle } from '../../src/coordinator/types.js';
import { REASON_MAX_BYTES } from '../../src/protocol/reason.js';
import { MemoryStore } from '../../src/store/memory.js';
import { waitUntil } from '../support/wait.js';

const HUGE = 2 * 1024 * 1024;
const fast = { leaseDurationMs: 3000, opTimeoutMs: 1000, rebalanceDelayMs: 0, reconcileIntervalMs: 500 };
const store = new MemoryStore();
const fleet: Coordinator[] = [];
afterAll(async () => {
  for (const c of fleet) await c.close().catch(() => undefined);
  await store.close();
});

describe('a handler throwing a 2 MB message', () => {
  it('lands its failure truncated with a marker, frees the lane, and the split is retried', async () => {
    const failed: { reason: string; attempts: number }[] = [];
    let tries = 0;
    const handler = async (h: SplitHandle) => {
      if (tries++ === 0) throw new Error('é'.repeat(HUGE / 2)); // 2 MB of UTF-8, two bytes a code point
      await h.complete(1);
    };
    const c = await startCoordinator({
      store, job: 'huge-reason', instance: 'w0', maxInFlight: 1, logger: silentLogger, ...fast,
      planner: () => ({ splits: [{ id: 's-0', weight: 1 }], final: true }), handler,
      on: { 'split-failed': (e) => failed.push({ reason: e.reason, attempts: e.attempts }) },
    });
    fleet.push(c);
    await expect(c.done).resolves.toBe('complete');
    expect(tries).toBe(2);
    expect(failed).toHaveLength(1);
    const reason = failed[0]!.reason;
    expect(Buffer.byteLength(reason, 'utf8')).toBeLessThanOrEqual(REASON_MAX_BYTES);
    expect(reason).toMatch(/^é+ … \[truncated, 2097152 bytes\]$/);
    expect(failed[0]!.attempts).toBe(1);
  });

  it('always: each report lands and the split is quarantined at maxAttempts, its reason bounded', async () => {
    const quarantined: string[] = [];
    const handler = async () => {
      throw new Error('x'.repeat(HUGE));
    };
    const c = await startCoordinator({
      store, job: 'huge-reason-always', instance: 'w0', maxInFlight: 1, maxAttempts: 2, logger: silentLogger, ...fast,
      planner: () => ({ splits: [{ id: 's-0', weight: 1 }], final: true }), handler,
      on: { 'split-quarantined': (e) => quarantined.push(e.reason) },
    });
    fleet.push(c);
    await expect(c.done).resolves.toBe('stalled');
    expect(c.held).toEqual([]);
    expect(quarantined).toHaveLength(1);
    expect(Buffer.byteLength(quarantined[0]!, 'utf8')).toBeLessThanOrEqual(REASON_MAX_BYTES);
    expect(quarantined[0]).toMatch(/ … \[truncated, 2097152 bytes\]$/);
  });
});

describe('a lane write the store refuses for good', () => {
  it('a refused completion is reported as the split failure, counted, and the lane is freed', async () => {
    // A completion whose progress is over the request limit: refused (RECORD_TOO_LARGE), not retryable.
    let tries = 0;
    const handler = async (h: SplitHandle) => {
      tries++;
      await h.complete(tries === 1 ? 'p'.repeat(HUGE) : 1).catch(() => undefined);
    };
    const failed: string[] = [];
    const c = await startCoordinator({
      store, job: 'refused-complete', instance: 'w0', maxInFlight: 1, logger: silentLogger, ...fast,
      planner: () => ({ splits: [{ id: 's-0', weight: 1 }], final: true }), handler,
      on: { 'split-failed': (e) => failed.push(e.reason) },
    });
    fleet.push(c);
    await expect(c.done).resolves.toBe('complete');
    expect(tries).toBe(2);
    expect(failed).toHaveLength(1);
    expect(failed[0]).toMatch(/^complete refused: RECORD_TOO_LARGE/);
    const refused = (await c.metrics.registry.getSingleMetric('splitfleet_lane_writes_refused_total')!.get()).values;
    expect(refused.find((v) => v.labels.write === 'complete')?.value).toBe(1);
    await waitUntil('no lane left', () => c.held.length === 0, { timeoutMs: 5000 });
  });
});
