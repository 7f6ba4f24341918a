/**
 * The knobs of substrate.md, their defaults, and the one function that turns
 * a user's partial options into a validated `Config`.
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

import { SplitfleetError } from './errors.js';

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

/** The largest retryBackoff.factor: past it the ceiling reaches maxMs within a step or two anyway. */
export const MAX_RETRY_FACTOR = 100;

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

/** Longest duration a Node timer honours (2^31 − 1 ms, about 24.8 days). */
export const MAX_TIMER_MS = 2_147_483_647;

const KNOWN_OPTIONS: readonly (keyof ConfigOptions)[] = [
  'job', 'instance', 'root', 'fingerprint',
  'leaseDurationMs', 'opTimeoutMs', 'maxInFlight', 'prefetch', 'maxAttempts',
  'rebalanceDelayMs', 'drainDeadlineMs', 'replanIntervalMs', 'reconcileIntervalMs', 'startTimeoutMs',
  'heartbeatTimeoutMs', 'retryBackoff', 'layout', 'buckets', 'divideMinWeight', 'autoCommitMs',
];

const NAME = /^[A-Za-z0-9._-]{1,128}$/;
const ROOT = /^[A-Za-z0-9._-]+(\/[A-Za-z0-9._-]+)*$/;
const MAX_ROOT_LENGTH = 256;
const MAX_FINGERPRINT_LENGTH = 1024;
// \p{Cc}: C0 controls, DEL and C1 controls.
const CONTROL = /\p{Cc}/u;

/**
 * The fingerprint used when none is given: the job's place in the store.
 * Versioned so that a future change of derivation is a visible mismatch, not
 * a silent collision.
 */
export function defaultFingerprint(root: string, job: string): string {
  return `splitfleet-v1:${root}/${job}`;
}

/** A refused value as a config error quotes it: a string in quotes, a primitive as itself, anything else by its type. */
function describeValue(v: unknown): string {
  if (typeof v === 'string') return JSON.stringify(v);
  if (typeof v === 'number' || typeof v === 'boolean' || typeof v === 'bigint' || v === undefined || v === null) {
    return String(v);
  }
  return typeof v;
}

function editDistance(a: string, b: string): number {
  const row = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    let diag = row[0]!;
    row[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const up = row[j]!;
      row[j] = Math.min(up + 1, row[j - 1]! + 1, diag + (a[i - 1] === b[j - 1] ? 0 : 1));
      diag = up;
    }
  }
  return row[b.length]!;
}

function suggestion(name: string): string {
  let best: string | undefined;
  let bestD = Infinity;
  for (const known of KNOWN_OPTIONS) {
    const d = editDistance(name.toLowerCase(), known.toLowerCase());
    if (d < bestD) { bestD = d; best = known; }
  }
  return best !== undefined && bestD <= 3 ? ` (did you mean ${best}?)` : '';
}

/**
 * Validates `options`, fills in defaults, and returns a frozen Config.
 * An option given as `undefined` counts as absent.
 *
 * @throws SplitfleetError('INVALID_CONFIG') listing every broken rule, each
 *   as `option: must … (got …)`.
 */
