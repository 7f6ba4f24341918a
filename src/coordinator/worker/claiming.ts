/**
 * Claiming: sends the claim and quarantine decisions of `reconcileAssignment`
 * as the transactions `claimTxn` (protocol/txns.ts) builds, and reports what
 * came of them. Claims ready together share one transaction (CLAIMS_PER_TXN
 * at most); a batch that loses is retried one claim per transaction, since
 * one moved record fails them all.
 *
 * Invariants:
 * - What a claim compares and writes, and what it costs, is the decision's
 *   and protocol/'s: this shell does not classify a claim again. It only
 *   reads what a takeover's cost needs (the progress record: did the ended
 *   tenancy commit?) and hands it to takeoverCost; the claim compares it.
 * - A decision is sent only on the observation it was made on: a split whose
 *   record or lease key moved while the batch's progress reads ran is decided
 *   again (a 'create' whose own claim landed and expired meanwhile is a
 *   takeover now, and costs what a takeover costs).
 * - A claim that lost is not sent again on the same observation (the view,
 *   split and lease-key revisions it was based on): while the watch lags
 *   that would be a hot loop of doomed transactions.
 * - A claim whose outcome is unknown (timed out, reply lost) makes its splits
 *   uncertain: the orphan settler finds out whether it landed (it is handed
 *   the claim, which may still land while the record stays where the claim
 *   found it). Only the settler sends it again (`claimAgain`), never a
 *   reconciliation: the lane it may take is already spent.
 */
import type { Clock } from '../../clock.js';
import type { Config } from '../../config.js';
import { isRetryable, isSplitfleetError } from '../../errors.js';
import { decodeRecord, fingerprintHash, type SpecRecord, type SplitRecord } from '../../protocol/records.js';
import { progressKey } from '../../protocol/keys.js';
import type { ReconcileDecision } from '../../protocol/reconcile.js';
import { isTakeover, takeoverCost, type ClaimKind } from '../../protocol/claims.js';
import { claimTxn, joinTxns, type Writer } from '../../protocol/txns.js';
import { op, type KeyValue, type Store, type Txn } from '../../store/store.js';
import type { OnUnexpected } from '../background.js';
import type { RidingClaim } from '../lanes/lane.js';
import type { Emit } from '../events.js';
import type { Logger } from '../log.js';
import type { Metrics } from '../metrics.js';
import type { Session } from '../session.js';
import type { WorkerView } from '../views/worker-view.js';

/** A claim or quarantine decision; a takeover's carries the progress revision its cost was settled on. */
type CostedDecision = Extract<ReconcileDecision, { kind: 'claim' | 'quarantine' }> & { progressRevision?: number };

/** Most claims in one transaction: 2 or 3 compares and 3 ops each, under etcd's 128 per transaction. */
export const CLAIMS_PER_TXN = 24;

/** One claim ready to send, and what to do once it lands. */
export interface PreparedClaim {
  id: string;
  kind: ClaimKind;
  basis: string;
  /** The revision of `split.{id}` the claim compares: while the record stays there, it may land. */
  recordRevision: number;
  spec: SpecRecord;
  next: SplitRecord;
  quarantine: boolean;
  txn: Txn;
}

/** The worker's parts its helpers (the claimer, the orphan settler) share. */
export interface WorkerParts {
  store: Store;
  config: Config;
  view: WorkerView;
  session: Session;
  metrics: Metrics;
  log: Logger;
  emit: Emit;
  /** An error that escaped a background path (background.ts). */
  unexpected: OnUnexpected;
  /** The jitter stream of retry loops (protocol/backoff.ts). */
  random: () => number;
}

/** What the claimer works with; `won` opens the lane (the worker's). */
export interface ClaimerContext extends WorkerParts {
  /** Whether the worker has a lane on `id`. */
  hasLane: (id: string) => boolean;
  /** A claim of unknown outcome (with the claim, which may still land), or a claimed split whose progress cannot be read: follow it. */
  uncertain: (id: string, claim?: PreparedClaim) => void;
  /** A claim landed: open its lane (progress as read in the claim's transaction). */
  won: (p: PreparedClaim, revision: number, progress: KeyValue | undefined) => void;
  /** Reconcile again (after claims finish, won or not). */
  schedule: () => void;
  /** The worker's clock: how long a split whose progress cannot be read is left alone (UNREADABLE_HOLD). */
  clock: Clock;
}

