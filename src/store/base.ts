/**
 * The shared half of every backend: the request checks (`checkTxn`, TTLs),
 * key order, and `BaseStore`, whose helpers (`txn`, `put`, `createIfAbsent`,
 * `listAll`, `snapshotAndWatch`, ...) are built on the abstract core a backend
 * implements. `MemoryStore` and `EtcdStore` extend it. The contract itself
 * (types, `cmp`, `op`, limits and the size estimate checkTxn counts with) is
 * store.ts.
 */
import { SplitfleetError } from '../errors.js';
import {
  cmp, CompactedError, compareKeys, DEFAULT_LIMITS, isCompactedError, itemBytes, op, OVERHEAD_PER_REQUEST,
  type KeyRange, type KeyValue, type ListOptions, type ListPage, type SnapshotHandler, type Store, type StoreLimits,
  type Compare, type Op, type Txn, type TxnResult, type WatchEvent, type WatchHandle, type WatchOptions,
} from './store.js';

/**
 * Refuses a transaction the store would refuse, before it is sent: empty keys,
 * two writes to one key in a branch (INVALID_INPUT), more than
 * `maxOpsPerTxn` compares or ops per branch, or an encoded size (estimated
 * conservatively) over `maxRequestBytes` (RECORD_TOO_LARGE, naming the key).
 */
export function checkTxn(txn: Txn, limits: StoreLimits): void {
  const parts: [string, readonly unknown[]][] = [
    ['compares', txn.compares],
    ['success', txn.success],
    ['failure', txn.failure ?? []],
  ];
  for (const [name, items] of parts) {
    if (items.length > limits.maxOpsPerTxn) {
      throw new SplitfleetError(
        'RECORD_TOO_LARGE',
        `transaction has ${items.length} ${name} entries; the store allows at most maxOpsPerTxn=${limits.maxOpsPerTxn}`,
      );
    }
  }
  let bytes = OVERHEAD_PER_REQUEST;
  let largest = { key: '', bytes: 0 };
  const count = (item: Compare | Op) => {
    if (item.key === '') throw new SplitfleetError('INVALID_INPUT', 'transaction names an empty key; keys must be non-empty');
    const n = itemBytes(item);
    bytes += n;
    if (n > largest.bytes) largest = { key: item.key, bytes: n };
  };
  for (const c of txn.compares) count(c);
  for (const branch of [txn.success, txn.failure ?? []]) {
    const written = new Set<string>();
    for (const o of branch) {
      count(o);
      if (o.op === 'get') continue;
      if (written.has(o.key)) {
        throw new SplitfleetError('INVALID_INPUT', `transaction writes key '${o.key}' twice in one branch; the store allows one write per key`);
      }
      written.add(o.key);
    }
  }
  if (bytes > limits.maxRequestBytes) {
    throw new SplitfleetError(
      'RECORD_TOO_LARGE',
      `transaction of about ${bytes} bytes exceeds maxRequestBytes=${limits.maxRequestBytes}; largest entry is key '${largest.key}' at about ${largest.bytes} bytes`,
    );
  }
}

/**
 * The shared half of every backend: validation and the helpers built on the
 * core (`txn`, `list`, `watch`). A backend implements the abstract members
 * with etcd's semantics; `MemoryStore` is the reference.
 */
export abstract class BaseStore implements Store {
  readonly limits: StoreLimits = DEFAULT_LIMITS;

  /** Reads one key; undefined when missing. */
  abstract get(key: string): Promise<KeyValue | undefined>;
  /** Reads one page of keys under `prefix`, in key order. */
  abstract list(prefix: string, options?: ListOptions): Promise<ListPage>;
  /** Grants a lease that expires `ttlSeconds` after its last renewal; returns its id. */
  abstract grantLease(ttlSeconds: number): Promise<string>;
  /** Renews a lease once; returns its TTL. Throws LEASE_LOST if it no longer exists. */
  abstract keepAliveOnce(id: string): Promise<{ ttl: number }>;
  /** Revokes a lease, deleting its keys; a missing lease is not an error. */
  abstract revokeLease(id: string): Promise<void>;
  /** Watches every key under `prefix`; see `WatchOptions`. */
  abstract watch(prefix: string, options: WatchOptions): WatchHandle;
  /** Discards history before `revision` (watches and reads before it then fail with `CompactedError`). */
  abstract compact(revision: number): Promise<void>;
  /** Releases connections, timers and watches. */
  abstract close(): Promise<void>;
  /** Runs an already validated transaction. */
  protected abstract applyTxn(txn: Txn): Promise<TxnResult>;

  /** Runs a transaction atomically; refuses one over `limits` before sending it. */
  txn(txn: Txn): Promise<TxnResult> {
    try {
      checkTxn(txn, this.limits);
    } catch (e) {
      return Promise.reject(e);
    }
    return this.applyTxn(txn);
  }

  /**
   * Lists every key under `prefix`, page by page, all pages read at the
   * revision of the first (so the result is one consistent view).
   */
  async listAll(prefix: string, pageSize = 1000, range: KeyRange = {}): Promise<{ kvs: KeyValue[]; revision: number }> {
    if (!Number.isInteger(pageSize) || pageSize < 1) {
      throw new SplitfleetError('INVALID_INPUT', `listAll pageSize must be a positive integer, got ${pageSize}`);
    }
    const bounds = rangeOptions(range);
    const first = await this.list(prefix, { limit: pageSize, ...bounds });
    const kvs = [...first.kvs];
    let more = first.more;
    while (more) {
      const page = await this.list(prefix, { limit: pageSize, startAfter: kvs[kvs.length - 1]!.key, revision: first.revision, ...bounds });
      kvs.push(...page.kvs);
      more = page.more && page.kvs.length > 0;
    }
    return { kvs, revision: first.revision };
  }

