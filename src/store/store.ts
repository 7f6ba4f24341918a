/**
 * The store contract: the small key-value surface the coordinator needs from
 * etcd (or anything that behaves like it), its limits with the one estimate
 * of a request's size (`itemBytes`), and the `cmp`/`op` builders. Backends
 * extend `BaseStore` (base.ts) and implement its abstract core.
 *
 * Invariants every backend keeps (the contract suite in test/contract checks
 * them): one global revision counter that moves once per write request; a
 * transaction is atomic and losing its compares is a value, never an error;
 * watches deliver every change in revision order exactly once, resuming after
 * a break from the last revision seen; requests over `limits` are refused
 * before they are sent. This file must not import etcd3 or any backend.
 */

import { SplitfleetError } from '../errors.js';

/** One key as stored. Revisions are numbers (etcd's fit in 2^53); lease ids are strings (they do not). */
export interface KeyValue {
  key: string;
  value: string;
  /** Revision of the write that created this incarnation of the key. */
  createRevision: number;
  /** Revision of the last write to the key. */
  modRevision: number;
  /** The lease the key is attached to, if any. */
  lease?: string;
}

/** Options for one page of a prefix listing. */
export interface ListOptions {
  /** Most keys to return; unlimited when absent. */
  limit?: number;
  /** Return only keys strictly after this one (the last key of the previous page). */
  startAfter?: string;
  /** Read at this past revision (fails with a `CompactedError` if it was compacted). */
  revision?: number;
  /** Narrows the listing to keys ≥ this one (within the prefix). */
  rangeStart?: string;
  /** Narrows the listing to keys < this one (within the prefix). */
  rangeEnd?: string;
}

/** One page of a listing, in key order (UTF-8 byte order). */
export interface ListPage {
  kvs: KeyValue[];
  /** True when more keys under the prefix follow this page. */
  more: boolean;
  /** The store revision the page was read at. */
  revision: number;
}

/** A transaction guard. A missing key compares as createRevision 0, modRevision 0, no lease, and never equal on value. */
export type Compare =
  | { target: 'absent'; key: string }
  | { target: 'modRevision'; key: string; equals: number }
  | { target: 'value'; key: string; equals: string }
  | { target: 'lease'; key: string; equals: string };

/** One operation of a transaction branch; at most one write per key per branch. */
export type Op =
  | { op: 'put'; key: string; value: string; lease?: string }
  | { op: 'delete'; key: string }
  | { op: 'get'; key: string };

/** An all-or-nothing request: if every compare holds, run `success`, else `failure`. */
export interface Txn {
  compares: readonly Compare[];
  success: readonly Op[];
  failure?: readonly Op[];
}

/**
 * The outcome of a transaction. `won` says which branch ran; `revision` is the
 * store revision after it; `reads` holds the results of that branch's `get`
 * ops, in order (undefined for a missing key).
 */
export type TxnResult =
  | { won: true; revision: number; reads: (KeyValue | undefined)[] }
  | { won: false; revision: number; reads: (KeyValue | undefined)[] };

/** What the store refuses before sending: etcd's defaults (`--max-txn-ops`, `--max-request-bytes`). */
export interface StoreLimits {
  /** Most compares, and most ops per branch, in one transaction. */
  maxOpsPerTxn: number;
  /** Largest encoded request, in bytes. */
  maxRequestBytes: number;
}

/** etcd's default limits; both backends enforce them. */
export const DEFAULT_LIMITS: StoreLimits = Object.freeze({
  maxOpsPerTxn: 128,
  maxRequestBytes: 1.5 * 1024 * 1024,
});

/** Framing estimates of one request and one op in it (the byte count a request is refused by). */
const OVERHEAD_PER_ITEM = 32;
export const OVERHEAD_PER_REQUEST = 64;

/**
 * The one estimate of a request's size, in UTF-8 bytes (what etcd counts
 * against `--max-request-bytes`, never UTF-16 units): one compare or op is its
 * key, its value (a put's, a value compare's) and a framing allowance. A
 * request is `OVERHEAD_PER_REQUEST` plus its items. Every backend refuses by
 * it (`checkTxn`, base.ts), and the coordinator's batching fills by it, so a
 * batch that passes one passes the other.
 */
export function itemBytes(item: Compare | Op): number {
  const payload = 'op' in item ? (item.op === 'put' ? item.value : '') : item.target === 'value' ? item.equals : '';
  return Buffer.byteLength(item.key) + Buffer.byteLength(payload) + OVERHEAD_PER_ITEM;
}

/** One change seen by a watch. A delete caused by lease expiry is a delete like any other. */
export interface WatchEvent {
  type: 'put' | 'delete';
  key: string;
  /** The new value (puts only). */
  value?: string;
  /** The revision of the change (for a delete, the deletion's revision). */
  modRevision: number;
  /** Puts only. */
  createRevision?: number;
  /** Puts only: the lease the new value is attached to. */
  lease?: string;
  /** The value before the change, when the key existed (and, on etcd, was not compacted). */
  prevValue?: string;
}

/** Callbacks and start point of a watch. Handlers must not throw. */
export interface WatchOptions {
  /** First revision to deliver; absent means "changes after now". */
  fromRevision?: number;
  /**
   * Narrow the watch to keys ≥ `rangeStart` and < `rangeEnd` (both within the
   * prefix): one key is `watch(key, { rangeEnd: key + '\0' })` (`exactKey`).
   */
  rangeStart?: string;
  rangeEnd?: string;
  /** Called once per change, in revision order, never twice for one change. */
  onEvent: (event: WatchEvent) => void;
  /**
   * Called once when the watch has stopped for good (it then delivers nothing
   * more). Transient breaks are not reported: they are resumed internally. A
   * `CompactedError` (see `isCompactedError`) means the resume point is gone:
   * re-snapshot with `snapshotAndWatch`.
   */
  onError?: (error: SplitfleetError) => void;
}

