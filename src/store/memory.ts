/**
 * `MemoryStore`: the in-process reference backend of the store contract, with
 * etcd's semantics, for unit tests and simulation.
 *
 * Invariants: one global revision (starting at 1) bumped once per request that
 * changes something, all writes of one request sharing it; per-key create and
 * mod revisions; leases expire on the injected `Clock` (a `VirtualClock`
 * expires them during `advance`), deleting their keys at one new revision;
 * watch delivery is asynchronous (microtasks) and in revision order; history
 * is kept until `compact`, so reads and watches can start in the past. Every
 * operation runs synchronously inside its call, so it is atomic. It must not
 * do I/O or read the wall clock except through `clock`.
 */

import { systemClock, type Clock } from '../clock.js';
import { SplitfleetError } from '../errors.js';
import {
  CompactedError, compareKeys, inKeyRange, type Compare, type KeyRange, type KeyValue, type ListOptions, type ListPage,
  type Txn, type TxnResult, type WatchEvent, type WatchHandle, type WatchOptions,
} from './store.js';
import { BaseStore, checkListLimit, checkTtl, checkWatchFrom, closedWatch, rangeOptions } from './base.js';

interface Entry {
  value: string;
  createRevision: number;
  modRevision: number;
  lease?: string;
}

/** One change in the history: the new entry for a put, the previous one when the key existed. */
interface Change {
  revision: number;
  key: string;
  type: 'put' | 'delete';
  entry?: Entry;
  prev?: Entry;
}

interface LeaseState {
  ttl: number;
  keys: Set<string>;
  cancelTimer: () => void;
}

interface MemoryWatcher {
  prefix: string;
  range: KeyRange;
  options: WatchOptions;
  /** Changes before this revision are never delivered (a watch may start in the future). */
  from: number;
  queue: WatchEvent[];
  scheduled: boolean;
  closed: boolean;
}

/** Options of a `MemoryStore`. */
export interface MemoryStoreOptions {
  /** Drives lease expiry; default `systemClock`. Use a `VirtualClock` in simulation. */
  clock?: Clock;
}

/** Counters for tests: how much the store was asked to do. */
export interface MemoryStoreStats {
  /** Transactions received (including helpers built on txn). */
  txns: number;
  /** Revisions created: requests (or lease expiries) that changed something. */
  writes: number;
  /** `get` and `list` calls. */
  reads: number;
}

/** Lease ids start above 2^53, like etcd's, so code that rounds them through `number` breaks here too. */
const FIRST_LEASE_ID = 0x694d_7a3c_0000_0001n;

/** The in-process store. See the file header for its invariants. */
export class MemoryStore extends BaseStore {
  /** Live counters; tests may read and reset them. */
  readonly stats: MemoryStoreStats = { txns: 0, writes: 0, reads: 0 };

  private readonly clock: Clock;
  private revision = 1;
  private compactedRevision = 0;
  private readonly data = new Map<string, Entry>();
  private readonly sortedKeys: string[] = [];
  private history: Change[] = [];
  private readonly leases = new Map<string, LeaseState>();
  private nextLeaseId = FIRST_LEASE_ID;
  private readonly watchers = new Set<MemoryWatcher>();
  private closed = false;

  /** Creates an empty store at revision 1. */
  constructor(options: MemoryStoreOptions = {}) {
    super();
    this.clock = options.clock ?? systemClock;
  }

  /** The current store revision. */
  get currentRevision(): number {
    return this.revision;
  }

  /** Reads one key; undefined when missing. */
  async get(key: string): Promise<KeyValue | undefined> {
    this.ensureOpen();
    this.stats.reads++;
    const entry = this.data.get(key);
    return entry && toKeyValue(key, entry);
  }

  /** Reads one page under `prefix` in UTF-8 key order, now or at a past revision. */
  async list(prefix: string, options: ListOptions = {}): Promise<ListPage> {
    this.ensureOpen();
    this.stats.reads++;
    const { limit, startAfter } = options;
    checkListLimit(limit);
    const at = options.revision ?? this.revision;
    if (at < this.compactedRevision) throw new CompactedError(at);
    if (at > this.revision) {
      throw new SplitfleetError('INVALID_INPUT', `list revision ${at} is in the future (store is at ${this.revision})`);
    }
    // Start at the first key the page can hold, not at the prefix: paging through a large
    // prefix would otherwise rescan every earlier page.
    let from = prefix;
    if (options.rangeStart !== undefined && compareKeys(options.rangeStart, from) > 0) from = options.rangeStart;
    if (startAfter !== undefined && compareKeys(startAfter, from) >= 0) from = startAfter;
    const view = at === this.revision ? { keys: this.sortedKeys, start: this.lowerBound(from), get: (k: string) => this.data.get(k) } : this.pastView(prefix, at);
    const max = limit ?? Infinity;
    const kvs: KeyValue[] = [];
    let more = false;
    for (let i = view.start; i < view.keys.length; i++) {
      const key = view.keys[i]!;
      if (!key.startsWith(prefix)) break;
      if (startAfter !== undefined && compareKeys(key, startAfter) <= 0) continue;
      if (!inKeyRange(key, prefix, options)) {
        if (options.rangeEnd !== undefined && compareKeys(key, options.rangeEnd) >= 0) break;
        continue;
      }
      if (kvs.length === max) {
        more = true;
        break;
      }
      kvs.push(toKeyValue(key, view.get(key)!));
    }
    return { kvs, more, revision: at };
  }

