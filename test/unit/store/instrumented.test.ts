/**
 * The instrumented store on MemoryStore: every call lands once in
 * `splitfleet_store_call_seconds{call}` with the time the injected clock saw,
 * failures land in `splitfleet_store_errors_total{call,code}` (a watch's
 * failure once, however it is reported), and results, errors and watch
 * handles pass through unchanged. The whole store contract also runs through
 * the wrapper, and a coordinator records its store traffic into its metrics.
 */
import { describe, expect, it } from 'vitest';
import { VirtualClock, type Clock } from '../../../src/clock.js';
import { startCoordinator } from '../../../src/coordinator/coordinator.js';
import { silentLogger } from '../../../src/coordinator/log.js';
import { Metrics } from '../../../src/coordinator/metrics.js';
import { SplitfleetError } from '../../../src/errors.js';
import { InstrumentedStore, instrumentStore, type StoreCall } from '../../../src/store/instrumented.js';
import { MemoryStore } from '../../../src/store/memory.js';
import { cmp, op, type KeyValue, type Store, type WatchEvent, type WatchHandle, type WatchOptions } from '../../../src/store/store.js';
import { memoryContractFixture, storeContract } from '../../../src/store/contract.js';

const settle = () => new Promise<void>((r) => setImmediate(r));

/** A clock the test moves by hand: a call's latency is whatever the test sets before it settles. */
function manualClock(): Clock & { t: number } {
  return { t: 0, now() { return this.t; }, setTimer: () => () => undefined };
}

async function calls(m: Metrics): Promise<Map<string, { count: number; sum: number }>> {
  const out = new Map<string, { count: number; sum: number }>();
  for (const v of (await m.storeCallSeconds.get()).values) {
    const call = String(v.labels.call);
    const entry = out.get(call) ?? { count: 0, sum: 0 };
    if (v.metricName === 'splitfleet_store_call_seconds_count') entry.count = v.value;
    if (v.metricName === 'splitfleet_store_call_seconds_sum') entry.sum = v.value;
    out.set(call, entry);
  }
  return out;
}

async function errors(m: Metrics): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  for (const v of (await m.storeErrors.get()).values) out[`${v.labels.call}/${v.labels.code}`] = v.value;
  return out;
}

/** Runs one of every call on `s`, returning every result (a second store gets the same calls). */
async function everyCall(s: Store): Promise<unknown[]> {
  const r: unknown[] = [];
  r.push(await s.put('k/a', '1'));
  r.push(await s.put('k/b', '2'));
  r.push(await s.put('k/c', '3'));
  r.push(await s.get('k/a'));
  r.push(await s.get('k/missing'));
  r.push(await s.list('k/', { limit: 2 }));
  r.push(await s.listAll('k/', 1));
  r.push(await s.txn({ compares: [cmp.value('k/a', '1')], success: [op.put('k/a', '10'), op.get('k/b')], failure: [] }));
  r.push(await s.createIfAbsent('k/a', 'x'));
  const a = (await s.get('k/a')) as KeyValue;
  r.push(await s.compareAndSwap('k/a', a.modRevision, '11'));
  r.push(await s.deleteIf('k/a', 1)); // stale revision: loses, writes nothing
  r.push(await s.delete('k/c'));
  const lease = await s.grantLease(10);
  r.push(lease);
  r.push(await s.keepAliveOnce(lease));
  r.push(await s.revokeLease(lease));
  const events: WatchEvent[] = [];
  const w = s.watch('k/', { fromRevision: 1, onEvent: (e) => events.push(e) });
  await w.ready;
  const snaps: unknown[] = [];
  const sw = s.snapshotAndWatch('k/', { onSnapshot: (kvs, rev) => snaps.push({ kvs, rev }), onEvent: (e) => events.push(e) });
  await sw.ready;
  await s.put('k/d', '4');
  await settle();
  await w.close();
  await sw.close();
  r.push(events, snaps);
  r.push(await s.compact(2));
  r.push(s.limits);
  await s.close();
  return r;
}

const ALL_CALLS: StoreCall[] = [
  'get', 'list', 'listAll', 'txn', 'put', 'delete', 'createIfAbsent', 'compareAndSwap', 'deleteIf',
  'grantLease', 'keepAliveOnce', 'revokeLease', 'watch', 'snapshotAndWatch', 'compact', 'close',
];

