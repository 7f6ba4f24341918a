/**
 * The job summary (decision 0040): a leader writes `summary`, and `jobs`,
 * `inspect` and the dashboard's first view answer from it without listing a
 * single split or spec key; a job without a summary (an older build's, or one
 * whose leader is gone) is still inspected from every record, and says so.
 */
import { afterEach, describe, expect, test } from 'vitest';
import { startCoordinator, type Coordinator } from '../../src/coordinator/coordinator.js';
import { silentLogger } from '../../src/coordinator/log.js';
import type { SplitHandle } from '../../src/coordinator/types.js';
import { LiveJob } from '../../src/inspect/live.js';
import { readFullReport, readJobReport, SUMMARY_KINDS } from '../../src/inspect/summary-read.js';
import { listJobs } from '../../src/operator/jobs.js';
import { retrySplits } from '../../src/operator/retry.js';
import { jobPrefix, summaryKey } from '../../src/protocol/keys.js';
import { decodeRecord } from '../../src/protocol/records.js';
import { MemoryStore } from '../../src/store/memory.js';
import type { ListOptions, Store } from '../../src/store/store.js';
import { waitUntil } from '../support/wait.js';

const fast = { leaseDurationMs: 2000, opTimeoutMs: 500, rebalanceDelayMs: 0, drainDeadlineMs: 1000, reconcileIntervalMs: 1000 };
const P = jobPrefix('splitfleet', 'sum');

/** A store that records the ranges every list() asks for (and a watch, as `watch:` or `snapshotAndWatch:`). */
function counting(store: Store): { store: Store; ranges: string[] } {
  const ranges: string[] = [];
  const proxy = new Proxy(store, {
    get(target, prop, receiver) {
      if (prop === 'watch' || prop === 'snapshotAndWatch') ranges.push(`${prop}:`);
      if (prop === 'list') {
        return (prefix: string, options: ListOptions = {}) => {
          ranges.push(`${(options.rangeStart ?? prefix).slice(P.length)}…${(options.rangeEnd ?? '').slice(P.length)}`);
          return target.list(prefix, options);
        };
      }
      const v = Reflect.get(target, prop, receiver) as unknown;
      return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
    },
  });
  return { store: proxy, ranges };
}

/** Ranges that would hold a per-split key (spec, split, progress, lease, assign). */
const perSplit = (ranges: string[]) => ranges.filter((r) => /^(spec|split|progress|lease|assign)\./.test(r));

let fleet: Coordinator[] = [];
let store: MemoryStore;
afterEach(async () => {
  await Promise.all(fleet.map((c) => c.close().catch(() => undefined)));
  fleet = [];
  await store?.close();
});

