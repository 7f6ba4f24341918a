/**
 * A `Store` decorator that times every call and counts every failure, by
 * method and `SplitfleetError` code, into a recorder (`Metrics` is one), and,
 * given `deadlineMs`, bounds every request by it on the injected clock (a
 * TIMEOUT, retryable; the request may still land, which every guarded write
 * tolerates), so no call of the coordinator can hang for good on a backend
 * without deadlines of its own. Exempt: `close`, `listAll` (many pages, each
 * its own round trip) and watch set-up (which resumes internally). It
 * forwards arguments, results, errors and watch handles untouched: the same
 * promise outcomes, the same synchronous throws, the inner store's own
 * `WatchHandle` object. A transaction that loses its compares is an answer,
 * not an error. It must not import coordinator/ (store/ sits below it), so the
 * recorder is an interface here; time comes from the injected clock.
 */
import { systemClock, type Clock } from '../clock.js';
import { isSplitfleetError } from '../errors.js';
import { withTimeout } from '../timeout.js';
import type { RevisionFloor } from './revision-floor.js';
import type {
  KeyRange, KeyValue, ListOptions, ListPage, SnapshotHandler, Store, StoreLimits, Txn, TxnResult, WatchHandle, WatchOptions,
} from './store.js';

/** The `call` label: the `Store` method's name. */
export type StoreCall =
  | 'get' | 'list' | 'listAll' | 'txn' | 'put' | 'delete' | 'createIfAbsent' | 'compareAndSwap' | 'deleteIf'
  | 'grantLease' | 'keepAliveOnce' | 'revokeLease' | 'watch' | 'snapshotAndWatch' | 'compact' | 'close';

/** Where the decorator records (`Metrics` implements it). */
export interface StoreCallRecorder {
  /** One call answered or failed after `seconds` (a watch: until `ready` settled). */
  storeCall(call: StoreCall, seconds: number): void;
  /** One call failed, or an established watch stopped for good, with this error code. */
  storeError(call: StoreCall, code: string): void;
}

/** The `code` label of a failure that is not a `SplitfleetError` (a backend bug, or a foreign store). */
export const UNKNOWN_ERROR_CODE = 'UNKNOWN';

/**
 * Wraps `store` so every call is recorded into `recorder`. Wrapping a store
 * already instrumented into the same recorder returns it as is: a call is
 * never counted twice.
 */
export function instrumentStore(store: Store, recorder: StoreCallRecorder, clock: Clock = systemClock, deadlineMs?: number): Store {
  if (store instanceof InstrumentedStore && store.recorder === recorder && store.deadlineMs === deadlineMs && store.revisions === undefined) return store;
  return new InstrumentedStore(store, recorder, clock, deadlineMs);
}

/**
 * `instrumentStore` with every write's answer held to `revisions` (revision-floor.ts).
 * @internal The coordinator's one decorator (decision 0062).
 */
export function instrumentStoreWithFloor(store: Store, recorder: StoreCallRecorder, clock: Clock, deadlineMs: number, revisions: RevisionFloor): Store {
  return new InstrumentedStore(store, recorder, clock, deadlineMs, undefined, revisions);
}

/**
 * Options of the calls made through one handle: a label naming the call in
 * its TIMEOUT (say, "renewing the session lease"), and a deadline of its own
 * where one call needs another bound than every request's (a lease renewal
 * must answer within its renewal interval, which may be shorter than
 * opTimeoutMs).
 */
export interface CallOptions {
  readonly label?: string;
  readonly deadlineMs?: number;
}

const NO_RECORDER: StoreCallRecorder = { storeCall: () => undefined, storeError: () => undefined };

/**
 * `store` with `options` for the calls made through what it returns. On an
 * `InstrumentedStore` the calls are still recorded once, into its recorder;
 * on any other store, a deadline given here still bounds them (on `clock`),
 * so a caller never loses its bound for want of the coordinator's wrapper.
 */
export function withCallOptions(store: Store, options: CallOptions, clock: Clock = systemClock): Store {
  if (store instanceof InstrumentedStore) return store.withOptions(options);
  if (options.deadlineMs === undefined) return store;
  return new InstrumentedStore(store, NO_RECORDER, clock, options.deadlineMs, options.label);
}

/** Calls a deadline does not bound (see the header). */
const UNBOUNDED: ReadonlySet<StoreCall> = new Set(['close', 'listAll', 'compact']);

