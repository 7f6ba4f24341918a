/**
 * Issue 29 items 2, 3 and 5, the failure policy (decision 0032), on MemoryStore
 * and a VirtualClock: a permanent failure (`fail(r, { permanent: true })`, a
 * thrown PermanentFailure) quarantines at once, the handler called once; a
 * failing split is retried after a backoff that grows (and stays in bounds);
 * `retryInMs` overrides the policy; the split-failed event and the metrics
 * say which kind of failure it was and count every quarantine.
 */
import { describe, expect, it } from 'vitest';
import { VirtualClock } from '../../src/clock.js';
import type { RetryBackoff } from '../../src/config.js';
import type { Coordinator } from '../../src/coordinator/coordinator.js';
import type { CoordinatorEventMap } from '../../src/coordinator/events.js';
import type { SplitHandle } from '../../src/coordinator/types.js';
import { PermanentFailure } from '../../src/errors.js';
import { jobPrefix, splitKey } from '../../src/protocol/keys.js';
import { MemoryStore } from '../../src/store/memory.js';
import { renderReport } from '../../src/inspect/render.js';
import { jobReport, readJobRecords } from '../../src/inspect/report.js';
import { listJobKeys } from '../../src/operator/scope.js';
import { counterValue } from '../support/in-process.js';
import { useMemoryFleet } from '../support/memory-fleet.js';
import { settle, stepUntil as stepTime } from '../support/virtual-time.js';


const stepUntil = (clock: VirtualClock, check: () => boolean, ms = 120_000): Promise<boolean> => stepTime(clock, check, ms, 50);

const coordinators = useMemoryFleet();

type Failed = CoordinatorEventMap['split-failed'];

interface Started { c: Coordinator; failed: Failed[]; calls: number[] }

async function start(
  job: string, handler: (h: SplitHandle) => Promise<void>, clock: VirtualClock, store: MemoryStore,
  extra: { retryBackoff?: RetryBackoff; maxAttempts?: number } = {},
): Promise<Started> {
  const failed: Failed[] = [];
  const calls: number[] = [];
  const c = await settle(clock, coordinators.start({
    store, clock, job, instance: 'w0', maxInFlight: 2,
    leaseDurationMs: 3000, opTimeoutMs: 1000, reconcileIntervalMs: 1000,
    ...extra,
    planner: () => ({ splits: [{ id: 's-0', weight: 1 }], final: true }),
    handler: async (h) => {
      calls.push(clock.now());
      await handler(h);
    },
    on: { 'split-failed': (e) => { failed.push(e); } },
  }));
  return { c, failed, calls };
}

async function splitRecord(store: MemoryStore, job: string): Promise<Record<string, unknown>> {
  return JSON.parse((await store.get(splitKey(jobPrefix('splitfleet', job), 's-0')))!.value) as Record<string, unknown>;
}

const gapsOf = (calls: number[]): number[] => calls.slice(1).map((t, i) => t - calls[i]!);

describe('permanent failures', () => {
  it('fail(reason, { permanent: true }) quarantines at once: the handler is called once, the reason kept, the job stalled', async () => {
    const clock = new VirtualClock();
    const store = new MemoryStore({ clock });
    const { c, failed, calls } = await start('perm-fail', (h) => h.fail('undecodable input', { permanent: true }), clock, store, { maxAttempts: 10 });
    expect(await stepUntil(clock, () => c.health().state === 'stopped')).toBe(true);
    await expect(c.done).resolves.toBe('stalled');
    expect(calls).toHaveLength(1);
    expect(await splitRecord(store, 'perm-fail')).toMatchObject({ status: 'quarantined', attempts: 1, reason: 'undecodable input' });
    expect(failed).toEqual([expect.objectContaining({ id: 's-0', attempts: 1, reason: 'undecodable input', kind: 'permanent', permanent: true, retryAt: null })]);
    expect(await counterValue(c.metrics.handlerFailures, { kind: 'permanent' })).toBe(1);
    expect(await counterValue(c.metrics.handlerFailures, { kind: 'error' })).toBe(0);
    expect(await counterValue(c.metrics.quarantined)).toBe(1);
  });

  it('a thrown PermanentFailure quarantines at once, the handler called once', async () => {
    const clock = new VirtualClock();
    const store = new MemoryStore({ clock });
    const { c, failed, calls } = await start('perm-throw', () => Promise.reject(new PermanentFailure('object deleted at the source')), clock, store, { maxAttempts: 10 });
    expect(await stepUntil(clock, () => c.health().state === 'stopped')).toBe(true);
    await expect(c.done).resolves.toBe('stalled');
    expect(calls).toHaveLength(1);
    expect(await splitRecord(store, 'perm-throw')).toMatchObject({ status: 'quarantined', attempts: 1, reason: 'object deleted at the source' });
    expect(failed[0]).toMatchObject({ kind: 'permanent', permanent: true, retryAt: null });
  });

  it('bad fail() options are refused with INVALID_INPUT naming the field, and nothing is written', async () => {
    const clock = new VirtualClock();
    const store = new MemoryStore({ clock });
    let refusal: unknown;
    const { c, calls } = await start('bad-options', async (h) => {
      if (h.epoch === 1) {
        refusal = await h.fail('x', { retryInMs: -5 }).catch((e: unknown) => e);
        return h.complete(1);
      }
    }, clock, store);
    expect(await stepUntil(clock, () => c.health().state === 'stopped')).toBe(true);
    await expect(c.done).resolves.toBe('complete');
    expect(calls).toHaveLength(1);
    expect(refusal).toMatchObject({ code: 'INVALID_INPUT' });
    expect(String((refusal as Error).message)).toMatch(/retryInMs: must be an integer from 0/);
  });
});

