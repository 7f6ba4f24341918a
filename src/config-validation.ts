/**
 * The checks of a user's options (config.ts's invariants), each refusal worded
 * as `option: must … (got …)`: every broken option is recorded in one list of
 * problems, in option order, so that a refusal names them all at once, not
 * only the first. A check hands back the value it accepted, or undefined.
 *
 * It knows the rules and their limits, not the options' defaults: config.ts
 * passes its table of names and defaults in (this file sits below it, so that
 * config.ts, which protocol/ imports, can call it). Pure: no I/O, no clock,
 * nothing thrown; config.ts turns the problems into the error.
 */

/** Longest duration a Node timer honours (2^31 − 1 ms, about 24.8 days). */
export const MAX_TIMER_MS = 2_147_483_647;

/** The largest retryBackoff.factor: past it the ceiling reaches maxMs within a step or two anyway. */
export const MAX_RETRY_FACTOR = 100;

/** The integer options that have a default. */
type IntegerOption = 'leaseDurationMs' | 'opTimeoutMs' | 'maxInFlight' | 'maxAttempts' | 'rebalanceDelayMs'
  | 'drainDeadlineMs' | 'replanIntervalMs' | 'reconcileIntervalMs' | 'startTimeoutMs' | 'autoCommitMs';

/** A retryBackoff with every field present (config.ts's `Required<RetryBackoff>`). */
type Backoff = Readonly<{ initialMs: number; maxMs: number; factor: number; jitter: number }>;

/** What config.ts knows of its options: their names, and the defaults a check falls back on when one is absent. */
export interface OptionTable {
  names: readonly string[];
  defaults: Readonly<Record<IntegerOption, number> & { root: string; layout: string }>;
  retryBackoff: Backoff;
}

/** What the checks accepted, each value undefined when broken (its problem recorded), and every problem. */
export interface CheckedOptions {
  problems: string[];
  job: string | undefined;
  instance: string | undefined;
  root: string;
  fingerprint: string | undefined;
  timings: Timings;
  retryBackoff: Backoff | undefined;
  layout: unknown;
  buckets: number | undefined;
}

const NAME = /^[A-Za-z0-9._-]{1,128}$/;
const ROOT = /^[A-Za-z0-9._-]+(\/[A-Za-z0-9._-]+)*$/;
const MAX_ROOT_LENGTH = 256;
const MAX_FINGERPRINT_LENGTH = 1024;
// \p{Cc}: C0 controls, DEL and C1 controls.
const CONTROL = /\p{Cc}/u;

/** Checks every option of `given` against its rule, the absent ones taking `table`'s defaults. */
export function checkOptions(given: Record<string, unknown>, table: OptionTable): CheckedOptions {
  const problems: string[] = [];
  checkKnownOptions(given, table.names, problems);
  const job = resolveName(given, 'job', problems);
  const instance = resolveName(given, 'instance', problems);
  const root = resolveRoot(given.root, table.defaults.root, problems);
  const fingerprint = resolveFingerprint(given.fingerprint, problems);
  const timings = resolveTimings(given, table.defaults, problems);
  const retryBackoff = resolveRetryBackoff(given.retryBackoff, table.retryBackoff, problems);
  const layout = given.layout ?? table.defaults.layout;
  if (layout !== 'keys' && layout !== 'packed') problems.push(`layout: must be 'keys' or 'packed' (got ${describeValue(layout)})`);
  const buckets = resolveBuckets(given.buckets, layout, problems);
  checkCombinations(timings, problems);
  return { problems, job, instance, root, fingerprint, timings, retryBackoff, layout, buckets };
}

/** A refused value as a config error quotes it: a string in quotes, a primitive as itself, anything else by its type. */
export function describeValue(v: unknown): string {
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

function suggestion(name: string, names: readonly string[]): string {
  let best: string | undefined;
  let bestD = Infinity;
  for (const known of names) {
    const d = editDistance(name.toLowerCase(), known.toLowerCase());
    if (d < bestD) { bestD = d; best = known; }
  }
  return best !== undefined && bestD <= 3 ? ` (did you mean ${best}?)` : '';
}

/** An option name that is not one, with the nearest known name. */
function checkKnownOptions(given: Record<string, unknown>, names: readonly string[], problems: string[]): void {
  for (const name of Object.keys(given)) {
    if (!names.includes(name)) {
      problems.push(`${name}: unknown option${suggestion(name, names)}; known options are ${names.join(', ')}`);
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
function resolveRoot(v: unknown, defaultRoot: string, problems: string[]): string {
  if (v === undefined) return defaultRoot;
  if (typeof v !== 'string' || v.length > MAX_ROOT_LENGTH || !ROOT.test(v)) {
    problems.push(`root: must be '/'-separated segments of [A-Za-z0-9._-], at most ${MAX_ROOT_LENGTH} characters, `
      + `with no leading or trailing '/' (got ${describeValue(v)})`);
    return defaultRoot;
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
export interface Timings {
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
function resolveTimings(given: Record<string, unknown>, defaults: OptionTable['defaults'], problems: string[]): Timings {
  /** An integer option in [min, max]; undefined (and a recorded problem) when broken. */
  const int = (key: IntegerOption, min: number, max: number, rule?: string): number | undefined => {
    const v = given[key] === undefined ? defaults[key] : given[key];
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
function resolveRetryBackoff(v: unknown, defaults: Backoff, problems: string[]): Backoff | undefined {
  if (v === undefined) return defaults;
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
  const factor = o.factor === undefined ? defaults.factor : o.factor;
  if (typeof factor !== 'number' || !Number.isFinite(factor) || factor < 1 || factor > MAX_RETRY_FACTOR) {
    problems.push(`retryBackoff.factor: must be a number from 1 to ${MAX_RETRY_FACTOR}: below 1 the waits would shrink (got ${describeValue(factor)})`);
  }
  const jitter = o.jitter === undefined ? defaults.jitter : o.jitter;
  if (typeof jitter !== 'number' || !Number.isFinite(jitter) || jitter < 0 || jitter > 1) {
    problems.push(`retryBackoff.jitter: must be a number from 0 (no jitter) to 1 (full jitter) (got ${describeValue(jitter)})`);
  }
  if (problems.length > before) return undefined;
  return Object.freeze({ initialMs: initialMs!, maxMs: maxMs!, factor: factor as number, jitter: jitter as number });
}

/** protocol/keys.ts MAX_BUCKETS (this file sits below protocol/, so the number is repeated; config.test.ts holds them equal). */
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
