/**
 * Decision 0090, a split that reads free to claim is followed quietly, on MemoryStore with a
 * virtual clock:
 * - KeyFollower.followLater opens no watch before its delay, none at all when closed first,
 *   and, opened late, replays every change since the read;
 * - WorkerView: a split that reads free opens no watch for QUIET_MS, one with a lease key (or
 *   an owner) is watched at once, `followNow` (read again first) and `concern`'s urgent ids
 *   open it early, and
 *   `ownClaimWrite` shows our claim without any watch.
 */
import { describe, expect, it } from 'vitest';
import { VirtualClock } from '../../../src/clock.js';
import { KeyFollower, type KeyUpdate } from '../../../src/coordinator/views/follow.js';
import { QUIET_MS, WorkerView } from '../../../src/coordinator/views/worker-view.js';
import type { SplitfleetError } from '../../../src/errors.js';
import { initialSplitRecord } from '../../../src/protocol/claims.js';
import { jobPrefix, leaseKey, specKey, splitKey } from '../../../src/protocol/keys.js';
import { encodeRecord, fingerprintHash, SCHEMA_VERSION, type SplitRecord } from '../../../src/protocol/records.js';
import { MemoryStore } from '../../../src/store/memory.js';
import type { WatchOptions } from '../../../src/store/store.js';

const P = jobPrefix('splitfleet', 'quiet');
const FP = fingerprintHash('splitfleet-v1:splitfleet/quiet');
const v = SCHEMA_VERSION;
const fatal = (e: SplitfleetError) => {
  throw e;
};
const spec = (id: string) => encodeRecord('spec', { v, fp: FP, id, weight: 1, descriptor: null, generation: 1 });
const split = (id: string, patch: Partial<SplitRecord> = {}) => encodeRecord('split', { ...initialSplitRecord(id, FP), ...patch });
const lease = (id: string, owner: string) => encodeRecord('lease', { v, fp: FP, id, owner, nonce: 'n', epoch: 1 });

/** A MemoryStore that counts the watches opened on each key. */
class CountingStore extends MemoryStore {
  readonly watches = new Map<string, number>();
  override watch(prefix: string, options: WatchOptions) {
    this.watches.set(prefix, (this.watches.get(prefix) ?? 0) + 1);
    return super.watch(prefix, options);
  }
  watched(key: string): number {
    return this.watches.get(key) ?? 0;
  }
}

/** Lets the store's promise chains and watch deliveries run. */
const settle = async () => {
  for (let i = 0; i < 20; i++) await new Promise((r) => setImmediate(r));
};

async function seed(store: MemoryStore, id: string): Promise<void> {
  await store.txn({ compares: [], success: [{ op: 'put', key: specKey(P, id), value: spec(id) }, { op: 'put', key: splitKey(P, id), value: split(id) }] });
}

describe('KeyFollower.followLater', () => {
  it('opens no watch before its delay, replays what changed since the read once it does, and none at all when closed first', async () => {
    const store = new CountingStore();
    const clock = new VirtualClock();
    const key = `${P}split.a`;
    const r1 = await store.put(key, 'one');
    const updates: KeyUpdate[] = [];
    const f = new KeyFollower(store, key, clock, (u) => updates.push(u), fatal);
    f.offer(await store.get(key), r1);
    f.followLater(r1 + 1, 500);
    expect(f.following).toBe(true);
    const r2 = await store.put(key, 'two');
    await settle();
    expect(store.watched(key)).toBe(0);
    expect(updates.map((u) => u.kv?.value)).toEqual(['one']);
    clock.advance(500);
    await settle();
    expect(store.watched(key)).toBe(1);
    expect(updates.map((u) => [u.kv?.value, u.revision])).toEqual([['one', r1], ['two', r2]]);
    await f.close();

    const g = new KeyFollower(store, `${P}split.b`, clock, () => undefined, fatal);
    g.followLater(r2 + 1, 500);
    await g.close();
    clock.advance(1000);
    await settle();
    expect(store.watched(`${P}split.b`)).toBe(0);
    await store.close();
  });

  it('followNow opens a deferred watch at once', async () => {
    const store = new CountingStore();
    const clock = new VirtualClock();
    const key = `${P}split.c`;
    const r1 = await store.put(key, 'one');
    const updates: KeyUpdate[] = [];
    const f = new KeyFollower(store, key, clock, (u) => updates.push(u), fatal);
    f.followLater(r1, 10_000);
    f.followNow();
    await settle();
    expect(store.watched(key)).toBe(1);
    expect(updates.map((u) => u.kv?.value)).toEqual(['one']);
    // The deferred timer is spent: it opens no second watch.
    clock.advance(20_000);
    await settle();
    expect(store.watched(key)).toBe(1);
    await f.close();
    await store.close();
  });
});

