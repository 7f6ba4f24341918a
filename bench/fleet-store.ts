/**
 * A counting decorator for any `Store`, for bench/fleet.ts: it forwards every
 * call to the store it wraps and counts what crosses it: calls by method,
 * keys read (gets, listing pages, snapshots), transactions and their ops,
 * and watch events delivered, by key kind (`split`, `lease`, `assign`, …).
 *
 * It is a Proxy rather than a class listing `Store`'s methods, so that it
 * keeps working when the Store interface grows (a method it does not know is
 * forwarded and counted by name; any callback object with `onEvent` or
 * `onSnapshot` is wrapped, whatever the method). Several coordinators of one
 * process may share one inner store: `close()` on a shared wrapper does not
 * close the inner store (the host closes it once).
 */
import type { Store } from '../src/index.js';

export interface StoreCounts {
  /** Calls by method name. */
  calls: Record<string, number>;
  /** Keys returned by reads: `get` hits, listing pages, snapshots, a transaction's `get` ops. */
  keysRead: number;
  /** Transactions (every write helper is one) and the ops in their branches. */
  txns: number;
  txnOps: number;
  /** Watch events delivered to the coordinator, in all, by key kind, and their value bytes. */
  watchEvents: number;
  watchEventsByKind: Record<string, number>;
  watchEventBytes: number;
  /** Keys delivered by snapshots (`snapshotAndWatch`'s listing). */
  snapshotKeys: number;
  /** Watches opened, and still open. */
  watchesOpened: number;
  watchesOpen: number;
}

export function emptyCounts(): StoreCounts {
  return {
    calls: {}, keysRead: 0, txns: 0, txnOps: 0, watchEvents: 0, watchEventsByKind: {}, watchEventBytes: 0,
    snapshotKeys: 0, watchesOpened: 0, watchesOpen: 0,
  };
}

/** Adds `b` into `a` (for a process's total over its members). */
export function addCounts(a: StoreCounts, b: StoreCounts): StoreCounts {
  for (const [k, v] of Object.entries(b.calls)) a.calls[k] = (a.calls[k] ?? 0) + v;
  for (const [k, v] of Object.entries(b.watchEventsByKind)) a.watchEventsByKind[k] = (a.watchEventsByKind[k] ?? 0) + v;
  a.keysRead += b.keysRead;
  a.txns += b.txns;
  a.txnOps += b.txnOps;
  a.watchEvents += b.watchEvents;
  a.watchEventBytes += b.watchEventBytes;
  a.snapshotKeys += b.snapshotKeys;
  a.watchesOpened += b.watchesOpened;
  a.watchesOpen += b.watchesOpen;
  return a;
}

const TXN_METHODS = new Set(['txn', 'put', 'delete', 'createIfAbsent', 'compareAndSwap', 'deleteIf']);

/** The kind of a job key: what follows the job prefix, up to the first '.'. */
function kindOf(key: string, prefix: string): string {
  if (!key.startsWith(prefix)) return 'other';
  const rest = key.slice(prefix.length);
  const dot = rest.indexOf('.');
  return dot < 0 ? rest : rest.slice(0, dot);
}

export interface CountingStore {
  store: Store;
  counts: StoreCounts;
}

/**
 * Wraps `inner`. `prefix` is the job prefix (to name key kinds); `shared`
 * makes `close()` a no-op (the inner store belongs to the host).
 */
export function countingStore(inner: Store, prefix: string, options: { shared?: boolean } = {}): CountingStore {
  const counts = emptyCounts();
  const countRead = (v: unknown) => {
    if (!v || typeof v !== 'object') return;
    const kvs = (v as { kvs?: unknown }).kvs;
    const reads = (v as { reads?: unknown }).reads;
    if (Array.isArray(kvs)) counts.keysRead += kvs.length;
    // A transaction's `get` ops (a batch of point reads): the keys found.
    else if (Array.isArray(reads)) counts.keysRead += reads.filter((r) => r !== undefined).length;
    else if (typeof (v as { key?: unknown }).key === 'string' && typeof (v as { value?: unknown }).value === 'string') counts.keysRead++;
  };
  const onEvent = (fn: (e: { key: string; value?: string }) => void) => (e: { key: string; value?: string }) => {
    counts.watchEvents++;
    const kind = kindOf(e.key, prefix);
    counts.watchEventsByKind[kind] = (counts.watchEventsByKind[kind] ?? 0) + 1;
    counts.watchEventBytes += e.value?.length ?? 0;
    fn(e);
  };
  const onSnapshot = (fn: (kvs: unknown[], ...rest: unknown[]) => void) => (kvs: unknown[], ...rest: unknown[]) => {
    counts.snapshotKeys += Array.isArray(kvs) ? kvs.length : 0;
    counts.keysRead += Array.isArray(kvs) ? kvs.length : 0;
    fn(kvs, ...rest);
  };
  /** Wraps the callbacks of any handler-like argument, and counts the watch it opens. */
  const wrapArgs = (args: unknown[]): { args: unknown[]; watches: boolean } => {
    let watches = false;
    const out = args.map((a) => {
      if (!a || typeof a !== 'object' || Array.isArray(a)) return a;
      const o = a as Record<string, unknown>;
      if (typeof o.onEvent !== 'function' && typeof o.onSnapshot !== 'function') return a;
      watches = true;
      const copy: Record<string, unknown> = { ...o };
      if (typeof o.onEvent === 'function') copy.onEvent = onEvent(o.onEvent as (e: { key: string }) => void);
      if (typeof o.onSnapshot === 'function') copy.onSnapshot = onSnapshot(o.onSnapshot as (kvs: unknown[]) => void);
      return copy;
    });
    return { args: out, watches };
  };
  const store = new Proxy(inner, {
    get(target, prop) {
      // The target as receiver: getters and private fields of the inner store see the real object.
      const value = Reflect.get(target, prop, target) as unknown;
      if (typeof prop !== 'string' || typeof value !== 'function') return value;
      if (prop === 'close' && options.shared) return () => Promise.resolve();
      const fn = value as (...a: unknown[]) => unknown;
      return (...rawArgs: unknown[]) => {
        counts.calls[prop] = (counts.calls[prop] ?? 0) + 1;
        if (TXN_METHODS.has(prop)) {
          counts.txns++;
          const t = rawArgs[0] as { success?: unknown[]; failure?: unknown[] } | undefined;
          counts.txnOps += prop === 'txn' ? (t?.success?.length ?? 0) + (t?.failure?.length ?? 0) : 1;
        }
        const { args, watches } = wrapArgs(rawArgs);
        const result = fn.apply(target, args);
        if (watches && result && typeof result === 'object' && typeof (result as { close?: unknown }).close === 'function') {
          counts.watchesOpened++;
          counts.watchesOpen++;
          const handle = result as { close: () => Promise<void> };
          const close = handle.close.bind(handle);
          let closed = false;
          handle.close = () => {
            if (!closed) {
              closed = true;
              counts.watchesOpen--;
            }
            return close();
          };
        }
        if (result instanceof Promise) {
          return result.then((v: unknown) => {
            countRead(v);
            return v;
          });
        }
        return result;
      };
    },
  });
  return { store, counts };
}
