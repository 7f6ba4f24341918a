/**
 * Worker: the I/O shell around `reconcileAssignment`. It feeds the pure
 * decision what this process observes (its own `assign.{instance}` record,
 * its lanes, the records and lease keys of the splits concerned) and executes
 * the decisions as etcd transactions: claims, quarantines, revocations.
 *
 * Invariants:
 * - No assignment record: hold everything, claim nothing (the decision core
 *   says so; this shell adds no rules of its own).
 * - A claim is one transaction: lease key absent (or ours, for a reclaim) and
 *   the split record at the revision observed; it writes both. Losing it is
 *   normal.
 * - Lanes (held + draining + claims in flight) never exceed max_in_flight.
 * - serviceRevocations: a drain, once begun, finishes (released cooperatively
 *   or forced at drain_deadline / at once when declined); it is never cancelled.
 */
import type { Clock } from '../clock.js';
import type { Config } from '../config.js';
import { isSplitfleetError } from '../errors.js';
import { classifyClaim, claimedRecord, quarantinedRecord, releasedRecord, type ObservedSplit } from '../protocol/claims.js';
import { leaseKey, splitKey } from '../protocol/keys.js';
import { drainDecision, reconcileAssignment, type ReconcileDecision } from '../protocol/reconcile.js';
import { encodeRecord, fingerprintHash, SCHEMA_VERSION } from '../protocol/records.js';
import { cmp, op, type Op, type Store } from '../store/store.js';
import { Lane, type LaneEnd } from './lane.js';
import type { Logger } from './log.js';
import type { Metrics } from './metrics.js';
import type { Session } from './session.js';
import { withTimeout } from './timeout.js';
import type { SplitHandler } from './types.js';
import type { JobView, ViewChange } from './view.js';

export class Worker {
  readonly lanes = new Map<string, Lane>();
  private readonly claiming = new Set<string>();
  private scheduled = false;
  private stopped = false;
  private drainTimers = new Map<string, () => void>();
  /** When each split first appeared in our assignment (for the named → claimed latency). */
  private namedAt = new Map<string, number>();
  private idleWaiters: (() => void)[] = [];
  /**
   * Claims that lost, by split: the view, split and lease-key revisions they
   * were based on. A claim loses because one of them moved since the view saw it;
   * retrying on the same observation loses again at once, so while the watch
   * lags that would be a hot loop of doomed transactions. The watch event that
   * shows the move changes the basis and wakes reconciliation.
   */
  private readonly lostClaims = new Map<string, string>();
  /** Orphaned lease keys being given back (see releaseOrphans). */
  private readonly releasing = new Set<string>();

  constructor(
    private readonly store: Store,
    private readonly config: Config,
    private readonly clock: Clock,
    private readonly view: JobView,
    private readonly session: Session,
    private readonly handler: SplitHandler,
    private readonly metrics: Metrics,
    private readonly log: Logger,
  ) {}

  get me(): string {
    return this.config.instance;
  }

  /**
   * Whether a batch of view changes can change this worker's decisions: its
   * own assignment record, or a record, lease key or spec of a split it is
   * named for or holds. Other members' traffic is not ours to reconcile on;
   * reacting to every event in the job made reconciliation cost events ×
   * lanes × members (a 10k-split, 20-member fleet settled in 135 s instead
   * of 30 s).
   */
  concerns(change: ViewChange): boolean {
    if (change.all) return true;
    if (change.kinds.has('assign') && change.ids.has(this.me)) return true;
    if (!change.kinds.has('split') && !change.kinds.has('lease') && !change.kinds.has('spec')) return false;
    const assign = this.view.assigns.get(this.me);
    if (assign !== this.namedFor) {
      this.namedFor = assign;
      this.named = new Set(assign?.rec.splits ?? []);
    }
    for (const id of change.ids) {
      if (this.named.has(id) || this.lanes.has(id) || this.claiming.has(id)) return true;
    }
    return false;
  }