export class Claimer {
  /** Splits whose claim is in flight (lanes in use: counted against maxInFlight). */
  readonly claiming = new Set<string>();
  /**
   * Takeovers whose progress is being read (their cost: takeoverCosts); not decided twice at once.
   * A lane in use like `claiming`: a reconciliation while the read is out must not spend that lane
   * again (with prefetch it would claim another named split beyond maxInFlight).
   */
  readonly costing = new Set<string>();
  /** Splits of a batch whose takeovers' costs are being read (claimAll): lanes in use, like `claiming`. */
  readonly deciding = new Set<string>();
  /** A takeover was skipped while its cost was being read: reconcile once the reads end. */
  private recostPending = false;
  /** Claims that lost, by split: the observation they were based on (see the header). */
  private readonly lostClaims = new Map<string, string>();
  /**
   * Splits a claim of which found their progress record unreadable, and until when (clock ms)
   * they are not claimed again: the claim is given back (the orphan settler), and claiming it
   * again at once would loop claim → release on a record nobody watches (found with prefetch,
   * where another named split takes the lane meanwhile). Retried after reconcileIntervalMs,
   * by then perhaps repaired; the split costs itself, not the lane.
   */
  private readonly unreadableProgress = new Map<string, number>();

  constructor(private readonly ctx: ClaimerContext) {}

  /** Sends `decisions` (claims and quarantines of one reconciliation), batched. */
  async claimAll(decisions: readonly Extract<ReconcileDecision, { kind: 'claim' | 'quarantine' }>[]): Promise<void> {
    const prepared: PreparedClaim[] = [];
    // Each decision rests on the split as observed now; reading the takeovers' progress takes a
    // round trip, during which the view may move (our own earlier claim of a 'create' landing, its
    // lease expiring). A decision whose split moved meanwhile is decided again, never sent with
    // the kind (and cost) of an observation the view no longer holds.
    const decidedOn = new Map(decisions.map((d) => [d.id, this.observed(d.id)]));
    // Every decision of this batch spends its lane from now on, not only once its costs are read:
    // a reconciliation meanwhile would otherwise spend the same lanes on other named splits.
    const mine = decisions.filter((d) => !this.deciding.has(d.id)).map((d) => d.id);
    for (const id of mine) this.deciding.add(id);
    let costs: Map<string, CostedDecision>;
    try {
      costs = await this.takeoverCosts(decisions);
    } finally {
      for (const id of mine) this.deciding.delete(id);
    }
    let moved = false;
    for (const d0 of decisions) {
      if (this.observed(d0.id) !== decidedOn.get(d0.id)) {
        moved = true;
        continue;
      }
      const cost = costs.get(d0.id);
      if (isTakeover(d0.claim) && cost === undefined) continue; // its progress could not be read: the backstop tries again
      const d = cost ?? d0;
      // One split whose claim cannot even be built (a bug, a record that cannot be written back)
      // costs that split only: reported, and the others are still sent.
      try {
        const p = this.prepare(d);
        if (p) prepared.push(p);
      } catch (e) {
        this.ctx.unexpected(d.kind, e);
      }
    }
    // Nothing to send (each was lost on this very observation, or is not claimable now): no
    // reconciliation to schedule either, or an unchanged view would re-decide the same claims
    // in a loop of microtasks that starves every timer. (A moved split is decided again.)
    if (prepared.length === 0) {
      if (moved) this.ctx.schedule();
      return;
    }
    for (const p of prepared) this.claiming.add(p.id);
    try {
      for (let i = 0; i < prepared.length; i += CLAIMS_PER_TXN) {
        const batch = prepared.slice(i, i + CLAIMS_PER_TXN);
        const outcome = await this.send(batch, batch.length === 1);
        if (outcome !== 'lost' || batch.length === 1) continue;
        for (const p of batch) await this.send([p], true);
      }
    } finally {
      for (const p of prepared) this.claiming.delete(p.id);
      this.ctx.schedule();
    }
  }

  /**
   * A plain claim (a create, or a claim after a release: no cost to read) prepared to ride in a
   * lane's completion (decision 0055): counted as claiming until its outcome is settled. Won, its
   * lane opens as any claim's; lost (the joined transaction's compares failed, and which part
   * failed is unknown) it is decided again on the next reconciliation; of unknown outcome, the
   * orphan settler finds out whether it landed.
   */
  ride(d: Extract<ReconcileDecision, { kind: 'claim' }>): RidingClaim | undefined {
    if (isTakeover(d.claim) || this.costing.has(d.id)) return undefined;
    let p: PreparedClaim | undefined;
    try {
      p = this.prepare(d);
    } catch (e) {
      this.ctx.unexpected('claim', e);
      return undefined;
    }
    if (!p) return undefined;
    const claim = p;
    this.claiming.add(claim.id);
    return {
      txn: claim.txn,
      settle: (outcome) => {
        this.claiming.delete(claim.id);
        if (outcome.kind === 'won') {
          this.ctx.metrics.claimsRidden.inc();
          try {
            this.ctx.won(claim, outcome.revision, outcome.reads[0]);
          } catch (e) {
            this.unreadable(claim.id, e);
          }
        } else if (outcome.kind === 'unknown') {
          this.ctx.uncertain(claim.id, claim);
        } else {
          this.ctx.view.followNow(claim.id);
        }
        this.ctx.schedule();
      },
    };
  }

