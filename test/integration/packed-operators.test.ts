/**
 * The operator tools on a packed job (decision 0037), on the MemoryStore:
 * - `jobs` counts a packed job's queue pages and folded bits when no summary
 *   answers (never zero splits), and agrees with the leader's summary when one does;
 * - `delete` removes the job's queue pages and folded records with the rest,
 *   and nothing of a sibling job or of a job nested under its prefix (whose
 *   keys sort inside the `queue.*` range);
 * - `retry` retries a packed job's quarantined split (it has its own record)
 *   and the job completes; a queued or folded split is refused as what it is;
 * - `evacuate` drains one member of a running packed job.
 * (The demo's `--layout packed`: test/unit/cli/demo.test.ts.)
 */
import { afterEach, describe, expect, test } from 'vitest';
import { startCoordinator, type Coordinator } from '../../src/coordinator/coordinator.js';
import { silentLogger } from '../../src/coordinator/log.js';
import type { SplitHandle } from '../../src/coordinator/types.js';
import { readFullReport, readJobReport } from '../../src/inspect/summary-read.js';
import { evacuateInstance, resumeInstance } from '../../src/operator/control.js';
import { deleteJob, previewDelete } from '../../src/operator/delete.js';
import { listJobs } from '../../src/operator/jobs.js';
import { retrySplits } from '../../src/operator/retry.js';
import { assignKey, jobPrefix, parseKey } from '../../src/protocol/keys.js';
import { MemoryStore } from '../../src/store/memory.js';
import { writePackedFixture } from '../support/packed-fixture.js';
import { writeSplitFixture } from '../support/split-fixture.js';
import { waitUntil } from '../support/wait.js';

const fast = { leaseDurationMs: 2000, opTimeoutMs: 500, rebalanceDelayMs: 0, drainDeadlineMs: 1000, reconcileIntervalMs: 1000 };

let fleet: Coordinator[] = [];
let store: MemoryStore;
afterEach(async () => {
  await Promise.all(fleet.map((c) => c.close().catch(() => undefined)));
  fleet = [];
  await store?.close();
});

const ids = (n: number) => Array.from({ length: n }, (_, i) => `s-${String(i).padStart(3, '0')}`);
const planner = (n: number) => () => ({ final: true, splits: ids(n).map((id, i) => ({ id, weight: 1 + (i % 5), descriptor: { id } })) });

async function start(job: string, n: number, instances: string[], handler: (s: SplitHandle) => Promise<void>): Promise<Coordinator[]> {
  const started: Coordinator[] = [];
  for (const instance of instances) {
    const c = await startCoordinator({ store, job, instance, maxInFlight: 3, planner: planner(n), handler, logger: silentLogger, layout: 'packed', ...fast });
    c.done.catch(() => undefined);
    started.push(c);
  }
  fleet.push(...started);
  return started;
}

describe('jobs on a packed job', () => {
  test('counts its pages and folded bits when no summary answers', async () => {
    store = new MemoryStore();
    const f = await writePackedFixture(store, 'splitfleet', 'pk');
    const [job] = await listJobs({ store });
    expect(job!.source).toMatchObject({ kind: 'records' });
    const want = { runnable: 0, completed: 0, quarantined: 0 };
    for (const s of f.state.values()) want[s === 'queued' || s === 'running' ? 'runnable' : s]++;
    expect(job!.splits).toEqual({ ...want, total: 40 });
    expect(job!.problem).toBeNull();
    expect(job!.plan).toMatchObject({ layout: 'packed', planned: 40 });
  });

  test('says its counts are incomplete when a queue page cannot be read', async () => {
    store = new MemoryStore();
    const f = await writePackedFixture(store, 'splitfleet', 'pk');
    await store.put(`${f.prefix}queue.0.77`, 'garbage');
    const [job] = await listJobs({ store });
    expect(job!.problem).toMatch(/^1 record\(s\) cannot be read, so the counts are incomplete: splitfleet\/pk\/queue\.0\.77: INVALID_RECORD/);
  });
});

describe('delete on a packed job', () => {
  test('removes its pages and folded records, and nothing of a sibling or a nested job', async () => {
    store = new MemoryStore();
    const f = await writePackedFixture(store, 'splitfleet', 'pk');
    await writePackedFixture(store, 'splitfleet', 'pk2');
    // A job nested under pk's prefix, named like a queue page: its keys sort inside pk's `queue.*` range.
    await writeSplitFixture(store, 'splitfleet/pk', 'queue.1', 2);
    const before = (await store.list('splitfleet/', { limit: 10_000 })).kvs.map((kv) => kv.key);
    const own = before.filter((k) => k.startsWith(f.prefix) && !k.startsWith(`${f.prefix}queue.1/`));
    const kinds = new Set(own.map((k) => parseKey(f.prefix, k).kind));
    expect(kinds.has('queue') && kinds.has('folded')).toBe(true);

    const preview = await previewDelete({ store, job: 'pk' });
    expect(preview.keys.sort()).toEqual(own.sort());
    expect(preview.byKind.queue).toBeGreaterThan(4);
    expect(preview.byKind.folded).toBe(preview.byKind.queue);

    const res = await deleteJob({ store, job: 'pk', force: true, waitMs: 0 }); // the fixture has no verdict
    expect(res.deleted).toBe(own.length);
    const after = (await store.list('splitfleet/', { limit: 10_000 })).kvs.map((kv) => kv.key);
    expect(after.sort()).toEqual(before.filter((k) => !own.includes(k)).sort());
    expect(after.some((k) => k.startsWith('splitfleet/pk2/queue.'))).toBe(true);
    expect(after.some((k) => k.startsWith('splitfleet/pk/queue.1/'))).toBe(true);
  });
});