  private namedFor: JobView['assigns'] extends Map<string, infer V> ? V | undefined : never;
  private named = new Set<string>();

  /** Coalesces reconciliation onto one microtask. */
  schedule(): void {
    if (this.scheduled || this.stopped) return;
    this.scheduled = true;
    queueMicrotask(() => {
      this.scheduled = false;
      if (!this.stopped) this.reconcile();
    });
  }

  /** One reconciliation step: observe, decide (pure), execute. */
  reconcile(): void {
    if (!this.session.alive) return;
    const assign = this.view.assigns.get(this.me)?.rec;
    const assignment = assign?.splits;
    const now = this.clock.now();
    if (assignment) {
      const named = new Set(assignment);
      for (const id of named) if (!this.namedAt.has(id)) this.namedAt.set(id, now);
      for (const id of this.namedAt.keys()) if (!named.has(id)) this.namedAt.delete(id);
    }
    const ids = new Set<string>([...(assignment ?? []), ...this.lanes.keys()]);
    const splits = new Map<string, ObservedSplit>();
    for (const id of ids) {
      const seen = this.view.splits.get(id);
      splits.set(id, {
        record: seen?.rec,
        leaseOwner: this.view.leases.get(id)?.rec.owner,
        specObserved: this.view.specs.has(id) && seen !== undefined,
      });
    }
    const held = [...this.lanes.keys(), ...this.claiming];
    const draining = [...this.lanes.values()].filter((l) => l.state === 'draining').map((l) => l.id);
    const decisions = reconcileAssignment({
      me: this.me,
      assignment,
      held,
      draining,
      splits,
      maxInFlight: this.config.maxInFlight,
      maxAttempts: this.config.maxAttempts,
    });
    for (const d of decisions) this.execute(d);
    if (assignment) this.releaseOrphans(new Set(assignment));
  }

  /**
   * Lease keys on this session's own lease with no lane behind them: a claim,
   * or a lane's write, timed out but landed, so the claim's lane never opened
   * or the lane's next write was fenced by its own stale revision and ended it
   * as lost. The store still says we own the split, so nobody else may claim
   * it; one we are not assigned would stay stranded for as long as this
   * session lives. Give it back: owner cleared, lease key deleted, progress
   * as committed, guarded like any lane write. (One we are assigned is
   * reclaimed by the normal claim path.)
   */
  private releaseOrphans(assigned: ReadonlySet<string>): void {
    for (const [id, lease] of this.view.leases) {
      if (lease.lease !== this.session.leaseId || lease.rec.owner !== this.me) continue;
      if (assigned.has(id) || this.lanes.has(id) || this.claiming.has(id) || this.releasing.has(id)) continue;
      const seen = this.view.splits.get(id);
      if (!seen || seen.rec.status !== 'runnable' || seen.rec.owner !== this.me || seen.rec.epoch !== lease.rec.epoch) continue;
      this.releasing.add(id);
      const sk = splitKey(this.view.prefix, id);
      const lk = leaseKey(this.view.prefix, id);
      this.log.warn({ split: id, epoch: seen.rec.epoch }, 'releasing a split held by this session with no lane behind it');
      void withTimeout(
        this.store.txn({
          compares: [cmp.modRevision(sk, seen.modRevision), cmp.lease(lk, this.session.leaseId)],
          success: [op.put(sk, encodeRecord('split', releasedRecord(seen.rec, this.me))), op.delete(lk)],
        }),
        this.config.opTimeoutMs, `release of orphaned split ${id}`, this.clock,
      )
        .catch(() => undefined)
        .finally(() => this.releasing.delete(id));
    }
  }

  private execute(d: ReconcileDecision): void {
    switch (d.kind) {
      case 'claim':
        void this.claim(d.id, false);
        return;
      case 'quarantine':
        void this.claim(d.id, true);
        return;
      case 'revoke':
        this.revoke(d.id);
        return;
      default: {
        const never: never = d;
        throw new Error(`unhandled decision ${JSON.stringify(never)}`);
      }
    }
  }

