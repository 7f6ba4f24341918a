/**
 * A store wrapper that can be cut off from its backend, for tests that need
 * an instance to vanish without a word (a crash, a partition, a paused pod)
 * inside one test process. While cut, every request fails after `failAfterMs`
 * with a retryable STORE_UNAVAILABLE (as an unreachable etcd does), so
 * renewals stop and the server expires the instance's lease on its own; watch
 * events are held back and delivered, in order, on `heal()` (as a resumed
 * watch would). Nothing is written to the backend while cut. It also counts
 * LEASE_LOST answers, and can stop answering after too many of them.
 *
 * It wraps any `Store`; it does not close the backend it wraps unless asked.
 */

import { isSplitfleetError, SplitfleetError } from '../../src/errors.js';
import type {
  KeyValue, ListOptions, ListPage, SnapshotHandler, Store, StoreLimits, Txn, TxnResult, WatchEvent, WatchHandle, WatchOptions,
} from '../../src/store/store.js';

export interface PartitionOptions {
  /** While cut, how long a request hangs before failing (default 100 ms). */
  failAfterMs?: number;
  /**
   * After this many LEASE_LOST answers, further requests never answer: a
   * circuit breaker, so an instance stuck retrying with a dead lease cannot
   * starve the test's event loop (MemoryStore answers in microtasks).
   */
  haltAfterLeaseLost?: number;
}

export interface Partitionable {
  /** Give this to the instance under test. */
  readonly store: Store;
  /** From now on, requests fail and watch events are held back. */
  cut(): void;
  /** Requests go through again; held-back events are delivered first. */
  heal(): void;
  readonly isCut: boolean;
  /** Requests answered with LEASE_LOST so far (the instance used a lease the store no longer has). */
  readonly leaseLost: number;
}

/** Wraps `inner` (see PartitionOptions). */
export function partitionable(inner: Store, options: PartitionOptions = {}): Partitionable {
  const failAfterMs = options.failAfterMs ?? 100;
  const halt = options.haltAfterLeaseLost ?? Infinity;
  let cut = false;
  let leaseLost = 0;
  const flushers = new Set<() => void>();
  const unreachable = (what: string) =>
    new SplitfleetError('STORE_UNAVAILABLE', `${what}: the store is unreachable (partitioned by the test)`, { retryable: true });
  const guard = <T>(what: string, fn: () => Promise<T>): Promise<T> => {
    if (leaseLost >= halt) return new Promise<T>(() => undefined);
    if (!cut) {
      return fn().catch((e: unknown) => {
        if (isSplitfleetError(e, 'LEASE_LOST')) leaseLost++;
        throw e;
      });
    }
    return new Promise<T>((_, reject) => setTimeout(() => reject(unreachable(what)), failAfterMs));
  };
  /** An onEvent that holds events back while cut; `flush` delivers them. */
  const gated = (onEvent: (e: WatchEvent) => void) => {
    const held: WatchEvent[] = [];
    let closed = false;
    const flush = () => {
      while (held.length > 0 && !cut && !closed) onEvent(held.shift()!);
    };
    flushers.add(flush);
    return {
      onEvent: (e: WatchEvent) => {
        if (closed) return;
        if (cut || held.length > 0) held.push(e);
        else onEvent(e);
      },
      stop: () => {
        closed = true;
        flushers.delete(flush);
      },
    };
  };
  const wrapHandle = (h: WatchHandle, stop: () => void): WatchHandle => ({
    ready: h.ready,
    close: async () => {
      stop();
      await h.close();
    },
  });

  const store: Store = {
    get limits(): StoreLimits {
      return inner.limits;
    },
    get: (key: string): Promise<KeyValue | undefined> => guard(`get '${key}'`, () => inner.get(key)),
    list: (prefix: string, options?: ListOptions): Promise<ListPage> => guard(`list '${prefix}'`, () => inner.list(prefix, options)),
    listAll: (prefix: string, pageSize?: number) => guard(`list '${prefix}'`, () => inner.listAll(prefix, pageSize)),
    txn: (txn: Txn): Promise<TxnResult> => guard('txn', () => inner.txn(txn)),
    put: (key, value, options) => guard(`put '${key}'`, () => inner.put(key, value, options)),
    delete: (key) => guard(`delete '${key}'`, () => inner.delete(key)),
    createIfAbsent: (key, value, lease) => guard(`create '${key}'`, () => inner.createIfAbsent(key, value, lease)),
    compareAndSwap: (key, rev, value, lease) => guard(`cas '${key}'`, () => inner.compareAndSwap(key, rev, value, lease)),
    deleteIf: (key, rev) => guard(`delete '${key}'`, () => inner.deleteIf(key, rev)),
    grantLease: (ttl) => guard('grant lease', () => inner.grantLease(ttl)),
    keepAliveOnce: (id) => guard(`keep lease ${id} alive`, () => inner.keepAliveOnce(id)),
    revokeLease: (id) => guard(`revoke lease ${id}`, () => inner.revokeLease(id)),
    compact: (revision) => guard('compact', () => inner.compact(revision)),
    watch(prefix: string, options: WatchOptions): WatchHandle {
      const g = gated(options.onEvent);
      return wrapHandle(inner.watch(prefix, { ...options, onEvent: g.onEvent }), g.stop);
    },
    snapshotAndWatch(prefix: string, handler: SnapshotHandler, options?: { pageSize?: number }): WatchHandle {
      if (cut) {
        const err = unreachable(`list '${prefix}'`);
        const ready = new Promise<void>((_, reject) => setTimeout(() => {
          handler.onError?.(err);
          reject(err);
        }, failAfterMs));
        ready.catch(() => undefined);
        return { ready, close: async () => undefined };
      }
      const g = gated(handler.onEvent);
      return wrapHandle(inner.snapshotAndWatch(prefix, { ...handler, onEvent: g.onEvent }, options), g.stop);
    },
    close: () => inner.close(),
  };

  return {
    store,
    cut: () => {
      cut = true;
    },
    heal: () => {
      cut = false;
      for (const flush of [...flushers]) flush();
    },
    get isCut() {
      return cut;
    },
    get leaseLost() {
      return leaseLost;
    },
  };
}