/** The decorator `instrumentStore` returns: every `Store` method, recorded (and bounded by `deadlineMs`). */
export class InstrumentedStore implements Store {
  constructor(
    readonly inner: Store, readonly recorder: StoreCallRecorder, private readonly clock: Clock = systemClock,
    /** Every request's deadline (the coordinator's opTimeoutMs); none when undefined. */
    readonly deadlineMs?: number,
    /** Names the calls in their TIMEOUT message (see `withCallOptions`); else the method's name. */
    readonly label?: string,
    /** Holds every write's answer to the revisions known when it was sent (a RevisionFloor, revision-floor.ts; decision 0062); none when undefined. */
    readonly revisions?: {
      /** The highest revision answered so far. */
      readonly known: number;
      /** A write sent when `known` was `sentAt` was answered at `revision`. */
      answered(sentAt: number, revision: number): void;
    },
  ) {}

  /**
   * This decorator with another label or deadline for the calls made through the handle returned (same inner store and recorder).
   * @internal The coordinator's (see `withCallOptions`).
   */
  withOptions(options: CallOptions): InstrumentedStore {
    return new InstrumentedStore(this.inner, this.recorder, this.clock, options.deadlineMs ?? this.deadlineMs, options.label ?? this.label, this.revisions);
  }

  get limits(): StoreLimits {
    return this.inner.limits;
  }

  /** The inner store's `get`, timed into `splitfleet_store_call_seconds{call="get"}` (errors counted by code). */
  get(key: string): Promise<KeyValue | undefined> {
    return this.timed('get', () => this.inner.get(key));
  }

  /** The inner store's `list`, timed into `splitfleet_store_call_seconds{call="list"}` (errors counted by code). */
  list(prefix: string, options?: ListOptions): Promise<ListPage> {
    return this.timed('list', () => this.inner.list(prefix, options));
  }

  /** One observation for the whole listing: the inner store pages through its own `list`, not ours. */
  listAll(prefix: string, pageSize?: number, range?: KeyRange): Promise<{ kvs: KeyValue[]; revision: number }> {
    return this.timed('listAll', () => this.inner.listAll(prefix, pageSize, range));
  }

  /** The inner store's `txn`, timed into `splitfleet_store_call_seconds{call="txn"}` (errors counted by code). */
  txn(txn: Txn): Promise<TxnResult> {
    return this.floored(this.timed('txn', () => this.inner.txn(txn)), (r) => r.revision);
  }

  /** The inner store's `put`, timed into `splitfleet_store_call_seconds{call="put"}` (errors counted by code). */
  put(key: string, value: string, options?: { lease?: string }): Promise<number> {
    return this.floored(this.timed('put', () => this.inner.put(key, value, options)), (r) => r);
  }

  /** The inner store's `delete`, timed into `splitfleet_store_call_seconds{call="delete"}` (errors counted by code). */
  delete(key: string): Promise<number> {
    return this.floored(this.timed('delete', () => this.inner.delete(key)), (r) => r);
  }

  /** The inner store's `createIfAbsent`, timed into `splitfleet_store_call_seconds{call="createIfAbsent"}` (errors counted by code). */
  createIfAbsent(key: string, value: string, lease?: string): Promise<TxnResult> {
    return this.floored(this.timed('createIfAbsent', () => this.inner.createIfAbsent(key, value, lease)), (r) => r.revision);
  }

  /** The inner store's `compareAndSwap`, timed into `splitfleet_store_call_seconds{call="compareAndSwap"}` (errors counted by code). */
  compareAndSwap(key: string, modRevision: number, value: string, lease?: string): Promise<TxnResult> {
    return this.floored(this.timed('compareAndSwap', () => this.inner.compareAndSwap(key, modRevision, value, lease)), (r) => r.revision);
  }

  /** The inner store's `deleteIf`, timed into `splitfleet_store_call_seconds{call="deleteIf"}` (errors counted by code). */
  deleteIf(key: string, modRevision: number): Promise<TxnResult> {
    return this.floored(this.timed('deleteIf', () => this.inner.deleteIf(key, modRevision)), (r) => r.revision);
  }

  /** The inner store's `grantLease`, timed into `splitfleet_store_call_seconds{call="grantLease"}` (errors counted by code). */
  grantLease(ttlSeconds: number): Promise<string> {
    return this.timed('grantLease', () => this.inner.grantLease(ttlSeconds));
  }

  /** The inner store's `keepAliveOnce`, timed into `splitfleet_store_call_seconds{call="keepAliveOnce"}` (errors counted by code). */
  keepAliveOnce(id: string): Promise<{ ttl: number }> {
    return this.timed('keepAliveOnce', () => this.inner.keepAliveOnce(id));
  }

