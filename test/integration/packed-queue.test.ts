/**
 * A packed job (decision 0037) on the in-process MemoryStore: the planner's
 * splits are seeded as queue pages, the leader promotes what it assigns,
 * workers run them as in any job, and completed splits are folded back.
 */
import { describe, expect, test } from 'vitest';
import { startCoordinator, type Coordinator } from '../../src/coordinator/coordinator.js';
import { silentLogger } from '../../src/coordinator/log.js';
import type { Planner, SplitHandle } from '../../src/coordinator/types.js';
import { foldedKey, jobPrefix, parseKey, splitKey } from '../../src/protocol/keys.js';
import { FoldedBits } from '../../src/protocol/packed.js';
import { decodeRecord, fingerprintHash } from '../../src/protocol/records.js';
import { MemoryStore } from '../../src/store/memory.js';
import { defaultFingerprint } from '../../src/config.js';
import { waitUntil } from '../support/wait.js';

const fast = { leaseDurationMs: 2000, opTimeoutMs: 500, rebalanceDelayMs: 0, drainDeadlineMs: 1000, reconcileIntervalMs: 1000 };


/** Two packed members run `planner`'s job to a complete verdict, each split completed at once; the completed ids, sorted. */
async function completeAll(store: MemoryStore, job: string, planner: Planner, replanIntervalMs: number, options: { buckets?: number } = {}): Promise<string[]> {
  const completed = new Set<string>();
  const handler = async (split: SplitHandle) => {
    completed.add(split.id);
    await split.complete(null);
  };
  const fleet: Coordinator[] = [];
  for (let i = 0; i < 2; i++) {
    fleet.push(await startCoordinator({ store, job, instance: `w-${i}`, maxInFlight: 3, planner, handler, logger: silentLogger, layout: 'packed', ...fast, replanIntervalMs, ...options }));
  }
  expect(await Promise.all(fleet.map((c) => c.done))).toEqual(['complete', 'complete']);
  return [...completed].sort();
}