describe('InstrumentedStore', () => {
  it('passes every result through unchanged and records each call under its own method name', async () => {
    const metrics = new Metrics();
    const plain = await everyCall(new MemoryStore({ clock: new VirtualClock() }));
    const wrapped = await everyCall(instrumentStore(new MemoryStore({ clock: new VirtualClock() }), metrics));
    expect(wrapped).toEqual(plain);

    const seen = await calls(metrics);
    expect([...seen.keys()].sort()).toEqual([...ALL_CALLS].sort());
    // put() is called 4 times and get() 3; listAll pages through the inner store's list, not ours.
    expect(seen.get('put')!.count).toBe(4);
    expect(seen.get('get')!.count).toBe(3);
    expect(seen.get('list')!.count).toBe(1);
    expect(seen.get('listAll')!.count).toBe(1);
    for (const call of ALL_CALLS.filter((c) => c !== 'put' && c !== 'get')) expect(seen.get(call)!.count, call).toBe(1);
    // A lost compare (createIfAbsent on an existing key, a stale deleteIf) is an answer, not an error.
    expect(await errors(metrics)).toEqual({});
  });

  it('observes the time the injected clock saw between the call and its answer', async () => {
    const metrics = new Metrics();
    const clock = manualClock();
    const store = instrumentStore(new MemoryStore({ clock: new VirtualClock() }), metrics, clock);
    clock.t = 1000;
    const put = store.put('a', '1');
    clock.t = 1007; // before the answer is seen
    await put;
    const watch = store.watch('a', { onEvent: () => undefined });
    clock.t = 1250;
    await watch.ready;
    await watch.close();
    const seen = await calls(metrics);
    expect(seen.get('put')!.sum).toBeCloseTo(0.007, 9);
    expect(seen.get('watch')!.sum).toBeCloseTo(0.243, 9); // set up at 1007, ready seen at 1250
    const bucket = (await metrics.storeCallSeconds.get()).values.find(
      (v) => v.labels.call === 'put' && v.metricName === 'splitfleet_store_call_seconds_bucket' && v.labels.le === 0.005,
    );
    expect(bucket?.value).toBe(0); // 7 ms is above the 5 ms bucket
  });

  it('bounds every request by its deadline on the injected clock (a hung call is a TIMEOUT), but not close or listAll', async () => {
    const metrics = new Metrics();
    const clock = new VirtualClock();
    const inner = new MemoryStore({ clock: new VirtualClock() });
    const hung = new Promise<never>(() => undefined);
    // A backend whose get and listAll never answer.
    const stuck = Object.assign(Object.create(inner) as MemoryStore, { get: () => hung, listAll: () => hung });
    const store = instrumentStore(stuck, metrics, clock, 200);
    const get = store.get('a').then(() => 'answered', (e: unknown) => e);
    const listAll = store.listAll('a').then(() => 'answered', () => 'failed');
    const put = store.put('b', '1');
    await clock.advance(199);
    expect(await put).toBeGreaterThan(0); // an answered call is untouched by its deadline
    await clock.advance(1);
    const e = await get;
    expect(e).toBeInstanceOf(SplitfleetError);
    expect((e as SplitfleetError).code).toBe('TIMEOUT');
    expect((e as SplitfleetError).retryable).toBe(true);
    expect(await errors(metrics)).toEqual({ 'get/TIMEOUT': 1 });
    let settled = false;
    void listAll.finally(() => (settled = true));
    await clock.advance(10_000);
    expect(settled).toBe(false); // many pages: no one deadline applies
    expect(instrumentStore(store, metrics, clock, 200)).toBe(store);
    expect(instrumentStore(store, metrics, clock, 300)).not.toBe(store);
  });

  it('counts failures by call and SplitfleetError code, and rethrows the very same error', async () => {
    const metrics = new Metrics();
    const inner = new MemoryStore({ clock: new VirtualClock() });
    const store = instrumentStore(inner, metrics);
    const original = await inner.keepAliveOnce('123').catch((e: unknown) => e);
    const thrown = await store.keepAliveOnce('123').catch((e: unknown) => e);
    expect(thrown).toMatchObject({ code: 'LEASE_LOST', message: (original as Error).message });
    await expect(store.compareAndSwap('a', 0, 'x')).rejects.toMatchObject({ code: 'INVALID_INPUT' });
    await expect(store.put('big', 'x'.repeat(2 * 1024 * 1024))).rejects.toMatchObject({ code: 'RECORD_TOO_LARGE' });
    await expect(store.compact(99)).rejects.toMatchObject({ code: 'INVALID_INPUT' });

    // The same object: a subclass that rejects with a known error shows it is not rebuilt.
    const boom = new SplitfleetError('STORE_UNAVAILABLE', 'etcd is electing', { retryable: true });
    class Failing extends MemoryStore {
      override get(): Promise<KeyValue | undefined> {
        return Promise.reject(boom);
      }
      override list(): never {
        throw new TypeError('not a store error'); // a synchronous throw, and not a SplitfleetError
      }
    }
    const failing = instrumentStore(new Failing(), metrics);
    await expect(failing.get('x')).rejects.toBe(boom);
    expect(() => failing.list('x')).toThrow(TypeError);

    expect(await errors(metrics)).toEqual({
      'keepAliveOnce/LEASE_LOST': 1,
      'compareAndSwap/INVALID_INPUT': 1,
      'put/RECORD_TOO_LARGE': 1,
      'compact/INVALID_INPUT': 1,
      'get/STORE_UNAVAILABLE': 1,
      'list/UNKNOWN': 1,
    });
    // Failed calls are timed too: a slow failure is what an outage looks like.
    const seen = await calls(metrics);
    expect(seen.get('keepAliveOnce')!.count).toBe(1);
    expect(seen.get('list')!.count).toBe(1);
    await inner.close();
  });

  it('counts a watch failure once, however it is reported, and still hands it to the caller', async () => {
    const metrics = new Metrics();
    const inner = new MemoryStore({ clock: new VirtualClock() });
    const store = instrumentStore(inner, metrics);
    await store.put('w/a', '1');
    await store.put('w/a', '2');
    await store.compact(3);

    // Compacted start: reported through onError only (ready resolved).
    const reported: SplitfleetError[] = [];
    const w = store.watch('w/', { fromRevision: 1, onEvent: () => undefined, onError: (e) => reported.push(e) });
    await w.ready;
    await settle();
    expect(reported.map((e) => e.code)).toEqual(['STORE_UNAVAILABLE']);

    // An invalid start throws synchronously, as the inner store does.
    expect(() => store.watch('w/', { fromRevision: 0, onEvent: () => undefined })).toThrow(/fromRevision/);

    // A snapshot on a closed store: the failed listing is both an onError and a rejected ready.
    await inner.close();
    const snapErrors: string[] = [];
    const sw = store.snapshotAndWatch('w/', { onSnapshot: () => undefined, onEvent: () => undefined, onError: (e) => snapErrors.push(e.code) });
    await expect(sw.ready).rejects.toMatchObject({ code: 'CLOSED' });
    await settle();
    expect(snapErrors).toEqual(['CLOSED']);
    // A watch without onError on a closed store: ready rejects, counted all the same.
    await expect(store.watch('w/', { onEvent: () => undefined }).ready).rejects.toMatchObject({ code: 'CLOSED' });

    expect(await errors(metrics)).toEqual({
      'watch/STORE_UNAVAILABLE': 1,
      'watch/INVALID_INPUT': 1,
      'snapshotAndWatch/CLOSED': 1,
      'watch/CLOSED': 1,
    });
  });

  it('returns the inner store\'s own watch handle and delivers its events unchanged', async () => {
    let innerHandle: WatchHandle | undefined;
    let innerOptions: WatchOptions | undefined;
    class Spy extends MemoryStore {
      override watch(prefix: string, options: WatchOptions): WatchHandle {
        innerOptions = options;
        innerHandle = super.watch(prefix, options);
        return innerHandle;
      }
    }
    const inner = new Spy({ clock: new VirtualClock() });
    const store = instrumentStore(inner, new Metrics());
    const events: WatchEvent[] = [];
    const handle = store.watch('w/', { onEvent: (e) => events.push(e), rangeStart: 'w/b' });
    expect(handle).toBe(innerHandle);
    expect(innerOptions?.rangeStart).toBe('w/b');
    await handle.ready;
    await store.put('w/a', 'skipped by the range');
    await store.put('w/b', 'x');
    await settle();
    expect(events).toEqual([{ type: 'put', key: 'w/b', value: 'x', modRevision: 3, createRevision: 3 }]);
    await handle.close();
    await store.close();
  });

  it('wraps once per recorder, and forwards the limits of the inner store', async () => {
    const metrics = new Metrics();
    const inner = new MemoryStore({ clock: new VirtualClock() });
    const once = instrumentStore(inner, metrics);
    expect(once).toBeInstanceOf(InstrumentedStore);
    expect(instrumentStore(once, metrics)).toBe(once);
    expect(instrumentStore(once, new Metrics())).not.toBe(once);
    expect(once.limits).toBe(inner.limits);
    await inner.close();
  });

  it('a coordinator records its own store traffic (lease, presence, claims) into its metrics', async () => {
    const metrics = new Metrics();
    const store = new MemoryStore();
    const c = await startCoordinator({
      store, job: 'instrumented', instance: 'i1', maxInFlight: 2, metrics, logger: silentLogger,
      planner: async () => ({ splits: [{ id: 's1', weight: 1, descriptor: null }], final: true }),
      handler: async (split) => {
        await split.complete();
      },
    });
    expect(await c.done).toBe('complete');
    const seen = await calls(metrics);
    expect(seen.get('grantLease')?.count).toBeGreaterThanOrEqual(1);
    expect(seen.get('txn')?.count).toBeGreaterThanOrEqual(1);
    await store.close();
  });
});

// The whole behavioural contract, through the wrapper: a decorator that changed any answer fails here.
storeContract('memory, instrumented', memoryContractFixture((inner) => instrumentStore(inner, new Metrics())));
