/**
 * `EtcdStore`: the store contract over a real etcd (v3 API), through etcd3.
 * This is the only file that imports etcd3; none of its types appear in an
 * exported signature, and every etcd failure becomes a `SplitfleetError` in
 * `toStoreError`, the one conversion function.
 *
 * Invariants: revisions are converted to numbers (they fit in 2^53), lease ids
 * stay strings (they do not); over-limit transactions are refused before they
 * are sent (BaseStore); etcd3's global retry is disabled, because retrying a
 * transaction whose first attempt applied would report a race we actually won
 * (callers retry on `retryable` errors instead); every unary call has a
 * deadline of `opTimeoutMs`; a watch resumes after any break from the last
 * revision it delivered + 1, so nothing is lost or delivered twice.
 */

import {
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
  isRecoverableError,
  type ICompare,
  type IEvent,
  type IKeyValue,
  type IOptions,
  type IRangeRequest,
  type IRequestOp,
  type IWatchResponse,
} from 'etcd3';
import { SplitfleetError } from '../errors.js';
import {
  CompactedError, isCompactedError, type Compare, type KeyValue, type ListOptions, type KeyRange, type ListPage, type Op, type Txn, type TxnResult, type WatchEvent, type WatchHandle, type WatchOptions,
  compareKeys,
} from './store.js';
import { BaseStore, checkTtl } from './base.js';

/** How to reach etcd. TLS and auth are passed to etcd3 unchanged. */
export interface EtcdStoreOptions {
  /** Client URLs, e.g. `['https://etcd-0:2379']`. */
  endpoints: string[] | string;
  /** TLS material (PEM buffers): CA, and for client-certificate auth the key and chain. */
  credentials?: { rootCertificate: Buffer; privateKey?: Buffer; certChain?: Buffer };
  /** etcd user/password authentication. */
  auth?: { username: string; password: string };
  /** Deadline of one store round trip, in ms (the spec's `op_timeout`); default 10 000. */
  opTimeoutMs?: number;
  /** Longest pause between watch reconnection attempts, in ms; default 2 000. */
  watchRetryMaxMs?: number;
  /**
   * gRPC keepalive: ping an idle connection every `keepAliveMs` and drop it
   * when no answer comes within `keepAliveTimeoutMs`, so a connection whose
   * packets vanish (a load balancer's idle timeout, a half-open TCP link) is
   * noticed and re-dialled instead of silently starving watches. Defaults
   * 6 000 and 4 000: together a third of the default 30 s lease, and above
   * etcd's floor of 5 000 (`--grpc-keepalive-min-time`; pings more frequent
   * than that, or a hair's breadth from it, earn strikes and then a GOAWAY).
   * 0 turns keepalive off.
   */
  keepAliveMs?: number;
  keepAliveTimeoutMs?: number;
}

/** Watch events handed on per turn of the event loop (see `watch`). */
const DELIVERY_CHUNK = 500;

/** etcd's default `--grpc-keepalive-min-time`: pings more frequent than this are refused by the server. */
export const ETCD_KEEPALIVE_MIN_MS = 5_000;

type FaultHandling = Required<NonNullable<IOptions['faultHandling']>>;

/** etcd3's global policy, minus the retry: run the call once. */
const RUN_ONCE = {
  execute: <T>(fn: (context: { signal: AbortSignal }) => PromiseLike<T> | T): Promise<T> =>
    Promise.resolve().then(() => fn({ signal: new AbortController().signal })),
  onSuccess: () => ({ dispose: () => undefined }),
  onFailure: () => ({ dispose: () => undefined }),
} as unknown as FaultHandling['global'];

/** How long a host that failed three calls in a row is skipped, when there are others to try. */
const HOST_COOLDOWN_MS = 1000;

/**
 * etcd3's per-host policy. Its default circuit breaker refuses every call to a
 * host for 5 s after three failures in a row: with one endpoint that turns a
 * sub-second etcd restart into 5 s of refusals (every session with a shorter
 * lease is lost), and in a cluster an election that fails calls on every
 * member blacks them all out. So: one endpoint, no breaker (skipping the only
 * host never helps); several, a host is skipped for HOST_COOLDOWN_MS after
 * three connection-level failures in a row, so calls go to members that answer.
 */
