/**
 * The knobs of substrate.md, their defaults, and the one function that turns
 * a user's partial options into a validated `Config`; the checks of each rule,
 * and their wording, are config-validation.ts's.
 *
 * Invariants of a resolved Config (each refused with the rule spelled out):
 * - every duration is a safe integer in milliseconds, never negative, and at
 *   most MAX_TIMER_MS (Node clamps longer timers to 1 ms, which would turn a
 *   long delay into none at all);
 * - leaseDurationMs is a whole number of seconds ≥ 1 s (etcd TTLs are seconds);
 * - 0 < opTimeoutMs < leaseDurationMs, and drainDeadlineMs ≥ opTimeoutMs;
 * - maxInFlight ≥ 1, prefetch ≥ 0 (default maxInFlight), maxAttempts ≥ 1,
 *   rebalanceDelayMs ≥ 0 (0 = reassign at once);
 * - heartbeatTimeoutMs is absent (off) or an integer ≥ opTimeoutMs;
 * - retryBackoff: 0 ≤ initialMs ≤ maxMs ≤ MAX_TIMER_MS, 1 ≤ factor ≤ 100, 0 ≤ jitter ≤ 1;
 * - unknown option names are refused, so a typo never silently means "default".
 *
 * Pure: no I/O, no clock. Every failure is SplitfleetError('INVALID_CONFIG').
 */

import { checkOptions, describeValue, MAX_RETRY_FACTOR, MAX_TIMER_MS } from './config-validation.js';
import { SplitfleetError } from './errors.js';

// The rules' limits, which protocol/ bounds its records and retry waits by.
export { MAX_RETRY_FACTOR, MAX_TIMER_MS };

/** What a user passes. Durations are milliseconds. */
export interface ConfigOptions {
  /** The job's name: `[A-Za-z0-9._-]{1,128}`. Required. */
  job: string;
  /** This process's stable, unique id (a pod name): `[A-Za-z0-9._-]{1,128}`. Required. */
  instance: string;
  /** Key prefix shared by every job: '/'-separated segments of `[A-Za-z0-9._-]`. Default 'splitfleet'. */
  root?: string;
  /**
   * The job's identity: change it whenever the meaning of split ids changes
   * (source location, planner settings). Default: derived from root and job
   * (see {@link defaultFingerprint}).
   */
  fingerprint?: string;
  /** A dead worker's splits become claimable one lease after its last renewal. Default 30 000. */
  leaseDurationMs?: number;
  /** One store round trip's deadline. Default 10 000. */
  opTimeoutMs?: number;
  /** This instance's lane budget, advertised on its presence key. Default 8. */
  maxInFlight?: number;
  /**
   * Splits named for this instance beyond its lanes (substrate.md, "Prefetch"),
   * advertised on its presence key beside `maxInFlight`: a lane that frees claims
   * the next named split at once instead of waiting for the leader's next
   * decision. 0 is the work-assignment page's model exactly (a worker is named
   * at most `maxInFlight` splits). Default: `maxInFlight` (one per lane;
   * decision 0052).
   */
  prefetch?: number;
  /** Delivery attempts before quarantine. Default 4. */
  maxAttempts?: number;
  /** How long a departed instance's splits are withheld; 0 = reassign at once. Default 20 000. */
  rebalanceDelayMs?: number;
  /** How long a cooperative drain may run before the release is forced. Default 10 000. */
  drainDeadlineMs?: number;
  /** Open plans only: how often the planner runs again. Default 60 000. */
  replanIntervalMs?: number;
  /** The listing backstop behind the watches. Default 30 000. */
  reconcileIntervalMs?: number;
  /**
   * How long `startCoordinator` keeps retrying retryable store failures (etcd
   * unreachable, a timeout, an election in progress) before it rejects with
   * the last one. 0 = fail at the first. Default 60 000.
   */
  startTimeoutMs?: number;
  /**
   * A lane whose handler neither commits nor calls `split.heartbeat()` for
   * this long is aborted (its `signal`, reason HEARTBEAT_TIMEOUT) and then
   * reports a failure (one attempt). Default: off.
   */
  heartbeatTimeoutMs?: number;
  /** How often a lane commits what its handler `advance()`d, in ms. Default 1000. */
  autoCommitMs?: number;
  /**
   * Leader: the least weight a part of a divided split may be left with (decision 0063); a
   * running split is asked to divide only when at least twice this is left. Default: the job's
   * weight over 8 × the fleet's lanes (a part that small can shorten the job by less than an
   * eighth of its lower bound). `Number.MAX_SAFE_INTEGER` asks for no division at all.
   */
  divideMinWeight?: number;
  /**
   * How long a split waits after a failure report before it is offered again
   * (its `notBefore`; protocol/retry-policy.ts). Default 1 s doubling to 5 min, full jitter.
   */
  retryBackoff?: RetryBackoff;
  /**
   * How a new job keeps its splits on the store (decision 0037): 'keys' (two
   * records per split) or 'packed' (pages of up to 1,024 splits; a split has
   * records of its own only while it is assigned, held or departed from its
   * page), for jobs of millions of splits. Fixed when the job is created: a
   * job's plan record says which it is, and that wins. Default 'packed'
   * (decision 0054: it seeds a 1M-split job in seconds where 'keys' takes
   * minutes; an existing job keeps the layout its plan record names).
   */
  layout?: 'keys' | 'packed';
  /**
   * How many buckets a new packed job gets (a power of two, 1 to 65,536):
   * a split's bucket is a hash of its id, and each bucket keeps its own queue
   * pages. Fixed when the first page is written, like the layout. Default:
   * chosen from the first plan's size (about 768 splits a bucket). Give it
   * when a job starts small and grows (an open plan) to millions.
   */
  buckets?: number;
}

