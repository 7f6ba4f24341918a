/**
 * `EtcdStore`: the store contract over a real etcd (v3 API), through etcd3.
 * This is the only file that imports etcd3 (STYLE rule 3); none of its types
 * appear in an exported signature, and every etcd failure becomes a
 * `SplitfleetError` in `toStoreError`, the one conversion function. What does
 * not need etcd3 lives beside it: options and fault policies
 * (etcd-options.ts), the conversion's rules (etcd-errors.ts), key ranges
 * (etcd-ranges.ts), a watch's resume point and delivery (etcd-watch.ts).
 *
 * Invariants: revisions are converted to numbers (they fit in 2^53), lease ids
 * stay strings (they do not); over-limit transactions are refused before they
 * are sent (BaseStore); etcd3's global retry is disabled, because retrying a
 * transaction whose first attempt applied would report a race we actually won
 * (callers retry on `retryable` errors instead), except that a call another
 * member can take is sent there (`call`: one that never left, an idempotent
 * one after UNAVAILABLE, a keep-alive after its deadline; decisions 0034 and
 * 0086); every unary call has a deadline of `opTimeoutMs`, a keep-alive one
 * of its own (`keepAliveOnce`); a watch resumes after any break from the last
 * revision it delivered + 1, so nothing is lost or delivered twice.
 */

import {
  castGrpcError,
  ClientClosedError,
  CompareResult,
  CompareTarget,
  Etcd3,
  EtcdAuthenticationFailedError,
  EtcdInvalidAuthTokenError,
  EtcdLeaseInvalidError,
  EtcdPermissionDeniedError,
  GRPCDeadlineExceededError,
  GRPCInvalidArgumentError,
  GRPCUnauthenticatedError,
  GRPCUnavailableError,
  isRecoverableError,
  type ICompare,
  type IEvent,
  type IKeyValue,
  type IOptions,
  type IRangeRequest,
  type IRequestOp,
  type IWatchResponse,
} from 'etcd3';
import { SplitfleetError } from '../../errors.js';
import { withTimeout } from '../../timeout.js';
import {
  CompactedError, isCompactedError, type Compare, type KeyValue, type ListOptions, type ListPage, type Op, type Txn, type TxnResult, type WatchEvent, type WatchHandle, type WatchOptions,
} from '../store.js';
import { BaseStore, checkListLimit, checkTtl, checkWatchFrom, closedWatch } from '../base.js';
import { closedError, etcdFailureToStoreError, type EtcdFailureClass } from './etcd-errors.js';
import {
  grpcChannelOptions, hostPolicy, neverSent, resolveEtcdSettings, RUN_ONCE, sendsPasswordInClear, watchBackoff, type EtcdStoreOptions,
} from './etcd-options.js';
import { listStartOf, prefixEnd, prefixStart, rangeEndOf, rangeStartOf } from './etcd-ranges.js';
import { WatchDelivery } from './etcd-watch.js';

// Importers find the options where they always were.
export { ETCD_KEEPALIVE_MIN_MS, type EtcdStoreOptions } from './etcd-options.js';

type FaultHandling = Required<NonNullable<IOptions['faultHandling']>>;

/**
 * etcd3 1.1.2 throws from its watch stream's data handler when a response
 * names a watch id that none of its watchers holds ("Failed to find watcher
 * for IWatchResponse"): a response that a stream delivered after it broke
 * and was replaced, or one of a watch closed while the stream reconnected.
 * Thrown there, inside gRPC's delivery, it is an unhandled rejection, which
 * ends a Node process (seen in CI, test/etcd/nospace.test.ts, while etcd
 * refused writes). Such a response reaches no watcher either way: it is
 * dropped, and a watch that lost its stream resumes from its own revision
 * (`WatchDelivery`). Applied to the watch manager of this store's own client
 * only (an own property of that instance), never to etcd3's `WatchManager`
 * prototype, which a host's own etcd3 client shares once npm dedupes the two
 * (decision 0025).
 */
function dropStrayWatchResponses(client: Etcd3): void {
  type Manager = { watchers: { id: string | null }[]; handleResponse(res: IWatchResponse): void };
  const manager = (client as unknown as { watchManager: Manager }).watchManager;
  const handleResponse = manager.handleResponse;
  manager.handleResponse = (res: IWatchResponse): void => {
    if (!manager.watchers.some((w) => w.id === res.watch_id)) return;
    handleResponse.call(manager, res);
  };
}

