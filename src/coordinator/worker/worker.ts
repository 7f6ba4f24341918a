/**
 * Worker: the I/O shell around `reconcileAssignment`. It feeds the pure
 * decision what this process observes (its own `assign.{instance}` record,
 * its lanes, the records and lease keys of the splits concerned, all from a
 * `WorkerView` that follows only those keys) and executes the decisions as
 * etcd transactions: claims (several in one transaction when they are ready
 * together), quarantines, revocations.
 *
 * Invariants:
 * - No assignment record: hold everything, claim nothing (the decision core
 *   says so; this shell adds no rules of its own).
 * - What a claim, a lane write or an orphan's release compares and writes is
 *   protocol/txns.ts's; what a handler's failure means is protocol/lanes.ts's
 *   (`handlerFailure`, run by run-lane.ts). This file sends and reports; it
 *   decides nothing.
 * - Lanes (held + draining + claims in flight) never exceed max_in_flight.
 *
 * Claims are sent by claiming.ts (`Claimer`); splits of unknown outcome are
 * settled by settle-orphans.ts (`OrphanSettler.settleOrphans`); drains are
 * moved along by revocations.ts (`Revocations.serviceRevocations`).
 */
import { wallTime, type Clock } from '../../clock.js';
import type { Config } from '../../config.js';
import { backoffDelay, type BackoffPolicy } from '../../protocol/backoff.js';
import { claimCandidates, isTakeover, type ObservedSplit } from '../../protocol/claims.js';
import { reconcileAssignment, type ReconcileDecision } from '../../protocol/reconcile.js';
import { waitingSplits, withDue } from '../../protocol/retry-policy.js';
import { decodeRecord, fingerprintHash, type ProgressRecord, type SpecRecord, type SplitRecord } from '../../protocol/records.js';
import type { KeyValue, Store } from '../../store/store.js';
import { background, type OnUnexpected } from '../background.js';
import { Claimer, type PreparedClaim } from './claiming.js';
import type { RidingClaim } from '../lanes/lane.js';
import { emitLaneEnd, noEmit, type LifecycleHooks } from '../events.js';
import { Lane, type EndedLane } from '../lanes/lane.js';
import type { Logger } from '../log.js';
import type { Metrics } from '../metrics.js';
import type { Session } from '../session.js';
import { Divisions } from './divisions.js';
import { Revocations } from './revocations.js';
import { recordLaneEnd, runLane } from './run-lane.js';
import { OrphanSettler } from './settle-orphans.js';
import type { SplitHandler } from '../types.js';
import type { WorkerView } from '../views/worker-view.js';

/** What a Worker works with (one object, as the Leader's `LeaderContext`). */
export interface WorkerContext {
  store: Store;
  config: Config;
  clock: Clock;
  /** This instance's own view: its record, and the splits it is named for, holds or claims. */
  view: WorkerView;
  session: Session;
  handler: SplitHandler;
  metrics: Metrics;
  log: Logger;
  /** Lifecycle events and the start-up signal. */
  hooks?: LifecycleHooks;
  /** An error that escaped a background path (background.ts); default: logged. */
  unexpected?: OnUnexpected;
  /** The jitter stream of retry loops (protocol/backoff.ts); default: Math.random. */
  random?: () => number;
}

/**
 * The most assigned ids a worker follows (and may claim), as a multiple of its assignment
 * budget (`maxInFlight + prefetch`): the leader names at most that, so only a hand-written or
 * stale record names more; twice covers a budget changed under a record not yet rewritten.
 * A record of 100k ids would otherwise open two watches per id.
 */
export const FOLLOW_PER_LANE = 2;

/** How soon reconciliation runs again after an error escaped it (a claim, say): nothing else may change to trigger it. */
const UNEXPECTED_RETRY: BackoffPolicy = { base: 1000, max: 30_000, min: 100 };

export class Worker {
  readonly lanes = new Map<string, Lane>();
  private scheduled = false;
  private stopped = false;
  /** When each split first appeared in our assignment (for the named → claimed latency). */
  private namedAt = new Map<string, number>();
  private idleWaiters: (() => void)[] = [];
  private readonly claimer: Claimer;
  private readonly settler: OrphanSettler;
  private readonly revocations: Revocations;
  /** The leader's division asks, answered on our lanes (divisions.ts). */
  private readonly divisions: Divisions;