/** `retryBackoff`: the wait after the n-th failure is drawn below min(maxMs, initialMs · factor^(n−1)). */
export interface RetryBackoff {
  /** The ceiling of the first wait (ms). */
  initialMs: number;
  /** The ceiling never grows past this (ms). */
  maxMs: number;
  /** How much the ceiling grows per failure. Default 2. */
  factor?: number;
  /** The share of each wait that is random, in [0, 1]: 1 (the default) is full jitter, 0 waits exactly the ceiling. */
  jitter?: number;
}

/** The default retryBackoff: 1 s doubling to 5 min, full jitter. */
export const RETRY_BACKOFF_DEFAULTS: Readonly<Required<RetryBackoff>> = Object.freeze({ initialMs: 1000, maxMs: 300_000, factor: 2, jitter: 1 });

/** A validated configuration: every option present, but heartbeatTimeoutMs (absent when off), buckets and divideMinWeight (absent when not given). */
export type Config = Readonly<Required<Omit<ConfigOptions, 'heartbeatTimeoutMs' | 'buckets' | 'divideMinWeight'>> & Pick<ConfigOptions, 'heartbeatTimeoutMs' | 'buckets' | 'divideMinWeight'> & { retryBackoff: Readonly<Required<RetryBackoff>> }>;

/** The defaults of substrate.md's knob table, in milliseconds. */
export const CONFIG_DEFAULTS = Object.freeze({
  root: 'splitfleet',
  leaseDurationMs: 30_000,
  opTimeoutMs: 10_000,
  maxInFlight: 8,
  maxAttempts: 4,
  rebalanceDelayMs: 20_000,
  drainDeadlineMs: 10_000,
  replanIntervalMs: 60_000,
  reconcileIntervalMs: 30_000,
  startTimeoutMs: 60_000,
  autoCommitMs: 1000,
  layout: 'packed' as 'keys' | 'packed',
});

/** Every option's name: any other is refused (with the nearest of these), so a typo never means "default". */
const KNOWN_OPTIONS: readonly (keyof ConfigOptions)[] = [
  'job', 'instance', 'root', 'fingerprint',
  'leaseDurationMs', 'opTimeoutMs', 'maxInFlight', 'prefetch', 'maxAttempts',
  'rebalanceDelayMs', 'drainDeadlineMs', 'replanIntervalMs', 'reconcileIntervalMs', 'startTimeoutMs',
  'heartbeatTimeoutMs', 'retryBackoff', 'layout', 'buckets', 'divideMinWeight', 'autoCommitMs',
];

/**
 * The fingerprint used when none is given: the job's place in the store.
 * Versioned so that a future change of derivation is a visible mismatch, not
 * a silent collision.
 */
export function defaultFingerprint(root: string, job: string): string {
  return `splitfleet-v1:${root}/${job}`;
}

/**
 * Validates `options`, fills in defaults, and returns a frozen Config.
 * An option given as `undefined` counts as absent.
 *
 * @throws SplitfleetError('INVALID_CONFIG') listing every broken rule, each
 *   as `option: must … (got …)`.
 */
export function resolveConfig(options: ConfigOptions): Config {
  if (typeof options !== 'object' || options === null || Array.isArray(options)) {
    throw new SplitfleetError('INVALID_CONFIG', `options: must be an object (got ${describeValue(options)})`);
  }
  const { problems, job, instance, root, fingerprint, timings: t, retryBackoff, layout, buckets } = checkOptions(
    options as unknown as Record<string, unknown>,
    { names: KNOWN_OPTIONS, defaults: CONFIG_DEFAULTS, retryBackoff: RETRY_BACKOFF_DEFAULTS },
  );
  if (problems.length > 0) {
    throw new SplitfleetError('INVALID_CONFIG', problems.length === 1
      ? problems[0]!
      : `${problems.length} invalid options: ${problems.join('; ')}`);
  }

  return Object.freeze({
    job: job!,
    instance: instance!,
    root,
    fingerprint: fingerprint ?? defaultFingerprint(root, job!),
    leaseDurationMs: t.leaseDurationMs!,
    opTimeoutMs: t.opTimeoutMs!,
    maxInFlight: t.maxInFlight!,
    prefetch: t.prefetch!,
    maxAttempts: t.maxAttempts!,
    rebalanceDelayMs: t.rebalanceDelayMs!,
    drainDeadlineMs: t.drainDeadlineMs!,
    replanIntervalMs: t.replanIntervalMs!,
    reconcileIntervalMs: t.reconcileIntervalMs!,
    startTimeoutMs: t.startTimeoutMs!,
    autoCommitMs: t.autoCommitMs!,
    retryBackoff: retryBackoff!,
    layout: layout as 'keys' | 'packed',
    // Absent when off, so a printed or serialised config reads as what was given.
    ...(t.heartbeatTimeoutMs === undefined ? {} : { heartbeatTimeoutMs: t.heartbeatTimeoutMs }),
    ...(buckets === undefined ? {} : { buckets }),
    ...(t.divideMinWeight === undefined ? {} : { divideMinWeight: t.divideMinWeight }),
  });
}
