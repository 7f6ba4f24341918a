/**
 * The per-split view on a MemoryStore (src/inspect/split-read.ts, splits.ts):
 * each split's status, owner, epoch, attempts, lease, weight, progress, last
 * reason and age; pages in id order with `next`; only the ranges of the
 * needed kinds are read, never the job's whole prefix; the table lines up
 * after CJK and emoji ids.
 */
import { describe, expect, it } from 'vitest';
import { readSplit, readSplitPage } from '../../../src/inspect/split-read.js';
import { renderSplit, renderSplitTable } from '../../../src/inspect/splits.js';
import { displayWidth } from '../../../src/inspect/width.js';
import { MemoryStore } from '../../../src/store/memory.js';
import type { ListOptions } from '../../../src/store/store.js';
import { CJK_IDS, writeSplitFixture } from '../../support/split-fixture.js';

async function fixture() {
  const store = new MemoryStore();
  const now = Date.now();
  const f = await writeSplitFixture(store, 'splitfleet', 'j', 6, now);
  // A nested job whose keys sort inside this job's kinds: never shown.
  await store.put('splitfleet/j/split.zz/other/plan', '{}');
  const calls: ListOptions[] = [];
  const list = store.list.bind(store);
  store.list = (prefix, options) => {
    calls.push(options ?? {});
    return list(prefix, options);
  };
  return { store, now, calls, ...f };
}

describe('readSplitPage', () => {
  it('pages the splits in id order, with next, and every field', async () => {
    const { store, now, ids } = await fixture();
    const seen: string[] = [];
    let after: string | undefined;
    let pages = 0;
    do {
      const page = await readSplitPage({ store, root: 'splitfleet', job: 'j', limit: 3, now, ...(after !== undefined ? { after } : {}) });
      expect(page.exists).toBe(true);
      expect(page.problems).toEqual([]);
      expect(page.splits.length).toBeLessThanOrEqual(3);
      seen.push(...page.splits.map((s) => s.id));
      after = page.next ?? undefined;
      pages++;
    } while (after !== undefined);
    expect(seen).toEqual(ids);
    expect(pages).toBe(3);

    const all = (await readSplitPage({ store, root: 'splitfleet', job: 'j', limit: 100, now })).splits;
    const by = new Map(all.map((s) => [s.id, s]));
    expect(by.get('s-00')).toMatchObject({ status: 'queued', owner: null, epoch: 0, attempts: 0, lease: null, weight: 100, progress: null, reason: null });
    expect(by.get('s-01')).toMatchObject({
      status: 'running', owner: 'pod-a', epoch: 2, attempts: 1, lease: { owner: 'pod-a', epoch: 2, current: true }, weight: 101,
      progress: { value: { offset: 4096 }, epoch: 2 },
    });
    expect(by.get('s-02')).toMatchObject({ status: 'draining', lease: { owner: 'pod-b', epoch: 1, current: true } });
    expect(by.get('s-03')).toMatchObject({ status: 'quarantined', attempts: 3, reason: 'handler threw: disk full' });
    expect(by.get('s-04')!.status).toBe('queued');
    expect(by.get('s-04')!.retryInMs).toBeGreaterThan(3_500_000);
    expect(by.get(CJK_IDS[0]!)).toMatchObject({ status: 'running', owner: 'pod-a', progress: { value: { offset: 7 } } });
    // Age: revisions since the split's last write; s-00's split record was written before s-01's progress.
    expect(by.get('s-00')!.ageRevisions).toBeGreaterThan(by.get('s-01')!.ageRevisions);
  });

  it('reads ranges of the split, spec, progress, lease kinds and single keys, never the whole prefix', async () => {
    const { store, calls, now } = await fixture();
    await readSplitPage({ store, root: 'splitfleet', job: 'j', limit: 2, now });
    expect(calls.length).toBeGreaterThan(0);
    for (const c of calls) {
      expect(c.rangeStart, JSON.stringify(c)).toBeDefined();
      expect(c.rangeEnd).toBeDefined();
      expect(c.rangeStart).toMatch(/^splitfleet\/j\/(split|spec|progress|lease|assign|plan)/);
    }
    // The page's spec range stops at its last id: s-02 and later specs are not read.
    const spec = calls.find((c) => c.rangeStart!.startsWith('splitfleet/j/spec.'))!;
    expect(spec.rangeEnd).toBe('splitfleet/j/spec.s-01\0');
  });

  it('refuses a bad limit, names the field', async () => {
    const { store } = await fixture();
    await expect(readSplitPage({ store, root: 'splitfleet', job: 'j', limit: 0 })).rejects.toThrow(/^limit: must be an integer from 1 to 1000/);
  });
});

describe('readSplit', () => {
  it('one split; a missing split; a missing job', async () => {
    const { store, now } = await fixture();
    const one = await readSplit({ store, root: 'splitfleet', job: 'j', id: 's-03', now });
    expect(one.split).toMatchObject({ id: 's-03', status: 'quarantined', reason: 'handler threw: disk full' });
    const text = renderSplit(one.page, one.split!);
    expect(text).toContain('last reason  handler threw: disk full');
    expect(text).toMatch(/status\s+quarantined/);
    const missing = await readSplit({ store, root: 'splitfleet', job: 'j', id: 'nope', now });
    expect(missing.page.exists).toBe(true);
    expect(missing.split).toBeNull();
    const noJob = await readSplit({ store, root: 'splitfleet', job: 'absent', id: 's-01', now });
    expect(noJob.page.exists).toBe(false);
  });
});

describe('renderSplitTable', () => {
  it('lines up every column after CJK and emoji ids', async () => {
    const { store, now } = await fixture();
    const text = renderSplitTable(await readSplitPage({ store, root: 'splitfleet', job: 'j', limit: 100, now }));
    const lines = text.split('\n');
    const header = lines.find((l) => l.trim().startsWith('split '))!;
    const rows = lines.filter((l) => /^ {2}(s-0|数据|💾)/.test(l));
    expect(rows).toHaveLength(8);
    const at = (line: string, needle: string) => displayWidth(line.slice(0, line.indexOf(needle)));
    // The status column starts at one display column on every row, the CJK rows included.
    const statusColumn = at(header, 'status');
    for (const row of rows) {
      const status = /(queued|running|draining|quarantined|completed)/.exec(row)![1]!;
      expect(at(row, status), row).toBe(statusColumn);
    }
    expect(text).toContain('retry in 1 h');
  });
});