export function resolveConfig(options: ConfigOptions): Config {
  // Each step below adds to one list of problems, in option order, so that a refusal names every
  // broken option at once, not only the first.
  if (typeof options !== 'object' || options === null || Array.isArray(options)) {
    throw new SplitfleetError('INVALID_CONFIG', `options: must be an object (got ${describeValue(options)})`);
  }
  const given = options as unknown as Record<string, unknown>;
  const problems: string[] = [];

  checkKnownOptions(given, problems);
  const job = resolveName(given, 'job', problems);
  const instance = resolveName(given, 'instance', problems);
  const root = resolveRoot(given.root, problems);
  const fingerprint = resolveFingerprint(given.fingerprint, problems);
  const t = resolveTimings(given, problems);
  const retryBackoff = resolveRetryBackoff(given.retryBackoff, problems);
  const layout = given.layout ?? CONFIG_DEFAULTS.layout;
  if (layout !== 'keys' && layout !== 'packed') problems.push(`layout: must be 'keys' or 'packed' (got ${describeValue(layout)})`);
  const buckets = resolveBuckets(given.buckets, layout, problems);
  checkCombinations(t, problems);

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

/** protocol/keys.ts MAX_BUCKETS (config sits below protocol/, so the number is repeated; config.test.ts holds them equal). */
const MAX_BUCKETS = 65536;

/** `buckets`: absent, or a power of two 1 to MAX_BUCKETS for a packed job. */
function resolveBuckets(v: unknown, layout: unknown, problems: string[]): number | undefined {
  if (v === undefined) return undefined;
  if (typeof v !== 'number' || !Number.isInteger(v) || v < 1 || v > MAX_BUCKETS || (v & (v - 1)) !== 0) {
    problems.push(`buckets: must be a power of two from 1 to ${MAX_BUCKETS} (got ${describeValue(v)})`);
    return undefined;
  }
  if (layout !== 'packed') { problems.push(`buckets: applies to layout 'packed' only (layout is ${describeValue(layout)})`); return undefined; }
  return v;
}

/** An option name that is not one, with the nearest known name. */
function checkKnownOptions(given: Record<string, unknown>, problems: string[]): void {
  for (const name of Object.keys(given)) {
    if (!(KNOWN_OPTIONS as readonly string[]).includes(name)) {
      problems.push(`${name}: unknown option${suggestion(name)}; known options are ${KNOWN_OPTIONS.join(', ')}`);
    }
  }
}

/** `job` or `instance`: required, a NAME; undefined (and a recorded problem) when broken. */
function resolveName(given: Record<string, unknown>, key: 'job' | 'instance', problems: string[]): string | undefined {
  const v = given[key];
  if (v === undefined) { problems.push(`${key}: is required`); return undefined; }
  if (typeof v !== 'string' || !NAME.test(v)) {
    problems.push(`${key}: must be 1 to 128 characters of [A-Za-z0-9._-] (got ${describeValue(v)})`);
    return undefined;
  }
  return v;
}

/** `root`, or its default when absent or broken (the problem recorded). */
function resolveRoot(v: unknown, problems: string[]): string {
  if (v === undefined) return CONFIG_DEFAULTS.root;
  if (typeof v !== 'string' || v.length > MAX_ROOT_LENGTH || !ROOT.test(v)) {
    problems.push(`root: must be '/'-separated segments of [A-Za-z0-9._-], at most ${MAX_ROOT_LENGTH} characters, `
      + `with no leading or trailing '/' (got ${describeValue(v)})`);
    return CONFIG_DEFAULTS.root;
  }
  return v;
}

/** `fingerprint` as given; undefined when absent (the default is derived later) or broken (the problem recorded). */
function resolveFingerprint(v: unknown, problems: string[]): string | undefined {
  if (v === undefined) return undefined;
  if (typeof v !== 'string' || v.length === 0 || v.length > MAX_FINGERPRINT_LENGTH || CONTROL.test(v)) {
    problems.push(`fingerprint: must be a non-empty string of at most ${MAX_FINGERPRINT_LENGTH} characters `
      + `with no control characters (got ${describeValue(v)})`);
    return undefined;
  }
  return v;
}

/** The numeric options, each undefined when broken (its problem recorded); heartbeatTimeoutMs also when absent. */
interface Timings {
  leaseDurationMs: number | undefined;
  opTimeoutMs: number | undefined;
  maxInFlight: number | undefined;
  prefetch: number | undefined;
  maxAttempts: number | undefined;
  rebalanceDelayMs: number | undefined;
  drainDeadlineMs: number | undefined;
  replanIntervalMs: number | undefined;
  reconcileIntervalMs: number | undefined;
  startTimeoutMs: number | undefined;
  autoCommitMs: number | undefined;
  heartbeatTimeoutMs: number | undefined;
  divideMinWeight: number | undefined;
}

const TIMER_RULE = 'Node fires longer timers at once';

/** The numeric options with their defaults, each checked against its own range. */
function resolveTimings(given: Record<string, unknown>, problems: string[]): Timings {
  /** An integer option in [min, max]; undefined (and a recorded problem) when broken. */
  const int = (key: keyof typeof CONFIG_DEFAULTS, min: number, max: number, rule?: string): number | undefined => {
    const v = given[key] === undefined ? CONFIG_DEFAULTS[key] : given[key];
    if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < min) {
      problems.push(`${key}: must be an integer ≥ ${min} (got ${describeValue(v)})`);
      return undefined;
    }
    if (v > max) {
      problems.push(`${key}: must be at most ${max}${rule === undefined ? '' : `, because ${rule}`} (got ${v})`);
      return undefined;
    }
    return v;
  };
  let leaseDurationMs = int('leaseDurationMs', 1000, MAX_TIMER_MS, TIMER_RULE);
  if (leaseDurationMs !== undefined && leaseDurationMs % 1000 !== 0) {
    problems.push(`leaseDurationMs: must be a whole number of seconds, because etcd lease TTLs are seconds (got ${leaseDurationMs})`);
    leaseDurationMs = undefined;
  }
  const opTimeoutMs = int('opTimeoutMs', 1, MAX_TIMER_MS, TIMER_RULE);
  const maxInFlight = int('maxInFlight', 1, Number.MAX_SAFE_INTEGER);
  const prefetch = resolvePrefetch(given.prefetch, maxInFlight, problems);
  const maxAttempts = int('maxAttempts', 1, Number.MAX_SAFE_INTEGER);
  const rebalanceDelayMs = int('rebalanceDelayMs', 0, MAX_TIMER_MS, TIMER_RULE);
  const drainDeadlineMs = int('drainDeadlineMs', 0, MAX_TIMER_MS, TIMER_RULE);
  // Zero would spin the replan and backstop loops without pause.
  const replanIntervalMs = int('replanIntervalMs', 1, MAX_TIMER_MS, TIMER_RULE);
  const reconcileIntervalMs = int('reconcileIntervalMs', 1, MAX_TIMER_MS, TIMER_RULE);
  const startTimeoutMs = int('startTimeoutMs', 0, MAX_TIMER_MS, TIMER_RULE);
  // Zero would commit on every turn of the loop.
  const autoCommitMs = int('autoCommitMs', 1, MAX_TIMER_MS, TIMER_RULE);
  let heartbeatTimeoutMs: number | undefined;
  if (given.heartbeatTimeoutMs !== undefined) {
    const v = given.heartbeatTimeoutMs;
    if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 1) {
      problems.push(`heartbeatTimeoutMs: must be an integer ≥ 1 (ms), or left out for no timeout (got ${describeValue(v)})`);
    } else if (v > MAX_TIMER_MS) {
      problems.push(`heartbeatTimeoutMs: must be at most ${MAX_TIMER_MS}, because ${TIMER_RULE} (got ${v})`);
    } else heartbeatTimeoutMs = v;
  }
  let divideMinWeight: number | undefined;
  if (given.divideMinWeight !== undefined) {
    const v = given.divideMinWeight;
    if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 1) {
      problems.push(`divideMinWeight: must be an integer ≥ 1 (a weight), or left out for the job's mean split weight (got ${describeValue(v)})`);
    } else divideMinWeight = v;
  }
  return {
    leaseDurationMs, opTimeoutMs, maxInFlight, prefetch, maxAttempts, rebalanceDelayMs, drainDeadlineMs,
    replanIntervalMs, reconcileIntervalMs, startTimeoutMs, autoCommitMs, heartbeatTimeoutMs, divideMinWeight,
  };
}

