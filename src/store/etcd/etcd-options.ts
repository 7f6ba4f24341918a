/**
 * How `EtcdStore` connects: its options, their validation (messages state the
 * rule), the gRPC channel options, and the fault-handling policies handed to
 * etcd3 (run once, skip a failing host when there are others, watch backoff).
 *
 * Must not import etcd3 (only etcd.ts does, STYLE rule 3): the policies are
 * written against the structural shape etcd3 calls, and etcd.ts passes in
 * etcd3's own `isRecoverableError`.
 */
import { SplitfleetError } from '../../errors.js';

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

/**
 * Whether `options` send a password in clear: auth without TLS material and no `https://` endpoint
 * (etcd3 then dials without TLS, and the password goes over the wire as it is).
 */
export function sendsPasswordInClear(options: Pick<EtcdStoreOptions, 'endpoints' | 'credentials' | 'auth'>): boolean {
  if (options.auth === undefined || options.credentials !== undefined) return false;
  const endpoints = typeof options.endpoints === 'string' ? [options.endpoints] : options.endpoints;
  return !endpoints.some((e) => e.startsWith('https:'));
}

/** etcd's default `--grpc-keepalive-min-time`: pings more frequent than this are refused by the server. */
export const ETCD_KEEPALIVE_MIN_MS = 5_000;

/** The options with defaults applied, validated. */
export interface EtcdSettings {
  endpoints: string[];
  opTimeoutMs: number;
  watchRetryMaxMs: number;
  keepAliveMs: number;
  keepAliveTimeoutMs: number;
}

/** Applies the defaults and refuses impossible values (INVALID_CONFIG). Credentials are not looked at here. */
export function resolveEtcdSettings(options: EtcdStoreOptions): EtcdSettings {
  const endpoints = typeof options.endpoints === 'string' ? [options.endpoints] : options.endpoints;
  if (endpoints.length === 0) throw new SplitfleetError('INVALID_CONFIG', 'etcd endpoints must name at least one client URL');
  const opTimeoutMs = options.opTimeoutMs ?? 10_000;
  if (!(opTimeoutMs > 0)) throw new SplitfleetError('INVALID_CONFIG', `opTimeoutMs must be > 0, got ${opTimeoutMs}`);
  const keepAliveMs = options.keepAliveMs ?? 6_000;
  const keepAliveTimeoutMs = options.keepAliveTimeoutMs ?? 4_000;
  if (!Number.isSafeInteger(keepAliveMs) || (keepAliveMs !== 0 && keepAliveMs < ETCD_KEEPALIVE_MIN_MS)) {
    throw new SplitfleetError('INVALID_CONFIG', `keepAliveMs: must be 0 (off) or an integer ≥ ${ETCD_KEEPALIVE_MIN_MS}, etcd's default --grpc-keepalive-min-time: it answers more frequent pings with GOAWAY (got ${keepAliveMs})`);
  }
  if (!Number.isSafeInteger(keepAliveTimeoutMs) || keepAliveTimeoutMs < 1) {
    throw new SplitfleetError('INVALID_CONFIG', `keepAliveTimeoutMs: must be an integer ≥ 1 (got ${keepAliveTimeoutMs})`);
  }
  return { endpoints, opTimeoutMs, watchRetryMaxMs: options.watchRetryMaxMs ?? 2_000, keepAliveMs, keepAliveTimeoutMs };
}

/** The gRPC channel options of one client. */
export function grpcChannelOptions(settings: EtcdSettings): Record<string, number> {
  return {
    // A listing page of large records may exceed gRPC's 4 MiB default.
    'grpc.max_receive_message_length': 256 * 1024 * 1024,
    // Subchannels of this client's own, not grpc-js's process-wide pool. grpc-js has no
    // connect timeout: a connection accepted into a black hole (a proxy or middlebox that
    // drops a flow's bytes without a reset) stays CONNECTING forever, and keepalive only
    // watches established connections (grpc/grpc-node#2785). etcd3 resets its service
    // clients on a deadline; with the shared pool the new clients got the same stuck
    // subchannel back, so a member behind it never recovered (chaos proxy-blackhole).
    'grpc.use_local_subchannel_pool': 1,
    ...(settings.keepAliveMs > 0
      ? {
        'grpc.keepalive_time_ms': settings.keepAliveMs,
        'grpc.keepalive_timeout_ms': settings.keepAliveTimeoutMs,
        // Pings go while a call or a watch is open (a watch is a stream, and a session behind a
        // dead connection keeps calling): etcd answers pings on an idle connection with
        // GOAWAY (too many pings), and grpc-js then doubles its interval each time.
        'grpc.keepalive_permit_without_calls': 0,
      }
      : {}),
  };
}

