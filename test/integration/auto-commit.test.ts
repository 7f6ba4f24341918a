/**
 * split.advance() and autoCommitMs (issue 50, item 4; src/coordinator/lanes/auto-commit.ts), on
 * MemoryStore with the real coordinator: a handler that only advances is committed every
 * autoCommitMs (far fewer writes than advances), completes at its latest advance, and a drain
 * releases at the latest advance, so the next owner resumes exactly there.
 */
import { describe, expect, it } from 'vitest';
import { CONFIG_DEFAULTS } from '../../src/config.js';
import type { SplitHandle } from '../../src/coordinator/types.js';
import { jobPrefix, progressKey } from '../../src/protocol/keys.js';
import { MemoryStore } from '../../src/store/memory.js';
import type { Txn, TxnResult } from '../../src/store/store.js';
import { useMemoryFleet } from '../support/memory-fleet.js';

class Counting extends MemoryStore {
  progressWrites = 0;
  override async txn(t: Txn): Promise<TxnResult> {
    const res = await super.txn(t);
    if (res.won) this.progressWrites += t.success.filter((o) => o.op === 'put' && o.key.includes('/progress.')).length;
    return res;
  }
}

const coordinators = useMemoryFleet();

const knobs = { layout: 'keys' as const, drainDeadlineMs: 2000, reconcileIntervalMs: CONFIG_DEFAULTS.reconcileIntervalMs, autoCommitMs: 40 };

describe('advance and automatic commits', () => {
  it('commits the latest advance on a timer, not every advance, and completes at it', async () => {
    const store = new Counting();
    const c = await coordinators.start({
      store, job: 'auto', instance: 'w0', ...knobs,
      planner: () => ({ final: true, splits: [{ id: 's', weight: 1 }] }),
      handler: async (split: SplitHandle) => {
        for (let u = 1; u <= 100; u++) {
          await new Promise((r) => setTimeout(r, 3));
          split.advance(u, { done: u / 100 });
        }
        await split.complete(); // at the latest advance
      },
    });
    await expect(c.done).resolves.toBe('complete');
    const p = JSON.parse((await store.get(progressKey(jobPrefix('splitfleet', 'auto'), 's')))!.value) as { progress: number; done?: number };
    expect(p.progress).toBe(100);
    // ~300 ms of advances at a commit per 40 ms: a handful of writes, not a hundred.
    expect(store.progressWrites).toBeGreaterThan(1);
    expect(store.progressWrites).toBeLessThan(30);
  });

  it('a drain releases at the latest advance: the next owner resumes exactly there', async () => {
    const store = new MemoryStore();
    let reachedOnDrain: number | undefined;
    let resumedAt: number | undefined | null;
    const handler = (who: string) => async (split: SplitHandle) => {
      let u = typeof split.progress === 'number' ? split.progress : 0;
      if (who === 'w1') resumedAt = split.progress as number | null;
      while (u < 200) {
        if (split.drainSignal.aborted) {
          reachedOnDrain = u;
          return; // released at the latest advance
        }
        await new Promise((r) => setTimeout(r, 2));
        split.advance(++u);
      }
      await split.complete();
    };
    const planner = () => ({ final: true, splits: [{ id: 's', weight: 1 }] });
    const first = await coordinators.start({ store, job: 'drain', instance: 'w0', ...knobs, planner, handler: handler('w0') });
    await new Promise((r) => setTimeout(r, 100));
    await first.stop(); // drains its lane
    expect(reachedOnDrain).toBeGreaterThan(0);
    const second = await coordinators.start({ store, job: 'drain', instance: 'w1', ...knobs, planner, handler: handler('w1') });
    await expect(second.done).resolves.toBe('complete');
    expect(resumedAt).toBe(reachedOnDrain);
  });
});
