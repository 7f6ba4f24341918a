#!/usr/bin/env node
/**
 * A splitfleet worker of bench:peers: one coordinator (the public API only)
 * with `lanes` lanes on the bench's etcd. Every member carries the same
 * planner (a final plan of the items, weight = units); whichever leads plans.
 * Progress goes through the fenced `split.commit`; a drain request commits
 * and returns (the cooperative release that moves work to a joiner).
 */
import { EtcdStore } from '../../src/etcd.js';
import { isSplitfleetError, silentLogger, startCoordinator, type SplitHandle } from '../../src/index.js';
import { emit, itemsById, runAttempt, waitForGo, workerConfig } from './worker-shell.js';

const cfg = workerConfig();
const items = itemsById(cfg);
/** The prefetch depth to run with (`bench:peers -- --prefetch N`); absent: the library's default. */
const prefetch = process.env.SPLITFLEET_BENCH_PREFETCH === undefined ? {} : { prefetch: Number(process.env.SPLITFLEET_BENCH_PREFETCH) };

async function main(): Promise<void> {
  const store = new EtcdStore({ endpoints: [cfg.endpoint], opTimeoutMs: cfg.leaseMs / 2 });
  await store.get('peers-probe');
  emit(cfg, { ev: 'ready' });
  await waitForGo();
  const handler = async (split: SplitHandle): Promise<void> => {
    const item = items.get(split.id)!;
    const from = typeof split.progress === 'number' ? split.progress : 0;
    const r = await runAttempt(cfg, {
      item, from, signal: split.signal, drain: split.drainSignal,
      commit: async (n) => {
        try {
          await split.commit(n);
          return true;
        } catch (e) {
          if (isSplitfleetError(e, 'LEASE_LOST')) return false;
          throw e;
        }
      },
    });
    if (r.status !== 'done') return;
    const s = Date.now();
    try {
      await split.complete(r.units);
      emit(cfg, { ev: 'done', id: item.id, ok: true, n: r.n, s });
    } catch (e) {
      emit(cfg, { ev: 'done', id: item.id, ok: false, n: r.n, s });
      if (!isSplitfleetError(e, 'LEASE_LOST')) throw e;
    }
  };
  const coordinator = await startCoordinator({
    store, job: cfg.job, instance: cfg.worker, maxInFlight: cfg.lanes, ...prefetch,
    // The same lease as the peers' lock duration; a departed worker's splits go at once (the queues
    // re-run a stalled job as soon as they detect it).
    leaseDurationMs: cfg.leaseMs, opTimeoutMs: cfg.leaseMs / 2, rebalanceDelayMs: 0,
    planner: () => ({ final: true, splits: [...items.values()].map((i) => ({ id: i.id, weight: i.units, descriptor: { units: i.units } })) }),
    handler,
    logger: silentLogger,
  });
  coordinator.on('session-lost', () => emit(cfg, { ev: 'error', message: 'session lost' }));
  const verdict = await coordinator.done.catch((e: Error) => emit(cfg, { ev: 'error', message: e.message }));
  if (verdict === 'complete') emit(cfg, { ev: 'finished' });
}

main().catch((e: Error) => {
  emit(cfg, { ev: 'error', message: e.message });
  setTimeout(() => process.exit(3), 50);
});