  /** The claim (or quarantine) transaction for one split. */
  private async claim(id: string, quarantine: boolean): Promise<void> {
    if (this.claiming.has(id) || this.lanes.has(id)) return;
    const seen = this.view.splits.get(id);
    const spec = this.view.specs.get(id);
    if (!seen || !spec) return;
    const leaseOwner = this.view.leases.get(id)?.rec.owner;
    const c = classifyClaim(seen.rec, leaseOwner, this.me, this.config.maxAttempts);
    if (c.kind === 'unclaimable') return;
    // The view's revision too: a lease key put and deleted again leaves the pair as it was.
    const basis = `${this.view.revision}:${seen.modRevision}:${this.view.leases.get(id)?.modRevision ?? 0}`;
    if (this.lostClaims.get(id) === basis) return;
    this.lostClaims.delete(id);
    this.claiming.add(id);
    const sk = splitKey(this.view.prefix, id);
    const lk = leaseKey(this.view.prefix, id);
    try {
      const compares = [
        cmp.modRevision(sk, seen.modRevision),
        c.kind === 'reclaim' ? cmp.lease(lk, this.view.leases.get(id)?.lease ?? '') : cmp.absent(lk),
      ];
      const success: Op[] = [];
      let next;
      if (quarantine || c.quarantine) {
        next = quarantinedRecord(seen.rec, `max_attempts (${this.config.maxAttempts}) reached on a ${c.kind} claim`);
        success.push(op.put(sk, encodeRecord('split', next)));
        if (c.kind === 'reclaim') success.push(op.delete(lk));
      } else {
        next = claimedRecord(seen.rec, this.me, c);
        success.push(op.put(sk, encodeRecord('split', next)));
        success.push(
          op.put(
            lk,
            encodeRecord('lease', {
              v: SCHEMA_VERSION,
              fp: fingerprintHash(this.config.fingerprint),
              id,
              owner: this.me,
              nonce: this.session.nonce,
              epoch: next.epoch,
            }),
            this.session.leaseId,
          ),
        );
      }
      const res = await withTimeout(this.store.txn({ compares, success }), this.config.opTimeoutMs, `claim of ${id}`, this.clock);
      if (!res.won) {
        this.metrics.claims.inc({ kind: c.kind, outcome: 'lost' });
        this.lostClaims.set(id, basis);
        return;
      }
      if (next.status === 'quarantined') {
        this.metrics.quarantined.inc();
        this.log.warn({ split: id, attempts: next.attempts }, 'split quarantined');
        return;
      }
      this.metrics.claims.inc({ kind: c.kind, outcome: 'won' });
      const named = this.namedAt.get(id);
      if (named !== undefined) this.metrics.assignmentLatency.observe((this.clock.now() - named) / 1000);
      if (this.stopped || !this.session.alive) {
        // We won a claim while stopping: give it straight back.
        const lane = this.openLane(id, spec, next, res.revision, false);
        await lane.finishNormally();
        return;
      }
      this.openLane(id, spec, next, res.revision, true);
    } catch (e) {
      // The claim wrote its lease key under our session lease and the store says that lease is
      // gone: the session is lost (the coordinator rejoins). Retrying would spin on the same error.
      if (isSplitfleetError(e, 'LEASE_LOST')) this.session.lose(`claim of ${id} found the session lease gone: ${e.message}`);
      else if (!isSplitfleetError(e) || !e.retryable) this.log.error({ split: id, err: e }, 'claim failed');
    } finally {
      this.claiming.delete(id);
      this.schedule();
    }
  }

