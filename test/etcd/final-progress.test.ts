/**
 * readFinalProgress (issue 50, item 3; decision 0069) on a real etcd: a packed job of three members
 * (an EtcdStore each) runs to its verdict; its fold-backs delete the folded splits' progress keys and
 * keep their final progress in `result.*` records, and every split's final progress is read back,
 * page by page, by a separate reader with a store of its own.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startCoordinator, type Coordinator } from '../../src/coordinator/coordinator.js';
import { silentLogger } from '../../src/coordinator/log.js';
import type { SplitHandle } from '../../src/coordinator/types.js';
import { jobPrefix, kindPrefix } from '../../src/protocol/keys.js';
import { readFinalProgress, type FinalProgress } from '../../src/operator/final-progress.js';
import { EtcdStore } from '../../src/store/etcd/etcd.js';
import { startEtcd, type EtcdHandle } from '../support/etcd.js';

let etcd: EtcdHandle;
beforeAll(async () => {
  etcd = await startEtcd();
});
afterAll(async () => {
  await etcd?.stop();
});

const knobs = { logger: silentLogger, layout: 'packed' as const, leaseDurationMs: 2000, opTimeoutMs: 1000, rebalanceDelayMs: 0, drainDeadlineMs: 1000, reconcileIntervalMs: 1000 };

describe('readFinalProgress on etcd', () => {
  it('reads every split of a finished packed job back, page by page, after the fold-back deleted their progress keys', async () => {
    const n = 400;
    const ids = Array.from({ length: n }, (_, i) => `part-${String(i).padStart(4, '0')}`);
    const planner = () => ({ final: true, splits: ids.map((id) => ({ id, weight: 1 })) });
    const handler = async (s: SplitHandle) => {
      await s.commit({ rows: 1 });
      await s.complete({ rows: Number(s.id.slice(5)) + 1, id: s.id });
    };
    const stores: EtcdStore[] = [];
    const fleet: Coordinator[] = [];
    try {
      for (let i = 0; i < 3; i++) {
        const store = new EtcdStore({ endpoints: [etcd.endpoint], opTimeoutMs: 5000 });
        stores.push(store);
        fleet.push(await startCoordinator({ store, job: 'results', instance: `w-${i}`, maxInFlight: 8, planner, handler, ...knobs }));
      }
      expect(await Promise.all(fleet.map((c) => c.done))).toEqual(['complete', 'complete', 'complete']);
    } finally {
      for (const c of fleet) await c.close().catch(() => undefined);
      for (const s of stores) await s.close();
    }

    const reader = new EtcdStore({ endpoints: [etcd.endpoint], opTimeoutMs: 5000 });
    try {
      const prefix = jobPrefix('splitfleet', 'results');
      const progressKeys = (await reader.list(prefix, { rangeStart: kindPrefix(prefix, 'progress'), rangeEnd: `${prefix}progress/` })).kvs.length;
      const resultKeys = (await reader.list(prefix, { rangeStart: kindPrefix(prefix, 'result'), rangeEnd: `${prefix}result/` })).kvs.length;
      expect(resultKeys).toBeGreaterThan(0);
      expect(progressKeys).toBeLessThan(n);

      const items: FinalProgress[] = [];
      let after: string | undefined;
      let pages = 0;
      do {
        const page = await readFinalProgress({ store: reader, job: 'results', limit: 37, ...(after !== undefined ? { after } : {}) });
        expect(page.unreadable).toEqual([]);
        expect(page.items.length).toBeLessThanOrEqual(37);
        items.push(...page.items);
        after = page.next;
        pages++;
      } while (after !== undefined && pages < 1000);
      expect(pages).toBeGreaterThanOrEqual(Math.ceil(n / 37));
      expect(items.map((i) => i.id).sort()).toEqual(ids);
      for (const i of items) expect(i).toEqual({ id: i.id, status: 'completed', progress: { rows: Number(i.id.slice(5)) + 1, id: i.id }, ...(i.fold !== undefined ? { fold: i.fold } : {}) });
    } finally {
      await reader.close();
    }
  }, 60_000);
});
