/**
 * Issue 49: a packed job's queue page deleted by hand after the leader listed
 * it (pages are never watched) costs the splits it holds, not the job.
 * Before: the promotion that read it threw, the whole publication aborted and
 * was retried forever, and no other split was assigned again. Now the page's
 * splits the decision wanted are parked with the reason, the rest of the job
 * runs to its end, and once the page is put back the backstop reads it and
 * its splits run too. MemoryStore, real time.
 */
import { describe, expect, test } from 'vitest';
import { defaultFingerprint } from '../../src/config.js';
import type { SplitHandle } from '../../src/coordinator/types.js';
import { jobPrefix, parseKey } from '../../src/protocol/keys.js';
import { FoldedBits } from '../../src/protocol/packed.js';
import { decodeRecord, fingerprintHash } from '../../src/protocol/records.js';
import { MemoryStore } from '../../src/store/memory.js';
import { firstSplitGate } from '../support/first-split-gate.js';
import { useMemoryFleet } from '../support/memory-fleet.js';
import { waitUntil } from '../support/wait.js';

/** FAST, with a backstop every half second (the test waits three of them). */
const fast = { reconcileIntervalMs: 500 };

const coordinators = useMemoryFleet();

describe('a packed job\'s queue page deleted after the listing', () => {
  test('costs its own splits: the rest completes, and the page put back brings them back', async () => {
    const store = new MemoryStore();
    const job = 'damaged-page';
    const prefix = jobPrefix('splitfleet', job);
    const fp = fingerprintHash(defaultFingerprint('splitfleet', job));
    const ids = Array.from({ length: 40 }, (_, i) => `s-${String(i).padStart(2, '0')}`);
    const completed = new Set<string>();
    const gate = firstSplitGate();
    const handler = async (split: SplitHandle) => {
      await gate.hold(split.id); // the page goes while this one runs
      completed.add(split.id);
      await split.complete(null);
    };
    const c = await coordinators.start({
      store, job, instance: 'w-0', maxInFlight: 1, prefetch: 0, layout: 'packed', buckets: 4, ...fast,
      planner: () => ({ final: true, splits: ids.map((id) => ({ id, weight: 1 })) }), handler,
    });
    await waitUntil('the first split to run', () => gate.first !== undefined);
    // The page of another bucket, deleted by hand (as a bad restore or an `etcdctl del` would).
    const pages = (await store.list(`${prefix}queue.`)).kvs.map((kv) => ({ kv, ids: decodeRecord('queue', kv.key, kv.value, fp).ids }));
    expect(pages.length).toBeGreaterThan(1);
    const victim = pages.find((p) => !p.ids.includes(gate.first!))!;
    expect(parseKey(prefix, victim.kv.key).kind).toBe('queue');
    await store.delete(victim.kv.key);
    gate.open();
    const others = ids.filter((id) => !victim.ids.includes(id));
    await waitUntil('every split outside the deleted page to complete', () => others.every((id) => completed.has(id)), { timeoutMs: 20_000 });
    // Its splits wait, parked with the reason, through three backstops; the job has no verdict while they do.
    let verdict: string | undefined;
    void c.done.then((v) => (verdict = v));
    await new Promise((resolve) => setTimeout(resolve, 3 * fast.reconcileIntervalMs));
    expect(victim.ids.filter((id) => completed.has(id))).toEqual([]);
    expect(verdict).toBeUndefined();
    // Visible: the leader says degraded, naming a parked split, its page and the count.
    expect(c.health()).toMatchObject({ state: 'degraded', reason: expect.stringMatching(/^part of the job cannot move: \d+ splits? parked \("s-\d+": queue page .* is gone .*\); 1 queue page unreadable/) });
    expect((await c.metrics.parked.get()).values[0]!.value).toBeGreaterThan(0);
    // Put back: the backstop reads it again and its splits run.
    await store.put(victim.kv.key, victim.kv.value);
    await waitUntil('the job to complete', () => verdict !== undefined, { timeoutMs: 20_000 });
    expect(verdict).toBe('complete');
    expect(ids.every((id) => completed.has(id))).toBe(true);
  }, 60_000);
});


describe('a packed job\'s folded record deleted', () => {
  test('the leader writes back the completions it saw: nothing runs twice, and the job completes', async () => {
    const store = new MemoryStore();
    const job = 'deleted-folded';
    const prefix = jobPrefix('splitfleet', job);
    const fp = fingerprintHash(defaultFingerprint('splitfleet', job));
    const ids = Array.from({ length: 30 }, (_, i) => `s-${String(i).padStart(2, '0')}`);
    const runs = new Map<string, number>();
    let open!: () => void;
    const gate = new Promise<void>((resolve) => (open = resolve));
    const handler = async (split: SplitHandle) => {
      runs.set(split.id, (runs.get(split.id) ?? 0) + 1);
      if (runs.size > 10) await gate; // the rest waits while a folded record goes
      await split.complete(null);
    };
    const c = await coordinators.start({
      store, job, instance: 'w-0', maxInFlight: 1, prefetch: 0, layout: 'packed', ...fast,
      planner: () => ({ final: true, splits: ids.map((id) => ({ id, weight: 1 })) }), handler,
    });
    const foldedCount = async () => {
      const kvs = (await store.list(`${prefix}folded.`)).kvs;
      return kvs.reduce((n, kv) => n + FoldedBits.decode(decodeRecord('folded', kv.key, kv.value, fp).bits).count, 0);
    };
    await waitUntil('some splits folded back', async () => (await foldedCount()) >= 5);
    const [record] = (await store.list(`${prefix}folded.`)).kvs;
    const before = FoldedBits.decode(decodeRecord('folded', record!.key, record!.value, fp).bits);
    await store.delete(record!.key);
    const back = await waitUntil('the folded record written back', async () => {
      const kv = await store.get(record!.key);
      return kv ? FoldedBits.decode(decodeRecord('folded', kv.key, kv.value, fp).bits) : undefined;
    });
    for (let slot = 0; slot < 1024; slot++) if (before.has(slot)) expect(back.has(slot)).toBe(true);
    open();
    expect(await c.done).toBe('complete');
    expect([...runs.values()].every((n) => n === 1), JSON.stringify([...runs])).toBe(true);
    expect(runs.size).toBe(ids.length);
  }, 60_000);
});