describe('the job summary', () => {
  test('the leader writes it; jobs, inspect and the dashboard answer from it without listing splits', async () => {
    store = new MemoryStore();
    let release!: () => void;
    const released = new Promise<void>((r) => (release = r));
    // Odd splits wait to be released, so the job settles with every lane held and the rest queued.
    const handler = async (split: SplitHandle) => {
      if (Number(split.id.slice(2)) % 2 === 1) await released;
      await split.complete(null);
    };
    const planner = () => ({ final: true, splits: Array.from({ length: 30 }, (_, i) => ({ id: `s-${String(i).padStart(2, '0')}`, weight: 10 + i, descriptor: null })) });
    for (let i = 0; i < 2; i++) {
      fleet.push(await startCoordinator({ store, job: 'sum', instance: `w-${i}`, maxInFlight: 3, planner, handler, logger: silentLogger, ...fast }));
    }
    // Settled: six odd splits held, the summary says so, and the full read agrees with it.
    const settled = await waitUntil('the summary agrees with every record', async () => {
      const kv = await store.get(summaryKey(P));
      if (!kv) return undefined;
      const planFp = (JSON.parse((await store.get(`${P}plan`))!.value) as { fp: string }).fp;
      const s = decodeRecord('summary', kv.key, kv.value, planFp);
      const full = await readFullReport({ store, job: 'sum' });
      const held = full.splits.running + full.splits.draining;
      return s.held === 6 && held === 6 && s.completed === full.splits.completed && s.queued + s.backoff === full.splits.queued ? { s, full } : undefined;
    }, { timeoutMs: 20_000 });
    expect(settled.s).toMatchObject({ members: 2, lanes: 6, planned: 30, final: true, seeded: 30, quarantined: 0, parked: 0 });
    expect(settled.s.completedWeight).toBe(settled.full.progress.completedWeight);

    const leader = (JSON.parse((await store.get(`${P}leader`))!.value) as { generation: number }).generation;
    expect(settled.s.generation).toBe(leader);

    const inspected = counting(store);
    const result = await readJobReport({ store: inspected.store, job: 'sum', summaryAbove: 0 });
    expect(result.source).toBe('summary');
    if (result.source !== 'summary') return;
    expect(result.report.splits).toMatchObject({ held: 6, completed: settled.s.completed, total: 30 });
    expect(result.report.members.map((m) => [m.instance, m.maxInFlight])).toEqual([['w-0', 3], ['w-1', 3]]);
    expect(result.report.summary.generation).toBe(leader);
    // Not one per-split range was listed.
    expect(inspected.ranges.length).toBeGreaterThan(0);
    expect(perSplit(inspected.ranges)).toEqual([]);
    // A job this small is read whole by default: the per-instance view costs little here.
    const small = await readJobReport({ store, job: 'sum' });
    expect(small).toMatchObject({ source: 'records', reason: expect.stringMatching(/30 splits, not above 10000/) });

    const listed = counting(store);
    const [job] = await listJobs({ store: listed.store });
    expect(job).toMatchObject({ job: 'sum', source: { kind: 'summary', generation: leader }, splits: { total: 30, completed: settled.s.completed } });
    expect(perSplit(listed.ranges)).toEqual([]);

    const watched = counting(store);
    const live = new LiveJob({ store: watched.store, job: 'sum', refreshMs: 1, summaryAbove: 0 });
    await live.start();
    expect(live.view().source).toMatchObject({ kind: 'summary', generation: leader });
    expect(live.view().report.splits).toMatchObject({ running: 6, total: 30 });
    // Then every record, in the background: the per-split view takes over.
    await waitUntil('the dashboard has read every record', () => live.view().source.kind === 'records');
    expect(live.view().report.splits.total).toBe(30);
    await live.close();

    // Above followRecordsUpTo the dashboard follows the summary only (decision 0042): it reads the
    // summary's keys again and again, and never lists or watches a split record.
    const polled = counting(store);
    const following = new LiveJob({ store: polled.store, job: 'sum', refreshMs: 1, summaryAbove: 0, followRecordsUpTo: 0, summaryPollMs: 20 });
    await following.start();
    expect(following.view().source).toMatchObject({ kind: 'summary', generation: leader, followsRecords: false });
    expect(following.view().watch).toEqual({ live: true, error: null });

    release();
    expect(await Promise.all(fleet.map((c) => c.done))).toEqual(['complete', 'complete']);
    // The fleet has stopped on its verdict: the finished job's summary is still trusted (summaryTrust), and read.
    await waitUntil('the summary-only dashboard shows the finished job', () => following.view().report.splits.completed === 30);
    expect(following.view().watch).toEqual({ live: true, error: null });
    // A summary that is gone cannot be trusted: the last one stays, with the reason, not live.
    await store.delete(summaryKey(P));
    await waitUntil('the summary-only dashboard says why it no longer trusts the summary', () => /cannot be trusted now \(the job has no summary record/.test(following.view().watch.error ?? ''));
    expect(following.view().watch.live).toBe(false);
    expect(following.view().report.splits.completed).toBe(30);
    expect(perSplit(polled.ranges)).toEqual([]);
    expect(polled.ranges.filter((r) => r.endsWith(':'))).toEqual([]);
    expect(polled.ranges.length).toBeGreaterThan(SUMMARY_KINDS.length); // read more than once
    await following.close();
  });

  test('a job without a summary is inspected from every record, which the output names', async () => {
    store = new MemoryStore();
    const planner = () => ({ final: true, splits: Array.from({ length: 12 }, (_, i) => ({ id: `s-${i}`, weight: 5, descriptor: null })) });
    const c = await startCoordinator({ store, job: 'sum', instance: 'w-0', maxInFlight: 2, planner, handler: async (s: SplitHandle) => s.complete(null), logger: silentLogger, ...fast });
    fleet.push(c);
    expect(await c.done).toBe('complete');
    await c.close();
    fleet = [];
    // The finished job's summary was written before the fleet stopped on its verdict.
    const kv = (await store.get(summaryKey(P)))!;
    const planFp = (JSON.parse((await store.get(`${P}plan`))!.value) as { fp: string }).fp;
    expect(decodeRecord('summary', kv.key, kv.value, planFp)).toMatchObject({ completed: 12, queued: 0, held: 0, planned: 12 });

    // The leader is gone, but the job is finished (the plan's verdict, nothing left to run): its last
    // summary is still true, and answers (decision 0040 addendum).
    const finished = await readJobReport({ store, job: 'sum', summaryAbove: 0 });
    expect(finished.source).toBe('summary');
    expect(finished.report.splits).toMatchObject({ completed: 12, total: 12 });

    // A job whose leader is gone before it finished: its summary may be out of date, so every record is read.
    const plan = JSON.parse((await store.get(`${P}plan`))!.value) as Record<string, unknown>;
    const { verdict: _verdict, ...unfinished } = plan;
    await store.put(`${P}plan`, JSON.stringify(unfinished));
    const gone = await readJobReport({ store, job: 'sum', summaryAbove: 0 });
    expect(gone.source).toBe('records');
    if (gone.source !== 'records') return;
    expect(gone.reason).toMatch(/no leader/);
    expect(gone.report.source?.reason).toMatch(/no leader/);
    expect(gone.report.splits).toMatchObject({ completed: 12, total: 12 });

    // An older build's job: no summary record at all.
    await store.delete(summaryKey(P));
    const older = await readJobReport({ store, job: 'sum', summaryAbove: 0 });
    expect(older).toMatchObject({ source: 'records', reason: expect.stringMatching(/no summary record/) });
    expect(older.report.splits).toMatchObject({ completed: 12, total: 12 });
    const [job] = await listJobs({ store });
    expect(job).toMatchObject({ source: { kind: 'records', reason: expect.stringMatching(/no summary record/) }, splits: { completed: 12, total: 12 } });
  });

  test('a stalled job\'s summary answers after its fleet stops, and a retry deletes it with the records it returns', async () => {
    store = new MemoryStore();
    const planner = () => ({ final: true, splits: Array.from({ length: 6 }, (_, i) => ({ id: `s-${i}`, weight: 5, descriptor: null })) });
    const handler = async (s: SplitHandle) => {
      if (s.id === 's-0') throw new Error('poisoned');
      await s.complete(null);
    };
    const c = await startCoordinator({ store, job: 'sum', instance: 'w-0', maxInFlight: 2, maxAttempts: 1, planner, handler, logger: silentLogger, ...fast });
    fleet.push(c);
    expect(await c.done).toBe('stalled');
    await c.close();
    fleet = [];

    const stalled = await readJobReport({ store, job: 'sum', summaryAbove: 0 });
    expect(stalled.source).toBe('summary');
    expect(stalled.report.splits).toMatchObject({ completed: 5, quarantined: 1, total: 6 });

    expect(await retrySplits({ store, job: 'sum', allQuarantined: true })).toEqual({ retried: ['s-0'], verdictCleared: true });
    expect(await store.get(summaryKey(P))).toBeUndefined();
    const retried = await readJobReport({ store, job: 'sum', summaryAbove: 0 });
    expect(retried).toMatchObject({ source: 'records', reason: expect.stringMatching(/no summary record/) });
    expect(retried.report.splits).toMatchObject({ completed: 5, quarantined: 0, total: 6 });
  });
});