  /** Applies a validated transaction atomically, with etcd's compare and lease rules. */
  protected async applyTxn(txn: Txn): Promise<TxnResult> {
    this.ensureOpen();
    this.stats.txns++;
    const won = txn.compares.every((c) => this.holds(c));
    const branch = won ? txn.success : txn.failure ?? [];
    for (const o of branch) {
      if (o.op === 'put' && o.lease !== undefined && o.lease !== '0' && !this.leases.has(o.lease)) {
        throw new SplitfleetError('LEASE_LOST', `put of '${o.key}' names lease ${o.lease}, which does not exist (expired or revoked)`);
      }
    }
    const rev = this.revision + 1;
    const changes: Change[] = [];
    const reads: (KeyValue | undefined)[] = [];
    for (const o of branch) {
      switch (o.op) {
        case 'get': {
          const entry = this.data.get(o.key);
          reads.push(entry && toKeyValue(o.key, entry));
          break;
        }
        case 'put':
          changes.push(this.putEntry(o.key, o.value, o.lease === '0' ? undefined : o.lease, rev));
          break;
        case 'delete': {
          const change = this.deleteEntry(o.key, rev);
          if (change) changes.push(change);
          break;
        }
      }
    }
    this.commit(changes);
    return { won, revision: this.revision, reads };
  }

  /** Grants a lease expiring `ttlSeconds` (of `clock` time) after its last renewal. */
  async grantLease(ttlSeconds: number): Promise<string> {
    this.ensureOpen();
    checkTtl(ttlSeconds);
    const id = (this.nextLeaseId++).toString();
    const lease: LeaseState = { ttl: ttlSeconds, keys: new Set(), cancelTimer: () => undefined };
    this.leases.set(id, lease);
    this.arm(id, lease);
    return id;
  }

  /** Renews a lease for its full TTL; throws LEASE_LOST if it expired or was revoked. */
  async keepAliveOnce(id: string): Promise<{ ttl: number }> {
    this.ensureOpen();
    const lease = this.leases.get(id);
    if (!lease) throw new SplitfleetError('LEASE_LOST', `lease ${id} no longer exists (expired or revoked)`);
    this.arm(id, lease);
    return { ttl: lease.ttl };
  }

  /** Revokes a lease, deleting its keys at one revision; a missing lease is not an error. */
  async revokeLease(id: string): Promise<void> {
    this.ensureOpen();
    this.dropLease(id);
  }

  /** Test hook: expires lease `id` now, as if its TTL had run out (a paused process). */
  expireLease(id: string): void {
    this.dropLease(id);
  }

  /** Watches `prefix`; replays history from `fromRevision`, then live changes, all asynchronously. */
  watch(prefix: string, options: WatchOptions): WatchHandle {
    if (this.closed) return closedWatch(closedError());
    const from = options.fromRevision;
    checkWatchFrom(from);
    const w: MemoryWatcher = { prefix, range: rangeOptions(options), options, from: from ?? this.revision + 1, queue: [], scheduled: false, closed: false };
    if (from !== undefined && from < this.compactedRevision) {
      queueMicrotask(() => {
        if (w.closed) return;
        w.closed = true;
        options.onError?.(new CompactedError(from));
      });
    } else {
      if (from !== undefined) {
        this.enqueue(w, this.history.filter((c) => c.revision >= from && inKeyRange(c.key, prefix, w.range)));
      }
      this.watchers.add(w);
    }
    return {
      ready: Promise.resolve(),
      close: async () => {
        w.closed = true;
        this.watchers.delete(w);
      },
    };
  }

  /** Discards history before `revision`. */
  async compact(revision: number): Promise<void> {
    this.ensureOpen();
    if (revision > this.revision) {
      throw new SplitfleetError('INVALID_INPUT', `cannot compact at ${revision}: the store is at revision ${this.revision}`);
    }
    if (revision <= this.compactedRevision) throw new CompactedError(revision);
    this.compactedRevision = revision;
    this.history = this.history.filter((c) => c.revision >= revision);
  }

  /** Stops lease timers and watches; later calls fail with CLOSED. */
  async close(): Promise<void> {
    this.closed = true;
    for (const lease of this.leases.values()) lease.cancelTimer();
    for (const w of this.watchers) w.closed = true;
    this.watchers.clear();
  }