/** The part of a cockatiel policy that etcd3 calls. */
export interface CallPolicy {
  execute<T>(fn: (context: { signal: AbortSignal }) => PromiseLike<T> | T): Promise<T>;
  onSuccess(): { dispose(): void };
  onFailure(): { dispose(): void };
}

/** A reconnection delay and the one after it (cockatiel's IBackoff, structurally). */
export interface Backoff {
  readonly duration: number;
  next(): Backoff;
}

const noListener = () => ({ dispose: () => undefined });

/** etcd3's global policy, minus the retry: run the call once. Retrying a transaction whose first attempt applied would report a race we actually won. */
export const RUN_ONCE: CallPolicy = {
  execute: <T>(fn: (context: { signal: AbortSignal }) => PromiseLike<T> | T): Promise<T> =>
    Promise.resolve().then(() => fn({ signal: new AbortController().signal })),
  onSuccess: noListener,
  onFailure: noListener,
};

/** How long a host that failed three calls in a row is skipped, when there are others to try. */
export const HOST_COOLDOWN_MS = 1000;

/** The longest a host that refuses connections is skipped for (its cooldown doubles from HOST_COOLDOWN_MS up to this). */
export const HOST_COOLDOWN_MAX_MS = 8000;

/**
 * Whether `e` proves that the request never left this client: gRPC had no
 * connection to the host to send it on (a member that is down refuses the
 * connection: grpc-js fails the call at once with "No connection
 * established"), or the host policy skipped the host. Such a call can be sent
 * to another member whatever it is, a transaction included: nothing of it
 * reached etcd, so it cannot have applied.
 */
export function neverSent(e: Error): boolean {
  return e.message.includes('No connection established') || e.message.includes(HOST_SKIPPED);
}

const HOST_SKIPPED = 'host skipped';

/**
 * Whether `e` says that a call got no answer in time: its deadline passed
 * (gRPC DEADLINE_EXCEEDED, code 4: a unary call's, or a keep-alive stream's)
 * or the member gave up waiting for its cluster (etcd's "request timed out":
 * no quorum). Such a call was sent: a transaction may have applied.
 */
export function timedOut(e: Error): boolean {
  return (e as { code?: unknown }).code === 4 || /DEADLINE_EXCEEDED|Deadline exceeded|etcdserver: request timed out/.test(e.message);
}

/**
 * How a call to a host failed at the connection level: it never left this
 * client (`neverSent`), it got no answer before its deadline, or anything
 * else (a reset, an election's "leader changed").
 */
export type HostFailure = 'refused' | 'timed-out' | 'failed';

/**
 * How the members of one client's endpoint list have been answering, shared
 * by their host policies: a call goes to a host in the best standing there is
 * (answering; else failing or silent; else refusing connections), never to a
 * worse one while a better one exists, and never nowhere (when every host is
 * in the same standing, each is tried).
 *
 * A host that refused a connection (`neverSent`) is set aside at once for
 * HOST_COOLDOWN_MS, doubling while it keeps refusing, up to
 * HOST_COOLDOWN_MAX_MS: a member that died (SIGKILL, a rolling upgrade)
 * stops costing calls within one call, and one that comes back is tried
 * again within 8 s. A host that let a call run out its deadline is set aside
 * at once too, behind any host that answers but ahead of one that refuses
 * connections, for a cooldown that doubles the same way while its calls keep
 * timing out: a member cut off from its peers accepts connections and
 * answers nothing (no quorum), and every call sent there costs a whole
 * deadline (decision 0086). Three other connection-level failures in a row (a
 * reset, an election's "leader changed") set it aside for HOST_COOLDOWN_MS
 * in that middle standing. One answered call restores a host.
 */
export class HostHealth {
  private readonly hosts = new Map<string, { standing: 0 | 1 | 2; until: number; failures: number; refusals: number; timeouts: number }>();

  constructor(private readonly now: () => number = Date.now) {}