  /** Writes `value` unconditionally; returns the new revision. */
  async put(key: string, value: string, options: { lease?: string } = {}): Promise<number> {
    return (await this.txn({ compares: [], success: [op.put(key, value, options.lease)] })).revision;
  }

  /** Deletes `key` unconditionally; returns the store revision after. */
  async delete(key: string): Promise<number> {
    return (await this.txn({ compares: [], success: [op.delete(key)] })).revision;
  }

  /** Creates `key` only if it does not exist; losing is `{ won: false }` with the current record in `reads[0]`. */
  createIfAbsent(key: string, value: string, lease?: string): Promise<TxnResult> {
    return this.txn({ compares: [cmp.absent(key)], success: [op.put(key, value, lease)], failure: [op.get(key)] });
  }

  /** Replaces `key` only if it was last written at `modRevision`; a stale revision loses and writes nothing. */
  compareAndSwap(key: string, modRevision: number, value: string, lease?: string): Promise<TxnResult> {
    if (modRevision <= 0) {
      return Promise.reject(new SplitfleetError('INVALID_INPUT', `compareAndSwap on '${key}' needs a modRevision > 0 (use createIfAbsent to create), got ${modRevision}`));
    }
    return this.txn({ compares: [cmp.modRevision(key, modRevision)], success: [op.put(key, value, lease)], failure: [op.get(key)] });
  }

  /** Deletes `key` only if it was last written at `modRevision`. */
  deleteIf(key: string, modRevision: number): Promise<TxnResult> {
    if (modRevision <= 0) {
      return Promise.reject(new SplitfleetError('INVALID_INPUT', `deleteIf on '${key}' needs a modRevision > 0, got ${modRevision}`));
    }
    return this.txn({ compares: [cmp.modRevision(key, modRevision)], success: [op.delete(key)], failure: [op.get(key)] });
  }

  /**
   * Lists `prefix` (paginated, one revision R), hands the listing to
   * `onSnapshot`, then watches from R + 1: nothing between is lost or doubled.
   * A failed listing is reported through `onError` and rejects `ready`.
   */
  snapshotAndWatch(prefix: string, handler: SnapshotHandler, options: { pageSize?: number } & KeyRange = {}): WatchHandle {
    let closed = false;
    let inner: WatchHandle | undefined;
    const ready = (async () => {
      let snap: { kvs: KeyValue[]; revision: number };
      try {
        snap = await this.listAll(prefix, options.pageSize, options);
      } catch (e) {
        const err = e instanceof SplitfleetError ? e : new SplitfleetError('STORE_UNAVAILABLE', `listing '${prefix}' failed`, { cause: e, retryable: true });
        if (!closed) handler.onError?.(err);
        throw err;
      }
      if (closed) return;
      handler.onSnapshot(snap.kvs, snap.revision);
      const watchOptions: WatchOptions = { fromRevision: snap.revision + 1, onEvent: handler.onEvent, ...rangeOptions(options) };
      if (handler.onError) watchOptions.onError = handler.onError;
      inner = this.watch(prefix, watchOptions);
      await inner.ready;
    })();
    ready.catch(() => undefined);
    return {
      ready,
      close: async () => {
        closed = true;
        await inner?.close();
      },
    };
  }
}

/** The bounds of `range` that are set (exactOptionalPropertyTypes: no explicit undefined). */
export function rangeOptions(range: KeyRange): KeyRange {
  const out: KeyRange = {};
  if (range.rangeStart !== undefined) out.rangeStart = range.rangeStart;
  if (range.rangeEnd !== undefined) out.rangeEnd = range.rangeEnd;
  return out;
}

/** Validates a lease TTL the same way on every backend (etcd refuses TTLs under 1 s). */
export function checkTtl(ttlSeconds: number): void {
  if (!Number.isInteger(ttlSeconds) || ttlSeconds < 1) {
    throw new SplitfleetError('INVALID_INPUT', `lease TTL must be a whole number of seconds >= 1, got ${ttlSeconds}`);
  }
}

/** Validates a listing's page size the same way on every backend; absent means no limit. */
export function checkListLimit(limit: number | undefined): void {
  if (limit !== undefined && (!Number.isInteger(limit) || limit < 1)) {
    throw new SplitfleetError('INVALID_INPUT', `list limit must be a positive integer, got ${limit}`);
  }
}

/** Validates a watch's start the same way on every backend; absent means "changes after now". */
export function checkWatchFrom(fromRevision: number | undefined): void {
  if (fromRevision !== undefined && (!Number.isInteger(fromRevision) || fromRevision < 1)) {
    throw new SplitfleetError('INVALID_INPUT', `watch fromRevision must be an integer >= 1, got ${fromRevision}`);
  }
}

/** The handle of a watch asked of a closed store: `ready` rejects with `error` (already handled, so never an unhandled rejection), and nothing is delivered. */
export function closedWatch(error: SplitfleetError): WatchHandle {
  const ready = Promise.reject(error);
  ready.catch(() => undefined);
  return { ready, close: async () => undefined };
}