  private readonly store: Store;
  private readonly config: Config;
  private readonly clock: Clock;
  private readonly view: WorkerView;
  private readonly session: Session;
  private readonly handler: SplitHandler;
  private readonly metrics: Metrics;
  private readonly log: Logger;
  private readonly hooks: LifecycleHooks;
  private readonly unexpected: OnUnexpected;
  private readonly random: () => number;
  private unexpectedRetries = 0;
  /** The assignment record revision last warned about for naming more than FOLLOW_PER_LANE × maxInFlight ids. */
  private warnedOversized: number | undefined;
  private cancelRetry: (() => void) | undefined;
  /** The timer that reconciles again when the earliest backoff of an assigned split passes, and when. */
  private due: { at: number; cancel: () => void } | undefined;

  constructor(ctx: WorkerContext) {
    this.store = ctx.store;
    this.config = ctx.config;
    this.clock = ctx.clock;
    this.view = ctx.view;
    this.session = ctx.session;
    this.handler = ctx.handler;
    this.metrics = ctx.metrics;
    this.metrics.laneCapacity.set(this.config.maxInFlight);
    // Read at each scrape: the seconds since the oldest open lane was claimed.
    this.metrics.observeLanes(() => {
      let oldest = Infinity;
      for (const lane of this.lanes.values()) oldest = Math.min(oldest, lane.claimedAt);
      return oldest === Infinity ? 0 : (this.clock.now() - oldest) / 1000;
    });
    this.log = ctx.log;
    this.hooks = ctx.hooks ?? {};
    const report = ctx.unexpected ?? ((where, e) => this.log.error({ where, err: e }, `unexpected error in ${where}`));
    this.unexpected = (where, e) => {
      report(where, e);
      this.retryLater();
    };
    const common = {
      store: this.store, config: this.config, view: this.view, session: this.session, metrics: this.metrics, log: this.log, emit: this.emit,
      unexpected: this.unexpected, random: ctx.random ?? Math.random,
    };
    this.random = common.random;
    this.claimer = new Claimer({
      ...common,
      hasLane: (id) => this.lanes.has(id),
      uncertain: (id, claim) => this.settler.follow(id, claim),
      won: (p, revision, progress) => this.claimWon(p, revision, progress),
      schedule: () => this.schedule(),
      clock: this.clock,
    });
    this.settler = new OrphanSettler({
      ...common,
      clock: this.clock,
      hasLane: (id) => this.lanes.has(id),
      lanesInUse: () => this.lanes.size + this.claimer.claiming.size + this.claimer.costing.size + this.claimer.deciding.size,
      isClaiming: (id) => this.claimer.claiming.has(id),
      openLane: (id, spec, rec, rev, progress, progressRev) => void this.openLane(id, spec, rec, rev, progress, progressRev, true),
      schedule: () => this.schedule(),
      stopped: () => this.stopped,
      claimAgain: (p) => this.claimer.claimAgain(p),
    });
    this.divisions = new Divisions({
      prefix: this.view.prefix, me: this.me, lanes: this.lanes, metrics: this.metrics, log: this.log, emit: () => this.emit, unexpected: this.unexpected,
    });
    this.revocations = new Revocations({
      lanes: this.lanes, clock: this.clock, drainDeadlineMs: this.config.drainDeadlineMs, log: this.log, emit: () => this.emit, unexpected: this.unexpected,
    });
  }

  private get emit() {
    return this.hooks.emit ?? noEmit;
  }

  get me(): string {
    return this.config.instance;
  }

  /** Coalesces reconciliation onto one microtask. */
  schedule(): void {
    if (this.scheduled || this.stopped) return;
    this.scheduled = true;
    queueMicrotask(() => {
      this.scheduled = false;
      if (!this.stopped) background('reconcile', () => this.reconcile(), this.unexpected);
    });
  }

  /** After an unexpected error: reconcile again after a jittered, growing wait (one timer at a time). */
  private retryLater(): void {
    if (this.cancelRetry || this.stopped) return;
    const delay = backoffDelay(this.unexpectedRetries++, UNEXPECTED_RETRY, this.random);
    this.cancelRetry = this.clock.setTimer(delay, () => {
      this.cancelRetry = undefined;
      this.schedule();
    });
  }