function hostPolicy(endpoints: number): FaultHandling['host'] {
  if (endpoints === 1) return () => RUN_ONCE;
  return () => {
    let failures = 0;
    let skipUntil = 0;
    return {
      execute: async <T>(fn: (context: { signal: AbortSignal }) => PromiseLike<T> | T): Promise<T> => {
        if (Date.now() < skipUntil) throw new Error(`host skipped for ${HOST_COOLDOWN_MS} ms after repeated failures`);
        try {
          const result = await fn({ signal: new AbortController().signal });
          failures = 0;
          return result;
        } catch (e) {
          if (e instanceof Error && isRecoverableError(e) && ++failures >= 3) {
            failures = 0;
            skipUntil = Date.now() + HOST_COOLDOWN_MS;
          }
          throw e;
        }
      },
      onSuccess: () => ({ dispose: () => undefined }),
      onFailure: () => ({ dispose: () => undefined }),
    } as unknown as ReturnType<FaultHandling['host']>;
  };
}

/** Doubling reconnection delay for watches, from 100 ms up to `max`. */
function watchBackoff(max: number): FaultHandling['watchBackoff'] {
  const step = (duration: number): FaultHandling['watchBackoff'] => ({
    duration,
    next: () => step(Math.min(max, duration * 2)),
  });
  return { duration: 100, next: () => step(100) };
}

/** The store over etcd. See the file header for its invariants. */
export class EtcdStore extends BaseStore {
  // Non-enumerable (set in the constructor): the client holds the password and private key, which must not
  // show up when a store is logged, inspected or serialised.
  private declare readonly client: Etcd3;
  private readonly opTimeoutMs: number;
  private readonly watchClosers = new Set<() => Promise<void>>();
  private closed = false;

  /** Connects lazily: the first call opens the connection. */
  constructor(options: EtcdStoreOptions) {
    super();
    const endpoints = typeof options.endpoints === 'string' ? [options.endpoints] : options.endpoints;
    if (endpoints.length === 0) throw new SplitfleetError('INVALID_CONFIG', 'etcd endpoints must name at least one client URL');
    this.opTimeoutMs = options.opTimeoutMs ?? 10_000;
    if (!(this.opTimeoutMs > 0)) throw new SplitfleetError('INVALID_CONFIG', `opTimeoutMs must be > 0, got ${this.opTimeoutMs}`);
    const keepAliveMs = options.keepAliveMs ?? 6_000;
    const keepAliveTimeoutMs = options.keepAliveTimeoutMs ?? 4_000;
    if (!Number.isSafeInteger(keepAliveMs) || (keepAliveMs !== 0 && keepAliveMs < ETCD_KEEPALIVE_MIN_MS)) {
      throw new SplitfleetError('INVALID_CONFIG', `keepAliveMs: must be 0 (off) or an integer ≥ ${ETCD_KEEPALIVE_MIN_MS}, etcd's default --grpc-keepalive-min-time: it answers more frequent pings with GOAWAY (got ${keepAliveMs})`);
    }
    if (!Number.isSafeInteger(keepAliveTimeoutMs) || keepAliveTimeoutMs < 1) {
      throw new SplitfleetError('INVALID_CONFIG', `keepAliveTimeoutMs: must be an integer ≥ 1 (got ${keepAliveTimeoutMs})`);
    }
    const etcdOptions: IOptions = {
      hosts: endpoints,
      defaultCallOptions: (ctx) => (ctx.isStream ? {} : { deadline: Date.now() + this.opTimeoutMs }),
      grpcOptions: {
        // A listing page of large records may exceed gRPC's 4 MiB default.
        'grpc.max_receive_message_length': 256 * 1024 * 1024,
        // Subchannels of this client's own, not grpc-js's process-wide pool. grpc-js has no
        // connect timeout: a connection accepted into a black hole (a proxy or middlebox that
        // drops a flow's bytes without a reset) stays CONNECTING forever, and keepalive only
        // watches established connections (grpc/grpc-node#2785). etcd3 resets its service
        // clients on a deadline; with the shared pool the new clients got the same stuck
        // subchannel back, so a member behind it never recovered (chaos proxy-blackhole).
        'grpc.use_local_subchannel_pool': 1,
        ...(keepAliveMs > 0
          ? {
            'grpc.keepalive_time_ms': keepAliveMs,
            'grpc.keepalive_timeout_ms': keepAliveTimeoutMs,
            // Pings go while a call or a watch is open (a watch is a stream, and a session behind a
            // dead connection keeps calling): etcd answers pings on an idle connection with
            // GOAWAY (too many pings), and grpc-js then doubles its interval each time.
            'grpc.keepalive_permit_without_calls': 0,
          }
          : {}),
      },
      faultHandling: { global: RUN_ONCE, host: hostPolicy(endpoints.length), watchBackoff: watchBackoff(options.watchRetryMaxMs ?? 2_000) },
    };
    if (options.credentials) etcdOptions.credentials = options.credentials;
    if (options.auth) etcdOptions.auth = { username: options.auth.username, password: options.auth.password };
    let client: Etcd3;
    try {
      client = new Etcd3(etcdOptions);
    } catch (e) {
      // Node's TLS refused the key or certificate (unparseable PEM, key/certificate mismatch); its message never quotes them.
      throw new SplitfleetError('INVALID_CONFIG', `credentials: the TLS key or certificates are unusable (${e instanceof Error ? e.message : String(e)})`, { cause: e });
    }
    Object.defineProperty(this, 'client', { value: client, enumerable: false });
  }