  /** The inner store's `revokeLease`, timed into `splitfleet_store_call_seconds{call="revokeLease"}` (errors counted by code). */
  revokeLease(id: string): Promise<void> {
    return this.timed('revokeLease', () => this.inner.revokeLease(id));
  }

  /** The inner store's `compact`, timed into `splitfleet_store_call_seconds{call="compact"}` (errors counted by code). */
  compact(revision: number): Promise<void> {
    return this.timed('compact', () => this.inner.compact(revision));
  }

  /** The inner store's `close`, timed into `splitfleet_store_call_seconds{call="close"}` (errors counted by code). */
  close(): Promise<void> {
    return this.timed('close', () => this.inner.close());
  }

  /** The inner store's `watch`, timed into `splitfleet_store_call_seconds{call="watch"}` (errors counted by code). */
  watch(prefix: string, options: WatchOptions): WatchHandle {
    const once = this.failureOnce('watch');
    const counted: WatchOptions = { ...options, onError: (e) => { once(e); options.onError?.(e); } };
    return this.watched('watch', once, () => this.inner.watch(prefix, counted));
  }

  /** The inner store's `snapshotAndWatch`, timed into `splitfleet_store_call_seconds{call="snapshotAndWatch"}` (errors counted by code). */
  snapshotAndWatch(prefix: string, handler: SnapshotHandler, options?: { pageSize?: number } & KeyRange): WatchHandle {
    const once = this.failureOnce('snapshotAndWatch');
    const counted: SnapshotHandler = { ...handler, onError: (e) => { once(e); handler.onError?.(e); } };
    return this.watched('snapshotAndWatch', once, () => this.inner.snapshotAndWatch(prefix, counted, options));
  }

  /** Times `run` to its settlement; a synchronous throw is recorded and rethrown as such. */
  /** A write's answer held to the revisions known when it was sent (`revisions`): a lower one means the store went back. */
  private floored<T>(pending: Promise<T>, revisionOf: (v: T) => number): Promise<T> {
    const floor = this.revisions;
    if (!floor) return pending;
    const sentAt = floor.known;
    return pending.then((v) => {
      floor.answered(sentAt, revisionOf(v));
      return v;
    });
  }

  private timed<T>(call: StoreCall, run: () => Promise<T>): Promise<T> {
    const started = this.clock.now();
    let pending: Promise<T>;
    try {
      pending = run();
    } catch (e) {
      this.failed(call, started, e);
      throw e;
    }
    if (this.deadlineMs !== undefined && !UNBOUNDED.has(call)) pending = withTimeout(pending, this.deadlineMs, this.label ?? `store call ${call}`, this.clock);
    return pending.then(
      (v) => {
        this.recorder.storeCall(call, this.elapsed(started));
        return v;
      },
      (e: unknown) => {
        this.failed(call, started, e);
        throw e;
      },
    );
  }

  /** Times a watch's set-up (to `ready`) and hands back the inner handle itself. */
  private watched(call: StoreCall, failed: (e: unknown) => void, open: () => WatchHandle): WatchHandle {
    const started = this.clock.now();
    let handle: WatchHandle;
    try {
      handle = open();
    } catch (e) {
      this.recorder.storeCall(call, this.elapsed(started));
      failed(e);
      throw e;
    }
    // Observers only: the caller still gets the inner `ready`, and this branch never rejects unhandled.
    handle.ready.then(
      () => this.recorder.storeCall(call, this.elapsed(started)),
      (e: unknown) => {
        this.recorder.storeCall(call, this.elapsed(started));
        failed(e);
      },
    );
    return handle;
  }

  /** A watch fails at most once: a snapshot reports a failed listing both through `onError` and `ready`. */
  private failureOnce(call: StoreCall): (e: unknown) => void {
    let counted = false;
    return (e) => {
      if (counted) return;
      counted = true;
      this.recorder.storeError(call, errorCode(e));
    };
  }

  private failed(call: StoreCall, started: number, error: unknown): void {
    this.recorder.storeCall(call, this.elapsed(started));
    this.recorder.storeError(call, errorCode(error));
  }

  private elapsed(started: number): number {
    return Math.max(0, this.clock.now() - started) / 1000;
  }
}

function errorCode(e: unknown): string {
  return isSplitfleetError(e) ? e.code : UNKNOWN_ERROR_CODE;
}