  /** One reconciliation step: observe, decide (pure), execute. */
  reconcile(): void {
    if (!this.session.alive) return;
    const assignment = this.boundedAssignment();
    const now = this.clock.now();
    if (assignment) {
      const named = new Set(assignment);
      for (const id of named) if (!this.namedAt.has(id)) this.namedAt.set(id, now);
      for (const id of this.namedAt.keys()) if (!named.has(id)) this.namedAt.delete(id);
    }
    // Follow exactly what concerns us: named, held, being claimed, or of unknown outcome.
    const { claiming } = this.claimer;
    const { uncertain, releasing, adopting } = this.settler;
    const concerned = new Set<string>([...(assignment ?? []), ...this.lanes.keys(), ...claiming, ...uncertain, ...releasing, ...adopting]);
    // Splits whose outcome we wait on are watched at once; the others that read free may stay
    // quiet until they outlive QUIET_MS (decision 0090).
    const urgent = new Set<string>([...uncertain, ...releasing, ...adopting]);
    void this.view.concern(concerned, urgent).catch((e) => this.log.warn({ err: (e as Error).message }, 'following assigned splits failed; the backstop retries'));
    const ids = new Set<string>([...(assignment ?? []), ...this.lanes.keys()]);
    const splits = new Map<string, ObservedSplit>();
    for (const id of ids) {
      const seen = this.observe(id);
      if (seen === 'unreadable') {
        // A record of this split cannot be read: leave it alone. A lane on it stops without
        // writing (what it would write rests on a record we cannot read); it comes back, adopted
        // or claimed, once the record reads again.
        this.lanes.get(id)?.lose(`a record of split ${id} cannot be read: ${[...this.view.split(id)!.problems.values()].join('; ')}`);
        continue;
      }
      if (seen) splits.set(id, seen);
    }
    const held = this.lanesInUse();
    const draining = [...this.lanes.values()].filter((l) => l.state.kind === 'draining').map((l) => l.id);
    const wall = wallTime(this.clock);
    const decisions = reconcileAssignment({
      me: this.me,
      assignment,
      held,
      draining,
      splits,
      maxInFlight: this.config.maxInFlight,
      maxAttempts: this.config.maxAttempts,
      now: wall,
    });
    this.wakeWhenDue(assignment, splits, wall);
    const claims: ReconcileDecision[] = [];
    for (const d of decisions) {
      switch (d.kind) {
        case 'claim':
          claims.push(d);
          break;
        case 'quarantine':
          background('quarantine', () => this.claimer.claimAll([d]), this.unexpected);
          break;
        case 'revoke':
          this.revocations.revoke(d.id);
          break;
        default: {
          const never: never = d;
          throw new Error(`unhandled decision ${JSON.stringify(never)}`);
        }
      }
    }
    if (claims.length > 0) background('claim', () => this.claimer.claimAll(claims as Extract<ReconcileDecision, { kind: 'claim' }>[]), this.unexpected);
    this.settler.settleOrphans(new Set(assignment ?? []), assignment !== undefined);
    this.divisions.serviceDivisionAsks(this.view.divide?.rec.asks ?? []);
    this.hooks.reconciled?.();
  }

  /** One split as the decision core reads it: undefined while not read yet (nothing is claimed for it), 'unreadable' while a record of it cannot be read. */
  private observe(id: string): ObservedSplit | 'unreadable' | undefined {
    const seen = this.view.split(id);
    if (!seen) return undefined;
    if (seen.problems.size > 0) return 'unreadable';
    return {
      // A failed split's backoff as this process must honour it: bounded by when it saw the record (decision 0060).
      record: seen.record && withDue(seen.record.rec, seen.record.seenAt),
      leaseOwner: seen.lease?.rec.owner,
      ...(seen.lease ? { leaseEpoch: seen.lease.rec.epoch } : {}),
      specObserved: seen.spec !== undefined && seen.record !== undefined,
      ...(seen.spec ? { weight: seen.spec.weight } : {}),
    };
  }