describe('retry backoff', () => {
  it('retries a failing split with gaps that grow as the policy says, then quarantines at the cap (counted)', async () => {
    const clock = new VirtualClock();
    const store = new MemoryStore({ clock });
    const { c, failed, calls } = await start('backoff-grow', () => Promise.reject(new Error('downstream 503')), clock, store, {
      retryBackoff: { initialMs: 1000, maxMs: 6000, jitter: 0 }, maxAttempts: 5,
    });
    expect(await stepUntil(clock, () => c.health().state === 'stopped')).toBe(true);
    await expect(c.done).resolves.toBe('stalled');
    expect(calls).toHaveLength(5);
    const gaps = gapsOf(calls);
    // No jitter: the waits are the ceilings 1 s, 2 s, 4 s, then the 6 s cap; a claim follows its due time within a few steps.
    [1000, 2000, 4000, 6000].forEach((wait, i) => {
      expect(gaps[i]).toBeGreaterThanOrEqual(wait);
      expect(gaps[i]).toBeLessThan(wait + 500);
    });
    for (let i = 1; i < gaps.length; i++) expect(gaps[i]).toBeGreaterThan(gaps[i - 1]!);
    // Each report's retryAt is when the next claim became possible.
    failed.slice(0, 4).forEach((f, i) => {
      expect(f.retryAt).not.toBeNull();
      expect(calls[i + 1]).toBeGreaterThanOrEqual(f.retryAt!);
    });
    expect(failed[4]).toMatchObject({ attempts: 5, retryAt: null, permanent: false, kind: 'error' });
    expect(await counterValue(c.metrics.handlerFailures, { kind: 'error' })).toBe(5);
    // The fifth report reached the cap: a quarantine like a claim's (the counter missed it before).
    expect(await counterValue(c.metrics.quarantined)).toBe(1);
  });

  it('the default policy (full jitter) keeps every gap below its ceiling: 1 s doubling', async () => {
    const clock = new VirtualClock();
    const store = new MemoryStore({ clock });
    const { c, calls, failed } = await start('backoff-default', () => Promise.reject(new Error('flaky')), clock, store, { maxAttempts: 5 });
    expect(await stepUntil(clock, () => c.health().state === 'stopped', 300_000)).toBe(true);
    expect(calls).toHaveLength(5);
    gapsOf(calls).forEach((gap, i) => expect(gap).toBeLessThan(1000 * 2 ** i + 500));
    // Every report before the cap waited (a notBefore after the failure), none beyond its ceiling.
    for (const f of failed.slice(0, 4)) expect(f.retryAt).toEqual(expect.any(Number));
  });

  it('retryInMs overrides the policy for that failure', async () => {
    const clock = new VirtualClock();
    const store = new MemoryStore({ clock });
    const { c, calls } = await start('retry-in', async (h) => {
      if (h.epoch === 1) return h.fail('rate limited', { retryInMs: 7000 });
      return h.complete(1);
    }, clock, store, { retryBackoff: { initialMs: 100, maxMs: 100, jitter: 0 } });
    expect(await stepUntil(clock, () => c.health().state === 'stopped')).toBe(true);
    await expect(c.done).resolves.toBe('complete');
    expect(calls).toHaveLength(2);
    expect(calls[1]! - calls[0]!).toBeGreaterThanOrEqual(7000);
    expect(calls[1]! - calls[0]!).toBeLessThan(7500);
  });

  it('inspect shows a waiting split as retrying in …', async () => {
    const clock = new VirtualClock();
    const store = new MemoryStore({ clock });
    const { failed } = await start('retrying-report', (h) => h.fail('later', { retryInMs: 60_000 }), clock, store);
    expect(await stepUntil(clock, () => failed.length === 1)).toBe(true);
    const prefix = jobPrefix('splitfleet', 'retrying-report');
    const { kvs, revision } = await listJobKeys(store, prefix);
    const { records, fp, problems } = readJobRecords(prefix, kvs);
    const report = jobReport(records, { root: 'splitfleet', job: 'retrying-report', prefix, revision, fingerprintHash: fp, problems, now: clock.now() });
    expect(report.retrying).toEqual([{ id: 's-0', attempts: 1, reason: 'later', retryAt: failed[0]!.retryAt, inMs: failed[0]!.retryAt! - clock.now() }]);
    expect(renderReport(report, { color: false })).toMatch(/s-0 {2}retrying in (\d+\.\d s|1 min), after 1 attempt: later/);
    // Once due, it is no longer listed as retrying.
    expect(jobReport(records, { root: 'splitfleet', job: 'retrying-report', prefix, revision, fingerprintHash: fp, problems, now: failed[0]!.retryAt! }).retrying).toEqual([]);
  });
});
