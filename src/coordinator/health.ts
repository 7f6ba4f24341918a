/**
 * Health: what `coordinator.health()` says, decided from what the coordinator
 * observes. `assessHealth` maps observations to a state and its reason;
 * `HealthMonitor` keeps the observations and the current state, and says when
 * it changed (the coordinator then emits the `health` event).
 *
 * States, in order of precedence:
 * - stopped: the coordinator has ended (a verdict, stop(), close(), a fatal error);
 * - stopping: stop() is draining (or close() is closing);
 * - starting: until the first session is established and the worker has reconciled once;
 * - degraded: the session is lost and being re-established, lease renewals are
 *   failing, the view could not be re-read, the job has had no working leader
 *   for LEADERLESS_LEASES leases (`leaderlessSince`), part of the job cannot
 *   move (the leader's `stuckReason`), or an error escaped a background path
 *   lately (background.ts);
 * - running: otherwise.
 *
 * Invariants: stopped is final; from stopping only stopped follows; starting is
 * never re-entered once left. `since` changes only with the state.
 *
 * Pure: no timers, no I/O; time comes in as an argument.
 */

export type HealthState = 'starting' | 'running' | 'degraded' | 'stopping' | 'stopped';

/** What `coordinator.health()` returns. */
export interface Health {
  readonly state: HealthState;
  /** Why, in words: what start-up is doing, what is failing, why it stopped. */
  readonly reason: string;
  /** When the current state began (ms on the coordinator's clock). */
  readonly since: number;
}

/** What the coordinator has observed. Every field is the latest word on it. */
export interface HealthObservations {
  /** The first session is established and the worker has reconciled once (never unset). */
  started: boolean;
  /** What start-up is doing (or retrying), until started. */
  startStep: string;
  /** Why the session was lost, while a new one is being opened. */
  sessionLost?: string;
  /** The last attempt to open the replacement session failed with this. */
  rejoinError?: string;
  /** Consecutive failed lease renewals of the current session. */
  renewalFailures: number;
  lastRenewalError?: string;
  /** The last backstop re-read of the view failed with this (cleared by one that succeeds). */
  viewError?: string;
  /** The job has had no working leader for too long: why (see `leaderVerdict`). */
  leaderless?: string;
  /** Part of the job cannot move (the leader's view: parked splits, unreadable queue pages): why (`stuckReason`). */
  stuck?: string;
  /** An error escaped a background path lately (background.ts): what and where. */
  unexpected?: string;
  /** stop() or close() has begun: why. */
  stopping?: string;
  /** The coordinator has ended: why. */
  stopped?: string;
}

/** Failed renewals in a row that make a session degraded: one, as a second one in a row usually declares it lost. */
export const RENEWAL_FAILURES_DEGRADED = 1;

/** The state and reason the observations call for (precedence as in the module comment). */
export function assessHealth(o: HealthObservations): { state: HealthState; reason: string } {
  if (o.stopped !== undefined) return { state: 'stopped', reason: o.stopped };
  if (o.stopping !== undefined) return { state: 'stopping', reason: o.stopping };
  if (!o.started) return { state: 'starting', reason: o.startStep };
  if (o.sessionLost !== undefined) {
    const retry = o.rejoinError !== undefined ? `; rejoining failed (${o.rejoinError}), retrying` : '; rejoining';
    return { state: 'degraded', reason: `session lost: ${o.sessionLost}${retry}` };
  }
  if (o.renewalFailures >= RENEWAL_FAILURES_DEGRADED) {
    const last = o.lastRenewalError !== undefined ? ` (last: ${o.lastRenewalError})` : '';
    const n = o.renewalFailures;
    return { state: 'degraded', reason: `store failing: ${n} lease renewal${n === 1 ? '' : 's'} in a row failed${last}` };
  }
  if (o.viewError !== undefined) return { state: 'degraded', reason: `the view could not be re-read: ${o.viewError}` };
  if (o.leaderless !== undefined) return { state: 'degraded', reason: o.leaderless };
  if (o.stuck !== undefined) return { state: 'degraded', reason: o.stuck };
  if (o.unexpected !== undefined) return { state: 'degraded', reason: o.unexpected };
  return { state: 'running', reason: 'session established; reconciling' };
}

/**
 * Why part of the job cannot move, from the leader's view, or undefined when
 * all of it can: splits parked (a record of theirs cannot be read, or their
 * queue page could not be read while promoting them), queue pages that
 * cannot be read (their splits are unknown), splits a final plan counts
 * that no record in the leader's view holds, or whose queue page it lacks
 * (`unaccounted`: a queue page deleted while no leader ran, say; decisions
 * 0072, 0078), and splits named but left
 * unclaimed by a member with a free lane (`unclaimed`, leader/unclaimed.ts). One example each (the first
 * listed, so the reason does not change while the set does not), and the
 * counts: the substrate's "degraded while any part of the job cannot move".
 */
