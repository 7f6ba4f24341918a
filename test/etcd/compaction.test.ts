/**
 * Compaction during a run, on a real etcd (docs/operations.md): a member's
 * connection is held up while the rest of the fleet keeps writing, etcd's
 * history is compacted past everything that member has seen, and then its
 * connection is reset. Every watch it had must find its resume point
 * compacted and start over from a fresh read (the worker's key followers, and
 * the leader's view if it leads), and the job must still complete with every
 * unit processed and no progress record ever going backwards.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startCoordinator, type Coordinator } from '../../src/coordinator/coordinator.js';
import { silentLogger } from '../../src/coordinator/log.js';
import type { SplitHandle } from '../../src/coordinator/types.js';
import { defaultFingerprint } from '../../src/config.js';
import { jobPrefix } from '../../src/protocol/keys.js';
import { fingerprintHash } from '../../src/protocol/records.js';
import { EtcdStore } from '../../src/store/etcd/etcd.js';
import { isCompactedError, type Store, type WatchOptions } from '../../src/store/store.js';
import { TcpProxy } from '../chaos/proxy.js';
import { watchProgress } from '../support/progress-watch.js';
import { sleep, waitUntil } from '../support/wait.js';
import { startEtcd, type EtcdHandle } from '../support/etcd.js';

let etcd: EtcdHandle;
beforeAll(async () => {
  etcd = await startEtcd();
});
afterAll(async () => {
  await etcd?.stop();
});

/** Counts the watches of `inner` that ended on a compacted resume point. */
function countingCompactions(inner: Store): { store: Store; compacted: () => number } {
  let compacted = 0;
  const store = new Proxy(inner, {
    get(target, prop, receiver) {
      if (prop === 'watch') {
        return (prefix: string, options: WatchOptions) => target.watch(prefix, {
          ...options,
          onError: (e) => {
            if (isCompactedError(e)) compacted++;
            options.onError?.(e);
          },
        });
      }
      const v = Reflect.get(target, prop, receiver);
      return typeof v === 'function' ? v.bind(target) : v;
    },
  });
  return { store, compacted: () => compacted };
}

describe('compaction during a run (real etcd)', () => {
  it('a member whose watches resume past a compaction re-reads and the job completes with nothing lost', async () => {
    const job = `compaction-${Date.now().toString(36)}`;
    const prefix = jobPrefix('splitfleet', job);
    const fp = fingerprintHash(defaultFingerprint('splitfleet', job));
    const UNITS = 30;
    const splits = Array.from({ length: 8 }, (_, i) => ({ id: `s-${i}`, weight: 1 + i, descriptor: { units: UNITS } }));
    const processed = new Set<string>();
    const handler = async (h: SplitHandle) => {
      let done = typeof h.progress === 'number' ? h.progress : 0;
      while (done < UNITS) {
        if (h.drainSignal.aborted || h.signal.aborted) return;
        await sleep(20);
        done++;
        processed.add(`${h.id}:${done}`);
        if (done % 3 === 0) await h.commit(done);
      }
      await h.complete(done);
    };
    const proxy = await TcpProxy.start(etcd.endpoint);
    const behind = countingCompactions(new EtcdStore({ endpoints: proxy.url, opTimeoutMs: 1000 }));
    const direct = new EtcdStore({ endpoints: etcd.endpoint, opTimeoutMs: 1000 });
    const admin = new EtcdStore({ endpoints: etcd.endpoint });
    const knobs = { job, logger: silentLogger, maxInFlight: 2, leaseDurationMs: 4000, opTimeoutMs: 1000, drainDeadlineMs: 1000, rebalanceDelayMs: 0, reconcileIntervalMs: 2000 };
    const planner = () => ({ splits, final: true });
    const coordinators: Coordinator[] = [];
    // Progress as every write left it: it must never go backwards.
    const { last, regressions, handle: history } = watchProgress(admin, prefix, fp);
    try {
      await history.ready;
      coordinators.push(await startCoordinator({ ...knobs, store: behind.store, instance: 'a', planner, handler }));
      coordinators.push(await startCoordinator({ ...knobs, store: direct, instance: 'b', planner, handler }));
      await waitUntil('both members to hold splits', () => coordinators.every((c) => c.held.length > 0), { timeoutMs: 20_000 });
      proxy.partition(); // a's requests and events are held back; b keeps committing
      await sleep(600);
      const { revision } = await admin.list(prefix, { limit: 1 });
      await admin.compact(revision);
      proxy.heal('reset'); // a reconnects; its watches resume below the compaction
      const verdicts = await Promise.all(coordinators.map((c) => c.done));
      expect(verdicts).toEqual(['complete', 'complete']);
      // The verdicts can land before the watch has delivered the last commits (etcd sends a
      // watcher that fell behind its events in batches): let it reach a write made after them.
      await history.sync(`${prefix}test-sync`, 20_000);
      expect(behind.compacted()).toBeGreaterThan(0);
      expect(regressions).toEqual([]);
      for (const s of splits) for (let u = 1; u <= UNITS; u++) expect(processed.has(`${s.id}:${u}`)).toBe(true);
      for (const s of splits) expect(last.get(s.id)).toBe(UNITS);
    } finally {
      for (const c of coordinators) await c.close().catch(() => undefined);
      await history.close();
      for (const s of [behind.store, direct, admin]) await s.close().catch(() => undefined);
      await proxy.close();
    }
  }, 90_000);
});