/** Node's warning code for auth over a connection without TLS (the CLI prints its own line instead). */
const CLEARTEXT_PASSWORD_WARNING = 'SPLITFLEET_CLEARTEXT_PASSWORD';
let warnedCleartext = false;

/** Says once per process that a password goes to etcd in clear: it is not refused (a test etcd on loopback is fine). */
function warnCleartextPassword(): void {
  if (warnedCleartext) return;
  warnedCleartext = true;
  process.emitWarning('EtcdStore: auth (a username and password) over http:// endpoints without TLS: the password is sent in clear; use https:// endpoints (and credentials)', { code: CLEARTEXT_PASSWORD_WARNING });
}

/** The store over etcd. See the file header for its invariants. */
export class EtcdStore extends BaseStore {
  // Non-enumerable (set in the constructor): the client holds the password and private key, which must not
  // show up when a store is logged, inspected or serialised.
  private declare readonly client: Etcd3;
  private readonly opTimeoutMs: number;
  /** How many times a call is sent again on another member (endpoints − 1; see `call`). */
  private readonly failovers: number;
  private readonly watchClosers = new Set<() => Promise<void>>();
  /** The TTL in seconds of each lease granted or kept alive here (the newest few): it bounds a keep-alive's time. */
  private readonly leaseTtls = new Map<string, number>();
  private closed = false;

  /** Connects lazily: the first call opens the connection. */
  constructor(options: EtcdStoreOptions) {
    super();
    const settings = resolveEtcdSettings(options);
    this.opTimeoutMs = settings.opTimeoutMs;
    this.failovers = settings.endpoints.length - 1;
    const etcdOptions: IOptions = {
      hosts: settings.endpoints,
      defaultCallOptions: (ctx) => (ctx.isStream ? {} : { deadline: Date.now() + this.opTimeoutMs }),
      grpcOptions: grpcChannelOptions(settings),
      faultHandling: {
        // The policies are written against the shape etcd3 calls, not cockatiel's classes.
        global: RUN_ONCE as unknown as FaultHandling['global'],
        host: hostPolicy(settings.endpoints.length, isRecoverableError) as unknown as FaultHandling['host'],
        watchBackoff: watchBackoff(settings.watchRetryMaxMs),
      },
    };
    if (options.credentials) etcdOptions.credentials = options.credentials;
    if (options.auth) etcdOptions.auth = { username: options.auth.username, password: options.auth.password };
    if (sendsPasswordInClear(options)) warnCleartextPassword();
    let client: Etcd3;
    try {
      client = new Etcd3(etcdOptions);
    } catch (e) {
      // Node's TLS refused the key or certificate (unparseable PEM, key/certificate mismatch); its message never quotes them.
      throw new SplitfleetError('INVALID_CONFIG', `credentials: the TLS key or certificates are unusable (${e instanceof Error ? e.message : String(e)})`, { cause: e });
    }
    dropStrayWatchResponses(client);
    Object.defineProperty(this, 'client', { value: client, enumerable: false });
  }

  /** Reads one key; undefined when missing. */
  async get(key: string): Promise<KeyValue | undefined> {
    const res = await this.call(`get '${key}'`, () => this.client.kv.range({ key: Buffer.from(key) }), undefined, 'idempotent');
    const kv = res.kvs[0];
    return kv && fromKv(kv);
  }

  /** Reads one page under `prefix` (etcd range with limit), now or at a past revision. */
  async list(prefix: string, options: ListOptions = {}): Promise<ListPage> {
    const { limit, revision } = options;
    checkListLimit(limit);
    const req: IRangeRequest = { key: listStartOf(prefix, options), range_end: rangeEndOf(prefix, options) };
    if (limit !== undefined) req.limit = limit;
    if (revision !== undefined) req.revision = revision;
    const res = await this.call(`list '${prefix}'`, () => this.client.kv.range(req), revision, 'idempotent');
    // A past read's header carries the current revision, not the one read at.
    return { kvs: res.kvs.map(fromKv), more: res.more, revision: revision ?? Number(res.header.revision) };
  }

