/**
 * A job's scope (decision 0027): job `a` under root `r` beside jobs nested
 * under its prefix (root `r/a`: `x`, which sorts after every kind of `a`;
 * `etl`, which sorts between two of them; `split.q`, whose prefix lies inside
 * the range of `a`'s split records). Every reader, watcher and deleter of `a`
 * sees and touches only `a`'s keys while the nested jobs run and commit.
 */
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { systemClock } from '../../src/clock.js';
import { LeaderView } from '../../src/coordinator/leader/leader-view.js';
import { startCoordinator, type Coordinator } from '../../src/coordinator/coordinator.js';
import { silentLogger } from '../../src/coordinator/log.js';
import type { SplitHandle } from '../../src/coordinator/types.js';
import { readReport } from '../../src/cli/inspect.js';
import { JobObserver } from '../../src/demo/observer.js';
import { LiveJob } from '../../src/inspect/live.js';
import { liveMembers } from '../../src/operator/control.js';
import { deleteJob, previewDelete, whatDeleteStops } from '../../src/operator/delete.js';
import { findJob } from '../../src/operator/job.js';
import { listJobs } from '../../src/operator/jobs.js';
import { previewRetry, retrySplits } from '../../src/operator/retry.js';
import { defaultFingerprint } from '../../src/config.js';
import { jobPrefix, leaseKey, progressKey, workerKey } from '../../src/protocol/keys.js';
import { fingerprintHash } from '../../src/protocol/records.js';
import { inJobScope, jobKeyRanges } from '../../src/protocol/scope.js';
import { MemoryStore } from '../../src/store/memory.js';
import type { Store, WatchOptions } from '../../src/store/store.js';
import { waitUntil } from '../support/wait.js';

const fast = { leaseDurationMs: 2000, opTimeoutMs: 500, rebalanceDelayMs: 0, drainDeadlineMs: 1000, reconcileIntervalMs: 1000, maxAttempts: 1 };
const A = jobPrefix('r', 'a');
const NESTED = ['x', 'etl', 'split.q'].map((job) => ({ job, prefix: jobPrefix('r/a', job) }));
const nestedKey = (key: string) => NESTED.some((n) => key.startsWith(n.prefix));

/** The store as one reader sees it: every key a listing returned or a watch delivered to it. */
function recording(store: Store): { store: Store; delivered: Set<string>; events: () => number } {
  const delivered = new Set<string>();
  let events = 0;
  const proxy: Store = new Proxy(store, {
    get(target, prop, receiver) {
      if (prop === 'list') {
        return async (...args: Parameters<Store['list']>) => {
          const page = await target.list(...args);
          for (const kv of page.kvs) delivered.add(kv.key);
          return page;
        };
      }
      if (prop === 'watch') {
        return (prefix: string, options: WatchOptions) => target.watch(prefix, {
          ...options, onEvent: (e) => { delivered.add(e.key); events++; options.onEvent(e); },
        });
      }
      const v = Reflect.get(target, prop, receiver) as unknown;
      return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(receiver) : v;
    },
  });
  return { store: proxy, delivered, events: () => events };
}

/** Holds its split, committing progress every few ms, until the lane is lost or drained; fails split `bad`. */
async function busy(split: SplitHandle): Promise<void> {
  if (split.id === 'bad') throw new Error('bad input');
  let n = (split.progress as number | null) ?? 0;
  while (!split.signal.aborted && !split.drainSignal.aborted) {
    await split.commit(++n).catch(() => undefined);
    await new Promise((r) => setTimeout(r, 5));
  }
}

const store = new MemoryStore();
const nested: Coordinator[] = [];

