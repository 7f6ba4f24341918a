#!/usr/bin/env node
/**
 * A splitfleet worker of bench:peers: one coordinator (the public API only)
 * with `lanes` lanes on the bench's etcd. Every member carries the same
 * planner (a final plan of the items, weight = units); whichever leads plans.
 * Progress goes through the fenced `split.commit` (or, `--progress behind`,
 * `split.advance`, committed by the lane every commitEvery units' time); a
 * drain request commits and returns (the cooperative release that moves work
 * to a joiner).
 *
 * The handler is divisible (decision 0063): a split's descriptor is its item's
 * unit range `{ item, from, to }`, read through `divisibleRange`, which answers
 * the leader's division asks; a residual's descriptor is its parent's with the
 * range cut, so its lines carry the item's id and unit numbers (duplicates and
 * losses are counted across parts) and its split id as the part `p`. With
 * SPLITFLEET_BENCH_DIVIDE=off (`bench:peers -- --divide off`) the handler does
 * not call divisibleRange: every ask is declined and each item runs whole, as
 * a handler written before division would.
 */
import { EtcdStore } from '../../src/etcd.js';
import { divisibleRange, isSplitfleetError, silentLogger, startCoordinator, type SplitHandle } from '../../src/index.js';
import { emit, itemsById, PROGRESS, runAttempt, waitForGo, workerConfig } from './worker-shell.js';

const cfg = workerConfig();
const items = itemsById(cfg);
/** The prefetch depth to run with (`bench:peers -- --prefetch N`); absent: the library's default. */
const prefetch = process.env.SPLITFLEET_BENCH_PREFETCH === undefined ? {} : { prefetch: Number(process.env.SPLITFLEET_BENCH_PREFETCH) };
const divide = process.env.SPLITFLEET_BENCH_DIVIDE !== 'off';

/** A split's descriptor: its item and the item's units [from, to) it covers (0-based; unit u of the lines is index u - 1). */
interface Part {
  item: string;
  from: number;
  to: number;
}

async function main(): Promise<void> {
  const store = new EtcdStore({ endpoints: [cfg.endpoint], opTimeoutMs: cfg.leaseMs / 2 });
  await store.get('peers-probe');
  emit(cfg, { ev: 'ready' });
  await waitForGo();
  /** The item of each split running here, for the `divided` line (the event names the split only). */
  const itemOf = new Map<string, string>();
  const handler = async (split: SplitHandle): Promise<void> => {
    const d = split.descriptor as unknown as Part;
    const item = items.get(d.item)!;
    const part = split.id === item.id ? undefined : split.id; // a residual: a part of the item
    const range = divide ? divisibleRange(split) : undefined;
    itemOf.set(split.id, item.id);
    try {
      const r = await runAttempt(cfg, {
        item, ...(part === undefined ? {} : { part }), signal: split.signal, drain: split.drainSignal,
        from: range ? range.position : typeof split.progress === 'number' ? split.progress : d.from,
        ...(range ? { range: { end: () => range.end, next: async () => (await range.next(1))?.to } } : {}),
        commit: (n) => fenced(() => (range ? range.commit() : split.commit(n))),
        // `--progress behind`: the lane commits the latest report every commitEvery units' time.
        ...(PROGRESS === 'behind' ? { advance: (n: number) => (range ? range.advance() : split.advance(n)) } : {}),
      });
      if (r.status !== 'done') return;
      const s = Date.now();
      let landed = false;
      try {
        landed = await fenced(() => (range ? range.complete() : split.complete(r.units)));
      } finally {
        emit(cfg, { ev: 'done', id: item.id, ...(part === undefined ? {} : { p: part }), ok: landed, n: r.n, s });
      }
    } finally {
      itemOf.delete(split.id);
    }
  };
  const coordinator = await startCoordinator({
    store, job: cfg.job, instance: cfg.worker, maxInFlight: cfg.lanes, ...prefetch,
    // `--progress behind`: advances are committed as often as the awaited handler commits.
    ...(PROGRESS === 'behind' ? { autoCommitMs: Math.max(1, cfg.commitEvery * cfg.unitMs) } : {}),
    // The same lease as the peers' lock duration; a departed worker's splits go at once (the queues
    // re-run a stalled job as soon as they detect it).
    leaseDurationMs: cfg.leaseMs, opTimeoutMs: cfg.leaseMs / 2, rebalanceDelayMs: 0,
    planner: () => ({ final: true, splits: [...items.values()].map((i) => ({ id: i.id, weight: i.units, descriptor: { item: i.id, from: 0, to: i.units } })) }),
    handler,
    logger: silentLogger,
    on: {
      'split-divided': (e) => {
        const item = itemOf.get(e.id) ?? e.id;
        emit(cfg, { ev: 'divided', id: item, ...(e.id === item ? {} : { p: e.id }), r: e.residual });
      },
    },
  });
  coordinator.on('session-lost', () => emit(cfg, { ev: 'error', message: 'session lost' }));
  const verdict = await coordinator.done.catch((e: Error) => emit(cfg, { ev: 'error', message: e.message }));
  if (verdict === 'complete') emit(cfg, { ev: 'finished' });
}

/** A fenced write: false when the split is no longer ours (LEASE_LOST), other errors thrown. */
async function fenced(write: () => Promise<void>): Promise<boolean> {
  try {
    await write();
    return true;
  } catch (e) {
    if (isSplitfleetError(e, 'LEASE_LOST')) return false;
    throw e;
  }
}

main().catch((e: Error) => {
  emit(cfg, { ev: 'error', message: e.message });
  setTimeout(() => process.exit(3), 50);
});