  private openLane(id: string, spec: NonNullable<ReturnType<JobView['specs']['get']>>, rec: Parameters<typeof classifyClaim>[0] & object, rev: number, run: boolean): Lane {
    const lane = new Lane(
      {
        store: this.store,
        config: this.config,
        clock: this.clock,
        prefix: this.view.prefix,
        leaseId: this.session.leaseId,
        onEnd: (l, end) => this.laneEnded(l, end),
        onDecline: () => this.serviceRevocations(),
      },
      id,
      spec,
      rec,
      rev,
    );
    this.lanes.set(id, lane);
    this.metrics.lanes.set(this.lanes.size);
    if (run) {
      void (async () => {
        try {
          await this.handler(lane.handle);
          await lane.finishNormally();
        } catch (e) {
          if (lane.ended) return;
          if (lane.state === 'draining') {
            lane.drainHandlerState = 'failed';
            this.serviceRevocations();
            return;
          }
          if (isSplitfleetError(e) && e.retryable) {
            // The handler died of a store failure the library raised (a commit that could not
            // reach etcd), not of anything wrong with the split. substrate.md's failure report is
            // "the source says the split cannot be processed"; counting store outages as that
            // would quarantine healthy splits after a few etcd elections. Release it instead (no
            // attempt consumed; the uncommitted tail replays, as after a forced release).
            this.log.warn({ split: id, err: e }, 'split handler stopped on a store failure; releasing the split');
            await lane.finishNormally();
            return;
          }
          this.log.warn({ split: id, err: e }, 'split handler failed');
          await lane.finishWithError(e);
        }
      })();
    }
    return lane;
  }

  private laneEnded(lane: Lane, end: LaneEnd): void {
    this.lanes.delete(lane.id);
    this.metrics.lanes.set(this.lanes.size);
    this.drainTimers.get(lane.id)?.();
    this.drainTimers.delete(lane.id);
    if (lane.drainStartedAt !== undefined) {
      const seconds = (this.clock.now() - lane.drainStartedAt) / 1000;
      this.metrics.drainDuration.observe(seconds);
      const outcome = end === 'forced' ? (lane.drainHandlerState === 'declined' ? 'declined' : 'forced') : 'cooperative';
      if (end !== 'lost') this.metrics.revocations.inc({ outcome });
    }
    this.log.debug({ split: lane.id, end }, 'lane ended');
    if (this.lanes.size === 0) for (const w of this.idleWaiters.splice(0)) w();
    this.schedule();
  }

  /** Begins a cooperative drain; serviceRevocations takes it from there. */
  private revoke(id: string): void {
    const lane = this.lanes.get(id);
    if (!lane || lane.state !== 'running') return;
    this.log.info({ split: id }, 'revoking split (cooperative drain)');
    lane.beginDrain();
    this.serviceRevocations();
  }

  /**
   * Moves every drain in progress along: forced when the handler declined or
   * failed, or at drain_deadline; otherwise one timer to look again then.
   */
  serviceRevocations(): void {
    const now = this.clock.now();
    for (const lane of this.lanes.values()) {
      if (lane.state !== 'draining' || lane.drainStartedAt === undefined) continue;
      const d = drainDecision(lane.drainStartedAt, now, this.config.drainDeadlineMs, lane.drainHandlerState);
      switch (d.kind) {
        case 'force':
          this.log.info({ split: lane.id, reason: d.reason }, 'revocation forced');
          void lane.force();
          break;
        case 'wait':
          if (!this.drainTimers.has(lane.id)) {
            this.drainTimers.set(
              lane.id,
              this.clock.setTimer(d.forceAt - now, () => {
                this.drainTimers.delete(lane.id);
                this.serviceRevocations();
              }),
            );
          }
          break;
      }
    }
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
    for (const lane of this.lanes.values()) lane.beginDrain();
    this.serviceRevocations();
    if (this.lanes.size > 0) await new Promise<void>((resolve) => this.idleWaiters.push(resolve));
    for (const cancel of this.drainTimers.values()) cancel();
    this.drainTimers.clear();
  }

  /** Drops all lanes at once (the coordinator is closing without a drain). */
  abortAll(): void {
    this.stopped = true;
    this.loseAll('coordinator closed');
  }
}
