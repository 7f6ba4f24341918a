/**
 * Issue 29 items 2 and 3 on a real etcd (decision 0032), two in-process
 * members with an EtcdStore each: a handler calling `fail(r, { permanent:
 * true })` is called once and its split is quarantined with the reason; a
 * split failing every time with a small retryBackoff (no jitter) is retried
 * only after each backoff has passed, with gaps that grow, and quarantined at
 * maxAttempts. The bounds asserted are lower bounds (a claim cannot come
 * before the record's notBefore), plus growth with a factor of 4.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startCoordinator, type Coordinator } from '../../src/coordinator/coordinator.js';
import type { CoordinatorEventMap } from '../../src/coordinator/events.js';
import { silentLogger } from '../../src/coordinator/log.js';
import type { SplitHandle } from '../../src/coordinator/types.js';
import type { RetryBackoff } from '../../src/config.js';
import { jobPrefix, splitKey } from '../../src/protocol/keys.js';
import { EtcdStore } from '../../src/store/etcd/etcd.js';
import { startEtcd, type EtcdHandle } from '../support/etcd.js';

let etcd: EtcdHandle;
beforeAll(async () => {
  etcd = await startEtcd();
});
afterAll(async () => {
  await etcd?.stop();
});

/** Runs a one-split job on two members until both have a verdict; returns the verdicts, the handler's call times, the failures and the final split record. */
async function runJob(job: string, handler: (h: SplitHandle) => Promise<void>, retryBackoff?: RetryBackoff) {
  const calls: number[] = [];
  const failed: CoordinatorEventMap['split-failed'][] = [];
  const admin = new EtcdStore({ endpoints: etcd.endpoint });
  const stores = [0, 1].map(() => new EtcdStore({ endpoints: etcd.endpoint, opTimeoutMs: 500 }));
  const coordinators: Coordinator[] = [];
  try {
    for (const [i, store] of stores.entries()) {
      coordinators.push(await startCoordinator({
        store, job, instance: `w${i}`, logger: silentLogger, maxInFlight: 2, maxAttempts: 4, layout: 'keys', // the split record is read after the verdict (a packed job folds it back)
        leaseDurationMs: 2000, opTimeoutMs: 500, drainDeadlineMs: 1000, rebalanceDelayMs: 0, reconcileIntervalMs: 1000,
        ...(retryBackoff ? { retryBackoff } : {}),
        planner: () => ({ splits: [{ id: 's-0', weight: 1 }], final: true }),
        handler: async (h) => {
          calls.push(Date.now());
          await handler(h);
        },
        on: { 'split-failed': (e) => { failed.push(e); } },
      }));
    }
    const verdicts = await Promise.all(coordinators.map((c) => c.done));
    const split = JSON.parse((await admin.get(splitKey(jobPrefix('splitfleet', job), 's-0')))!.value) as Record<string, unknown>;
    return { verdicts, calls, failed, split };
  } finally {
    await Promise.all(coordinators.map((c) => c.close().catch(() => undefined)));
    await Promise.all([admin, ...stores].map((s) => s.close()));
  }
}

describe('failure policy (real etcd)', () => {
  it('fail(reason, { permanent: true }): the handler is called once and its split is quarantined', async () => {
    const r = await runJob(`permanent-${Date.now().toString(36)}`, (h) => h.fail('undecodable input', { permanent: true }));
    expect(r.verdicts).toEqual(['stalled', 'stalled']);
    expect(r.calls).toHaveLength(1);
    expect(r.split).toMatchObject({ status: 'quarantined', attempts: 1, reason: 'undecodable input' });
    expect(r.failed).toEqual([expect.objectContaining({ id: 's-0', attempts: 1, kind: 'permanent', permanent: true, retryAt: null })]);
  }, 60_000);

  it('a split failing with the backoff policy is retried with growing gaps, each after its notBefore', async () => {
    const waits = [250, 1000, 4000];
    const r = await runJob(`backoff-${Date.now().toString(36)}`, () => Promise.reject(new Error('downstream 503')),
      { initialMs: 250, maxMs: 10_000, factor: 4, jitter: 0 });
    expect(r.verdicts).toEqual(['stalled', 'stalled']);
    expect(r.calls).toHaveLength(4);
    const gaps = r.calls.slice(1).map((t, i) => t - r.calls[i]!);
    waits.forEach((wait, i) => expect(gaps[i]).toBeGreaterThanOrEqual(wait));
    for (let i = 1; i < gaps.length; i++) expect(gaps[i]).toBeGreaterThan(gaps[i - 1]!);
    r.failed.slice(0, 3).forEach((f, i) => expect(r.calls[i + 1]).toBeGreaterThanOrEqual(f.retryAt!));
    expect(r.split).toMatchObject({ status: 'quarantined', attempts: 4, reason: 'downstream 503' });
  }, 60_000);
});