beforeAll(async () => {
  // Job a: finished (stalled: its split `bad` is quarantined), no process left.
  const a = await startCoordinator({
    store, root: 'r', job: 'a', instance: 'a-0', maxInFlight: 4, logger: silentLogger, ...fast,
    planner: () => ({ final: true, splits: ['a-0', 'a-1', 'bad'].map((id) => ({ id, weight: 1 })) }),
    handler: async (s) => { if (s.id === 'bad') throw new Error('bad input'); await s.complete(1); },
  });
  expect(await a.done).toBe('stalled');
  // The nested jobs run: live workers, leases, a leader, progress commits, a quarantined `bad`.
  for (const n of NESTED) {
    nested.push(await startCoordinator({
      store, root: 'r/a', job: n.job, instance: `${n.job}-0`, maxInFlight: 4, logger: silentLogger, ...fast,
      planner: () => ({ final: true, splits: ['n-0', 'n-1', 'bad'].map((id) => ({ id, weight: 1 })) }),
      handler: busy,
    }));
  }
  for (const n of NESTED) {
    await waitUntil(`nested job ${n.job} holds and commits`,
      async () => (await store.get(leaseKey(n.prefix, 'n-0'))) !== undefined && (await store.get(progressKey(n.prefix, 'n-1'))) !== undefined);
  }
}, 30_000);

afterAll(async () => {
  await Promise.all(nested.map((c) => c.stop()));
  await store.close();
});