  /** Sends a validated transaction as one etcd Txn. */
  protected async applyTxn(txn: Txn): Promise<TxnResult> {
    const res = await this.call(`txn on '${txn.success[0]?.key ?? txn.compares[0]?.key ?? ''}'`, () =>
      this.client.kv.txn({
        compare: txn.compares.map(toCompare),
        success: txn.success.map(toRequestOp),
        failure: (txn.failure ?? []).map(toRequestOp),
      }),
    );
    const branch = res.succeeded ? txn.success : txn.failure ?? [];
    const reads: (KeyValue | undefined)[] = [];
    branch.forEach((o, i) => {
      if (o.op !== 'get') return;
      const kv = res.responses[i]?.response_range?.kvs[0];
      reads.push(kv && fromKv(kv));
    });
    return { won: res.succeeded, revision: Number(res.header.revision), reads };
  }

  /** Grants a lease (etcd may round a short TTL up to its minimum); no automatic keep-alive. */
  async grantLease(ttlSeconds: number): Promise<string> {
    checkTtl(ttlSeconds);
    const id = await this.call('grant lease', () => this.client.lease(ttlSeconds, { autoKeepAlive: false }).grant());
    this.rememberTtl(id, ttlSeconds);
    return id;
  }

  /**
   * One keep-alive round trip on etcd's stream; throws LEASE_LOST when etcd
   * answers TTL 0. It takes at most a third of the lease's TTL (the interval
   * at which etcd's own clients, and a session, renew) or `opTimeoutMs`,
   * whichever is shorter. With several endpoints one attempt gets half of
   * that, and an attempt that gets no answer in time is sent again to another
   * member, which the host policy now prefers: a keep-alive is idempotent,
   * and a member cut off from its peers accepts the stream and answers
   * nothing (decision 0086).
   */
  async keepAliveOnce(id: string): Promise<{ ttl: number }> {
    const ttlSeconds = this.leaseTtls.get(id);
    const budgetMs = ttlSeconds === undefined ? this.opTimeoutMs : Math.min(this.opTimeoutMs, (ttlSeconds * 1000) / 3);
    const until = Date.now() + budgetMs;
    const shareMs = this.failovers > 0 ? budgetMs / 2 : budgetMs;
    const ttl = await this.call(`keep lease ${id} alive`, () => {
      if (Date.now() >= until) {
        throw new SplitfleetError('TIMEOUT', `keep-alive of lease ${id} got no answer within ${Math.round(budgetMs)} ms`, { retryable: true });
      }
      return this.keepAliveAttempt(id, Math.min(until, Date.now() + shareMs));
    }, undefined, 'renewal');
    if (!(ttl > 0)) {
      this.leaseTtls.delete(id);
      throw new SplitfleetError('LEASE_LOST', `lease ${id} no longer exists on etcd (expired or revoked)`);
    }
    this.rememberTtl(id, ttl);
    return { ttl };
  }

  /** One keep-alive on a stream of one member, which gRPC ends at `deadline` (its DEADLINE_EXCEEDED reaches the host policy through etcd3's `markFailed`). */
  private async keepAliveAttempt(id: string, deadline: number): Promise<number> {
    const stream = await this.client.leaseClient.leaseKeepAlive({ deadline });
    return new Promise<number>((resolve, reject) => {
      stream.on('data', (res) => {
        stream.end();
        resolve(Number(res.TTL));
      });
      stream.on('error', (err: Error) => reject(castGrpcError(err)));
      stream.write({ ID: id });
    });
  }

  private rememberTtl(id: string, ttlSeconds: number): void {
    this.leaseTtls.delete(id);
    this.leaseTtls.set(id, ttlSeconds);
    // A process holds one session's lease at a time; the oldest beyond a few were abandoned.
    if (this.leaseTtls.size > 16) this.leaseTtls.delete(this.leaseTtls.keys().next().value!);
  }

  /** Revokes a lease and its keys; a missing lease is not an error. */
  async revokeLease(id: string): Promise<void> {
    this.leaseTtls.delete(id);
    try {
      await this.call(`revoke lease ${id}`, () => this.client.leaseClient.leaseRevoke({ ID: id }), undefined, 'idempotent');
    } catch (e) {
      if (!(e instanceof SplitfleetError && e.code === 'LEASE_LOST')) throw e;
    }
  }

  /** Physically compacts etcd's history before `revision`. */
  async compact(revision: number): Promise<void> {
    await this.call(`compact at ${revision}`, () => this.client.kv.compact({ revision, physical: true }), revision);
  }