  /**
   * What each takeover among `decisions` costs (protocol/claims.ts,
   * takeoverCost): the progress records of their splits, read in one
   * transaction, say whether the tenancy each ends committed progress. A split
   * whose progress cannot be read now is left out (and not claimed).
   */
  private async takeoverCosts(
    decisions: readonly Extract<ReconcileDecision, { kind: 'claim' | 'quarantine' }>[],
  ): Promise<Map<string, CostedDecision>> {
    const out = new Map<string, CostedDecision>();
    // A takeover already being costed is decided again once that read ends (its decision may be stale).
    if (decisions.some((d) => this.costing.has(d.id))) this.recostPending = true;
    const takeovers = decisions.filter((d) => isTakeover(d.claim) && !this.claiming.has(d.id) && !this.costing.has(d.id) && !this.ctx.hasLane(d.id));
    if (takeovers.length === 0) return out;
    for (const d of takeovers) this.costing.add(d.id);
    try {
      return await this.costTakeovers(takeovers, out);
    } finally {
      for (const d of takeovers) this.costing.delete(d.id);
      if (this.costing.size === 0 && this.recostPending) {
        this.recostPending = false;
        this.ctx.schedule();
      }
    }
  }

  private async costTakeovers(
    takeovers: readonly Extract<ReconcileDecision, { kind: 'claim' | 'quarantine' }>[], out: Map<string, CostedDecision>,
  ): Promise<Map<string, CostedDecision>> {
    const { store, view, config, log } = this.ctx;
    // The decisions rest on the view as it was: a split whose record or lease key moved while the
    // progress was being read is decided again (a reclaim whose lease expired meanwhile is an
    // expired claim now), not sent on a kind its observation no longer supports.
    const observed = (id: string) => this.observed(id);
    const before = new Map(takeovers.map((d) => [d.id, observed(d.id)]));
    let reads: (KeyValue | undefined)[];
    try {
      reads = (await store.txn({ compares: [], success: takeovers.map((d) => op.get(progressKey(view.prefix, d.id))) })).reads;
    } catch (e) {
      log.warn({ err: (e as Error).message, splits: takeovers.length }, 'reading progress before a takeover failed; retrying on the next reconciliation');
      return out;
    }
    const fp = fingerprintHash(config.fingerprint);
    let moved = false;
    takeovers.forEach((d, i) => {
      const record = view.split(d.id)?.record?.rec;
      if (!record) return;
      // The kind must still fit the view: a reclaim needs our own lease key, an expired claim none.
      const leaseOwner = view.split(d.id)?.lease?.rec.owner;
      const fits = d.claim === 'reclaim' ? leaseOwner === config.instance : leaseOwner === undefined;
      if (!fits || observed(d.id) !== before.get(d.id)) {
        moved = true;
        return;
      }
      const kv = reads[i];
      let progressEpoch: number | undefined;
      try {
        progressEpoch = kv ? decodeRecord('progress', kv.key, kv.value, fp).epoch : undefined;
      } catch (e) {
        log.warn({ split: d.id, err: (e as Error).message }, 'the progress record of a split to take over cannot be read; not claiming it');
        return;
      }
      const cost = takeoverCost(record, progressEpoch, config.maxAttempts);
      const progressRevision = kv?.modRevision ?? 0;
      out.set(d.id, cost.quarantine
        ? { kind: 'quarantine', id: d.id, claim: d.claim, attempts: record.attempts, progressRevision }
        : { kind: 'claim', id: d.id, claim: d.claim, consumesAttempt: cost.consumesAttempt, progressRevision });
    });
    if (moved) this.ctx.schedule();
    return out;
  }

  /** A claim landed on a split whose progress record cannot be read: given back, and left alone for a while. */
  private unreadable(id: string, e: unknown): void {
    const { clock, config, log } = this.ctx;
    this.ctx.uncertain(id);
    this.unreadableProgress.set(id, clock.now() + config.reconcileIntervalMs);
    clock.setTimer(config.reconcileIntervalMs, () => this.ctx.schedule());
    log.error({ split: id, err: (e as Error).message, retryInMs: config.reconcileIntervalMs }, 'claimed a split whose progress record cannot be read; giving it back');
  }

  /** The observation a claim of `id` is decided on: the revisions of its record and lease key in the view. */
  private observed(id: string): string {
    const seen = this.ctx.view.split(id);
    return `${seen?.record?.modRevision ?? 0}:${seen?.lease?.modRevision ?? 0}`;
  }