  /**
   * The splits whose lanes are in use: open lanes, claims in flight, takeovers being costed
   * (their claim is on its way), splits of a write of unknown outcome until the view says
   * whether it landed (a claim that timed out may hold its split already), and splits this
   * session owns in the store with no lane (a write of unknown outcome that landed: settled by
   * settleOrphans, never claimed again, which would be a reclaim costing a delivery attempt for
   * a lost reply). With prefetch more is named than the lanes, so a lane must not be spent
   * twice: once by a claim whose outcome is not known yet, once by another named split.
   */
  private lanesInUse(): string[] {
    const { claiming, costing, deciding } = this.claimer;
    return [...this.lanes.keys(), ...claiming, ...costing, ...deciding, ...this.settler.uncertain, ...this.settler.orphans(), ...this.settler.adopting];
  }

  /**
   * The claim that rides in `lane`'s completion (decision 0055): the claim the next reconciliation
   * would send once that lane has freed, decided now on the same view, if it is a plain claim (a
   * create or a claim after a release: a takeover's cost needs a read first). Nothing while
   * stopping or without an assignment record.
   */
  private ride(lane: Lane): RidingClaim | undefined {
    if (this.stopped || !this.session.alive) return undefined;
    const assignment = this.boundedAssignment();
    if (!assignment) return undefined;
    const splits = new Map<string, ObservedSplit>();
    for (const id of assignment) {
      if (id === lane.id) continue;
      const seen = this.observe(id);
      if (seen && seen !== 'unreadable') splits.set(id, seen);
    }
    const held = this.lanesInUse().filter((id) => id !== lane.id);
    const draining = [...this.lanes.values()].filter((l) => l.state.kind === 'draining' && l.id !== lane.id).map((l) => l.id);
    const next = claimCandidates({
      me: this.me, assigned: assignment.filter((id) => id !== lane.id), splits, held, draining,
      maxInFlight: this.config.maxInFlight, maxAttempts: this.config.maxAttempts, now: wallTime(this.clock),
    }).find((c) => !c.quarantine && !isTakeover(c.claim));
    return next ? this.claimer.ride({ kind: 'claim', id: next.id, claim: next.claim, consumesAttempt: next.consumesAttempt }) : undefined;
  }

  /**
   * An assigned split waiting out its backoff is claimed by no event of its
   * own (its record does not change when it falls due): reconcile again
   * then, one timer for the earliest.
   */
  private wakeWhenDue(assignment: readonly string[] | undefined, splits: ReadonlyMap<string, ObservedSplit>, wall: number): void {
    const backoffs: [string, number][] = [];
    for (const id of assignment ?? []) {
      const rec = splits.get(id)?.record;
      if (rec?.status === 'runnable' && rec.notBefore !== undefined) backoffs.push([id, rec.notBefore]);
    }
    const { nextDueAt } = waitingSplits(backoffs, wall);
    if (this.due?.at === nextDueAt) return;
    this.due?.cancel();
    this.due = undefined;
    if (nextDueAt === undefined || this.stopped) return;
    const cancel = this.clock.setTimer(Math.max(1, nextDueAt - wall), () => {
      this.due = undefined;
      this.schedule();
    });
    this.due = { at: nextDueAt, cancel };
  }

  /** Our assignment record's ids, the first FOLLOW_PER_LANE × (maxInFlight + prefetch) in record order (warned once per record). */
  private boundedAssignment(): readonly string[] | undefined {
    const seen = this.view.assign;
    const named = seen?.rec.splits;
    const limit = FOLLOW_PER_LANE * (this.config.maxInFlight + this.config.prefetch);
    if (!named || named.length <= limit) return named;
    if (this.warnedOversized !== seen.modRevision) {
      this.warnedOversized = seen.modRevision;
      this.log.warn(
        { names: named.length, follows: limit, maxInFlight: this.config.maxInFlight, prefetch: this.config.prefetch },
        `the assignment record names ${named.length} splits, more than ${FOLLOW_PER_LANE} × (maxInFlight + prefetch); following the first ${limit} in record order`,
      );
    }
    return named.slice(0, limit);
  }

  private claimWon(p: PreparedClaim, revision: number, progressKv: KeyValue | undefined): void {
    this.unexpectedRetries = 0;
    this.metrics.claims.inc({ kind: p.kind, outcome: 'won' });
    const named = this.namedAt.get(p.id);
    if (named !== undefined) this.metrics.assignmentLatency.observe((this.clock.now() - named) / 1000);
    const read = progressKv ? decodeRecord('progress', progressKv.key, progressKv.value, fingerprintHash(this.config.fingerprint)) : undefined;
    const run = !this.stopped && this.session.alive;
    this.emit('split-claimed', { id: p.id, epoch: p.next.epoch, attempts: p.next.attempts, kind: p.kind });
    this.view.ownClaimWrite(p.id, p.txn.success, revision);
    const lane = this.openLane(p.id, p.spec, p.next, revision, read, progressKv?.modRevision ?? 0, run);
    // We won a claim while stopping: give it straight back.
    if (!run) background('lane release', () => lane.finishNormally('stopping'), this.unexpected);
  }