export function stuckReason(
  parked: ReadonlyMap<string, ReadonlyMap<string, string>>, unreadablePages: ReadonlySet<string>, unclaimed?: string, unaccounted = 0,
): string | undefined {
  const parts: string[] = [];
  // The first of each in insertion order: O(1) on every view change of the leader (thousands may be parked),
  // and unchanged while the set is.
  if (parked.size > 0) {
    const [first, problems] = parked.entries().next().value!;
    const why = problems.values().next().value ?? 'a record cannot be read';
    parts.push(`${parked.size} split${parked.size === 1 ? '' : 's'} parked (${JSON.stringify(first)}: ${why})`);
  }
  if (unreadablePages.size > 0) {
    const first = unreadablePages.values().next().value!;
    parts.push(`${unreadablePages.size} queue page${unreadablePages.size === 1 ? '' : 's'} unreadable (${first}): their splits wait`);
  }
  if (unaccounted > 0) {
    parts.push(`${unaccounted} planned split${unaccounted === 1 ? '' : 's'} in no queue page or record the leader can find (a queue page or a split's records deleted by hand, or restored from an older backup?): no verdict until put back`);
  }
  if (unclaimed !== undefined) parts.push(unclaimed);
  return parts.length === 0 ? undefined : `part of the job cannot move: ${parts.join('; ')}`;
}

/** Leases without a working leader after which every process says degraded (the spec: "two leases"). */
export const LEADERLESS_LEASES = 2;

/** What a process sees of its job's leadership: the `leader` and `plan` keys of its own view. */
export interface LeadershipSeen {
  /** The `leader` key's generation; undefined: no key (or one that cannot be read). */
  leaderGeneration: number | undefined;
  /** The `plan` record's generation; undefined: no plan (or one that cannot be read). */
  planGeneration: number | undefined;
}

/**
 * Whether the job has a working leader: a `leader` key whose term the plan
 * record shows (a new leader's first write bumps the plan's generation to
 * its own). A key whose generation the plan never reaches is a leader that
 * cannot write, and is no better than none.
 */
export function leaderWorking(seen: LeadershipSeen): boolean {
  return seen.leaderGeneration !== undefined && seen.planGeneration !== undefined && seen.planGeneration >= seen.leaderGeneration;
}

/**
 * The `leaderless` observation for a job with no working leader since
 * `since`: the reason once LEADERLESS_LEASES leases have passed, else
 * undefined, and when to look again.
 */
export function leaderVerdict(seen: LeadershipSeen, since: number, now: number, leaseDurationMs: number): { reason: string | undefined; recheckAt: number | undefined } {
  if (leaderWorking(seen)) return { reason: undefined, recheckAt: undefined };
  const due = since + LEADERLESS_LEASES * leaseDurationMs;
  if (now < due) return { reason: undefined, recheckAt: due };
  // No elapsed time in the reason: it would change the health (and emit an event) on every look.
  const secs = (LEADERLESS_LEASES * leaseDurationMs) / 1000;
  const what = seen.leaderGeneration === undefined
    ? 'no leader'
    : `a leader (generation ${seen.leaderGeneration}) that has not written the plan (generation ${seen.planGeneration ?? 'none'})`;
  return { reason: `the job has had ${what} for more than ${LEADERLESS_LEASES} leases (${secs} s)`, recheckAt: undefined };
}

/**
 * The next health after `prev`, or undefined when nothing changed (same
 * state and reason) or the change is not allowed (out of stopped, back from
 * stopping, back to starting).
 */
export function nextHealth(prev: Health, o: HealthObservations, now: number): Health | undefined {
  const next = assessHealth(o);
  if (next.state === prev.state && next.reason === prev.reason) return undefined;
  if (prev.state === 'stopped') return undefined;
  if (prev.state === 'stopping' && next.state !== 'stopping' && next.state !== 'stopped') return undefined;
  if (prev.state !== 'starting' && next.state === 'starting') return undefined;
  return { ...next, since: next.state === prev.state ? prev.since : now };
}

/** The observations and the health they gave, for one coordinator. */
export class HealthMonitor {
  private readonly seen: HealthObservations;
  private current: Health;

  constructor(now: number, startStep = 'reading the job') {
    this.seen = { started: false, startStep, renewalFailures: 0 };
    this.current = { ...assessHealth(this.seen), since: now };
  }

  get health(): Health {
    return this.current;
  }

  get observations(): Readonly<HealthObservations> {
    return this.seen;
  }

  /** Records what changed; returns the new health when it changed. */
  observe(change: Partial<HealthObservations>, now: number): Health | undefined {
    Object.assign(this.seen, change);
    const next = nextHealth(this.current, this.seen, now);
    if (next) this.current = next;
    return next;
  }
}