/** Callbacks of `snapshotAndWatch`: the listing first, then every later change. */
export interface SnapshotHandler {
  onSnapshot: (kvs: KeyValue[], revision: number) => void;
  onEvent: (event: WatchEvent) => void;
  onError?: (error: SplitfleetError) => void;
}

/** A running watch. */
export interface WatchHandle {
  /** Resolves once the watch is established (and, for a snapshot, the snapshot delivered); rejects if it failed first. */
  ready: Promise<void>;
  /** Stops delivery; no callback runs after it resolves. */
  close(): Promise<void>;
}

/** The contract. See docs/store.md; `MemoryStore` is the reference implementation. */
export interface Store {
  readonly limits: StoreLimits;
  get(key: string): Promise<KeyValue | undefined>;
  list(prefix: string, options?: ListOptions): Promise<ListPage>;
  listAll(prefix: string, pageSize?: number, range?: KeyRange): Promise<{ kvs: KeyValue[]; revision: number }>;
  txn(txn: Txn): Promise<TxnResult>;
  put(key: string, value: string, options?: { lease?: string }): Promise<number>;
  delete(key: string): Promise<number>;
  createIfAbsent(key: string, value: string, lease?: string): Promise<TxnResult>;
  compareAndSwap(key: string, modRevision: number, value: string, lease?: string): Promise<TxnResult>;
  deleteIf(key: string, modRevision: number): Promise<TxnResult>;
  grantLease(ttlSeconds: number): Promise<string>;
  keepAliveOnce(id: string): Promise<{ ttl: number }>;
  revokeLease(id: string): Promise<void>;
  watch(prefix: string, options: WatchOptions): WatchHandle;
  snapshotAndWatch(prefix: string, handler: SnapshotHandler, options?: { pageSize?: number } & KeyRange): WatchHandle;
  compact(revision: number): Promise<void>;
  close(): Promise<void>;
}

/** A narrowing of a prefix to `[rangeStart, rangeEnd)`; either bound may be absent. */
export interface KeyRange {
  rangeStart?: string;
  rangeEnd?: string;
}

/** The range that holds exactly `key` (etcd's `[key, key + "\0")`): watch or list one key. */
export function exactKey(key: string): KeyRange {
  return { rangeEnd: `${key}\0` };
}

/** Whether `key` lies under `prefix` and inside `range`, in UTF-8 byte order (what etcd compares). */
export function inKeyRange(key: string, prefix: string, range: KeyRange): boolean {
  if (!key.startsWith(prefix)) return false;
  if (range.rangeStart !== undefined && compareKeys(key, range.rangeStart) < 0) return false;
  return range.rangeEnd === undefined || compareKeys(key, range.rangeEnd) < 0;
}

/** Compare builders: `cmp.absent(k)`, `cmp.modRevision(k, r)`, `cmp.value(k, v)`, `cmp.lease(k, id)`, `cmp.noLease(k)`. */
export const cmp = {
  /** The key does not exist (createRevision == 0). */
  absent: (key: string): Compare => ({ target: 'absent', key }),
  /** The key was last written at `revision` (0 also matches a missing key). */
  modRevision: (key: string, revision: number): Compare => ({ target: 'modRevision', key, equals: revision }),
  /** The key exists and holds exactly `value`. */
  value: (key: string, value: string): Compare => ({ target: 'value', key, equals: value }),
  /** The key is attached to lease `id`. */
  lease: (key: string, id: string): Compare => ({ target: 'lease', key, equals: id }),
  /**
   * The key is attached to no lease: absent, or present without one (etcd compares a missing
   * key's lease as 0). What a claim compares on a split's lease key: one put by hand without
   * a lease is not live and may be written over (protocol/ephemeral.ts).
   */
  noLease: (key: string): Compare => ({ target: 'lease', key, equals: '0' }),
};

/** Op builders: `op.put(k, v, lease?)`, `op.delete(k)`, `op.get(k)`. */
export const op = {
  /** Write `value`, attached to `lease` when given (a put without lease detaches). */
  put: (key: string, value: string, lease?: string): Op =>
    lease === undefined ? { op: 'put', key, value } : { op: 'put', key, value, lease },
  /** Delete the key (a no-op when missing). */
  delete: (key: string): Op => ({ op: 'delete', key }),
  /** Read the key as the branch sees it at this point. */
  get: (key: string): Op => ({ op: 'get', key }),
};

/** A watch or read asked for a revision the store has compacted away; re-snapshot. */
export class CompactedError extends SplitfleetError {
  readonly revision: number;

  constructor(revision: number, cause?: unknown) {
    super(
      'STORE_UNAVAILABLE',
      `store revision ${revision} has been compacted; re-snapshot (snapshotAndWatch) instead of resuming`,
      { retryable: true, cause },
    );
    this.name = 'CompactedError';
    this.revision = revision;
  }
}

/** True when `e` says the requested revision was compacted (the caller should re-snapshot). */
export function isCompactedError(e: unknown): e is CompactedError {
  return e instanceof CompactedError;
}

/** Compares keys in UTF-8 byte order (etcd's order), which is code point order, not UTF-16 order. */
export function compareKeys(a: string, b: string): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    const x = a.charCodeAt(i);
    const y = b.charCodeAt(i);
    if (x === y) continue;
    const xs = x >= 0xd800 && x <= 0xdfff;
    const ys = y >= 0xd800 && y <= 0xdfff;
    // A surrogate starts a code point above U+FFFF, which sorts after every other BMP unit.
    if (xs !== ys) return xs ? 1 : -1;
    return x - y;
  }
  return a.length - b.length;
}