  private ensureOpen(): void {
    if (this.closed) throw closedError();
  }

  private holds(c: Compare): boolean {
    const entry = this.data.get(c.key);
    switch (c.target) {
      case 'absent':
        return entry === undefined;
      case 'modRevision':
        return (entry?.modRevision ?? 0) === c.equals;
      case 'value':
        return entry !== undefined && entry.value === c.equals;
      case 'lease':
        return (entry?.lease ?? '0') === c.equals;
    }
  }

  private putEntry(key: string, value: string, lease: string | undefined, rev: number): Change {
    const prev = this.data.get(key);
    const entry: Entry = { value, createRevision: prev?.createRevision ?? rev, modRevision: rev };
    if (lease !== undefined) entry.lease = lease;
    if (prev?.lease !== undefined) this.leases.get(prev.lease)?.keys.delete(key);
    if (lease !== undefined) this.leases.get(lease)!.keys.add(key);
    if (!prev) this.sortedKeys.splice(this.lowerBound(key), 0, key);
    this.data.set(key, entry);
    return prev ? { revision: rev, key, type: 'put', entry, prev } : { revision: rev, key, type: 'put', entry };
  }

  private deleteEntry(key: string, rev: number): Change | undefined {
    const prev = this.data.get(key);
    if (!prev) return undefined;
    if (prev.lease !== undefined) this.leases.get(prev.lease)?.keys.delete(key);
    this.data.delete(key);
    this.sortedKeys.splice(this.lowerBound(key), 1);
    return { revision: rev, key, type: 'delete', prev };
  }

  /** Makes `changes` (all at revision + 1) visible: bumps the revision, records history, feeds watchers. */
  private commit(changes: Change[]): void {
    if (changes.length === 0) return;
    this.revision++;
    this.stats.writes++;
    this.history.push(...changes);
    for (const w of this.watchers) {
      this.enqueue(w, changes.filter((c) => c.revision >= w.from && inKeyRange(c.key, w.prefix, w.range)));
    }
  }

  private arm(id: string, lease: LeaseState): void {
    lease.cancelTimer();
    lease.cancelTimer = this.clock.setTimer(lease.ttl * 1000, () => this.dropLease(id));
  }

  private dropLease(id: string): void {
    const lease = this.leases.get(id);
    if (!lease) return;
    lease.cancelTimer();
    this.leases.delete(id);
    if (this.closed) return;
    const rev = this.revision + 1;
    const changes: Change[] = [];
    for (const key of [...lease.keys].sort(compareKeys)) {
      const change = this.deleteEntry(key, rev);
      if (change) changes.push(change);
    }
    this.commit(changes);
  }

  private enqueue(w: MemoryWatcher, changes: Change[]): void {
    if (changes.length === 0 || w.closed) return;
    w.queue.push(...changes.map(toEvent));
    if (w.scheduled) return;
    w.scheduled = true;
    queueMicrotask(() => {
      w.scheduled = false;
      const batch = w.queue;
      w.queue = [];
      for (const event of batch) {
        if (w.closed) return;
        w.options.onEvent(event);
      }
    });
  }

  private lowerBound(key: string): number {
    let lo = 0;
    let hi = this.sortedKeys.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (compareKeys(this.sortedKeys[mid]!, key) < 0) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  /** Rebuilds the keys under `prefix` as they were at `at` by undoing later history. */
  private pastView(prefix: string, at: number): { keys: string[]; start: number; get(key: string): Entry | undefined } {
    const entries = new Map<string, Entry>();
    for (let i = this.lowerBound(prefix); i < this.sortedKeys.length && this.sortedKeys[i]!.startsWith(prefix); i++) {
      const key = this.sortedKeys[i]!;
      entries.set(key, this.data.get(key)!);
    }
    for (let i = this.history.length - 1; i >= 0 && this.history[i]!.revision > at; i--) {
      const c = this.history[i]!;
      if (!c.key.startsWith(prefix)) continue;
      if (c.prev) entries.set(c.key, c.prev);
      else entries.delete(c.key);
    }
    return { keys: [...entries.keys()].sort(compareKeys), start: 0, get: (key) => entries.get(key) };
  }
}

function toKeyValue(key: string, e: Entry): KeyValue {
  const kv: KeyValue = { key, value: e.value, createRevision: e.createRevision, modRevision: e.modRevision };
  if (e.lease !== undefined) kv.lease = e.lease;
  return kv;
}

function toEvent(c: Change): WatchEvent {
  const event: WatchEvent = { type: c.type, key: c.key, modRevision: c.revision };
  if (c.entry) {
    event.value = c.entry.value;
    event.createRevision = c.entry.createRevision;
    if (c.entry.lease !== undefined) event.lease = c.entry.lease;
  }
  if (c.prev) event.prevValue = c.prev.value;
  return event;
}

function closedError(): SplitfleetError {
  return new SplitfleetError('CLOSED', 'the memory store was used after close()');
}