describe('a job with nested roots under its prefix', () => {
  test('the ranges hold the job\'s keys only; a nested prefix inside a kind range is told apart', () => {
    const ranges = jobKeyRanges(A);
    expect(ranges.find((r) => r.kind === 'split')).toEqual({ kind: 'split', rangeStart: 'r/a/split.', rangeEnd: 'r/a/split/' });
    expect(ranges.find((r) => r.kind === 'plan')).toEqual({ kind: 'plan', rangeStart: 'r/a/plan', rangeEnd: 'r/a/plan\0' });
    const inRanges = (key: string) => ranges.some((r) => key >= r.rangeStart && key < r.rangeEnd);
    expect(inRanges(workerKey(jobPrefix('r/a', 'x'), 'w'))).toBe(false);
    expect(inRanges('r/a/split/plan')).toBe(false); // a nested job named `split`
    expect(inRanges('r/a/split.q/plan')).toBe(true); // ...but one named `split.q` sorts inside
    expect(inJobScope(A, 'r/a/split.q/plan')).toBe(false);
    expect(inJobScope(A, 'r/a/split.a%2Fb')).toBe(true);
    expect(inJobScope(A, 'r/a/plan')).toBe(true);
    expect(inJobScope(A, 'r/a/planx')).toBe(false);
  });

  test('the leader\'s view applies none of a nested job\'s keys, listed or watched', async () => {
    const { store: s, delivered, events } = recording(store);
    const view = new LeaderView(s, A, fingerprintHash(defaultFingerprint('r', 'a')), 'seed', (e) => { throw e; }, systemClock);
    await view.start();
    // etl sorts inside a's first range: its commits reach the watch, and are dropped unread.
    await waitUntil('a nested job\'s changes reach the view\'s watch', () => events() >= 5);
    expect(view.unknownKeys).toBe(0);
    expect([...view.workers.keys()]).toEqual([]);
    expect(view.splitCount).toBe(3);
    // x sorts after every kind of a: the view's watches never receive it, progress commits included.
    expect([...delivered].filter((k) => k.startsWith(jobPrefix('r/a', 'x')))).toEqual([]);
    expect([...delivered].filter((k) => k.startsWith(A) && k.slice(A.length).startsWith('progress.'))).toEqual([]);
    await view.close();
  });

  test('inspect\'s report, the dashboard\'s live view and the demo\'s observer read a\'s keys only', async () => {
    const report = recording(store);
    const r = await readReport(report.store, 'r', 'a');
    expect(r.problems).toEqual([]);
    expect(r.splits.total).toBe(3);
    // Listed range by range: only split.q, inside the split range, is listed at all, and it is left out.
    expect([...report.delivered].filter(nestedKey).every((k) => k.startsWith('r/a/split.q/'))).toBe(true);

    const live = recording(store);
    const job = new LiveJob({ store: live.store, root: 'r', job: 'a', refreshMs: 1 });
    await job.start();
    const observer = recording(store);
    const obs = new JobObserver(observer.store, 'r', 'a', Date.now());
    await obs.start();
    await new Promise((r) => setTimeout(r, 100));
    for (const seen of [live.delivered, observer.delivered]) {
      // The one range they follow is a's span: x is outside it, etl and split.q are dropped unread.
      expect([...seen].filter((k) => k.startsWith(jobPrefix('r/a', 'x')))).toEqual([]);
    }
    expect(obs.records.splits.size).toBe(3);
    expect(obs.problems).toEqual([]);
    await waitUntil('the live view has a\'s splits', () => job.view().report.splits.total === 3);
    expect(job.view().report.problems).toEqual([]);
    await job.close();
    await obs.close();
  });

  test('jobs, live members and the delete refusal count a\'s keys only', async () => {
    const jobs = await listJobs({ store, root: 'r' });
    expect(jobs.map((j) => [j.job, j.splits.total, j.members])).toEqual([['a', 3, []]]);
    const found = await findJob({ store, root: 'r', job: 'a' });
    expect([...(await liveMembers(store, found)).keys()]).toEqual([]);
    expect(await whatDeleteStops(store, found)).toEqual({ members: [], leader: null, held: 0 });
  });

  test('retry --dry-run lists a\'s quarantined split and writes nothing', async () => {
    const before = (await store.listAll('r/')).kvs.map((kv) => [kv.key, kv.modRevision]);
    expect(await previewRetry({ store, root: 'r', job: 'a', allQuarantined: true })).toEqual({ wouldRetry: ['bad'], verdictWouldClear: true });
    await expect(previewRetry({ store, root: 'r', job: 'a', splits: ['a-0'] })).rejects.toThrow(/split "a-0": is completed, not quarantined/);
    expect((await store.listAll('r/')).kvs.map((kv) => [kv.key, kv.modRevision]).filter(([k]) => !nestedKey(k as string)))
      .toEqual(before.filter(([k]) => !nestedKey(k as string)));
  });

  test('retry --all-quarantined retries a\'s split only', async () => {
    const res = await retrySplits({ store, root: 'r', job: 'a', allQuarantined: true });
    expect(res.retried).toEqual(['bad']);
    for (const n of NESTED) {
      expect((await readReport(store, 'r/a', n.job)).quarantined.map((q) => q.id)).toEqual(['bad']);
    }
  });

  test('delete --job a (no --force) deletes a\'s keys and leaves every nested job running', async () => {
    const nestedBefore = (await store.listAll('r/a/')).kvs.filter((kv) => nestedKey(kv.key)).length;
    // Job a has no verdict any more (the retry cleared it): put one back by finishing it.
    const a = await startCoordinator({
      store, root: 'r', job: 'a', instance: 'a-0', maxInFlight: 4, logger: silentLogger, ...fast,
      planner: () => ({ final: true, splits: ['a-0', 'a-1', 'bad'].map((id) => ({ id, weight: 1 })) }),
      handler: async (s) => { await s.complete(1); },
    });
    expect(await a.done).toBe('complete');
    const own = (await store.listAll(A)).kvs.filter((kv) => !nestedKey(kv.key)).length;
    const preview = await previewDelete({ store, root: 'r', job: 'a' });
    expect(preview.keys.length).toBe(own);
    expect(preview.keys.some(nestedKey)).toBe(false);
    expect(preview.byKind).toMatchObject({ plan: 1, spec: 3, split: 3 });
    expect(preview.needsForce).toBe(false);
    expect((await store.listAll(A)).kvs.filter((kv) => !nestedKey(kv.key)).length).toBe(own); // nothing deleted
    const res = await deleteJob({ store, root: 'r', job: 'a' });
    expect(res.deleted).toBe(own);
    expect(res.stopped).toEqual([]);
    const left = (await store.listAll('r/a/')).kvs.map((kv) => kv.key);
    expect(left.filter((k) => !nestedKey(k))).toEqual([]);
    expect(left.filter(nestedKey).length).toBe(nestedBefore);
    for (const n of NESTED) {
      expect(left).toContain(`${n.prefix}plan`);
      expect(left).toContain(workerKey(n.prefix, `${n.job}-0`));
    }
    expect(nested.map((c) => c.health().state)).toEqual(['running', 'running', 'running']);
  });
});