/**
 * `prefetch`: an integer ≥ 0, default `maxInFlight` (one named split waiting per lane). With
 * `maxInFlight` it makes the assignment budget, which must stay a safe integer.
 */
function resolvePrefetch(v: unknown, maxInFlight: number | undefined, problems: string[]): number | undefined {
  if (v === undefined) return maxInFlight;
  if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 0) {
    problems.push(`prefetch: must be an integer ≥ 0 (got ${describeValue(v)})`);
    return undefined;
  }
  if (maxInFlight !== undefined && v > Number.MAX_SAFE_INTEGER - maxInFlight) {
    problems.push(`prefetch: must be at most ${Number.MAX_SAFE_INTEGER - maxInFlight}, because maxInFlight + prefetch (the assignment budget) must be a safe integer (got ${v})`);
    return undefined;
  }
  return v;
}

/** Combinations, checked only between options that are individually valid. */
function checkCombinations(t: Timings, problems: string[]): void {
  const { leaseDurationMs, opTimeoutMs, drainDeadlineMs, heartbeatTimeoutMs } = t;
  if (opTimeoutMs !== undefined && leaseDurationMs !== undefined && opTimeoutMs >= leaseDurationMs) {
    problems.push(`opTimeoutMs: must be below leaseDurationMs (${leaseDurationMs}), or one slow round trip `
      + `outlasts the lease it is renewing (got ${opTimeoutMs})`);
  }
  if (drainDeadlineMs !== undefined && opTimeoutMs !== undefined && drainDeadlineMs < opTimeoutMs) {
    problems.push(`drainDeadlineMs: must be ≥ opTimeoutMs (${opTimeoutMs}): a deadline below one store round trip `
      + `would force every revocation before its final commit could land (got ${drainDeadlineMs})`);
  }
  if (heartbeatTimeoutMs !== undefined && opTimeoutMs !== undefined && heartbeatTimeoutMs < opTimeoutMs) {
    problems.push(`heartbeatTimeoutMs: must be ≥ opTimeoutMs (${opTimeoutMs}): a handler waiting on one store round trip `
      + `(its own commit, its source) is not hung (got ${heartbeatTimeoutMs})`);
  }
}

