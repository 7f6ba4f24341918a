/**
 * settleOrphans: the shell around `settleOrphan` (protocol/orphans.ts). It
 * follows the splits whose last write by this session had an unknown outcome
 * (a claim that timed out, a lane fenced by what may be its own write) until
 * the view shows whether the store still names this session, then adopts,
 * releases or forgets each as the pure decision says, sending the
 * transactions `adoptTxn` and `orphanReleaseTxn` build.
 *
 * Invariants:
 * - An orphan is never claimed again (that would be a reclaim and cost a
 *   delivery attempt for a lost reply): it is adopted (a lane on the tenancy
 *   that landed, no attempt) or released.
 * - Only a read made after a write's outcome became unknown may say it did
 *   not land (`confirm`); a watch may not show it yet. A claim is forgotten
 *   only once its split's record has moved past the revision it compared: a
 *   request delayed in flight can land after that read (protocol/orphans.ts).
 * - An attempt that failed on one observation is retried only once the view
 *   moves, or after a short wait at the latest (a quiet job would stall).
 * - A split forgotten frees its lane after this pass's claims were decided
 *   with it spent: reconciliation runs again (a quiet worker would never
 *   claim it: defect 38).
 * - With no assignment record at all nothing is released: no record means hold.
 * - Our lease key left over from a record deleted and created again is
 *   dropped, assignment record or not: it is no tenancy, and it blocks every
 *   claim of the split (decision 0071).
 */
import type { Clock } from '../../clock.js';
import { backoffDelay, storeRetryPolicy } from '../../protocol/backoff.js';
import { settleOrphan } from '../../protocol/orphans.js';
import { decodeRecord, fingerprintHash, type ProgressRecord, type SpecRecord, type SplitRecord } from '../../protocol/records.js';
import { adoptTxn, orphanDropTxn, orphanReleaseTxn, type Writer } from '../../protocol/txns.js';
import type { Txn } from '../../store/store.js';
import { background } from '../background.js';
import type { PreparedClaim, WorkerParts } from './claiming.js';

export interface SettlerContext extends WorkerParts {
  clock: Clock;
  hasLane: (id: string) => boolean;
  /** Lanes in use besides adoptions: open lanes and claims in flight. */
  lanesInUse: () => number;
  isClaiming: (id: string) => boolean;
  /** Opens a lane on a tenancy that landed (no claim sent). */
  openLane: (id: string, spec: SpecRecord, rec: SplitRecord, rev: number, progress: ProgressRecord | undefined, progressRev: number) => void;
  schedule: () => void;
  stopped: () => boolean;
  /** Sends a claim of unknown outcome again, unchanged (Claimer.claimAgain). */
  claimAgain: (p: PreparedClaim) => Promise<'won' | 'lost' | 'unknown'>;
}

export class OrphanSettler {
  /**
   * Splits whose last write by this session had an unknown outcome: followed
   * until the view shows whether the store still names us.
   */
  readonly uncertain = new Set<string>();
  /** The claims among them: each may land while its split's record stays at the revision it compared. */
  private readonly claims = new Map<string, PreparedClaim>();
  /** Orphaned lease keys being given back. */
  readonly releasing = new Set<string>();
  /** Orphans being adopted (their progress being read). */
  readonly adopting = new Set<string>();
  /** Splits of unknown outcome being read back, and those whose read-back is in the view. */
  private readonly confirming = new Set<string>();
  private readonly confirmed = new Set<string>();
  /** Orphans whose adoption or release failed, by the observation it was based on (see basis). */
  private readonly tried = new Map<string, string>();
  /** Settling attempts of each split that failed on the store in a row (the backoff's attempt). */
  private readonly failures = new Map<string, number>();

  constructor(private readonly ctx: SettlerContext) {}

  private get writer(): Writer {
    const { view, config, session } = this.ctx;
    return { prefix: view.prefix, me: config.instance, nonce: session.nonce, sessionLease: session.leaseId, fp: fingerprintHash(config.fingerprint) };
  }

  /** Follows a split whose last write by this session (a claim: `claim`) had an unknown outcome. */
  follow(id: string, claim?: PreparedClaim): void {
    this.uncertain.add(id);
    if (claim) this.claims.set(id, claim);
    else this.claims.delete(id);
  }

  /** Stops following a split: settled. */
  private settled(id: string): void {
    this.uncertain.delete(id);
    this.claims.delete(id);
  }