  /** Reads one key; undefined when missing. */
  async get(key: string): Promise<KeyValue | undefined> {
    const res = await this.call(`get '${key}'`, () => this.client.kv.range({ key: Buffer.from(key) }));
    const kv = res.kvs[0];
    return kv && fromKv(kv);
  }

  /** Reads one page under `prefix` (etcd range with limit), now or at a past revision. */
  async list(prefix: string, options: ListOptions = {}): Promise<ListPage> {
    const { limit, startAfter, revision } = options;
    if (limit !== undefined && (!Number.isInteger(limit) || limit < 1)) {
      throw new SplitfleetError('INVALID_INPUT', `list limit must be a positive integer, got ${limit}`);
    }
    let start = prefixStart(prefix);
    if (options.rangeStart !== undefined && compareKeys(options.rangeStart, prefix) > 0) start = Buffer.from(options.rangeStart);
    if (startAfter !== undefined && compareKeys(startAfter, prefix) >= 0 && (options.rangeStart === undefined || compareKeys(startAfter, options.rangeStart) >= 0)) {
      start = Buffer.concat([Buffer.from(startAfter), Buffer.from([0])]);
    }
    const req: IRangeRequest = { key: start, range_end: rangeEndOf(prefix, options) };
    if (limit !== undefined) req.limit = limit;
    if (revision !== undefined) req.revision = revision;
    const res = await this.call(`list '${prefix}'`, () => this.client.kv.range(req), revision);
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
    return this.call('grant lease', () => this.client.lease(ttlSeconds, { autoKeepAlive: false }).grant());
  }

  /** One keep-alive round trip on etcd's stream; throws LEASE_LOST when etcd answers TTL 0. */
  async keepAliveOnce(id: string): Promise<{ ttl: number }> {
    const ttl = await this.call(`keep lease ${id} alive`, async () => {
      const stream = await this.client.leaseClient.leaseKeepAlive();
      return new Promise<number>((resolve, reject) => {
        const timer = setTimeout(() => {
          stream.cancel();
          reject(new SplitfleetError('TIMEOUT', `keep-alive of lease ${id} got no answer within ${this.opTimeoutMs} ms`, { retryable: true }));
        }, this.opTimeoutMs);
        stream.on('data', (res) => {
          clearTimeout(timer);
          stream.end();
          resolve(Number(res.TTL));
        });
        stream.on('error', (err) => {
          clearTimeout(timer);
          reject(err);
        });
        stream.write({ ID: id });
      });
    });
    if (!(ttl > 0)) throw new SplitfleetError('LEASE_LOST', `lease ${id} no longer exists on etcd (expired or revoked)`);
    return { ttl };
  }

