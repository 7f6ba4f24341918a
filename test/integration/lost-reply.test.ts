/**
 * A write that lands but whose reply is lost (the network drops the answer,
 * the deadline fires): on MemoryStore and on a real etcd, behind a facade
 * that lets chosen transactions through and then reports a retryable
 * TIMEOUT. The writer must read the outcome back and adopt it:
 * - a lost commit reply: the lane carries on (no LEASE_LOST, no reclaim),
 *   the split completes at epoch 1 with no attempt consumed;
 * - a lost claim reply: the claim is adopted as it landed (a lane opens on
 *   epoch 1; no second claim, no attempt consumed).
 * Before the fix the lane kept its old guard, its next write was fenced by
 * its own landed one, and the same session reclaimed its live lease key as a
 * `reclaim`, one attempt per flake: four flakes quarantined a healthy split.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startCoordinator, type Coordinator } from '../../src/coordinator/coordinator.js';
import { silentLogger } from '../../src/coordinator/log.js';
import type { SplitHandle } from '../../src/coordinator/types.js';
import { defaultFingerprint } from '../../src/config.js';
import { SplitfleetError } from '../../src/errors.js';
import { jobPrefix, progressKey, splitKey } from '../../src/protocol/keys.js';
import { decodeRecord, fingerprintHash } from '../../src/protocol/records.js';
import { EtcdStore } from '../../src/store/etcd/etcd.js';
import { MemoryStore } from '../../src/store/memory.js';
import type { Store, Txn, TxnResult } from '../../src/store/store.js';
import { startEtcd, type EtcdHandle } from '../support/etcd.js';

/** Passes every call to `inner`; a transaction matching `loseReplyOf` is applied, then answered with a TIMEOUT. */
function lossyReplies(inner: Store): { store: Store; loseReplyOf: (match: (t: Txn) => boolean, times?: number) => void; lost: () => number } {
  let match: ((t: Txn) => boolean) | undefined;
  let left = 0;
  let lost = 0;
  const store = new Proxy(inner, {
    get(target, prop, receiver) {
      if (prop === 'txn') {
        return async (t: Txn): Promise<TxnResult> => {
          const res = await target.txn(t);
          if (match && left > 0 && match(t)) {
            left--;
            lost++;
            throw new SplitfleetError('TIMEOUT', 'txn took longer than opTimeoutMs (a lost reply, injected)', { retryable: true });
          }
          return res;
        };
      }
      const v = Reflect.get(target, prop, receiver);
      return typeof v === 'function' ? v.bind(target) : v;
    },
  });
  return { store, loseReplyOf: (m, times = 1) => { match = m; left = times; }, lost: () => lost };
}

const writes = (t: Txn, key: string) => t.success.some((o) => o.op === 'put' && o.key.endsWith(key));

for (const backend of ['memory', 'etcd'] as const) {
  describe(`a write whose reply is lost (${backend})`, () => {
    let etcd: EtcdHandle | undefined;
    const stores: Store[] = [];
    const coordinators: Coordinator[] = [];
    beforeAll(async () => {
      if (backend === 'etcd') etcd = await startEtcd();
    });
    afterAll(async () => {
      for (const c of coordinators) await c.close().catch(() => undefined);
      for (const s of stores) await s.close().catch(() => undefined);
      await etcd?.stop();
    });

    const open = (): Store => {
      const s = backend === 'memory' ? shared ??= new MemoryStore() : new EtcdStore({ endpoints: etcd!.endpoint });
      if (!stores.includes(s)) stores.push(s);
      return s;
    };
    let shared: MemoryStore | undefined;

    async function run(label: string, lose: (l: ReturnType<typeof lossyReplies>, prefix: string) => void) {
      const job = `lost-reply-${label}-${Date.now().toString(36)}`;
      const prefix = jobPrefix('splitfleet', job);
      const fp = fingerprintHash(defaultFingerprint('splitfleet', job));
      const lossy = lossyReplies(open());
      lose(lossy, prefix);
      const errors: unknown[] = [];
      const c = await startCoordinator({
        store: lossy.store, job, instance: 'w0', logger: silentLogger, layout: 'keys', // reads the final split record
        leaseDurationMs: 10_000, opTimeoutMs: 1000, drainDeadlineMs: 1000, rebalanceDelayMs: 0, reconcileIntervalMs: 1000,
        planner: () => ({ splits: [{ id: 's-1', weight: 1 }], final: true }),
        handler: async (h: SplitHandle) => {
          try {
            for (let i = 1; i <= 3; i++) await h.commit(i);
            await h.complete(4);
          } catch (e) {
            errors.push(e);
            throw e;
          }
        },
      });
      coordinators.push(c);
      expect(await c.done).toBe('complete');
      const reader = open();
      const split = decodeRecord('split', splitKey(prefix, 's-1'), (await reader.get(splitKey(prefix, 's-1')))!.value, fp);
      const progress = decodeRecord('progress', progressKey(prefix, 's-1'), (await reader.get(progressKey(prefix, 's-1')))!.value, fp);
      return { split, progress, errors, lost: lossy.lost() };
    }

    it('a lost commit reply: the lane reads it back and carries on; no attempt consumed', async () => {
      const r = await run('commit', (l) => l.loseReplyOf((t) => writes(t, 'progress.s-1') && !writes(t, 'split.s-1'), 1));
      expect(r.lost).toBe(1);
      expect(r.errors).toEqual([]);
      expect(r.split).toMatchObject({ status: 'completed', epoch: 1, attempts: 0, owner: '' });
      expect(r.progress).toMatchObject({ epoch: 1, progress: 4 });
    });

    it('a lost claim reply: the landed claim is adopted; no second claim, no attempt consumed', async () => {
      const r = await run('claim', (l) => l.loseReplyOf((t) => t.success.some((o) => o.op === 'put' && o.key.includes('/lease.s-1')), 1));
      expect(r.lost).toBe(1);
      expect(r.errors).toEqual([]);
      expect(r.split).toMatchObject({ status: 'completed', epoch: 1, attempts: 0 });
      expect(r.progress).toMatchObject({ epoch: 1, progress: 4 });
    });

    it('four lost commit replies in a row do not quarantine a healthy split', async () => {
      const r = await run('many', (l) => l.loseReplyOf((t) => writes(t, 'progress.s-1'), 4));
      expect(r.lost).toBe(4);
      expect(r.split).toMatchObject({ status: 'completed', epoch: 1, attempts: 0 });
    });
  });
}