  private openLane(id: string, spec: SpecRecord, rec: SplitRecord, rev: number, progress: ProgressRecord | undefined, progressRev: number, run: boolean): Lane {
    const lane = new Lane(
      {
        store: this.store,
        config: this.config,
        clock: this.clock,
        prefix: this.view.prefix,
        leaseId: this.session.leaseId,
        onEnd: (l, ended) => this.laneEnded(l, ended),
        ...(this.config.prefetch > 0 ? { ride: (l: Lane) => this.ride(l) } : {}),
        onDecline: () => this.revocations.serviceRevocations(),
        onDivider: () => this.divisions.serviceDivisionAsks(this.view.divide?.rec.asks ?? []),
        onSettled: (resolution) => this.metrics.unknownOutcomes.inc({ resolution }),
        onCommitted: () => this.metrics.commits.inc(),
        onRefused: (l, write, e) => {
          this.metrics.laneWritesRefused.inc({ write });
          this.log.error({ split: l.id, write, code: e.code, err: e.message }, 'the store refused a lane write for good; ending the lane');
        },
        onTimeout: (l, silentMs, details) => {
          this.log.warn({ split: l.id, silentMs, heartbeatTimeoutMs: this.config.heartbeatTimeoutMs, details }, 'split handler timed out (no commit or heartbeat); aborting it');
        },
        random: this.random,
      },
      id,
      spec,
      rec,
      rev,
      progress?.progress ?? null,
      progressRev,
      progress,
    );
    this.lanes.set(id, lane);
    this.metrics.lanes.set(this.lanes.size);
    if (run) {
      runLane(lane, { handler: this.handler, log: this.log, unexpected: this.unexpected, serviceRevocations: () => this.revocations.serviceRevocations() });
    }
    return lane;
  }

  private laneEnded(lane: Lane, ended: EndedLane): void {
    const { as: end, reason, write, drain } = ended;
    this.lanes.delete(lane.id);
    // What our terminal write left, known before the watch says so: without it the next
    // reconciliation (at once, for the next named split) would see our lease key still there
    // and try to reclaim a split we just finished.
    if (write) this.view.ownTerminalWrite(lane.id, write.splitValue, write.revision);
    // Fenced by a write of its own that landed unseen, maybe: follow it until the store says.
    if (end === 'lost' && this.session.alive) this.settler.follow(lane.id);
    this.metrics.lanes.set(this.lanes.size);
    recordLaneEnd(this.metrics, this.clock, lane, ended);
    this.revocations.ended(lane.id);
    this.log.debug({ split: lane.id, end }, 'lane ended');
    emitLaneEnd(this.emit, {
      id: lane.id, epoch: lane.handle.epoch, end, reason, record: lane.record, draining: drain !== undefined,
      drainHandlerState: drain?.handler ?? 'draining', releaseCause: ended.asked.releaseCause, failureKind: lane.failureKind,
    });
    if (this.lanes.size === 0) for (const w of this.idleWaiters.splice(0)) w();
    this.schedule();
  }

  /** Our lease is gone: every lane is fenced; drop them without writing. */
  loseAll(reason: string): void {
    for (const lane of [...this.lanes.values()]) lane.lose(reason);
  }

  /**
   * Graceful stop: stop claiming, drain every lane cooperatively (forced at
   * drain_deadline), and resolve when every lane has been released.
   */
  async stop(): Promise<void> {
    this.stopped = true;
    this.cancelRetry?.();
    this.due?.cancel();
    this.revocations.drainAll('stopping');
    if (this.lanes.size > 0) await new Promise<void>((resolve) => this.idleWaiters.push(resolve));
    this.revocations.clear();
  }

  /** Drops all lanes at once (the coordinator is closing without a drain). */
  abortAll(): void {
    this.stopped = true;
    this.cancelRetry?.();
    this.due?.cancel();
    this.loseAll('coordinator closed');
  }
}