describe('WorkerView: a split that reads free is followed quietly', () => {
  it('opens no watch for QUIET_MS on a free split, watches a leased one at once, and followNow or an urgent id opens it early', async () => {
    const store = new CountingStore();
    const clock = new VirtualClock();
    for (const id of ['free', 'leased', 'urgent', 'lost']) await seed(store, id);
    await store.put(leaseKey(P, 'leased'), lease('leased', 'w1'), { lease: await store.grantLease(30) });
    const view = new WorkerView(store, P, FP, 'w0', fatal, clock);
    await view.start();
    await view.concern(new Set(['free', 'leased', 'urgent', 'lost']), new Set(['urgent']));
    await settle();
    const watched = (id: string) => [store.watched(splitKey(P, id)), store.watched(leaseKey(P, id))];
    expect(watched('free')).toEqual([0, 0]);
    expect(watched('leased')).toEqual([1, 1]);
    expect(watched('urgent')).toEqual([1, 1]);
    expect(watched('lost')).toEqual([0, 0]);
    // A claim of 'lost' lost to another member's: what beat it is read at once (nothing is decided
    // on the quiet view meanwhile), and the split is watched from that read.
    const beaten = await store.put(splitKey(P, 'lost'), split('lost', { epoch: 1, owner: 'w1' }));
    view.followNow('lost');
    expect(view.split('lost')).toBeUndefined();
    await settle();
    expect(view.split('lost')?.record).toMatchObject({ modRevision: beaten, rec: { owner: 'w1' } });
    expect(watched('lost')).toEqual([1, 1]);
    // A split already watched is left as it is.
    view.followNow('leased');
    expect(view.split('leased')).toBeDefined();
    // Changes to the quiet split are delivered once its watch opens, from the read on.
    const moved = await store.put(splitKey(P, 'free'), split('free', { status: 'quarantined', epoch: 1 }));
    await settle();
    expect(view.split('free')?.record?.rec.status).toBe('runnable');
    clock.advance(QUIET_MS);
    await settle();
    expect(watched('free')).toEqual([1, 1]);
    expect(view.split('free')?.record).toMatchObject({ modRevision: moved, rec: { status: 'quarantined' } });
    await view.close();
    await store.close();
  });

  it('a split let go within QUIET_MS never costs a watch, and our own claim shows without one', async () => {
    const store = new CountingStore();
    const clock = new VirtualClock();
    await seed(store, 'short');
    const view = new WorkerView(store, P, FP, 'w0', fatal, clock);
    await view.start();
    await view.concern(new Set(['short']));
    const sessionLease = await store.grantLease(30);
    const ops = [
      { op: 'put' as const, key: splitKey(P, 'short'), value: split('short', { epoch: 1, owner: 'w0' }) },
      { op: 'put' as const, key: leaseKey(P, 'short'), value: lease('short', 'w0'), lease: sessionLease },
    ];
    const res = await store.txn({ compares: [], success: ops });
    view.ownClaimWrite('short', ops, res.revision);
    expect(view.split('short')?.record).toMatchObject({ modRevision: res.revision, rec: { owner: 'w0', epoch: 1 } });
    expect(view.split('short')?.lease).toMatchObject({ modRevision: res.revision, rec: { owner: 'w0' }, lease: sessionLease });
    await view.concern(new Set());
    clock.advance(10 * QUIET_MS);
    await settle();
    expect(store.watched(splitKey(P, 'short'))).toBe(0);
    expect(store.watched(leaseKey(P, 'short'))).toBe(0);
    await view.close();
    await store.close();
  });
});