  /** Splits this session owns in the store with no lane: held, as far as reconciliation counts. */
  orphans(): string[] {
    return [...this.uncertain].filter((id) => !this.ctx.hasLane(id) && this.ctx.view.split(id)?.lease?.lease === this.ctx.session.leaseId);
  }

  /** One pass over the uncertain splits (after each reconciliation). */
  settleOrphans(assigned: ReadonlySet<string>, hasRecord: boolean): void {
    const { view, session, config } = this.ctx;
    for (const id of this.uncertain) {
      if (this.ctx.hasLane(id) || this.ctx.isClaiming(id) || this.releasing.has(id) || this.adopting.has(id)) continue;
      const seen = view.split(id);
      if (!seen || seen.problems.size > 0) continue; // not read yet, or unreadable for now
      // An adoption or release that failed on this very observation fails again: wait for the view.
      if (this.tried.get(id) === this.basis(id)) continue;
      this.tried.delete(id);
      const lanesInUse = this.ctx.lanesInUse() + this.adopting.size;
      const claim = this.claims.get(id);
      // A claim sent again counts every other claim that may still land: each may take a lane.
      const pending = claim ? [...this.claims.keys()].filter((o) => o !== id && !this.ctx.hasLane(o) && !this.ctx.isClaiming(o)).length : 0;
      const d = settleOrphan(
        {
          record: seen.record?.rec, recordRevision: seen.record?.modRevision ?? 0,
          lease: seen.lease ? { rec: seen.lease.rec, leaseId: seen.lease.lease, modRevision: seen.lease.modRevision } : undefined,
        },
        {
          me: config.instance, sessionLease: session.leaseId, nonce: session.nonce, assigned: assigned.has(id), laneFree: lanesInUse + pending < config.maxInFlight,
          claimedAt: claim?.recordRevision,
        },
      );
      switch (d.kind) {
        case 'forget':
          if (this.confirmed.has(id)) {
            this.confirmed.delete(id);
            this.settled(id);
            // Its lane is free again, but this pass's claims were decided with it spent: decide
            // again, or a quiet worker (nothing else to wake it) never claims it (defect 38).
            this.ctx.schedule();
          } else {
            this.confirm(id);
          }
          break;
        case 'wait':
          break;
        case 'claim-again':
          if (claim) this.claimAgain(id, claim);
          break;
        case 'adopt':
          background('adopt', () => this.adopt(id), this.ctx.unexpected);
          break;
        case 'release':
          if (hasRecord) background('orphan release', () => this.release(id), this.ctx.unexpected);
          break;
        case 'drop':
          this.drop(id);
          break;
        default: {
          const never: never = d;
          throw new Error(`unhandled orphan decision ${JSON.stringify(never)}`);
        }
      }
    }
  }

  /**
   * Sends our claim of unknown outcome again: it has not landed (the record is where it found
   * it) and may still. Won, the lane opens and the first claim can never land; lost, the record
   * moved (perhaps by the first claim landing): read it back and settle on what it shows.
   */
  private claimAgain(id: string, claim: PreparedClaim): void {
    const basis = this.basis(id);
    void this.ctx.claimAgain(claim)
      .then((outcome) => {
        if (outcome === 'won') {
          this.settled(id);
        } else if (outcome === 'lost') {
          this.tried.set(id, basis);
          this.confirm(id);
        } else {
          this.againLater(id);
        }
      })
      .catch((e) => {
        this.ctx.unexpected('claim again', e);
        this.againLater(id);
      })
      .finally(() => this.ctx.schedule());
  }

  /** Reads a split of unknown outcome back, then settles it on what the read showed. */
  private confirm(id: string): void {
    if (this.confirming.has(id)) return;
    this.confirming.add(id);
    void this.ctx.view.reread([id])
      .then(() => this.confirmed.add(id))
      .catch(() => this.againLater(id))
      .finally(() => {
        this.confirming.delete(id);
        this.ctx.schedule();
      });
  }

