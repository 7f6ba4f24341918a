/**
 * A whole fleet on the in-process MemoryStore: the planner seeds, the leader
 * publishes, workers claim, commit, complete; every instance sees the verdict.
 */
import { describe, expect, test } from 'vitest';
import { startCoordinator, type Coordinator } from '../../src/coordinator/coordinator.js';
import { silentLogger } from '../../src/coordinator/log.js';
import type { SplitHandle } from '../../src/coordinator/types.js';
import { MemoryStore } from '../../src/store/memory.js';

const fast = { leaseDurationMs: 2000, opTimeoutMs: 500, rebalanceDelayMs: 0, drainDeadlineMs: 1000, reconcileIntervalMs: 1000 };

describe('a fleet on MemoryStore', () => {
  test('completes a final plan with every unit processed', async () => {
    const store = new MemoryStore();
    const processed = new Map<string, number>();
    const planner = () => ({
      final: true,
      splits: Array.from({ length: 40 }, (_, i) => ({ id: `s-${String(i).padStart(3, '0')}`, weight: 1 + (i % 7) * 100, descriptor: { units: 5 } })),
    });
    const handler = async (split: SplitHandle) => {
      let done = (split.progress as number | null) ?? 0;
      while (done < 5) {
        done++;
        processed.set(`${split.id}#${done}`, (processed.get(`${split.id}#${done}`) ?? 0) + 1);
        await split.commit(done);
      }
      await split.complete(done);
    };
    const fleet: Coordinator[] = [];
    for (let i = 0; i < 3; i++) {
      fleet.push(await startCoordinator({ store, job: 'smoke', instance: `w-${i}`, maxInFlight: 4, planner, handler, logger: silentLogger, ...fast }));
    }
    const verdicts = await Promise.all(fleet.map((c) => c.done));
    expect(verdicts).toEqual(['complete', 'complete', 'complete']);
    for (let i = 0; i < 40; i++) for (let u = 1; u <= 5; u++) expect(processed.get(`s-${String(i).padStart(3, '0')}#${u}`)).toBeGreaterThanOrEqual(1);
    await store.close();
  });
});