describe('retry and evacuate on a packed job', () => {
  test('retries a quarantined split of a stalled packed job; the job then completes', async () => {
    store = new MemoryStore();
    const n = 60;
    let poisoned = true;
    const handler = async (s: SplitHandle) => {
      if (s.id === 's-007' && poisoned) {
        await s.fail('poisoned', { permanent: true });
        return;
      }
      await s.complete(1);
    };
    const first = await start('rt', n, ['w0', 'w1'], handler);
    expect(await Promise.all(first.map((c) => c.done))).toEqual(['stalled', 'stalled']);
    const stalled = await readFullReport({ store, job: 'rt' });
    expect(stalled.splits).toMatchObject({ completed: n - 1, quarantined: 1, queued: 0, total: n });

    // Completed splits were folded back: the counts above come from folded bits as well as records.
    const P = jobPrefix('splitfleet', 'rt');
    expect((await store.list(P, { limit: 10_000 })).kvs.map((kv) => parseKey(P, kv.key).kind)).toContain('folded');
    await expect(retrySplits({ store, job: 'rt', splits: ['nope'] })).rejects.toThrow(/^split "nope": job "rt" has no such split$/);

    const res = await retrySplits({ store, job: 'rt', allQuarantined: true });
    expect(res).toEqual({ retried: ['s-007'], verdictCleared: true });
    poisoned = false;
    const again = await start('rt', n, ['w2'], handler);
    expect(await again[0]!.done).toBe('complete');
    const done = await readFullReport({ store, job: 'rt' });
    expect(done.splits).toMatchObject({ completed: n, quarantined: 0, total: n });
    expect(done.progress.verdict).toBe('complete');
  });

  test('refuses to retry a queued or a folded split, naming its state', async () => {
    store = new MemoryStore();
    const f = await writePackedFixture(store, 'splitfleet', 'pk');
    const queued = [...f.state].find(([, s]) => s === 'queued')![0];
    await expect(retrySplits({ store, job: 'pk', splits: [queued] }))
      .rejects.toThrow(`split "${queued}": is queued (in its queue page, with no record of its own), not quarantined; only a quarantined split can be retried`);
    await expect(retrySplits({ store, job: 'pk', splits: [f.pageOrder[0]!] }))
      .rejects.toThrow(/is completed \(folded back into its queue page\), not quarantined/);
    expect(await retrySplits({ store, job: 'pk', splits: [f.quarantined] })).toEqual({ retried: [f.quarantined], verdictCleared: false });
  });

  test('evacuate drains one member of a running packed job; resume --instance gives it work again', async () => {
    store = new MemoryStore();
    let release!: () => void;
    const released = new Promise<void>((r) => (release = r));
    const handler = async (s: SplitHandle) => {
      await Promise.race([released, new Promise((r) => s.drainSignal.addEventListener('abort', r))]);
      if (s.drainSignal.aborted) return;
      await s.complete(1);
    };
    const [w0, w1] = await start('ev', 40, ['w0', 'w1'], handler);
    await waitUntil('every lane busy', () => w0!.held.length + w1!.held.length === 6, { timeoutMs: 10_000 });
    await evacuateInstance({ store, job: 'ev', instance: 'w1' });
    await waitUntil('w1 drained', () => w1!.held.length === 0, { timeoutMs: 10_000 });
    const assigned = await store.get(assignKey(jobPrefix('splitfleet', 'ev'), 'w1'));
    expect(JSON.parse(assigned!.value).splits).toEqual([]);
    const r = await readJobReport({ store, job: 'ev' });
    expect(r.report.evacuated).toEqual([{ instance: 'w1', inForce: true }]);
    await resumeInstance({ store, job: 'ev', instance: 'w1' });
    await waitUntil('w1 works again', () => w1!.held.length > 0, { timeoutMs: 10_000 });
    release();
    expect(await Promise.all([w0!.done, w1!.done])).toEqual(['complete', 'complete']);
  });

  test('jobs and inspect agree with the leader\'s summary of a finished packed job', async () => {
    store = new MemoryStore();
    const c = await start('sm', 50, ['w0'], async (s) => s.complete(1));
    expect(await c[0]!.done).toBe('complete');
    const summary = await readJobReport({ store, job: 'sm', summaryAbove: 0 });
    expect(summary.source).toBe('summary');
    expect(summary.report.splits).toMatchObject({ completed: 50, total: 50 });
    expect(summary.report.plan).toMatchObject({ layout: 'packed', seeded: 50 });
    const full = await readFullReport({ store, job: 'sm' });
    expect(full.splits).toMatchObject({ completed: 50, total: 50 });
    const [job] = await listJobs({ store });
    expect(job!.source).toMatchObject({ kind: 'summary' });
    expect(job!.splits).toEqual({ runnable: 0, completed: 50, quarantined: 0, total: 50 });
  });
});