  /** 0 answering, 1 set aside after failed or timed-out calls, 2 set aside after refused connections. */
  standing(host: string): number {
    const h = this.hosts.get(host);
    return h === undefined || h.until <= this.now() ? 0 : h.standing;
  }

  /** Whether a call should pass `host` by: another host stands better. */
  skip(host: string): boolean {
    const mine = this.standing(host);
    if (mine === 0) return false;
    for (const other of this.hosts.keys()) if (other !== host && this.standing(other) < mine) return true;
    return false;
  }

  /** Registers a host (so that `skip` knows it stands well before it was ever called). */
  add(host: string): void {
    if (!this.hosts.has(host)) this.hosts.set(host, { standing: 0, until: 0, failures: 0, refusals: 0, timeouts: 0 });
  }

  succeeded(host: string): void {
    this.hosts.set(host, { standing: 0, until: 0, failures: 0, refusals: 0, timeouts: 0 });
  }

  /** A call to `host` failed at the connection level, as `how` says. */
  failed(host: string, how: HostFailure): void {
    this.add(host);
    const h = this.hosts.get(host)!;
    const cooldown = (n: number) => Math.min(HOST_COOLDOWN_MAX_MS, HOST_COOLDOWN_MS * 2 ** Math.min(n, 16));
    if (how === 'refused') {
      this.hosts.set(host, { standing: 2, until: this.now() + cooldown(h.refusals), failures: 0, refusals: h.refusals + 1, timeouts: h.timeouts });
    } else if (h.standing === 2 && h.until > this.now()) {
      // Refusing connections still: a failure of a call sent to it anyway does not lift it.
    } else if (how === 'timed-out') {
      this.hosts.set(host, { standing: 1, until: this.now() + cooldown(h.timeouts), failures: 0, refusals: h.refusals, timeouts: h.timeouts + 1 });
    } else if (++h.failures >= 3) {
      this.hosts.set(host, { standing: 1, until: this.now() + HOST_COOLDOWN_MS, failures: 0, refusals: h.refusals, timeouts: h.timeouts });
    }
  }
}

/**
 * etcd3's per-host policy. Its default circuit breaker refuses every call to a
 * host for 5 s after three failures in a row: with one endpoint that turns a
 * sub-second etcd restart into 5 s of refusals (every session with a shorter
 * lease is lost), and in a cluster an election that fails calls on every
 * member blacks them all out. So: one endpoint, no breaker (skipping the only
 * host never helps); several, the hosts share a `HostHealth` and a call
 * passes a host by when another stands better (etcd3 then tries the next
 * host), so calls go to members that answer (decisions 0034 and 0086; a
 * call that ran out its deadline sets its host aside at once). A stream's
 * opening is not an answer (its failure comes later, through etcd3's
 * `markFailed`, which runs this policy with a function that throws).
 */
export function hostPolicy(endpoints: number, isRecoverable: (e: Error) => boolean, health = new HostHealth()): (host: string) => CallPolicy {
  if (endpoints === 1) return () => RUN_ONCE;
  return (host: string) => {
    health.add(host);
    return {
      execute: async <T>(fn: (context: { signal: AbortSignal }) => PromiseLike<T> | T): Promise<T> => {
        if (health.skip(host)) throw new Error(`${HOST_SKIPPED}: ${host} failed its last calls and another member answers`);
        try {
          const result = fn({ signal: new AbortController().signal });
          const value = await result;
          if (isPromiseLike(result)) health.succeeded(host);
          return value;
        } catch (e) {
          if (e instanceof Error && (neverSent(e) || isRecoverable(e))) health.failed(host, neverSent(e) ? 'refused' : timedOut(e) ? 'timed-out' : 'failed');
          throw e;
        }
      },
      onSuccess: noListener,
      onFailure: noListener,
    };
  };
}

function isPromiseLike(v: unknown): v is PromiseLike<unknown> {
  return typeof v === 'object' && v !== null && typeof (v as { then?: unknown }).then === 'function';
}

/** Doubling reconnection delay for watches, from 100 ms up to `max`. */
export function watchBackoff(max: number): Backoff {
  const step = (duration: number): Backoff => ({
    duration,
    next: () => step(Math.min(max, duration * 2)),
  });
  return { duration: 100, next: () => step(100) };
}
