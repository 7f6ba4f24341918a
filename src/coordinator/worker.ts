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
import { classifyClaim, claimedRecord, quarantinedRecord, releasedRecord, type ClaimKind, type ObservedSplit } from '../protocol/claims.js';
import { leaseKey, progressKey, splitKey } from '../protocol/keys.js';
import { settleOrphan } from '../protocol/orphans.js';
import { drainDecision, reconcileAssignment } from '../protocol/reconcile.js';
import { decodeRecord, encodeRecord, fingerprintHash, SCHEMA_VERSION, type ProgressRecord, type SpecRecord, type SplitRecord } from '../protocol/records.js';
import { cmp, op, type Compare, type KeyValue, type Op, type Store } from '../store/store.js';
import { emitLaneEnd, noEmit, type LifecycleHooks } from './events.js';
import { Lane, type LaneEnd } from './lane.js';
import type { Logger } from './log.js';
import type { Metrics } from './metrics.js';
import type { Session } from './session.js';
import { withTimeout } from '../timeout.js';
import type { SplitHandler } from './types.js';
import type { WorkerView } from './worker-view.js';

/** Most claims in one transaction: 2 compares and 3 ops each, under etcd's 128 per transaction. */
const CLAIMS_PER_TXN = 24;

/** One prepared claim: the transaction parts for one split, and what to do once it lands. */
interface PreparedClaim {
  id: string;
  kind: ClaimKind;
  basis: string;
  spec: SpecRecord;
  next: SplitRecord;
  quarantine: boolean;
  compares: Compare[];
  success: Op[];
}

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
}

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
  /** Orphaned lease keys being given back (see settleOrphans). */
  private readonly releasing = new Set<string>();
  /**
   * Splits whose last write by this session had an unknown outcome (a claim
   * or a lane write that timed out): followed until the view shows whether
   * the store still names us, so settleOrphans can adopt or give back what landed.
   */
  private readonly uncertain = new Set<string>();
  /** Orphans being adopted (their progress being read). */
  private readonly adopting = new Set<string>();
  /** Splits of unknown outcome being read back, and those whose read-back is in the view (see settleOrphans). */
  private readonly confirming = new Set<string>();
  private readonly confirmed = new Set<string>();
  /** Orphans whose adoption or release failed, by the observation it was based on (see settleBasis). */
  private readonly settleTried = new Map<string, string>();

  private readonly store: Store;
  private readonly config: Config;
  private readonly clock: Clock;
  private readonly view: WorkerView;
  private readonly session: Session;
  private readonly handler: SplitHandler;
  private readonly metrics: Metrics;
  private readonly log: Logger;
  private readonly hooks: LifecycleHooks;

  constructor(ctx: WorkerContext) {
    this.store = ctx.store;
    this.config = ctx.config;
    this.clock = ctx.clock;
    this.view = ctx.view;
    this.session = ctx.session;
    this.handler = ctx.handler;
    this.metrics = ctx.metrics;
    this.log = ctx.log;
    this.hooks = ctx.hooks ?? {};
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
      if (!this.stopped) this.reconcile();
    });
  }

  /** One reconciliation step: observe, decide (pure), execute. */
  reconcile(): void {
    if (!this.session.alive) return;
    const assignment = this.view.assign?.rec.splits;
    const now = this.clock.now();
    if (assignment) {
      const named = new Set(assignment);
      for (const id of named) if (!this.namedAt.has(id)) this.namedAt.set(id, now);
      for (const id of this.namedAt.keys()) if (!named.has(id)) this.namedAt.delete(id);
    }
    // Follow exactly what concerns us: named, held, being claimed, or of unknown outcome.
    const concerned = new Set<string>([...(assignment ?? []), ...this.lanes.keys(), ...this.claiming, ...this.uncertain, ...this.releasing, ...this.adopting]);
    void this.view.concern(concerned).catch((e) => this.log.warn({ err: (e as Error).message }, 'following assigned splits failed; the backstop retries'));
    const ids = new Set<string>([...(assignment ?? []), ...this.lanes.keys()]);
    const splits = new Map<string, ObservedSplit>();
    for (const id of ids) {
      const seen = this.view.split(id);
      if (!seen) continue; // not read yet: unobserved, so nothing is claimed for it
      if (seen.problems.size > 0) {
        // A record of this split cannot be read: leave it alone. A lane on it stops without
        // writing (what it would write rests on a record we cannot read); it comes back, adopted
        // or claimed, once the record reads again.
        this.lanes.get(id)?.lose(`a record of split ${id} cannot be read: ${[...seen.problems.values()].join('; ')}`);
        continue;
      }
      splits.set(id, {
        record: seen.record?.rec,
        leaseOwner: seen.lease?.rec.owner,
        specObserved: seen.spec !== undefined && seen.record !== undefined,
      });
    }
    // Splits this session owns in the store with no lane (a write of unknown outcome that
    // landed) are settled by settleOrphans, never claimed again: that claim would be a reclaim
    // and cost a delivery attempt for a lost reply.
    const orphans = [...this.uncertain].filter((id) => !this.lanes.has(id) && this.view.split(id)?.lease?.lease === this.session.leaseId);
    const held = [...this.lanes.keys(), ...this.claiming, ...orphans, ...this.adopting];
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
    const claims: string[] = [];
    for (const d of decisions) {
      switch (d.kind) {
        case 'claim':
          claims.push(d.id);
          break;
        case 'quarantine':
          void this.claimAll([d.id], true);
          break;
        case 'revoke':
          this.revoke(d.id);
          break;
        default: {
          const never: never = d;
          throw new Error(`unhandled decision ${JSON.stringify(never)}`);
        }
      }
    }
    if (claims.length > 0) void this.claimAll(claims, false);
    this.settleOrphans(new Set(assignment ?? []), assignment !== undefined);
    this.hooks.reconciled?.();
  }

  /**
   * Splits whose last write by this session had an unknown outcome: once the
   * view shows whether the store names this session, `settleOrphan` (pure)
   * says adopt (open a lane on the tenancy that landed: no claim, no attempt
   * consumed), release (guarded like any lane write), or forget. With no
   * assignment record at all nothing is released: no record means hold.
   */
  private settleOrphans(assigned: ReadonlySet<string>, hasRecord: boolean): void {
    for (const id of this.uncertain) {
      if (this.lanes.has(id) || this.claiming.has(id) || this.releasing.has(id) || this.adopting.has(id)) continue;
      const seen = this.view.split(id);
      if (!seen || seen.problems.size > 0) continue; // not read yet, or unreadable for now
      // An adoption or release that failed on this very observation fails again: wait for the view.
      if (this.settleTried.get(id) === this.settleBasis(id)) continue;
      this.settleTried.delete(id);
      const lanesInUse = this.lanes.size + this.claiming.size + this.adopting.size;
      const d = settleOrphan(
        { record: seen.record?.rec, lease: seen.lease ? { rec: seen.lease.rec, leaseId: seen.lease.lease } : undefined },
        { me: this.me, sessionLease: this.session.leaseId, nonce: this.session.nonce, assigned: assigned.has(id), laneFree: lanesInUse < this.config.maxInFlight },
      );
      switch (d.kind) {
        case 'forget':
          // The watch may not show a write that landed yet: only a read made after the write's
          // outcome became unknown may say it did not land (else our own claim would come back
          // as a reclaim, costing an attempt).
          if (this.confirmed.has(id)) {
            this.confirmed.delete(id);
            this.uncertain.delete(id);
          } else {
            this.confirm(id);
          }
          break;
        case 'wait':
          break;
        case 'adopt':
          void this.adopt(id);
          break;
        case 'release':
          if (hasRecord) this.releaseOrphan(id);
          break;
        default: {
          const never: never = d;
          throw new Error(`unhandled orphan decision ${JSON.stringify(never)}`);
        }
      }
    }
  }

  /** Reads a split of unknown outcome back, then settles it on what the read showed. */
  private confirm(id: string): void {
    if (this.confirming.has(id)) return;
    this.confirming.add(id);
    void withTimeout(this.view.reread([id]), this.config.opTimeoutMs, `reading back ${id}`, this.clock)
      .then(() => this.confirmed.add(id))
      .catch(() => this.settleAgainLater(id))
      .finally(() => {
        this.confirming.delete(id);
        this.schedule();
      });
  }

  /** Opens a lane on a tenancy of ours that landed unseen, resuming from its committed progress. */
  private async adopt(id: string): Promise<void> {
    const seen = this.view.split(id);
    const record = seen?.record;
    const spec = seen?.spec;
    if (!record || !spec) return;
    this.adopting.add(id);
    try {
      const pk = progressKey(this.view.prefix, id);
      // Guarded by the tenancy as the view shows it: a lagging view may still show a lease key
      // that expired with the session, and a lane opened on it would process work in vain
      // while the split's next owner runs it (found by the simulation: delayed events, then
      // the session's leases expired at the store).
      const res = await withTimeout(this.store.txn({
        compares: [cmp.modRevision(splitKey(this.view.prefix, id), record.modRevision), cmp.lease(leaseKey(this.view.prefix, id), this.session.leaseId)],
        success: [op.get(pk)],
      }), this.config.opTimeoutMs, `reading the progress of ${id}`, this.clock);
      if (!res.won) {
        // Not ours at the store: read the split's keys again, so the view settles it.
        this.settleTried.set(id, this.settleBasis(id));
        this.confirm(id);
        return;
      }
      const kv = res.reads[0];
      const progress = kv ? decodeRecord('progress', kv.key, kv.value, fingerprintHash(this.config.fingerprint)) : undefined;
      // Still the tenancy we are adopting? (Its record may have moved while we read.) If not, the
      // view's change that shows it settles the split; trying again before that would loop.
      if (this.view.split(id)?.record?.modRevision !== record.modRevision || this.stopped || !this.session.alive) return;
      this.uncertain.delete(id);
      // Should this lane be fenced at once (the view lags the store), the split comes back here:
      // adopt it again only once the view has moved.
      this.settleTried.set(id, this.settleBasis(id));
      this.log.info({ split: id, epoch: record.rec.epoch }, 'adopting a split this session owns with no lane (a write whose reply was lost)');
      this.metrics.claims.inc({ kind: 'adopted', outcome: 'won' });
      this.emit('split-claimed', { id, epoch: record.rec.epoch, attempts: record.rec.attempts, kind: 'adopted' });
      this.openLane(id, spec, record.rec, record.modRevision, progress, kv?.modRevision ?? 0, true);
    } catch (e) {
      this.log.warn({ split: id, err: (e as Error).message }, 'adopting a split failed; will retry');
      this.settleAgainLater(id);
    } finally {
      this.adopting.delete(id);
      if (this.lanes.has(id)) this.schedule();
    }
  }

  /**
   * A settling attempt failed on the store (a timeout, an outage): try again once the view
   * moves, or after a short wait at the latest. Waiting for the view alone stalls a quiet
   * job for good: nothing else may ever change (found by the simulation: a slow link, then
   * the only other member leaving).
   */
  private settleAgainLater(id: string): void {
    this.settleTried.set(id, this.settleBasis(id));
    this.clock.setTimer(Math.min(1000, Math.max(50, Math.floor(this.config.leaseDurationMs / 6))), () => {
      if (this.stopped) return;
      this.settleTried.delete(id);
      this.schedule();
    });
  }

  /** What a settling attempt was based on: retried only once the view has moved. */
  private settleBasis(id: string): string {
    const seen = this.view.split(id);
    return `${this.view.revision}:${seen?.record?.modRevision ?? 0}:${seen?.lease?.modRevision ?? 0}`;
  }

  /** Gives back a split this session owns with no lane and may not keep (owner cleared, lease key deleted). */
  private releaseOrphan(id: string): void {
    const record = this.view.split(id)?.record;
    if (!record) return;
    this.releasing.add(id);
    const sk = splitKey(this.view.prefix, id);
    const lk = leaseKey(this.view.prefix, id);
    this.log.warn({ split: id, epoch: record.rec.epoch }, 'releasing a split held by this session with no lane behind it');
    void withTimeout(
      this.store.txn({
        compares: [cmp.modRevision(sk, record.modRevision), cmp.lease(lk, this.session.leaseId)],
        success: [op.put(sk, encodeRecord('split', releasedRecord(record.rec, this.me))), op.delete(lk)],
      }),
      this.config.opTimeoutMs, `release of orphaned split ${id}`, this.clock,
    )
      .then((res) => {
        if (res.won) this.uncertain.delete(id);
        else this.settleTried.set(id, this.settleBasis(id));
      })
      .catch(() => this.settleAgainLater(id))
      .finally(() => {
        this.releasing.delete(id);
        this.schedule();
      });
  }

  /**
   * The claim (or quarantine) transactions for `ids`: claims ready together
   * go in one transaction (CLAIMS_PER_TXN at most); a batch that loses is
   * retried one claim per transaction, since one moved record fails them all.
   */
  private async claimAll(ids: string[], quarantine: boolean): Promise<void> {
    const prepared: PreparedClaim[] = [];
    for (const id of ids) {
      const p = this.prepareClaim(id, quarantine);
      if (p) prepared.push(p);
    }
    // Nothing to send (each was lost on this very observation, or is not claimable now): no
    // reconciliation to schedule either, or an unchanged view would re-decide the same claims
    // in a loop of microtasks that starves every timer.
    if (prepared.length === 0) return;
    for (const p of prepared) this.claiming.add(p.id);
    try {
      for (let i = 0; i < prepared.length; i += CLAIMS_PER_TXN) {
        const batch = prepared.slice(i, i + CLAIMS_PER_TXN);
        const won = await this.sendClaims(batch, batch.length === 1);
        if (won || batch.length === 1) continue;
        for (const p of batch) await this.sendClaims([p], true);
      }
    } finally {
      for (const p of prepared) this.claiming.delete(p.id);
      this.schedule();
    }
  }

  /** Builds one claim from the view, or nothing when the split cannot be claimed now. */
  private prepareClaim(id: string, quarantine: boolean): PreparedClaim | undefined {
    if (this.claiming.has(id) || this.lanes.has(id)) return undefined;
    const seen = this.view.split(id);
    const record = seen?.record;
    const spec = seen?.spec;
    if (!seen || !record || !spec || seen.problems.size > 0) return undefined;
    const lease = seen.lease;
    const c = classifyClaim(record.rec, lease?.rec.owner, this.me, this.config.maxAttempts);
    if (c.kind === 'unclaimable') return undefined;
    // The view's revision too: a lease key put and deleted again leaves the pair as it was.
    const basis = `${this.view.revision}:${record.modRevision}:${lease?.modRevision ?? 0}`;
    if (this.lostClaims.get(id) === basis) return undefined;
    this.lostClaims.delete(id);
    const sk = splitKey(this.view.prefix, id);
    const lk = leaseKey(this.view.prefix, id);
    const compares = [cmp.modRevision(sk, record.modRevision), c.kind === 'reclaim' ? cmp.lease(lk, lease?.lease ?? '') : cmp.absent(lk)];
    const success: Op[] = [];
    let next: SplitRecord;
    const parks = quarantine || c.quarantine;
    if (parks) {
      next = quarantinedRecord(record.rec, `max_attempts (${this.config.maxAttempts}) reached on a ${c.kind} claim`);
      success.push(op.put(sk, encodeRecord('split', next)));
      if (c.kind === 'reclaim') success.push(op.delete(lk));
    } else {
      next = claimedRecord(record.rec, this.me, c);
      const leaseValue = encodeRecord('lease', {
        v: SCHEMA_VERSION, fp: fingerprintHash(this.config.fingerprint), id, owner: this.me, nonce: this.session.nonce, epoch: next.epoch,
      });
      // The committed progress is read in the same transaction: the lane resumes from it and
      // guards its first commit with its revision.
      success.push(op.put(sk, encodeRecord('split', next)), op.put(lk, leaseValue, this.session.leaseId), op.get(progressKey(this.view.prefix, id)));
    }
    return { id, kind: c.kind, basis, spec: spec, next, quarantine: parks, compares, success };
  }

  /** Sends claims as one transaction; true when it won. */
  private async sendClaims(batch: PreparedClaim[], alone: boolean): Promise<boolean> {
    const what = alone ? `claim of ${batch[0]!.id}` : `claim of ${batch.length} splits`;
    try {
      const res = await withTimeout(
        this.store.txn({ compares: batch.flatMap((p) => p.compares), success: batch.flatMap((p) => p.success) }),
        this.config.opTimeoutMs, what, this.clock,
      );
      if (!res.won) {
        if (alone) {
          this.metrics.claims.inc({ kind: batch[0]!.kind, outcome: 'lost' });
          this.lostClaims.set(batch[0]!.id, batch[0]!.basis);
        }
        return false;
      }
      let read = 0;
      for (const p of batch) {
        if (p.quarantine) {
          this.metrics.quarantined.inc();
          this.log.warn({ split: p.id, attempts: p.next.attempts }, 'split quarantined');
          this.emit('split-quarantined', { id: p.id, reason: p.next.reason ?? 'max_attempts reached', attempts: p.next.attempts });
          continue;
        }
        const progress = res.reads[read++];
        try {
          this.claimWon(p, res.revision, progress);
        } catch (e) {
          // An unreadable progress record: no lane can resume from it. The lease key we wrote
          // stays ours until settleOrphans or our session gives it back.
          this.uncertain.add(p.id);
          this.log.error({ split: p.id, err: (e as Error).message }, 'claimed a split whose progress record cannot be read');
        }
      }
      return true;
    } catch (e) {
      // Unknown outcome: follow these splits until the view says whether the claim landed.
      for (const p of batch) this.uncertain.add(p.id);
      // The claim wrote its lease key under our session lease and the store says that lease is
      // gone: the session is lost (the coordinator rejoins). Retrying would spin on the same error.
      if (isSplitfleetError(e, 'LEASE_LOST')) this.session.lose(`${what} found the session lease gone: ${e.message}`);
      else if (!isSplitfleetError(e) || !e.retryable) this.log.error({ err: e }, `${what} failed`);
      return true; // not a lost race: retrying one by one would repeat the failure
    }
  }

  private claimWon(p: PreparedClaim, revision: number, progressKv: KeyValue | undefined): void {
    this.metrics.claims.inc({ kind: p.kind, outcome: 'won' });
    const named = this.namedAt.get(p.id);
    if (named !== undefined) this.metrics.assignmentLatency.observe((this.clock.now() - named) / 1000);
    const read = progressKv ? decodeRecord('progress', progressKv.key, progressKv.value, fingerprintHash(this.config.fingerprint)) : undefined;
    const run = !this.stopped && this.session.alive;
    this.emit('split-claimed', { id: p.id, epoch: p.next.epoch, attempts: p.next.attempts, kind: p.kind });
    const lane = this.openLane(p.id, p.spec, p.next, revision, read, progressKv?.modRevision ?? 0, run);
    // We won a claim while stopping: give it straight back.
    if (!run) {
      lane.releaseCause = 'stopping';
      void lane.finishNormally();
    }
  }

  private openLane(id: string, spec: SpecRecord, rec: SplitRecord, rev: number, progress: ProgressRecord | undefined, progressRev: number, run: boolean): Lane {
    const lane = new Lane(
      {
        store: this.store,
        config: this.config,
        clock: this.clock,
        prefix: this.view.prefix,
        leaseId: this.session.leaseId,
        onEnd: (l, end, reason) => this.laneEnded(l, end, reason),
        onDecline: () => this.serviceRevocations(),
        onSettled: (resolution) => this.metrics.unknownOutcomes.inc({ resolution }),
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
            lane.releaseCause = 'store-failure';
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

  private laneEnded(lane: Lane, end: LaneEnd, reason: string): void {
    this.lanes.delete(lane.id);
    // Fenced by a write of its own that landed unseen, maybe: follow it until the store says.
    if (end === 'lost' && this.session.alive) this.uncertain.add(lane.id);
    this.metrics.lanes.set(this.lanes.size);
    if (end === 'completed') this.metrics.completions.inc();
    else if (end === 'failed') this.metrics.handlerFailures.inc();
    this.drainTimers.get(lane.id)?.();
    this.drainTimers.delete(lane.id);
    if (lane.drainStartedAt !== undefined) {
      const seconds = (this.clock.now() - lane.drainStartedAt) / 1000;
      this.metrics.drainDuration.observe(seconds);
      const outcome = end === 'forced' ? (lane.drainHandlerState === 'declined' ? 'declined' : 'forced') : 'cooperative';
      if (end !== 'lost') this.metrics.revocations.inc({ outcome });
    }
    this.log.debug({ split: lane.id, end }, 'lane ended');
    emitLaneEnd(this.emit, {
      id: lane.id, epoch: lane.handle.epoch, end, reason, record: lane.record, draining: lane.drainStartedAt !== undefined,
      drainHandlerState: lane.drainHandlerState, releaseCause: lane.releaseCause,
    });
    if (this.lanes.size === 0) for (const w of this.idleWaiters.splice(0)) w();
    this.schedule();
  }

  /** Begins a cooperative drain; serviceRevocations takes it from there. */
  private revoke(id: string): void {
    const lane = this.lanes.get(id);
    if (!lane || lane.state !== 'running') return;
    this.log.info({ split: id }, 'revoking split (cooperative drain)');
    lane.beginDrain();
    this.emit('drain-started', { id, epoch: lane.handle.epoch, reason: 'revoked' });
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
    for (const lane of this.lanes.values()) {
      if (lane.state !== 'running') continue; // already draining (a revocation): reported when it began
      lane.beginDrain();
      this.emit('drain-started', { id: lane.id, epoch: lane.handle.epoch, reason: 'stopping' });
    }
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