  /**
   * Watches `prefix` with previous values (so lease-expiry deletes carry the
   * old value). etcd3 reconnects by itself; on every disconnection we reset
   * its resume point to the last revision delivered + 1 (etcd3 would resume
   * from the last response header, which can skip events during a catch-up),
   * and drop anything at or below it.
   */
  watch(prefix: string, options: WatchOptions): WatchHandle {
    if (this.closed) return closedWatch(closedError());
    const from = options.fromRevision;
    checkWatchFrom(from);
    let resolveReady!: () => void;
    let rejectReady!: (e: SplitfleetError) => void;
    const ready = new Promise<void>((res, rej) => {
      resolveReady = res;
      rejectReady = rej;
    });
    ready.catch(() => undefined);
    const delivery = new WatchDelivery<IEvent>((ev) => Number(ev.kv.mod_revision), (ev) => options.onEvent(toWatchEvent(ev)), from);
    const ranged = options.rangeStart !== undefined || options.rangeEnd !== undefined;
    const builder = (ranged
      ? this.client.watch().inRange({ start: rangeStartOf(prefix, options), end: rangeEndOf(prefix, options) })
      : this.client.watch().prefix(prefix)).withPreviousKV();
    if (from !== undefined) builder.startRevision(String(from));
    const watcher = builder.watcher();

    watcher.on('connected', (res: IWatchResponse) => {
      delivery.connected(Number(res.header.revision));
      resolveReady();
    });
    watcher.on('data', (res: IWatchResponse) => delivery.received(res.events, Number(res.header.revision)));
    watcher.on('disconnected', () => {
      const resume = delivery.resumeRevision;
      if (resume !== undefined) watcher.request.start_revision = String(resume);
    });
    watcher.on('error', (err: unknown) => {
      if (!delivery.stop()) return;
      this.watchClosers.delete(close);
      const resume = delivery.resumeRevision ?? 1;
      void this.explainWatchFailure(prefix, err, resume).then((e) => {
        rejectReady(e);
        options.onError?.(e);
      });
    });

    const close = async (): Promise<void> => {
      if (!delivery.stop()) return;
      // Closed before etcd confirmed it: settle `ready` (as snapshotAndWatch does when closed while
      // listing), or whoever awaits it waits forever, and a process with nothing else pending exits.
      resolveReady();
      this.watchClosers.delete(close);
      // Bounded, and never a failure: delivery has already stopped here, so a cancel that etcd
      // never confirms (the connection is gone) or refuses changes nothing for the caller, and
      // close() (the store's, a coordinator's stop) must not hang or throw on it. So the one
      // deadline helper, with its TIMEOUT (and the cancel's own error) swallowed.
      await withTimeout(watcher.cancel(), this.opTimeoutMs, `cancel watch '${prefix}'`).catch(() => undefined);
    };
    this.watchClosers.add(close);
    return { ready, close };
  }

  /** Cancels every watch, then closes the connection; later calls fail with CLOSED. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await Promise.all([...this.watchClosers].map((c) => c()));
    this.client.close();
  }

  /**
   * Runs one etcd call, converting any failure in `toStoreError`. With several
   * endpoints a call that failed on one member is sent again, on another
   * (the failed one now stands behind it in the host policy's `HostHealth`),
   * at most once per other member, as `resend` allows: any call that never
   * left this client (`neverSent`: nothing of it reached etcd, so a
   * transaction cannot have applied); an `idempotent` one (a read, a revoke)
   * after any UNAVAILABLE too (a dropped connection, an election's "leader
   * changed"); and a `renewal` (a keep-alive) after those or its deadline,
   * within the keep-alive's own time (`keepAliveOnce`). Any other deadline is
   * not retried: its time is up, and a transaction that ran out of it may
   * have applied (its outcome stays unknown; it is never sent twice). This
   * is how a fleet rides out the loss of one etcd member, or its isolation,
   * without failing the calls that were routed to it (decisions 0034, 0086).
   */
  private async call<T>(what: string, fn: () => Promise<T>, revision?: number, resend: Resend = 'unsent'): Promise<T> {
    for (let attempt = 0; ; attempt++) {
      if (this.closed) throw closedError();
      try {
        return await fn();
      } catch (e) {
        const again = attempt < this.failovers && !this.closed && e instanceof Error
          && (neverSent(e) || (resend !== 'unsent' && isUnavailable(e)) || (resend === 'renewal' && e instanceof GRPCDeadlineExceededError));
        if (!again) throw toStoreError(e, what, revision);
      }
    }
  }

