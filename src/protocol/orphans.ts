/**
 * Orphans: splits the store says this session owns but no lane holds. They
 * come from a write whose outcome was unknown (a claim that timed out but
 * landed, a lane write whose reply was lost). Left alone, one would be
 * reclaimed by our own claim path as a `reclaim` (costing a delivery
 * attempt for a flake of the network) or, unassigned, stay stranded for as
 * long as the session lives.
 *
 * Invariants:
 * - Only a split whose live lease key is on *this* session's lease, carries
 *   this run's nonce, and whose record names us at the lease's epoch is ours
 *   to settle; anything else is forgotten (the write did not land, or the
 *   split has moved on).
 * - An orphan we are assigned, with a lane free, is adopted: a lane opens on
 *   the tenancy that landed, no claim is sent and no attempt is consumed.
 * - Any other orphan is released (owner cleared, lease key deleted, guarded).
 * - A claim of unknown outcome is not forgotten while `split.{id}` is still at
 *   the revision it compared: a request can be delayed in flight past its
 *   timeout and past a later read, and land after it (found by the dividing
 *   simulation: a worker then held one split more than its lanes). Only the
 *   record moving on fences it for good. Meanwhile its lane stays spent; if
 *   the split is still ours to claim and a lane is free for it, the same
 *   claim is sent again (whichever of the two lands first fences the other).
 * - Our lease key whose split record was written after it with an epoch
 *   below the key's is a leftover: the record it belonged to was deleted and
 *   the split created again (a record deleted by hand is seeded or promoted
 *   again, epoch 0; decision 0071). No watch lag shows that (a lagging record
 *   is older than the key, and epochs only grow); the tenancy is over, and
 *   the key, which blocks every claim, is dropped (deleted, guarded by both
 *   keys as observed). Waiting for the record to name the key stalled the
 *   split for good.
 *
 * Pure: no I/O, no clock.
 */
import type { LeaseRecord, SplitRecord } from './records.js';

/** What this instance observes of one split of unknown outcome. */
export interface OrphanObservation {
  /** `split.{id}`, if observed. */
  readonly record: SplitRecord | undefined;
  /** `split.{id}`'s mod revision as observed (0: absent). */
  readonly recordRevision: number;
  /** The live `lease.{id}` record, the etcd lease it is attached to and its mod revision (when known), if any. */
  readonly lease: { readonly rec: LeaseRecord; readonly leaseId: string | undefined; readonly modRevision?: number } | undefined;
}

export interface OrphanContext {
  readonly me: string;
  /** This session's etcd lease and per-run nonce. */
  readonly sessionLease: string;
  readonly nonce: string;
  /** Whether our assignment names the split. */
  readonly assigned: boolean;
  /**
   * Whether a lane is free for it (held + draining + claiming below maxInFlight; for a claim sent
   * again, every other claim that may still land counted too: a claim that rode in a completion
   * shares that lane, which is free only once the completion's outcome is known).
   */
  readonly laneFree: boolean;
  /**
   * The revision of `split.{id}` a claim of ours whose outcome is unknown compared (undefined: the
   * write of unknown outcome was not a claim, or no claim is pending). Such a claim can still land
   * while the record stays at that revision.
   */
  readonly claimedAt?: number | undefined;
}

export type OrphanDecision =
  /** The store names this session: open a lane on the tenancy that landed. */
  | { kind: 'adopt' }
  /** The store names this session but we may not keep it: give it back. */
  | { kind: 'release' }
  /** The write did not land, or the split has moved on: stop following it. */
  | { kind: 'forget' }
  /** Our claim may still land and the split is ours to claim: send the same claim again (its lane is already spent). */
  | { kind: 'claim-again' }
  /** Our lease key outlived its record (deleted, and the split created again since): delete the key, nothing else. */
  | { kind: 'drop' }
  /** Not observed yet, or the record and lease disagree for now: look again on the next change. */
  | { kind: 'wait' };

/** Whether this session owns the split in the store, and if so what to do with it. */
export function settleOrphan(observed: OrphanObservation, ctx: OrphanContext): OrphanDecision {
  const { record, lease } = observed;
  if (!lease || lease.leaseId !== ctx.sessionLease || lease.rec.owner !== ctx.me || lease.rec.nonce !== ctx.nonce) {
    if (ctx.claimedAt === undefined || observed.recordRevision !== ctx.claimedAt) return { kind: 'forget' };
    // The record is where our claim found it: the claim may be in flight still. Claiming again
    // is pointless while another's live lease key stands (the claim compares it absent).
    const foreignLive = lease !== undefined && lease.leaseId !== undefined;
    return ctx.assigned && ctx.laneFree && !foreignLive ? { kind: 'claim-again' } : { kind: 'wait' };
  }
  if (!record) return { kind: 'wait' };
  // A record written after our lease key, at an epoch below it: created again since (decision 0071).
  if (lease.modRevision !== undefined && observed.recordRevision > lease.modRevision && record.epoch < lease.rec.epoch) return { kind: 'drop' };
  // Our lease key with a record that does not (yet) name our tenancy: the watch of one key lags
  // the other's; the next change settles it.
  if (record.status !== 'runnable' || record.owner !== ctx.me || record.epoch !== lease.rec.epoch) return { kind: 'wait' };
  return ctx.assigned && ctx.laneFree ? { kind: 'adopt' } : { kind: 'release' };
}
