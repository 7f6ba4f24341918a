/**
 * A packed job (decision 0037) on a real etcd whose leader loses the reply to
 * a queue page's put: the put lands, the leader sees a timeout. Pages are not
 * watched, so before the fix every later planning run lost on "queue page
 * exists already" and the plan never went final. The leader now reads the
 * page it finds written and adopts it: the plan goes final with every split
 * counted once, in one page, and the job completes.
 *
 * Needs etcd on PATH (fails loudly without it).
 */
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { startCoordinator, type Coordinator } from '../../src/coordinator/coordinator.js';
import { silentLogger } from '../../src/coordinator/log.js';
import type { SplitHandle } from '../../src/coordinator/types.js';
import { defaultFingerprint } from '../../src/config.js';
import { SplitfleetError } from '../../src/errors.js';
import { jobPrefix, parseKey, planKey } from '../../src/protocol/keys.js';
import { decodeRecord, fingerprintHash } from '../../src/protocol/records.js';
import { EtcdStore } from '../../src/store/etcd/etcd.js';
import type { Store, Txn, TxnResult } from '../../src/store/store.js';
import { startEtcd, type EtcdHandle } from '../support/etcd.js';

let etcd: EtcdHandle | undefined;
let store: EtcdStore;
beforeAll(async () => {
  etcd = await startEtcd();
  store = new EtcdStore({ endpoints: [etcd.endpoint], opTimeoutMs: 5000 });
});
afterAll(async () => {
  await store?.close();
  await etcd?.stop();
});

/** `inner`, except that the first transaction putting a queue page lands and then reports a timeout. */
function losingFirstPageReply(inner: Store): { store: Store; lost: () => string | undefined } {
  let lost: string | undefined;
  const txn = async (t: Txn): Promise<TxnResult> => {
    const page = t.success.find((op) => op.op === 'put' && op.key.includes('/queue.'));
    const res = await inner.txn(t);
    if (page === undefined || lost !== undefined || !res.won) return res;
    lost = page.key;
    throw new SplitfleetError('STORE_UNAVAILABLE', `store call txn took longer than opTimeoutMs (its reply to ${page.key} lost on purpose)`, { retryable: true });
  };
  const wrapped = new Proxy(inner, {
    get: (target, prop) => {
      if (prop === 'txn') return txn;
      const v: unknown = Reflect.get(target, prop, target);
      return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
    },
  });
  return { store: wrapped, lost: () => lost };
}

describe('a packed job on etcd, a queue page\'s reply lost', () => {
  test('the leader adopts the page it finds written: the plan goes final, each split in one page, the job completes', async () => {
    const job = `lost-reply-${Math.random().toString(36).slice(2, 7)}`;
    const prefix = jobPrefix('splitfleet', job);
    const fp = fingerprintHash(defaultFingerprint('splitfleet', job));
    const ids = Array.from({ length: 60 }, (_, i) => `logs/2026/12/part-${String(i).padStart(3, '0')}.gz`);
    const planner = () => ({ final: true, splits: ids.map((id, i) => ({ id, weight: 1 + (i % 5) })) });
    const completed = new Set<string>();
    const handler = async (split: SplitHandle) => {
      completed.add(split.id);
      await split.complete(null);
    };
    const leaderStore = losingFirstPageReply(store);
    const knobs = { leaseDurationMs: 3000, opTimeoutMs: 2000, rebalanceDelayMs: 0, drainDeadlineMs: 2000, reconcileIntervalMs: 1000, replanIntervalMs: 300 };
    const fleet: Coordinator[] = [];
    // The first member to start leads (nothing else campaigns yet): its store loses the first page's reply.
    fleet.push(await startCoordinator({ store: leaderStore.store, job, instance: 'w-0', maxInFlight: 4, planner, handler, logger: silentLogger, layout: 'packed', buckets: 2, ...knobs }));
    fleet.push(await startCoordinator({ store, job, instance: 'w-1', maxInFlight: 4, planner, handler, logger: silentLogger, layout: 'packed', buckets: 2, ...knobs }));
    const verdicts = await Promise.race([
      Promise.all(fleet.map((c) => c.done)),
      new Promise<string>((resolve) => setTimeout(() => resolve('no verdict in 45 s'), 45_000)),
    ]);
    await Promise.all(fleet.map((c) => c.stop()));
    expect(leaderStore.lost()).toMatch(/\/queue\.\d+\.\d+$/);
    expect(verdicts).toEqual(['complete', 'complete']);
    expect([...completed].sort()).toEqual([...ids].sort());

    // The plan counts every split once, and every split is in exactly one page.
    const plan = await store.get(planKey(prefix));
    expect(decodeRecord('plan', plan!.key, plan!.value, fp)).toMatchObject({ final: true, planned: ids.length });
    const inPages: string[] = [];
    for (const kv of (await store.listAll(prefix)).kvs) {
      const k = parseKey(prefix, kv.key);
      if (k.kind === 'queue') inPages.push(...decodeRecord('queue', kv.key, kv.value, fp).ids);
    }
    expect(inPages.sort()).toEqual([...ids].sort());
  }, 90_000);
});
