/**
 * Issue 28: a worker follows at most its lane budget's worth of assigned
 * ids. A hand-written `assign.{instance}` record naming 100k ids used to make
 * the worker open two watches per id (~200k); now it follows the first
 * FOLLOW_PER_LANE × (maxInFlight + prefetch) in record order, warns once, and the job
 * still completes once the leader writes its own record over it.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { startCoordinator, type Coordinator } from '../../src/coordinator/coordinator.js';
import type { Logger } from '../../src/coordinator/log.js';
import type { SplitHandle } from '../../src/coordinator/types.js';
import { FOLLOW_PER_LANE } from '../../src/coordinator/worker/worker.js';
import { assignKey, jobPrefix } from '../../src/protocol/keys.js';
import { MemoryStore } from '../../src/store/memory.js';
import type { WatchHandle, WatchOptions } from '../../src/store/store.js';
import { waitUntil } from '../support/wait.js';

/** Counts the watches opened. */
class Counting extends MemoryStore {
  watches = 0;
  override watch(prefix: string, options: WatchOptions): WatchHandle {
    this.watches++;
    return super.watch(prefix, options);
  }
}

const store = new Counting();
const fleet: Coordinator[] = [];
afterAll(async () => {
  for (const c of fleet) await c.close().catch(() => undefined);
  await store.close();
});

describe('an assignment record naming 100k ids', () => {
  it('is followed only up to the lane budget, with one warning', async () => {
    const warnings: string[] = [];
    const logger: Logger = { debug() {}, info() {}, error() {}, warn: (_o, msg) => void warnings.push(msg ?? '') };
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const handler = async (h: SplitHandle) => {
      await gate;
      await h.complete(1);
    };
    const maxInFlight = 2;
    const prefetch = 1;
    const c = await startCoordinator({
      store, job: 'oversized', instance: 'w0', maxInFlight, prefetch, logger,
      leaseDurationMs: 3000, opTimeoutMs: 1000, rebalanceDelayMs: 0, reconcileIntervalMs: 500,
      planner: () => ({ splits: ['s-0', 's-1'].map((id) => ({ id, weight: 1 })), final: true }), handler,
    });
    fleet.push(c);
    await waitUntil('both splits held', () => c.held.length === 2, { timeoutMs: 10_000 });
    const key = assignKey(jobPrefix('splitfleet', 'oversized'), 'w0');
    const rec = JSON.parse((await store.get(key))!.value) as { splits: string[] };
    const before = store.watches;
    const hostile = [...rec.splits, ...Array.from({ length: 100_000 }, (_, i) => `x-${String(i).padStart(6, '0')}`)].sort();
    await store.put(key, JSON.stringify({ ...rec, splits: hostile }));
    await waitUntil('the warning', () => warnings.some((w) => /names 100002 splits/.test(w)), { timeoutMs: 10_000 });
    // Two watches (record, lease key) per followed id at most, plus a spec watch each.
    expect(store.watches - before).toBeLessThanOrEqual(3 * FOLLOW_PER_LANE * (maxInFlight + prefetch));
    expect(warnings.filter((w) => /names 100002 splits/.test(w))).toHaveLength(1);
    release();
    await expect(c.done).resolves.toBe('complete');
  });
});
