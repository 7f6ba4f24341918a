/**
 * Claiming: sends the claim and quarantine decisions of `reconcileAssignment`
 * as the transactions `claimTxn` (protocol/txns.ts) builds, and reports what
 * came of them. Claims ready together share one transaction (CLAIMS_PER_TXN
 * at most); a batch that loses is retried one claim per transaction, since
 * one moved record fails them all.
 *
 * Invariants:
 * - What a claim compares and writes, and what it costs, is the decision's
 *   and protocol/'s: this shell does not classify a claim again.
 * - A claim that lost is not sent again on the same observation (the view,
 *   split and lease-key revisions it was based on): while the watch lags
 *   that would be a hot loop of doomed transactions.
 * - A claim whose outcome is unknown (timed out, reply lost) makes its splits
 *   uncertain: the orphan settler finds out whether it landed. It is never
 *   claimed again meanwhile.
 */
import type { Config } from '../config.js';
import { isRetryable, isSplitfleetError } from '../errors.js';
import { fingerprintHash, type SpecRecord, type SplitRecord } from '../protocol/records.js';
import type { ReconcileDecision } from '../protocol/reconcile.js';
import type { ClaimKind } from '../protocol/claims.js';
import { claimTxn, joinTxns, type Writer } from '../protocol/txns.js';
import type { KeyValue, Store, Txn } from '../store/store.js';
import type { OnUnexpected } from './background.js';
import type { Emit } from './events.js';
import type { Logger } from './log.js';
import type { Metrics } from './metrics.js';
import type { Session } from './session.js';
import type { WorkerView } from './worker-view.js';

/** Most claims in one transaction: 2 compares and 3 ops each, under etcd's 128 per transaction. */
export const CLAIMS_PER_TXN = 24;

/** One claim ready to send, and what to do once it lands. */
export interface PreparedClaim {
  id: string;
  kind: ClaimKind;
  basis: string;
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
  /** A claim of unknown outcome, or a claimed split whose progress cannot be read: follow it. */
  uncertain: (id: string) => void;
  /** A claim landed: open its lane (progress as read in the claim's transaction). */
  won: (p: PreparedClaim, revision: number, progress: KeyValue | undefined) => void;
  /** Reconcile again (after claims finish, won or not). */
  schedule: () => void;
}

export class Claimer {
  /** Splits whose claim is in flight (lanes in use: counted against maxInFlight). */
  readonly claiming = new Set<string>();
  /** Claims that lost, by split: the observation they were based on (see the header). */
  private readonly lostClaims = new Map<string, string>();

  constructor(private readonly ctx: ClaimerContext) {}

  /** Sends `decisions` (claims and quarantines of one reconciliation), batched. */
  async claimAll(decisions: readonly Extract<ReconcileDecision, { kind: 'claim' | 'quarantine' }>[]): Promise<void> {
    const prepared: PreparedClaim[] = [];
    for (const d of decisions) {
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
    // in a loop of microtasks that starves every timer.
    if (prepared.length === 0) return;
    for (const p of prepared) this.claiming.add(p.id);
    try {
      for (let i = 0; i < prepared.length; i += CLAIMS_PER_TXN) {
        const batch = prepared.slice(i, i + CLAIMS_PER_TXN);
        const won = await this.send(batch, batch.length === 1);
        if (won || batch.length === 1) continue;
        for (const p of batch) await this.send([p], true);
      }
    } finally {
      for (const p of prepared) this.claiming.delete(p.id);
      this.ctx.schedule();
    }
  }

  /** The claim's transaction from the view, or nothing when the split cannot be sent now. */
  private prepare(d: Extract<ReconcileDecision, { kind: 'claim' | 'quarantine' }>): PreparedClaim | undefined {
    const { view, session, config } = this.ctx;
    if (this.claiming.has(d.id) || this.ctx.hasLane(d.id)) return undefined;
    const seen = view.split(d.id);
    const record = seen?.record;
    const spec = seen?.spec;
    if (!seen || !record || !spec || seen.problems.size > 0) return undefined;
    // The view's revision too: a lease key put and deleted again leaves the pair as it was.
    const basis = `${view.revision}:${record.modRevision}:${seen.lease?.modRevision ?? 0}`;
    if (this.lostClaims.get(d.id) === basis) return undefined;
    this.lostClaims.delete(d.id);
    const writer: Writer = { prefix: view.prefix, me: config.instance, nonce: session.nonce, sessionLease: session.leaseId, fp: fingerprintHash(config.fingerprint) };
    const order = d.kind === 'claim'
      ? { kind: 'claim' as const, claim: d.claim, consumesAttempt: d.consumesAttempt }
      : { kind: 'quarantine' as const, claim: d.claim, consumesAttempt: true };
    const c = claimTxn(writer, d.id, order, record, seen.lease, config.maxAttempts);
    return { id: d.id, kind: d.claim, basis, spec, next: c.next, quarantine: c.quarantine, txn: c.txn };
  }

  /** Sends claims as one transaction; true when it won (or failed in a way retrying one by one would repeat). */
  private async send(batch: PreparedClaim[], alone: boolean): Promise<boolean> {
    const { store, metrics, log, emit } = this.ctx;
    const what = alone ? `claim of ${batch[0]!.id}` : `claim of ${batch.length} splits`;
    try {
      const res = await store.txn(joinTxns(batch.map((p) => p.txn)));
      if (!res.won) {
        if (alone) {
          metrics.claims.inc({ kind: batch[0]!.kind, outcome: 'lost' });
          this.lostClaims.set(batch[0]!.id, batch[0]!.basis);
        }
        return false;
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
          this.ctx.uncertain(p.id);
          log.error({ split: p.id, err: (e as Error).message }, 'claimed a split whose progress record cannot be read');
        }
      }
      return true;
    } catch (e) {
      // Unknown outcome: follow these splits until the view says whether the claim landed.
      for (const p of batch) this.ctx.uncertain(p.id);
      // The claim wrote its lease key under our session lease and the store says that lease is
      // gone: the session is lost (the coordinator rejoins). Retrying would spin on the same error.
      if (isSplitfleetError(e, 'LEASE_LOST')) this.ctx.session.lose(`${what} found the session lease gone: ${e.message}`);
      else if (!isRetryable(e)) log.error({ err: e }, `${what} failed`);
      return true; // not a lost race: retrying one by one would repeat the failure
    }
  }
}
