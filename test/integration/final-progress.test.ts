/**
 * readFinalProgress (issue 50, item 3; decision 0069) on MemoryStore with the real coordinator: a
 * `keys` job and a packed job run to their verdict, then every split's final progress is read back
 * page by page. In the packed job the fold-back has deleted the folded splits' `progress.{id}`
 * keys; their progress comes back from the fold-backs' `result.*` records. A split whose progress
 * is too large for a fold-back keeps its keys and is read from them; a result record broken by
 * hand is reported, not skipped.
 */
import { describe, expect, it } from 'vitest';
import type { Coordinator } from '../../src/coordinator/coordinator.js';
import { silentLogger, type Logger } from '../../src/coordinator/log.js';
import type { SplitHandle } from '../../src/coordinator/types.js';
import { jobPrefix, kindPrefix, parseKey } from '../../src/protocol/keys.js';
import { encodeRecord, type ResultEntry } from '../../src/protocol/records.js';
import { readFinalProgress, type FinalProgress } from '../../src/operator/final-progress.js';
import { MAX_RECORD_BYTES } from '../../src/protocol/record-bounds.js';
import { MemoryStore } from '../../src/store/memory.js';
import { useMemoryFleet } from '../support/memory-fleet.js';

const coordinators = useMemoryFleet();

const ids = (n: number) => Array.from({ length: n }, (_, i) => `s-${String(i).padStart(4, '0')}`);
/** What split `id` ends with: a value of its own, so a mixed-up entry shows. */
const finalOf = (id: string) => ({ rows: Number(id.slice(2)) * 3, id });

async function runJob(store: MemoryStore, job: string, layout: 'keys' | 'packed', n: number, handler?: (s: SplitHandle) => Promise<void>, logger: Logger = silentLogger): Promise<void> {
  const planner = () => ({ final: true, splits: ids(n).map((id) => ({ id, weight: 1 })) });
  const run = handler ?? (async (s: SplitHandle) => {
    await s.commit({ rows: 1, id: s.id });
    await s.complete(finalOf(s.id));
  });
  const fleet: Coordinator[] = [];
  for (let i = 0; i < 3; i++) {
    const c = await coordinators.start({ store, job, instance: `w-${i}`, maxInFlight: 4, planner, handler: run, layout, reconcileIntervalMs: 1000, logger });
    fleet.push(c);
  }
  expect(await Promise.all(fleet.map((c) => c.done))).toEqual(['complete', 'complete', 'complete']);
}

/** Every page of the job's final progress, `limit` at a time; the items in read order, and the page count. */
async function readAll(store: MemoryStore, job: string, limit: number): Promise<{ items: FinalProgress[]; pages: number; unreadable: string[] }> {
  const items: FinalProgress[] = [];
  const unreadable: string[] = [];
  let after: string | undefined;
  let pages = 0;
  for (;;) {
    const page = await readFinalProgress({ store, job, limit, ...(after !== undefined ? { after } : {}) });
    pages++;
    expect(page.items.length + page.unreadable.length).toBeLessThanOrEqual(limit);
    items.push(...page.items);
    unreadable.push(...page.unreadable.map((u) => u.key));
    if (page.next === undefined) return { items, pages, unreadable };
    after = page.next;
    expect(pages).toBeLessThan(10_000);
  }
}

/** Fold order: generation, then seq, numerically. */
const foldOrder = (a: { generation: number; seq: number }, b: { generation: number; seq: number }) => a.generation - b.generation || a.seq - b.seq;

/** The job's keys, counted by kind. */
async function kinds(store: MemoryStore, job: string): Promise<Map<string, number>> {
  const prefix = jobPrefix('splitfleet', job);
  const out = new Map<string, number>();
  for (const kv of (await store.listAll(prefix)).kvs) {
    const k = parseKey(prefix, kv.key).kind;
    out.set(k, (out.get(k) ?? 0) + 1);
  }
  return out;
}

