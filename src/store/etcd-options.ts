/**
 * How `EtcdStore` connects: its options, their validation (messages state the
 * rule), the gRPC channel options, and the fault-handling policies handed to
 * etcd3 (run once, skip a failing host when there are others, watch backoff).
 *
 * Must not import etcd3 (only etcd.ts does, STYLE rule 3): the policies are
 * written against the structural shape etcd3 calls, and etcd.ts passes in
 * etcd3's own `isRecoverableError`.
 */
import { SplitfleetError } from '../errors.js';

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

/**
 * etcd3's per-host policy. Its default circuit breaker refuses every call to a
 * host for 5 s after three failures in a row: with one endpoint that turns a
 * sub-second etcd restart into 5 s of refusals (every session with a shorter
 * lease is lost), and in a cluster an election that fails calls on every
 * member blacks them all out. So: one endpoint, no breaker (skipping the only
 * host never helps); several, a host is skipped for HOST_COOLDOWN_MS after
 * three connection-level failures (`isRecoverable`) in a row, so calls go to
 * members that answer.
 */
export function hostPolicy(endpoints: number, isRecoverable: (e: Error) => boolean): () => CallPolicy {
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
          if (e instanceof Error && isRecoverable(e) && ++failures >= 3) {
            failures = 0;
            skipUntil = Date.now() + HOST_COOLDOWN_MS;
          }
          throw e;
        }
      },
      onSuccess: noListener,
      onFailure: noListener,
    };
  };
}

/** Doubling reconnection delay for watches, from 100 ms up to `max`. */
export function watchBackoff(max: number): Backoff {
  const step = (duration: number): Backoff => ({
    duration,
    next: () => step(Math.min(max, duration * 2)),
  });
  return { duration: 100, next: () => step(100) };
}