  /** etcd cancels a watch on a compacted start without saying so plainly: probe a read at the resume point. */
  private async explainWatchFailure(prefix: string, err: unknown, resume: number): Promise<SplitfleetError> {
    try {
      await this.call('probe', () =>
        this.client.kv.range({ key: prefixStart(prefix), range_end: prefixEnd(prefix), revision: resume, count_only: true }),
      resume);
    } catch (probe) {
      if (isCompactedError(probe)) return new CompactedError(resume, err);
    }
    return toStoreError(err, `watch '${prefix}'`);
  }
}

/**
 * THE conversion from an etcd/etcd3/gRPC failure to a SplitfleetError: etcd3's
 * error class is recognised here, and etcd-errors.ts decides the code,
 * retryability and message from it and etcd's message.
 */
export function toStoreError(err: unknown, what: string, revision?: number): SplitfleetError {
  if (err instanceof SplitfleetError) return err;
  const e = err instanceof Error ? err : new Error(String(err));
  return etcdFailureToStoreError(e, failureClass(e), what, revision);
}

/** gRPC UNAVAILABLE, as etcd3 casts it (unary calls) or as a stream reports it (code 14). */
function isUnavailable(e: Error): boolean {
  return e instanceof GRPCUnavailableError || (e as { code?: unknown }).code === 14;
}

/** Which of the etcd3 error classes the conversion tells apart `e` is (they are disjoint). */
function failureClass(e: Error): EtcdFailureClass {
  if (e instanceof ClientClosedError) return 'closed';
  if (e instanceof EtcdLeaseInvalidError) return 'lease-invalid';
  if (e instanceof GRPCDeadlineExceededError) return 'deadline';
  if (e instanceof EtcdPermissionDeniedError) return 'permission-denied';
  if (e instanceof EtcdAuthenticationFailedError || e instanceof EtcdInvalidAuthTokenError || e instanceof GRPCUnauthenticatedError) {
    return 'unauthenticated';
  }
  if (e instanceof GRPCInvalidArgumentError) return 'invalid-argument';
  return 'other';
}

/**
 * Which failures `call` sends a request again after, on another member:
 * `unsent` only those that prove it never left (any request, a transaction
 * included); `idempotent` (it can be sent twice without harm) also
 * UNAVAILABLE; `renewal` (a keep-alive, under its own deadlines) also a
 * deadline.
 */
type Resend = 'unsent' | 'idempotent' | 'renewal';

function fromKv(kv: IKeyValue): KeyValue {
  const out: KeyValue = {
    key: kv.key.toString(),
    value: kv.value.toString(),
    createRevision: Number(kv.create_revision),
    modRevision: Number(kv.mod_revision),
  };
  if (kv.lease && kv.lease !== '0') out.lease = String(kv.lease);
  return out;
}

function toWatchEvent(ev: IEvent): WatchEvent {
  const out: WatchEvent = { type: ev.type === 'Put' ? 'put' : 'delete', key: ev.kv.key.toString(), modRevision: Number(ev.kv.mod_revision) };
  if (out.type === 'put') {
    out.value = ev.kv.value.toString();
    out.createRevision = Number(ev.kv.create_revision);
    if (ev.kv.lease && ev.kv.lease !== '0') out.lease = String(ev.kv.lease);
  }
  if (ev.prev_kv) out.prevValue = ev.prev_kv.value.toString();
  return out;
}

function toCompare(c: Compare): ICompare {
  const base = { key: Buffer.from(c.key), result: CompareResult.Equal };
  switch (c.target) {
    case 'absent':
      return { ...base, target: CompareTarget.Create, create_revision: 0 };
    case 'modRevision':
      return { ...base, target: CompareTarget.Mod, mod_revision: c.equals };
    case 'value':
      return { ...base, target: CompareTarget.Value, value: Buffer.from(c.equals) };
    case 'lease':
      return { ...base, target: CompareTarget.Lease, lease: c.equals };
  }
}

function toRequestOp(o: Op): IRequestOp {
  const key = Buffer.from(o.key);
  switch (o.op) {
    case 'put':
      return { request_put: o.lease === undefined ? { key, value: Buffer.from(o.value) } : { key, value: Buffer.from(o.value), lease: o.lease } };
    case 'delete':
      return { request_delete_range: { key } };
    case 'get':
      return { request_range: { key } };
  }
}