describe('readFinalProgress', () => {
  it('reads every split of a finished keys job, page by page, in id order', async () => {
    const store = new MemoryStore();
    await runJob(store, 'k', 'keys', 120);
    const { items, pages } = await readAll(store, 'k', 7);
    expect(pages).toBeGreaterThanOrEqual(Math.ceil(120 / 7));
    expect(items.map((i) => i.id)).toEqual(ids(120));
    for (const i of items) expect(i).toEqual({ id: i.id, status: 'completed', progress: finalOf(i.id) });
  });

  it('reads every split of a finished packed job after the fold-back deleted their progress keys', async () => {
    const store = new MemoryStore();
    await runJob(store, 'p', 'packed', 300);
    const before = await kinds(store, 'p');
    // The fold-back has run: folded splits' progress keys are gone, their results kept.
    expect(before.get('result') ?? 0).toBeGreaterThan(0);
    expect(before.get('progress') ?? 0).toBeLessThan(300);
    for (const limit of [1, 13, 10_000]) {
      const { items, pages } = await readAll(store, 'p', limit);
      expect(pages).toBeGreaterThanOrEqual(Math.ceil(300 / limit));
      expect(items.map((i) => i.id).sort()).toEqual(ids(300));
      for (const i of items) expect(i).toEqual({ id: i.id, status: 'completed', progress: finalOf(i.id), ...(i.fold !== undefined ? { fold: i.fold } : {}) });
      // Folded entries come in fold order, each with its fold.
      const folds = items.flatMap((i) => (i.fold === undefined ? [] : [i.fold]));
      expect(folds.length).toBeGreaterThan(0);
      for (let k = 1; k < folds.length; k++) expect(foldOrder(folds[k - 1]!, folds[k]!)).toBeLessThanOrEqual(0);
    }
    // Read-only: nothing changed.
    expect(await kinds(store, 'p')).toEqual(before);
  });

  it('a split whose final progress is too large for a fold-back keeps its keys and is read from them', async () => {
    const store = new MemoryStore();
    // Close to a record's limit: its completion fits one request, a fold-back carrying it as well does not.
    const big = 'x'.repeat(MAX_RECORD_BYTES - 1_550);
    const warned: unknown[] = [];
    const logger: Logger = { ...silentLogger, warn: (obj: unknown, msg?: string) => { if (msg?.includes('too large for a fold-back')) warned.push(obj); } };
    await runJob(store, 'big', 'packed', 20, async (s) => {
      // The big one at once and the others slowly, so the leader is still there to try to fold it.
      if (s.id !== 's-0007') await new Promise((r) => setTimeout(r, 100));
      await s.complete(s.id === 's-0007' ? { big } : finalOf(s.id));
    }, logger);
    expect(warned).toEqual([{ split: 's-0007' }]);
    const prefix = jobPrefix('splitfleet', 'big');
    expect(await store.get(`${prefix}progress.s-0007`)).toBeDefined();
    expect(await store.get(`${prefix}split.s-0007`)).toBeDefined();
    const { items } = await readAll(store, 'big', 5);
    expect(items.map((i) => i.id).sort()).toEqual(ids(20));
    expect(items.find((i) => i.id === 's-0007')).toEqual({ id: 's-0007', status: 'completed', progress: { big } });
  });

  it('reports a result record broken by hand, and refuses a cursor or limit it did not make', async () => {
    const store = new MemoryStore();
    await runJob(store, 'broken', 'packed', 40);
    const prefix = jobPrefix('splitfleet', 'broken');
    await store.put(`${prefix}result.999.0`, '{"not":"a result"}');
    const { items, unreadable } = await readAll(store, 'broken', 6);
    expect(unreadable).toEqual([`${prefix}result.999.0`]);
    expect(new Set(items.map((i) => i.id)).size).toBe(items.length);
    await expect(readFinalProgress({ store, job: 'broken', after: 'nope!' })).rejects.toThrow(/after: must be a non-empty cursor string/);
    await expect(readFinalProgress({ store, job: 'broken', after: Buffer.from('["x"]').toString('base64url') })).rejects.toThrow(/after: is not a cursor this reader wrote/);
    await expect(readFinalProgress({ store, job: 'broken', limit: 0 })).rejects.toThrow(/limit: must be an integer 1 ≤ limit ≤ 10000/);
    await expect(readFinalProgress({ store, job: 'nothing-here' })).rejects.toThrow(/no job "nothing-here"/);
  });

  it('reads result records in fold order, not key order, each entry with its fold; a page keeps an id\'s latest fold (issue 49)', async () => {
    const store = new MemoryStore();
    await runJob(store, 'refold', 'packed', 10);
    const prefix = jobPrefix('splitfleet', 'refold');
    const kept = (await store.list(prefix, { rangeStart: kindPrefix(prefix, 'result'), rangeEnd: `${prefix}result/` })).kvs;
    const fp = (JSON.parse((await store.get(`${prefix}plan`))!.value) as { fp: string }).fp;
    for (const kv of kept) await store.delete(kv.key);
    // s-0000 folded in term 2, its folded record lost, run again and folded in term 10: unpadded,
    // `result.10.0` sorts before `result.2.0`, and `result.2.10` before `result.2.2`.
    const put = (generation: number, seq: number, splits: ResultEntry[]) => store.put(`${prefix}result.${generation}.${seq}`, encodeRecord('result', { v: 1, fp, generation, seq, splits }));
    await put(10, 0, [{ id: 's-0000', progress: 'new' }, { id: 's-0004', progress: 4 }]);
    await put(2, 0, [{ id: 's-0000', progress: 'old' }, { id: 's-0001', progress: 1 }]);
    await put(2, 10, [{ id: 's-0002', progress: 2 }]);
    await put(2, 2, [{ id: 's-0003', progress: 3 }]);
    const folded = (items: FinalProgress[]) => items.flatMap((i) => (i.fold === undefined ? [] : [`${i.id}@${i.fold.generation}.${i.fold.seq}=${JSON.stringify(i.progress)}`]));
    // One page: in fold order, and s-0000's earlier entry dropped for its later one.
    expect(folded((await readAll(store, 'refold', 10_000)).items)).toEqual(['s-0001@2.0=1', 's-0003@2.2=3', 's-0002@2.10=2', 's-0000@10.0="new"', 's-0004@10.0=4']);
    // A page at a time: across pages both entries come, in fold order; the later (higher fold) wins.
    for (const limit of [1, 2, 3]) {
      expect(folded((await readAll(store, 'refold', limit)).items)).toEqual(['s-0000@2.0="old"', 's-0001@2.0=1', 's-0003@2.2=3', 's-0002@2.10=2', 's-0000@10.0="new"', 's-0004@10.0=4']);
    }
  });
});
