/**
 * `inspect` on a packed job (decision 0037), on a MemoryStore with the job
 * written by hand (test/support/packed-fixture.ts):
 * - the report from every record counts the queue pages: a split without a
 *   record of its own is queued, or completed when its folded bit is set;
 *   the plan line says the layout;
 * - `--splits` pages every split exactly once, in page order, across page
 *   and bucket boundaries, each with its page's weight and descriptor; it
 *   reads queue pages a few at a time and exact keys, never a kind's range;
 * - `--split ID` finds a split from its id alone: only its bucket's pages
 *   are read (a range under `bucketPrefix`), never the whole queue;
 * - a `keys` job's stray pages are not counted and are named as a problem;
 * - the dashboard's live view counts the same, and snapshots the job a few
 *   keys a page (a queue page may be near a store request's size).
 */
import { describe, expect, it } from 'vitest';
import { LiveJob } from '../../../src/inspect/live.js';
import { readSplit, readSplitPage } from '../../../src/inspect/split-read.js';
import { renderSplit, renderSplitTable } from '../../../src/inspect/splits.js';
import { readFullReport } from '../../../src/inspect/summary-read.js';
import { renderReport } from '../../../src/inspect/render.js';
import { bucketPrefix, planKey, queueKey } from '../../../src/protocol/keys.js';
import { jobSpan } from '../../../src/protocol/scope.js';
import { bucketOf } from '../../../src/protocol/packed.js';
import { encodeRecord, SCHEMA_VERSION } from '../../../src/protocol/records.js';
import { MemoryStore } from '../../../src/store/memory.js';
import type { ListOptions } from '../../../src/store/store.js';
import { PACKED_BUCKETS, writePackedFixture } from '../../support/packed-fixture.js';
import { waitUntil } from '../../support/wait.js';

async function fixture() {
  const store = new MemoryStore();
  const f = await writePackedFixture(store, 'splitfleet', 'pk');
  // A nested job whose keys sort inside this job's queue range: never read as a page.
  await store.put('splitfleet/pk/queue.1.0/x/plan', '{}');
  const calls: ListOptions[] = [];
  const list = store.list.bind(store);
  store.list = (prefix, options) => {
    calls.push(options ?? {});
    return list(prefix, options);
  };
  return { store, calls, ...f };
}

const exact = (c: ListOptions) => c.rangeEnd === `${c.rangeStart}\0`;

describe('the report of a packed job from every record', () => {
  it('counts queued and folded splits from their pages, and promoted ones by their records', async () => {
    const { store, state, folded } = await fixture();
    const r = await readFullReport({ store, job: 'pk' });
    expect(r.problems).toEqual([]);
    const want = { queued: 0, running: 0, draining: 0, completed: 0, quarantined: 0 };
    for (const s of state.values()) want[s]++;
    expect(r.splits).toEqual({ ...want, total: 40 });
    expect(want.completed).toBe(folded.size + 1);
    expect(r.plan).toEqual({ generation: 1, final: true, planned: 40, seeded: 40, layout: 'packed', buckets: PACKED_BUCKETS });
    // Every split's weight is its page's (10 + i): 40 · 10 + (0 + … + 39).
    expect(r.progress.totalWeight).toBe(400 + 780);
    expect(r.progress.verdict).toBeNull();
    expect(r.quarantined.map((q) => q.reason)).toEqual(['handler threw: corrupt input']);
    expect(renderReport(r)).toMatch(/40 seeded, generation 1, packed layout \(4 buckets\)/);
  });

  it('does not count the pages of a job whose plan is not packed, and names them', async () => {
    const { store, prefix, fp } = await fixture();
    await store.put(planKey(prefix), encodeRecord('plan', { v: SCHEMA_VERSION, fp, generation: 1, final: true, planned: 3 }));
    const r = await readFullReport({ store, job: 'pk' });
    expect(r.splits.total).toBe(3); // the three splits with records of their own
    expect(r.problems.some((p) => /queue page\(s\) under a job whose plan is not packed: not counted/.test(p))).toBe(true);
  });
});