describe('a packed job on MemoryStore', () => {
  test('completes a final plan with every unit processed, and folds completed splits back', async () => {
    const store = new MemoryStore();
    const n = 300;
    const ids = Array.from({ length: n }, (_, i) => `s-${String(i).padStart(4, '0')}`);
    const processed = new Map<string, number>();
    const planner = () => ({ final: true, splits: ids.map((id, i) => ({ id, weight: 1 + (i % 7) * 100, descriptor: { units: 3, id } })) });
    const handler = async (split: SplitHandle) => {
      expect((split.descriptor as { id: string }).id).toBe(split.id); // copied from its page on promotion
      let done = (split.progress as number | null) ?? 0;
      while (done < 3) {
        done++;
        processed.set(`${split.id}#${done}`, (processed.get(`${split.id}#${done}`) ?? 0) + 1);
        await split.commit(done);
      }
      await split.complete(done);
    };
    const fleet: Coordinator[] = [];
    for (let i = 0; i < 3; i++) {
      fleet.push(await startCoordinator({ store, job: 'packed', instance: `w-${i}`, maxInFlight: 4, planner, handler, logger: silentLogger, layout: 'packed', ...fast }));
    }
    expect(await Promise.all(fleet.map((c) => c.done))).toEqual(['complete', 'complete', 'complete']);
    for (const id of ids) for (let u = 1; u <= 3; u++) expect(processed.get(`${id}#${u}`)).toBeGreaterThanOrEqual(1);

    // Every split is in exactly one page; it is completed by its folded bit or by its own record.
    const prefix = jobPrefix('splitfleet', 'packed');
    const fp = fingerprintHash(defaultFingerprint('splitfleet', 'packed'));
    const listed = await store.list(prefix, { limit: 100_000 });
    const plan = decodeRecord('plan', `${prefix}plan`, listed.kvs.find((kv) => kv.key === `${prefix}plan`)!.value, fp);
    expect(plan).toMatchObject({ v: 2, layout: 'packed', planned: n, verdict: 'complete' });
    const folded = new Map<string, FoldedBits>();
    const records = new Map<string, string>();
    const paged: string[] = [];
    for (const kv of listed.kvs) {
      const k = parseKey(prefix, kv.key);
      if (k.kind === 'folded') folded.set(`${k.bucket}.${k.page}`, FoldedBits.decode(decodeRecord('folded', kv.key, kv.value, fp).bits));
      if (k.kind === 'split') records.set(k.id, decodeRecord('split', kv.key, kv.value, fp).status);
    }
    let foldedCount = 0;
    for (const kv of listed.kvs) {
      const k = parseKey(prefix, kv.key);
      if (k.kind !== 'queue') continue;
      const page = decodeRecord('queue', kv.key, kv.value, fp);
      page.ids.forEach((id, slot) => {
        paged.push(id);
        const isFolded = folded.get(`${k.bucket}.${k.page}`)?.has(slot) ?? false;
        if (isFolded) foldedCount++;
        // Folded xor a completed record of its own.
        expect(isFolded ? records.has(id) : records.get(id)).toBe(isFolded ? false : 'completed');
      });
    }
    expect(paged.sort()).toEqual(ids);
    expect(foldedCount).toBeGreaterThan(0);
    await store.close();
  });

  test('a short job is folded back as it goes: its completed splits keep no records of their own but those still named (decision 0076)', async () => {
    // Fold-backs are sent as soon as they may (decision 0076): a job shorter than a second leaves no more behind.
    const store = new MemoryStore();
    const ids = Array.from({ length: 20 }, (_, i) => `s-${String(i).padStart(2, '0')}`);
    const c = await startCoordinator({
      store, job: 'short', instance: 'w0', maxInFlight: 2, logger: silentLogger, layout: 'packed', ...fast,
      planner: () => ({ final: true, splits: ids.map((id) => ({ id, weight: 1 })) }),
      handler: async (split) => split.complete(null),
    });
    expect(await c.done).toBe('complete');
    await c.close();
    const prefix = jobPrefix('splitfleet', 'short');
    const { kvs } = await store.list(prefix, { limit: 10_000 });
    const kinds = kvs.map((kv) => parseKey(prefix, kv.key));
    const keyed = kinds.filter((k) => k.kind === 'split').map((k) => (k as { id: string }).id);
    // At most the splits an assignment still named when the verdict came (its two lanes and their prefetch).
    expect(keyed.length).toBeLessThanOrEqual(4);
    expect(kinds.some((k) => k.kind === 'folded')).toBe(true);
    await store.close();
  });

  test('a new leader reads the folded bits of pages folded under the previous one', async () => {
    // The listing sorts `folded.*` before `plan`: a leader that learns the layout from the plan record
    // must not drop the folded records it listed first, or it takes folded splits for queued ones, and
    // every promotion naming one loses (its folded record is not at revision 0): nothing is published again.
    const store = new MemoryStore();
    const ids = Array.from({ length: 10 }, (_, i) => `s-${i}`);
    const planner = () => ({ final: true, splits: ids.map((id) => ({ id, weight: 100, descriptor: { id } })) });
    let open!: () => void;
    const gate = new Promise<void>((resolve) => (open = resolve));
    // The first five complete at once (and are folded back); the rest wait for the gate.
    const handler = async (split: SplitHandle) => {
      if (Number(split.id.slice(2)) >= 5) await Promise.race([gate, new Promise((resolve) => split.signal.addEventListener('abort', resolve))]);
      if (split.signal.aborted) return;
      await split.complete(1);
    };
    const start = (instance: string) =>
      startCoordinator({ store, job: 'refold', instance, maxInFlight: 10, planner, handler, logger: silentLogger, layout: 'packed', ...fast });
    const first = await start('w-0');
    const prefix = jobPrefix('splitfleet', 'refold');
    const fp = fingerprintHash(defaultFingerprint('splitfleet', 'refold'));
    await waitUntil('splits folded back under the first leader', async () => {
      const kv = await store.get(foldedKey(prefix, 0, 0));
      return kv !== undefined && FoldedBits.decode(decodeRecord('folded', kv.key, kv.value, fp).bits).count > 0;
    });
    await first.stop();
    open();
    const second = await start('w-1');
    const verdict = await Promise.race([second.done, new Promise((resolve) => setTimeout(() => resolve('no verdict after 20 s'), 20_000))]);
    await second.close();
    expect(verdict).toBe('complete');
    await store.close();
  }, 30_000);

  test('an open plan appends pages to its buckets; every split runs once it is planned', async () => {
    const store = new MemoryStore();
    const all = Array.from({ length: 200 }, (_, i) => `o-${String(i).padStart(3, '0')}`);
    let runs = 0;
    // First the first half, open; then the whole plan (the first half again, as a full re-plan returns it), final.
    const planner = () => {
      runs++;
      return runs === 1
        ? { final: false, splits: all.slice(0, 100).map((id) => ({ id, weight: 5 })) }
        : { final: true, splits: all.map((id) => ({ id, weight: 5 })) };
    };
    expect(await completeAll(store, 'open', planner, 200)).toEqual(all);
    const prefix = jobPrefix('splitfleet', 'open');
    const listed = await store.list(prefix, { limit: 10_000 });
    const pages = listed.kvs.map((kv) => parseKey(prefix, kv.key)).filter((k) => k.kind === 'queue');
    // One bucket (100 splits), so the second plan's new splits are that bucket's second page.
    expect(pages).toEqual([{ kind: 'queue', bucket: 0, page: 0 }, { kind: 'queue', bucket: 0, page: 1 }]);
    await store.close();
  });

  test('a paged planner (more: true) is called again at once with its cursor, and each page is seeded as it comes', async () => {
    const store = new MemoryStore();
    const all = Array.from({ length: 150 }, (_, i) => `p-${String(i).padStart(3, '0')}`);
    const cursors: unknown[] = [];
    // Pages of 50; the replan interval is a minute, so only `more` can bring the next page in time.
    const planner = ({ cursor }: { cursor: unknown }) => {
      cursors.push(cursor);
      const at = typeof cursor === 'number' ? cursor : 0;
      const page = all.slice(at, at + 50).map((id) => ({ id, weight: 3 }));
      return at + 50 >= all.length ? { final: true, splits: page } : { final: false, more: true, cursor: at + 50, splits: page };
    };
    expect(await completeAll(store, 'paged', planner, 60_000)).toEqual(all);
    expect(cursors).toEqual([undefined, 50, 100]);
    await store.close();
  });

  test('a configured bucket count spreads the pages over that many buckets; a paged planner\'s expected total is a hint', async () => {
    const store = new MemoryStore();
    const all = Array.from({ length: 120 }, (_, i) => `b-${String(i).padStart(3, '0')}`);
    const planner = ({ cursor }: { cursor: unknown }) => {
      const at = typeof cursor === 'number' ? cursor : 0;
      const page = all.slice(at, at + 40).map((id) => ({ id, weight: 2 }));
      // An expected total above the truth: room reserved, nothing else changes.
      return at + 40 >= all.length ? { final: true, splits: page } : { final: false, more: true, cursor: at + 40, expected: 1000, splits: page };
    };
    expect(await completeAll(store, 'buckets', planner, 60_000, { buckets: 4 })).toEqual(all);
    const prefix = jobPrefix('splitfleet', 'buckets');
    const fp = fingerprintHash(defaultFingerprint('splitfleet', 'buckets'));
    const listed = await store.list(prefix, { limit: 10_000 });
    expect(decodeRecord('plan', `${prefix}plan`, listed.kvs.find((kv) => kv.key === `${prefix}plan`)!.value, fp).buckets).toBe(4);
    const buckets = new Set(listed.kvs.map((kv) => parseKey(prefix, kv.key)).flatMap((k) => (k.kind === 'queue' ? [k.bucket] : [])));
    expect([...buckets].sort()).toEqual([0, 1, 2, 3]);
    await store.close();
  });

  for (const expected of [-1, 1.5, 'many']) {
    test(`a planner's expected total of ${JSON.stringify(expected)} fails the job with PLANNER_FAILURE naming the field`, async () => {
      const store = new MemoryStore();
      const planner = (() => ({ final: false, more: true, cursor: 1, expected, splits: [{ id: 'x', weight: 1 }] })) as unknown as Planner;
      const c = await startCoordinator({ store, job: 'expected', instance: 'w-0', planner, handler: async () => {}, logger: silentLogger, layout: 'packed', ...fast });
      await expect(c.done).rejects.toMatchObject({ code: 'PLANNER_FAILURE', message: expect.stringContaining('planner result.expected: must be an integer ≥ 0 or absent') });
      await c.close();
      expect((await store.list(`${jobPrefix('splitfleet', 'expected')}queue.`)).kvs).toEqual([]);
      await store.close();
    });
  }

  // Decision 0037: "reseeding a hand-deleted split.{id} returns the split to its chunk (queued), unless it is
  // folded". An operator deletes an unreadable record to be rid of it (docs/errors.md, INVALID_RECORD: "a deleted
  // split record is seeded again"); here a quarantined split's. The keys layout seeds it again and runs it;
  // a packed job must run it again from its page.
  for (const layout of ['keys', 'packed'] as const) {
    test(`a split record deleted by hand runs again, and the job completes (${layout})`, async () => {
      const store = new MemoryStore();
      const ids = ['s-0', 's-1', 's-2'];
      const planner = () => ({ final: true, splits: ids.map((id) => ({ id, weight: 100, descriptor: { id } })) });
      let open!: () => void;
      const gate = new Promise<void>((resolve) => (open = resolve));
      let failed = false;
      // s-1 is quarantined at its first attempt; s-0 waits for the gate, so the job cannot end 'stalled' meanwhile.
      const handler = async (split: SplitHandle) => {
        if (split.id === 's-1' && !failed) {
          failed = true;
          return split.fail('poison', { permanent: true });
        }
        if (split.id === 's-0') await gate;
        await split.complete(1);
      };
      const c = await startCoordinator({ store, job: 'by-hand', instance: 'w-0', maxInFlight: 3, planner, handler, logger: silentLogger, layout, ...fast });
      const prefix = jobPrefix('splitfleet', 'by-hand');
      await waitUntil('s-1 quarantined', async () => (await store.get(splitKey(prefix, 's-1')))?.value.includes('"quarantined"'));
      await store.delete(splitKey(prefix, 's-1'));
      open();
      const verdict = await Promise.race([c.done, new Promise((resolve) => setTimeout(() => resolve('no verdict after 15 s'), 15_000))]);
      await c.close();
      expect(verdict).toBe('complete');
      await store.close();
    }, 30_000);
  }
});