  /** Opens a lane on a tenancy of ours that landed unseen, resuming from its committed progress. */
  private async adopt(id: string): Promise<void> {
    const { view, store, config, session, log, metrics, emit } = this.ctx;
    const seen = view.split(id);
    const record = seen?.record;
    const spec = seen?.spec;
    if (!record || !spec) return;
    this.adopting.add(id);
    try {
      const res = await store.txn(adoptTxn(this.writer, id, record.modRevision));
      if (!res.won) {
        // Not ours at the store: read the split's keys again, so the view settles it.
        this.tried.set(id, this.basis(id));
        this.confirm(id);
        return;
      }
      const kv = res.reads[0];
      const progress = kv ? decodeRecord('progress', kv.key, kv.value, fingerprintHash(config.fingerprint)) : undefined;
      // Still the tenancy we are adopting? (Its record may have moved while we read.) If not, the
      // view's change that shows it settles the split; trying again before that would loop.
      if (view.split(id)?.record?.modRevision !== record.modRevision || this.ctx.stopped() || !session.alive) return;
      this.settled(id);
      // Should this lane be fenced at once (the view lags the store), the split comes back here:
      // adopt it again once the view has moved, or after a jittered wait at the latest. Waiting for
      // the view alone stalls the split for good when the fence is one the view never shows: a
      // foreign write to progress.{id}, which no worker watches (found by the hostile-writer simulation).
      this.againLater(id);
      log.info({ split: id, epoch: record.rec.epoch }, 'adopting a split this session owns with no lane (a write whose reply was lost)');
      metrics.claims.inc({ kind: 'adopted', outcome: 'won' });
      emit('split-claimed', { id, epoch: record.rec.epoch, attempts: record.rec.attempts, kind: 'adopted' });
      this.ctx.openLane(id, spec, record.rec, record.modRevision, progress, kv?.modRevision ?? 0);
    } catch (e) {
      log.warn({ split: id, err: (e as Error).message }, 'adopting a split failed; will retry');
      this.againLater(id);
    } finally {
      this.adopting.delete(id);
      if (this.ctx.hasLane(id)) this.ctx.schedule();
    }
  }

  /** Gives back a split this session owns with no lane and may not keep (owner cleared, lease key deleted). */
  private release(id: string): void {
    const record = this.ctx.view.split(id)?.record;
    if (!record) return;
    this.ctx.log.warn({ split: id, epoch: record.rec.epoch }, 'releasing a split held by this session with no lane behind it');
    this.settleWith(id, orphanReleaseTxn(this.writer, id, record));
  }

  /** Deletes our lease key left over from a record deleted and created again (protocol/orphans.ts, 'drop'). */
  private drop(id: string): void {
    const seen = this.ctx.view.split(id);
    if (!seen?.record || !seen.lease) return;
    this.ctx.log.warn({ split: id, epoch: seen.lease.rec.epoch }, 'dropping a lease key of this session whose split record was deleted and created again');
    this.settleWith(id, orphanDropTxn(this.writer, id, seen.record.modRevision, seen.lease.modRevision));
  }

  /** Sends one settling write for `id` (a release or a drop): settled when it lands, remembered as tried when it loses. */
  private settleWith(id: string, txn: Txn): void {
    this.releasing.add(id);
    void this.ctx.store.txn(txn)
      .then((res) => {
        if (res.won) this.settled(id);
        else this.tried.set(id, this.basis(id));
      })
      .catch(() => this.againLater(id))
      .finally(() => {
        this.releasing.delete(id);
        this.ctx.schedule();
      });
  }

  /**
   * A settling attempt failed on the store (a timeout, an outage): try again once the view
   * moves, or after a short, jittered and growing wait at the latest. Waiting for the view alone stalls a quiet
   * job for good: nothing else may ever change (found by the simulation: a slow link, then
   * the only other member leaving).
   */
  private againLater(id: string): void {
    this.tried.set(id, this.basis(id));
    for (const other of this.failures.keys()) if (!this.uncertain.has(other)) this.failures.delete(other);
    const attempt = this.failures.get(id) ?? 0;
    this.failures.set(id, attempt + 1);
    const delay = backoffDelay(attempt, storeRetryPolicy(this.ctx.config.leaseDurationMs), this.ctx.random);
    this.ctx.clock.setTimer(delay, () => {
      if (this.ctx.stopped()) return;
      this.tried.delete(id);
      this.ctx.schedule();
    });
  }

  /** What a settling attempt was based on: retried only once the view has moved. */
  private basis(id: string): string {
    const seen = this.ctx.view.split(id);
    return `${this.ctx.view.revision}:${seen?.record?.modRevision ?? 0}:${seen?.lease?.modRevision ?? 0}`;
  }
}