/** `retryBackoff` with its defaults filled in (frozen); undefined, with the problems recorded, when broken. */
function resolveRetryBackoff(v: unknown, problems: string[]): Readonly<Required<RetryBackoff>> | undefined {
  if (v === undefined) return RETRY_BACKOFF_DEFAULTS;
  if (typeof v !== 'object' || v === null || Array.isArray(v)) {
    problems.push(`retryBackoff: must be an object { initialMs, maxMs, factor?, jitter? } (got ${describeValue(v)})`);
    return undefined;
  }
  const o = v as Record<string, unknown>;
  const before = problems.length;
  for (const k of Object.keys(o)) {
    if (!['initialMs', 'maxMs', 'factor', 'jitter'].includes(k)) problems.push(`retryBackoff.${k}: unknown field; known fields are initialMs, maxMs, factor, jitter`);
  }
  const ms = (k: 'initialMs' | 'maxMs'): number | undefined => {
    const x = o[k];
    if (x === undefined) { problems.push(`retryBackoff.${k}: is required (ms)`); return undefined; }
    if (typeof x !== 'number' || !Number.isSafeInteger(x) || x < 0) { problems.push(`retryBackoff.${k}: must be an integer ≥ 0 (ms) (got ${describeValue(x)})`); return undefined; }
    if (x > MAX_TIMER_MS) { problems.push(`retryBackoff.${k}: must be at most ${MAX_TIMER_MS}, because Node fires longer timers at once (got ${x})`); return undefined; }
    return x;
  };
  const initialMs = ms('initialMs');
  const maxMs = ms('maxMs');
  if (initialMs !== undefined && maxMs !== undefined && maxMs < initialMs) {
    problems.push(`retryBackoff.maxMs: must be ≥ initialMs (${initialMs}), or the first wait would already pass the cap (got ${maxMs})`);
  }
  const factor = o.factor === undefined ? RETRY_BACKOFF_DEFAULTS.factor : o.factor;
  if (typeof factor !== 'number' || !Number.isFinite(factor) || factor < 1 || factor > MAX_RETRY_FACTOR) {
    problems.push(`retryBackoff.factor: must be a number from 1 to ${MAX_RETRY_FACTOR}: below 1 the waits would shrink (got ${describeValue(factor)})`);
  }
  const jitter = o.jitter === undefined ? RETRY_BACKOFF_DEFAULTS.jitter : o.jitter;
  if (typeof jitter !== 'number' || !Number.isFinite(jitter) || jitter < 0 || jitter > 1) {
    problems.push(`retryBackoff.jitter: must be a number from 0 (no jitter) to 1 (full jitter) (got ${describeValue(jitter)})`);
  }
  if (problems.length > before) return undefined;
  return Object.freeze({ initialMs: initialMs!, maxMs: maxMs!, factor: factor as number, jitter: jitter as number });
}