  /** The claim's transaction from the view, or nothing when the split cannot be sent now. */
  private prepare(d: CostedDecision): PreparedClaim | undefined {
    const { view, session, config } = this.ctx;
    if (this.claiming.has(d.id) || this.ctx.hasLane(d.id)) return undefined;
    const heldOff = this.unreadableProgress.get(d.id);
    if (heldOff !== undefined) {
      if (this.ctx.clock.now() < heldOff) return undefined;
      this.unreadableProgress.delete(d.id);
    }
    const seen = view.split(d.id);
    const record = seen?.record;
    const spec = seen?.spec;
    if (!seen || !record || !spec || seen.problems.size > 0) return undefined;
    // The view's revision too: a lease key put and deleted again leaves the pair as it was.
    const basis = `${view.revision}:${record.modRevision}:${seen.lease?.modRevision ?? 0}`;
    if (this.lostClaims.get(d.id) === basis) return undefined;
    this.lostClaims.delete(d.id);
    const writer: Writer = { prefix: view.prefix, me: config.instance, nonce: session.nonce, sessionLease: session.leaseId, fp: fingerprintHash(config.fingerprint) };
    const progress = d.progressRevision !== undefined ? { progressRevision: d.progressRevision } : {};
    const order = d.kind === 'claim'
      ? { kind: 'claim' as const, claim: d.claim, consumesAttempt: d.consumesAttempt, ...progress }
      : { kind: 'quarantine' as const, claim: d.claim, consumesAttempt: true, ...progress };
    const c = claimTxn(writer, d.id, order, record, seen.lease, config.maxAttempts);
    return { id: d.id, kind: d.claim, basis, recordRevision: record.modRevision, spec, next: c.next, quarantine: c.quarantine, txn: c.txn };
  }

  /**
   * Sends a claim of unknown outcome again, unchanged (the orphan settler's `claim-again`): the
   * split's record is still where the claim found it, so the claim has not landed yet, and
   * whichever of the two lands first fences the other. Won, its lane opens as any claim's.
   */
  async claimAgain(p: PreparedClaim): Promise<'won' | 'lost' | 'unknown'> {
    if (this.claiming.has(p.id) || this.ctx.hasLane(p.id)) return 'unknown';
    this.claiming.add(p.id);
    try {
      return await this.send([p], true);
    } finally {
      this.claiming.delete(p.id);
    }
  }

  /** Sends claims as one transaction: 'lost' when a compare failed, 'unknown' when the outcome is (retrying one by one would repeat the failure). */
  private async send(batch: PreparedClaim[], alone: boolean): Promise<'won' | 'lost' | 'unknown'> {
    const { store, metrics, log, emit } = this.ctx;
    const what = alone ? `claim of ${batch[0]!.id}` : `claim of ${batch.length} splits`;
    try {
      const res = await store.txn(joinTxns(batch.map((p) => p.txn)));
      if (!res.won) {
        if (alone) {
          metrics.claims.inc({ kind: batch[0]!.kind, outcome: 'lost' });
          this.lostClaims.set(batch[0]!.id, batch[0]!.basis);
          // What beat it is someone else's write: a split followed quietly must see it now (decision 0090).
          this.ctx.view.followNow(batch[0]!.id);
        }
        return 'lost';
      }
      let read = 0;
      for (const p of batch) {
        if (p.quarantine) {
          metrics.quarantined.inc();
          log.warn({ split: p.id, attempts: p.next.attempts }, 'split quarantined');
          emit('split-quarantined', { id: p.id, reason: p.next.reason ?? 'max_attempts reached', attempts: p.next.attempts });
          continue;
        }
        const progress = res.reads[read++];
        try {
          this.ctx.won(p, res.revision, progress);
        } catch (e) {
          // An unreadable progress record: no lane can resume from it. The lease key we wrote
          // stays ours until the orphan settler or our session gives it back.
          this.unreadable(p.id, e);
        }
      }
      return 'won';
    } catch (e) {
      // Unknown outcome: follow these splits until the view says whether the claim landed (a
      // quarantine takes no lane, so it is not sent again).
      for (const p of batch) this.ctx.uncertain(p.id, p.quarantine ? undefined : p);
      // The claim wrote its lease key under our session lease and the store says that lease is
      // gone: the session is lost (the coordinator rejoins). Retrying would spin on the same error.
      if (isSplitfleetError(e, 'LEASE_LOST')) this.ctx.session.lose(`${what} found the session lease gone: ${e.message}`);
      else if (!isRetryable(e)) log.error({ err: e }, `${what} failed`);
      return 'unknown'; // not a lost race: retrying one by one would repeat the failure
    }
  }
}
