/**
 * Issue 28: no background promise can kill a process. A claim whose
 * transaction cannot even be built (here: `claimTxn` throws a TypeError for
 * one split, as re-encoding a hostile record once did) used to reject
 * unhandled and end the worker. Now the process lives, costs only that
 * split, says `degraded` with the reason, counts it, and once the cause is
 * gone the split runs and the job completes.
 */
import { afterAll, describe, expect, it, vi } from 'vitest';
import { startCoordinator, type Coordinator } from '../../src/coordinator/coordinator.js';
import { silentLogger } from '../../src/coordinator/log.js';
import type { SplitHandle } from '../../src/coordinator/types.js';
import { MemoryStore } from '../../src/store/memory.js';
import { waitUntil } from '../support/wait.js';

const broken = vi.hoisted(() => ({ id: undefined as string | undefined, calls: 0 }));
vi.mock('../../src/protocol/txns.js', async (importOriginal) => {
  const real = await importOriginal<typeof import('../../src/protocol/txns.js')>();
  return {
    ...real,
    claimTxn: (...args: Parameters<typeof real.claimTxn>) => {
      if (args[1] === broken.id) {
        broken.calls++;
        throw new TypeError('cannot build this claim');
      }
      return real.claimTxn(...args);
    },
  };
});

const store = new MemoryStore();
const fleet: Coordinator[] = [];
afterAll(async () => {
  for (const c of fleet) await c.close().catch(() => undefined);
  await store.close();
});

describe('an unexpected error in a claim', () => {
  it('is logged, counted and shown in health; the process lives and the rest of the job runs', async () => {
    const rejections: unknown[] = [];
    const onRejection = (e: unknown) => rejections.push(e);
    process.on('unhandledRejection', onRejection);
    try {
      broken.id = 's-1';
      const done = new Set<string>();
      const handler = async (h: SplitHandle) => {
        await h.complete(1);
        done.add(h.id);
      };
      const c = await startCoordinator({
        store, job: 'hostile-claim', instance: 'w0', maxInFlight: 4, logger: silentLogger,
        leaseDurationMs: 3000, opTimeoutMs: 1000, rebalanceDelayMs: 0, reconcileIntervalMs: 500,
        planner: () => ({ splits: ['s-0', 's-1', 's-2'].map((id) => ({ id, weight: 1 })), final: true }),
        handler,
      });
      fleet.push(c);
      await waitUntil('the other splits done', () => done.has('s-0') && done.has('s-2'), { timeoutMs: 20_000 });
      await waitUntil('health degraded', () => c.health().state === 'degraded', { timeoutMs: 10_000, describe: () => JSON.stringify(c.health()) });
      expect(c.health().reason).toMatch(/^unexpected error in claim: TypeError: cannot build this claim/);
      const counted = (await c.metrics.registry.getSingleMetric('splitfleet_unexpected_errors_total')!.get()).values;
      expect(counted.find((v) => v.labels.where === 'claim')?.value ?? 0).toBeGreaterThanOrEqual(1);
      expect(done.has('s-1')).toBe(false);
      expect(broken.calls).toBeGreaterThanOrEqual(1);

      // The cause goes: the worker tries again by itself (nothing else changes to make it) and the job completes.
      broken.id = undefined;
      await expect(c.done).resolves.toBe('complete');
      expect(done.has('s-1')).toBe(true);
      expect(rejections).toEqual([]);
    } finally {
      process.off('unhandledRejection', onRejection);
    }
  });
});