describe('inspect --splits on a packed job', () => {
  it('pages every split once, in page order, with its page\'s weight and descriptor', async () => {
    const { store, pageOrder, state, running, quarantined } = await fixture();
    const seen: string[] = [];
    let after: string | undefined;
    do {
      const page = await readSplitPage({ store, root: 'splitfleet', job: 'pk', limit: 3, ...(after !== undefined ? { after } : {}) });
      expect(page.problems).toEqual([]);
      for (const v of page.splits) {
        seen.push(v.id);
        expect(v.status, v.id).toBe(state.get(v.id));
        expect(v.weight, v.id).toBe(10 + Number(v.id.slice(2)));
        expect(v.descriptor, v.id).toEqual({ n: Number(v.id.slice(2)) });
        expect(v.page, v.id).not.toBeNull();
      }
      after = page.next ?? undefined;
    } while (after !== undefined);
    expect(seen).toEqual(pageOrder);

    const all = new Map((await readSplitPage({ store, root: 'splitfleet', job: 'pk', limit: 100 })).splits.map((v) => [v.id, v]));
    const queued = [...state].find(([, s]) => s === 'queued')![0];
    expect(all.get(queued)).toMatchObject({ status: 'queued', epoch: null, owner: null, lease: null, page: { folded: false } });
    const foldedId = pageOrder[0]!;
    expect(all.get(foldedId)).toMatchObject({ status: 'completed', epoch: null, page: { slot: 0, folded: true } });
    expect(all.get(running)).toMatchObject({ status: 'running', owner: 'pod-a', lease: { owner: 'pod-a', epoch: 1 }, progress: { value: { offset: 77 } } });
    expect(all.get(quarantined)).toMatchObject({ status: 'quarantined', attempts: 3, reason: 'handler threw: corrupt input' });
    const table = renderSplitTable(await readSplitPage({ store, root: 'splitfleet', job: 'pk', limit: 100 }));
    expect(table).toContain('completed (folded)');
    expect(table).toContain('{"n":');
  });

  it('reads queue pages a few at a time and exact keys: never a split, spec, progress or lease range', async () => {
    const { store, calls, prefix, pageOrder } = await fixture();
    await readSplitPage({ store, root: 'splitfleet', job: 'pk', limit: 5, after: pageOrder[6]! });
    expect(calls.length).toBeGreaterThan(0);
    for (const c of calls) {
      if (exact(c)) continue;
      expect(c.rangeStart, JSON.stringify(c)).toMatch(new RegExp(`^${prefix}queue\\.`));
      expect(c.limit).toBeLessThanOrEqual(2);
    }
  });

  it('refuses --after a split that is in no page, naming the rule', async () => {
    const { store } = await fixture();
    await expect(readSplitPage({ store, root: 'splitfleet', job: 'pk', after: 'nope' }))
      .rejects.toThrow(/^after: split "nope" is in no queue page of this packed job/);
  });
});

describe('inspect --split ID on a packed job', () => {
  it('finds a queued split from its id alone, reading only its bucket\'s pages', async () => {
    const { store, calls, prefix, fp, state } = await fixture();
    const queued = [...state].find(([, s]) => s === 'queued')![0];
    const { page, split } = await readSplit({ store, root: 'splitfleet', job: 'pk', id: queued });
    expect(page.exists).toBe(true);
    expect(split).toMatchObject({ id: queued, status: 'queued', weight: 10 + Number(queued.slice(2)), descriptor: { n: Number(queued.slice(2)) } });
    const ranges = calls.filter((c) => !exact(c));
    expect(ranges.length).toBeGreaterThan(0);
    for (const c of ranges) expect(c.rangeStart).toBe(bucketPrefix(prefix, bucketOf(fp, queued, PACKED_BUCKETS)));
    const text = renderSplit(page, split!);
    expect(text).toMatch(/status\s+queued\n/);
    expect(text).toMatch(/epoch\s+— \(queued in its queue page: no record of its own until it is assigned\)/);
    expect(text).toMatch(/queue page\s+queue\.\d+\.\d+, slot \d+\n/);
  });

  it('a folded split is completed (folded); a promoted one is as its records say; an unknown id is none', async () => {
    const { store, pageOrder, running } = await fixture();
    const folded = await readSplit({ store, root: 'splitfleet', job: 'pk', id: pageOrder[0]! });
    expect(folded.split).toMatchObject({ status: 'completed', page: { slot: 0, folded: true } });
    expect(renderSplit(folded.page, folded.split!)).toMatch(/status\s+completed \(folded\)\n/);
    const held = await readSplit({ store, root: 'splitfleet', job: 'pk', id: running });
    expect(held.split).toMatchObject({ status: 'running', owner: 'pod-a', epoch: 1, page: { folded: false } });
    const missing = await readSplit({ store, root: 'splitfleet', job: 'pk', id: 'nope' });
    expect(missing.page.exists).toBe(true);
    expect(missing.split).toBeNull();
  });

  it('names an unreadable page of the bucket as a problem', async () => {
    const { store, prefix, fp } = await fixture();
    const bucket = bucketOf(fp, 'nope', PACKED_BUCKETS);
    await store.put(queueKey(prefix, bucket, 99), '{"not": "a page"}');
    const { page } = await readSplit({ store, root: 'splitfleet', job: 'pk', id: 'nope' });
    expect(page.problems.some((p) => p.startsWith(`${queueKey(prefix, bucket, 99)}: INVALID_RECORD`))).toBe(true);
  });
});

describe('the dashboard on a packed job', () => {
  it('counts the pages as the report does, its snapshot reading a few keys a page', async () => {
    const { store, state, calls, prefix } = await fixture();
    const live = new LiveJob({ store, job: 'pk', refreshMs: 1 });
    try {
      await live.start();
      await waitUntil('the dashboard has read the job', () => live.view().report.splits.total === 40);
      const counts = { queued: 0, running: 0, draining: 0, completed: 0, quarantined: 0 };
      for (const s of state.values()) counts[s]++;
      expect(live.view().report.splits).toEqual({ ...counts, total: 40 });
      expect(live.view().report.plan).toMatchObject({ layout: 'packed', seeded: 40 });
      // A queue page may be near a store request's size: the snapshot of the job's span pages by 16 keys.
      const span = jobSpan(prefix);
      const snapshot = calls.filter((c) => c.rangeStart === span.rangeStart && c.rangeEnd === span.rangeEnd);
      expect(snapshot.length).toBeGreaterThan(1);
      for (const c of snapshot) expect(c.limit).toBe(16);
    } finally {
      await live.close();
    }
  });
});
