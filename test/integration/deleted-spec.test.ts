/**
 * Issue 49: a keys job's `spec.{id}` deleted by hand while its split still
 * has to run. Before: the split was never assigned, silently, and the job
 * never ended. Now it is parked with the reason (health, the parked gauge),
 * the rest runs, the job ends `stalled`, and once the spec is put back
 * `splitfleet retry --all-quarantined` clears the verdict and a fleet
 * started again completes it. MemoryStore, real time.
 */
import { describe, expect, test } from 'vitest';
import type { SplitHandle } from '../../src/coordinator/types.js';
import { readJobReport } from '../../src/inspect/summary-read.js';
import { renderSummaryReport } from '../../src/inspect/summary-render.js';
import { retrySplits } from '../../src/operator/retry.js';
import { jobPrefix, specKey } from '../../src/protocol/keys.js';
import { MemoryStore } from '../../src/store/memory.js';
import { firstSplitGate } from '../support/first-split-gate.js';
import { useMemoryFleet } from '../support/memory-fleet.js';
import { waitUntil } from '../support/wait.js';

/** FAST, with a backstop every half second. */
const fast = { reconcileIntervalMs: 500 };

const coordinators = useMemoryFleet();

describe('a keys job\'s spec deleted by hand', () => {
  test('parks its split visibly; the rest runs; put back and retried, the job completes', async () => {
    const store = new MemoryStore();
    const job = 'deleted-spec';
    const prefix = jobPrefix('splitfleet', job);
    const ids = ['s-0', 's-1', 's-2', 's-3', 's-4'];
    const completed = new Set<string>();
    const gate = firstSplitGate();
    const handler = async (split: SplitHandle) => {
      await gate.hold(split.id);
      completed.add(split.id);
      await split.complete(null);
    };
    const start = (instance: string) => coordinators.start({
      store, job, instance, maxInFlight: 1, prefetch: 0, layout: 'keys', ...fast,
      planner: () => ({ final: true, splits: ids.map((id) => ({ id, weight: 1 })) }), handler,
    });
    const c = await start('w-0');
    await waitUntil('the first split to run', () => gate.first !== undefined);
    const victim = ids.find((id) => id !== gate.first)!;
    const spec = (await store.get(specKey(prefix, victim)))!;
    await store.delete(spec.key);
    gate.open();
    await waitUntil('the others to complete', () => ids.filter((id) => id !== victim).every((id) => completed.has(id)));
    await waitUntil('the leader to say the split is parked', () => c.health().state === 'degraded' || c.health().state === 'stopped');
    expect(await c.done).toBe('stalled');
    expect(completed.has(victim)).toBe(false);
    // Put back; the operator's retry clears the stalled verdict; a fleet started again runs it.
    await store.put(spec.key, spec.value);
    expect((await retrySplits({ store, job, allQuarantined: true })).verdictCleared).toBe(true);
    const again = await start('w-1');
    expect(await again.done).toBe('complete');
    expect(completed.has(victim)).toBe(true);
  }, 60_000);

  test('while parked, the leader\'s health names it and the gauge counts it', async () => {
    const store = new MemoryStore();
    const job = 'deleted-spec-health';
    const prefix = jobPrefix('splitfleet', job);
    let open!: () => void;
    const gate = new Promise<void>((resolve) => (open = resolve));
    const c = await coordinators.start({
      store, job, instance: 'w-0', maxInFlight: 1, prefetch: 0, layout: 'keys', ...fast,
      planner: () => ({ final: true, splits: [{ id: 'a', weight: 2 }, { id: 'b', weight: 1 }] }),
      handler: async (split) => { await gate; await split.complete(null); },
    });
    await waitUntil('a to be held', () => c.held.includes('a'));
    await store.delete(specKey(prefix, 'b'));
    const health = await waitUntil('degraded', () => (c.health().state === 'degraded' ? c.health() : undefined));
    expect(health.reason).toMatch(/^part of the job cannot move: 1 split parked \("b": .*spec\.b is missing \(deleted by hand/);
    expect((await c.metrics.parked.get()).values[0]!.value).toBe(1);
    // The summary carries the same words, so `inspect` says which split and why without reading every record.
    const inspected = await waitUntil('the summary to name it', async () => {
      const r = await readJobReport({ store, job, summaryAbove: 0 });
      return r.source === 'summary' && r.report.stuck !== null ? r.report : undefined;
    });
    expect(inspected.stuck).toBe(health.reason);
    expect(renderSummaryReport(inspected)).toContain(`stuck      ${health.reason}`);
    open();
  }, 30_000);

  test('a spec deleted while no leader ran is found at the next leader\'s listing, and parks its split the same way', async () => {
    const store = new MemoryStore();
    const job = 'deleted-spec-listing';
    const prefix = jobPrefix('splitfleet', job);
    const start = (instance: string, handler: (split: SplitHandle) => Promise<void>) => coordinators.start({
      store, job, instance, maxInFlight: 1, prefetch: 0, layout: 'keys', ...fast,
      planner: () => ({ final: true, splits: [{ id: 'a', weight: 2 }, { id: 'b', weight: 1 }] }), handler,
    });
    // A first fleet seeds the job and goes away with both splits still to run.
    const first = await start('w-0', (split) => new Promise<void>((resolve) => split.drainSignal.addEventListener('abort', () => resolve())));
    await waitUntil('a split held', () => first.held.length > 0);
    await first.close();
    await store.delete(specKey(prefix, 'b'));
    const reasons: string[] = [];
    const c = await coordinators.start({
      store, job, instance: 'w-1', maxInFlight: 1, prefetch: 0, layout: 'keys', ...fast,
      planner: () => ({ final: true, splits: [{ id: 'a', weight: 2 }, { id: 'b', weight: 1 }] }),
      handler: async (split) => { await split.complete(null); },
      on: { health: ({ reason }) => { reasons.push(reason); } },
    });
    // 'a' runs, 'b' is parked from the listing on: the job ends stalled, and the leader said why meanwhile.
    expect(await c.done).toBe('stalled');
    expect(reasons.some((r) => /^part of the job cannot move: 1 split parked \("b": .*spec\.b is missing/.test(r)), reasons.join('\n')).toBe(true);
  }, 30_000);
});