  /** Revokes a lease and its keys; a missing lease is not an error. */
  async revokeLease(id: string): Promise<void> {
    try {
      await this.call(`revoke lease ${id}`, () => this.client.leaseClient.leaseRevoke({ ID: id }));
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
    let resolveReady!: () => void;
    let rejectReady!: (e: SplitfleetError) => void;
    const ready = new Promise<void>((res, rej) => {
      resolveReady = res;
      rejectReady = rej;
    });
    ready.catch(() => undefined);
    if (this.closed) {
      rejectReady(closedError());
      return { ready, close: async () => undefined };
    }
    const from = options.fromRevision;
    if (from !== undefined && (!Number.isInteger(from) || from < 1)) {
      throw new SplitfleetError('INVALID_INPUT', `watch fromRevision must be an integer >= 1, got ${from}`);
    }
    let lastSeen = from === undefined ? undefined : from - 1;
    let stopped = false;
    const ranged = options.rangeStart !== undefined || options.rangeEnd !== undefined;
    const rangeStart = options.rangeStart !== undefined && compareKeys(options.rangeStart, prefix) > 0 ? Buffer.from(options.rangeStart) : prefixStart(prefix);
    const builder = (ranged
      ? this.client.watch().inRange({ start: rangeStart, end: rangeEndOf(prefix, options) })
      : this.client.watch().prefix(prefix)).withPreviousKV();
    if (from !== undefined) builder.startRevision(String(from));
    const watcher = builder.watcher();

    watcher.on('connected', (res: IWatchResponse) => {
      if (lastSeen === undefined) lastSeen = Number(res.header.revision);
      resolveReady();
    });
    // Received events wait here and are handed on at most DELIVERY_CHUNK per turn of the event
    // loop: a watch catching up gets up to a thousand revisions in one response, and handing them
    // all on at once would hold the loop (and the session's renewal timer) for as long.
    let queue: IEvent[] = [];
    let head = 0;
    let draining = false;
    const drain = (): void => {
      draining = false;
      let n = 0;
      while (head < queue.length && !stopped) {
        if (n++ === DELIVERY_CHUNK) {
          draining = true;
          setImmediate(drain);
          return;
        }
        options.onEvent(toWatchEvent(queue[head++]!));
      }
      queue = [];
      head = 0;
    };
    watcher.on('data', (res: IWatchResponse) => {
      if (stopped) return;
      const floor = lastSeen ?? 0;
      let seen = floor;
      for (const ev of res.events) {
        const rev = Number(ev.kv.mod_revision);
        if (rev <= floor) continue;
        queue.push(ev);
        seen = Math.max(seen, rev);
      }
      // An empty response is a progress notification: etcd sends them only to caught-up watchers.
      if (res.events.length === 0) seen = Math.max(seen, Number(res.header.revision));
      // The resume point follows what was received: what is queued is delivered from memory.
      lastSeen = seen;
      if (!draining) drain();
    });
    watcher.on('disconnected', () => {
      if (lastSeen !== undefined) watcher.request.start_revision = String(lastSeen + 1);
    });
    watcher.on('error', (err: unknown) => {
      if (stopped) return;
      stopped = true;
      this.watchClosers.delete(close);
      const resume = (lastSeen ?? 0) + 1;
      void this.explainWatchFailure(prefix, err, resume).then((e) => {
        rejectReady(e);
        options.onError?.(e);
      });
    });

    const close = async (): Promise<void> => {
      if (stopped) return;
      stopped = true;
      // Closed before etcd confirmed it: settle `ready` (as snapshotAndWatch does when closed while
      // listing), or whoever awaits it waits forever, and a process with nothing else pending exits.
      resolveReady();
      this.watchClosers.delete(close);
      await withTimeout(watcher.cancel().catch(() => undefined), this.opTimeoutMs);
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

  /** Runs one etcd call, converting any failure in `toStoreError`. */
  private async call<T>(what: string, fn: () => Promise<T>, revision?: number): Promise<T> {
    if (this.closed) throw closedError();
    try {
      return await fn();
    } catch (e) {
      throw toStoreError(e, what, revision);
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
 * THE conversion from an etcd/etcd3/gRPC failure to a SplitfleetError. Store
 * outages, deadlines and unknown etcd errors are retryable; credentials
 * (refused login, denied permission, failed TLS handshake), limits and bad
 * input are not. Messages quote etcd's message, never the credentials.
 */
export function toStoreError(err: unknown, what: string, revision?: number): SplitfleetError {
  if (err instanceof SplitfleetError) return err;
  const e = err instanceof Error ? err : new Error(String(err));
  const msg = e.message;
  const fail = (code: SplitfleetError['code'], text: string, retryable = false) =>
    new SplitfleetError(code, `${what}: ${text} (${msg})`, { retryable, cause: e });
  if (e instanceof ClientClosedError) return fail('CLOSED', 'the etcd store was used after close()');
  if (msg.includes('required revision has been compacted')) return new CompactedError(revision ?? 0, e);
  if (msg.includes('request is too large') || msg.includes('too many operations in txn') || /larger than max/i.test(msg)) {
    return fail('RECORD_TOO_LARGE', 'etcd refused the request as over its size or operation limits');
  }
  if (msg.includes('database space exceeded') || msg.includes('NOSPACE')) {
    // Retryable: nothing is lost (the write did not land), and the fleet resumes by itself once
    // an operator has made room; every writer keeps retrying meanwhile.
    return fail('STORE_FULL', 'etcd is out of space (its NOSPACE alarm is raised) and refuses writes until an operator makes room: '
      + 'compact its history (etcdctl compact <revision>), defragment (etcdctl defrag), then disarm the alarm (etcdctl alarm disarm); '
      + 'see docs/operations.md', true);
  }
  if (e instanceof EtcdLeaseInvalidError || msg.includes('lease not found')) return fail('LEASE_LOST', 'the lease no longer exists');
  if (e instanceof GRPCDeadlineExceededError) return fail('TIMEOUT', 'etcd did not answer before the deadline', true);
  if (e instanceof EtcdPermissionDeniedError) {
    return fail('STORE_UNAVAILABLE', "etcd denied permission: this user's roles do not grant that access to the key");
  }
  if (
    e instanceof EtcdAuthenticationFailedError ||
    e instanceof EtcdInvalidAuthTokenError ||
    e instanceof GRPCUnauthenticatedError ||
    msg.includes('user name is empty') ||
    msg.includes('authentication is not enabled')
  ) {
    return fail('STORE_UNAVAILABLE', 'etcd refused to authenticate this client; check the auth username and password, and that etcd has auth enabled');
  }
  if (e instanceof GRPCInvalidArgumentError || msg.includes('future revision') || msg.includes('duplicate key')) {
    return fail('INVALID_INPUT', 'etcd refused the request as invalid');
  }
  // Certificate problems only: other TLS errors (a reset or EOF mid-handshake) happen when etcd restarts, and are retried.
  if (/certificate|alert unknown ca/i.test(msg)) {
    return fail('STORE_UNAVAILABLE', 'the TLS handshake with etcd failed; check credentials (rootCertificate, and privateKey and certChain if etcd requires client certificates)');
  }
  return fail('STORE_UNAVAILABLE', 'etcd is unreachable or failed the request', true);
}

/** The end of `prefix` narrowed by `range.rangeEnd`, whichever comes first. */
function rangeEndOf(prefix: string, range: KeyRange): Buffer {
  const end = prefixEnd(prefix);
  if (range.rangeEnd === undefined) return end;
  const narrowed = Buffer.from(range.rangeEnd);
  return end.length === 1 && end[0] === 0 ? narrowed : Buffer.compare(narrowed, end) < 0 ? narrowed : end;
}

/** The first key a prefix range starts at (etcd refuses an empty key; "\0" means "from the start"). */
function prefixStart(prefix: string): Buffer {
  return prefix === '' ? Buffer.from([0]) : Buffer.from(prefix);
}

/** The first key after every key that starts with `prefix` (etcd's range_end for a prefix). */
function prefixEnd(prefix: string): Buffer {
  const bytes = Buffer.from(prefix);
  for (let i = bytes.length - 1; i >= 0; i--) {
    if (bytes[i]! < 0xff) {
      const end = Buffer.from(bytes.subarray(0, i + 1));
      end[i]!++;
      return end;
    }
  }
  return Buffer.from([0]);
}

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

function closedError(): SplitfleetError {
  return new SplitfleetError('CLOSED', 'the etcd store was used after close()');
}

function withTimeout<T>(p: Promise<T>, ms: number): Promise<T | void> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([p, new Promise<void>((r) => (timer = setTimeout(r, ms)))]).finally(() => clearTimeout(timer));
}
