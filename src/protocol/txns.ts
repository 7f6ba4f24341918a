/**
 * Transactions as data: every ownership write of the protocol, built here as
 * a `Txn` value (the compares that make it safe and the ops it makes), the
 * way etcd's `concurrency.Mutex.IsOwner()` hands back the compare for the
 * caller's own transaction. The coordinator sends what it is given and
 * reports the outcome; it adds no compare and drops none.
 *
 * Invariants:
 * - A claim compares `split.{id}` at the revision observed and `lease.{id}`
 *   absent (or, for a reclaim, on the lease it was observed on); it writes
 *   both, the lease key under the session's lease, and reads
 *   `progress.{id}` in the same transaction (the lane resumes from it).
 * - Every lane write (commit, complete, fail, release, forced release)
 *   compares the three revisions its lane knows (`split.{id}`,
 *   `progress.{id}`, `lease.{id}` on the session's lease); a terminal one
 *   deletes the lease key.
 * - An orphan's release and adoption are guarded like a lane write by the
 *   split's revision and the lease key on this session's lease.
 * - Every publishing transaction carries the leadership guard and the
 *   publication fence (compare `publish` at the revision last seen, put it
 *   again; decision 0015).
 *
 * Pure: no I/O. It imports the store's contract (types and the `cmp`/`op`
 * builders of store/store.ts), never a backend (decision 0016).
 */
import type { ClaimKind } from './claims.js';
import { claimedRecord, quarantinedRecord, releasedRecord } from './claims.js';
import { leaseKey, progressKey, publishKey, splitKey } from './keys.js';
import { encodeRecord, SCHEMA_VERSION, type SplitRecord } from './records.js';
import { cmp, itemBytes, op, OVERHEAD_PER_REQUEST, type Compare, type Op, type StoreLimits, type Txn } from '../store/store.js';

/** A record as observed, with the revision its guard compares. */
export interface Revisioned<R> {
  readonly rec: R;
  readonly modRevision: number;
}

/** Who writes: this process's instance id, run nonce, session lease and job fingerprint hash. */
export interface Writer {
  readonly prefix: string;
  readonly me: string;
  readonly nonce: string;
  readonly sessionLease: string;
  /** fingerprintHash(config.fingerprint). */
  readonly fp: string;
}

/** The decision a claim transaction carries out (reconcileAssignment's `claim` or `quarantine`). */
export interface ClaimOrder {
  readonly kind: 'claim' | 'quarantine';
  readonly claim: ClaimKind;
  /** For a claim: whether it consumes a delivery attempt (classifyClaim, settled for a takeover by takeoverCost). */
  readonly consumesAttempt: boolean;
  /**
   * For a takeover: the revision of `progress.{id}` its cost was decided on
   * (0: none). The transaction compares it, so the cost rests on what it read.
   */
  readonly progressRevision?: number;
}

/** A claim (or quarantine) ready to send: the record it writes and its transaction. */
export interface ClaimTxn {
  readonly id: string;
  readonly next: SplitRecord;
  /** True for a quarantine: no lane opens, and no progress read is in `txn`. */
  readonly quarantine: boolean;
  readonly txn: Txn;
}

/**
 * The transaction of one claim or quarantine of split `id`, from the record
 * and lease key observed. `lease` is the live `lease.{id}` key (its etcd
 * lease) when the claim is a reclaim of our own earlier run's. Any other
 * claim compares the lease key as carrying no lease: absent, or put without
 * one (by hand: not live, protocol/ephemeral.ts), which the claim writes over.
 */
export function claimTxn(
  w: Writer, id: string, order: ClaimOrder, record: Revisioned<SplitRecord>, lease: { readonly lease?: string | undefined } | undefined, maxAttempts: number,
): ClaimTxn {
  const sk = splitKey(w.prefix, id);
  const lk = leaseKey(w.prefix, id);
  const compares = [cmp.modRevision(sk, record.modRevision), order.claim === 'reclaim' ? cmp.lease(lk, lease?.lease ?? '0') : cmp.noLease(lk)];
  if (order.progressRevision !== undefined) compares.push(cmp.modRevision(progressKey(w.prefix, id), order.progressRevision));
  if (order.kind === 'quarantine') {
    const next = quarantinedRecord(record.rec, `max_attempts (${maxAttempts}) reached on a ${order.claim} claim`);
    const success = [op.put(sk, encodeRecord('split', next))];
    // Our own stale lease key goes with it: nobody else could remove it while our session lives.
    if (order.claim === 'reclaim') success.push(op.delete(lk));
    return { id, next, quarantine: true, txn: { compares, success } };
  }
  const next = claimedRecord(record.rec, w.me, { kind: order.claim, consumesAttempt: order.consumesAttempt, quarantine: false });
  const leaseValue = encodeRecord('lease', { v: SCHEMA_VERSION, fp: w.fp, id, owner: w.me, nonce: w.nonce, epoch: next.epoch });
  const success = [op.put(sk, encodeRecord('split', next)), op.put(lk, leaseValue, w.sessionLease), op.get(progressKey(w.prefix, id))];
  return { id, next, quarantine: false, txn: { compares, success } };
}

/** Claims ready together, as one transaction (all or nothing: one moved record fails them all). */
export function joinTxns(txns: readonly Txn[]): Txn {
  return { compares: txns.flatMap((t) => t.compares), success: txns.flatMap((t) => t.success) };
}

/**
 * `first` and `rider` as one transaction, or undefined when it would not fit in one request
 * under `limits` (decision 0085: a packed publication riding in its promotion). A compare both
 * carry (the leadership guard) is kept once; the caller makes sure their writes never share a key.
 */
export function rideTxn(first: Txn, rider: Txn, limits: StoreLimits): Txn | undefined {
  const same = (a: Compare, b: Compare) => a.target === b.target && a.key === b.key && ('equals' in a ? a.equals : undefined) === ('equals' in b ? b.equals : undefined);
  const compares = [...first.compares, ...rider.compares.filter((c) => !first.compares.some((f) => same(f, c)))];
  const joined: Txn = { compares, success: [...first.success, ...rider.success] };
  const bytes = [...joined.compares, ...joined.success].reduce((n, o) => n + itemBytes(o), OVERHEAD_PER_REQUEST);
  if (compares.length > limits.maxOpsPerTxn || joined.success.length > limits.maxOpsPerTxn || bytes > limits.maxRequestBytes - 4096) return undefined;
  return joined;
}

/** The three revisions a lane's writes are guarded by. */
export interface LaneFence {
  readonly prefix: string;
  readonly id: string;
  /** `split.{id}` as this lane's claim (or last ownership write) left it. */
  readonly splitRevision: number;
  /** `progress.{id}` as this lane last wrote or read it (0: no such key). */
  readonly progressRevision: number;
  /** The session's etcd lease, which `lease.{id}` must be attached to. */
  readonly sessionLease: string;
}

/** What one lane write changes, encoded (laneWrite in protocol/lanes.ts says what each kind of write changes). */
export interface LaneChange {
  readonly splitValue: string | undefined;
  readonly progressValue: string | undefined;
  readonly terminal: boolean;
  /** More of the same transaction: a division's residual, created only if absent (protocol/division.ts). */
  readonly also?: { readonly compares: readonly Compare[]; readonly success: readonly Op[] } | undefined;
}

/** The fenced transaction of a lane write: commit, complete, fail, release, forced release. */
export function laneTxn(f: LaneFence, change: LaneChange): Txn {
  const sk = splitKey(f.prefix, f.id);
  const pk = progressKey(f.prefix, f.id);
  const lk = leaseKey(f.prefix, f.id);
  const success: Op[] = [];
  if (change.splitValue !== undefined) success.push(op.put(sk, change.splitValue));
  if (change.progressValue !== undefined) success.push(op.put(pk, change.progressValue));
  if (change.terminal) success.push(op.delete(lk));
  const compares = [cmp.modRevision(sk, f.splitRevision), cmp.modRevision(pk, f.progressRevision), cmp.lease(lk, f.sessionLease)];
  if (change.also) {
    compares.push(...change.also.compares);
    success.push(...change.also.success);
  }
  return { compares, success };
}

/** Reads a split's three keys in one transaction (a lane write whose outcome is unknown, read back): split, progress, lease. */
export function readBackTxn(prefix: string, id: string): Txn {
  return { compares: [], success: [op.get(splitKey(prefix, id)), op.get(progressKey(prefix, id)), op.get(leaseKey(prefix, id))] };
}

/** Gives back an orphan (owned by this session in the store, no lane): owner cleared, lease key deleted. */
export function orphanReleaseTxn(w: Writer, id: string, record: Revisioned<SplitRecord>): Txn {
  const sk = splitKey(w.prefix, id);
  const lk = leaseKey(w.prefix, id);
  return {
    compares: [cmp.modRevision(sk, record.modRevision), cmp.lease(lk, w.sessionLease)],
    success: [op.put(sk, encodeRecord('split', releasedRecord(record.rec, w.me))), op.delete(lk)],
  };
}

/**
 * Drops our lease key left over from a tenancy whose record was deleted and created again
 * (protocol/orphans.ts, 'drop'): the key deleted, only while both keys are as observed.
 */
export function orphanDropTxn(w: Writer, id: string, recordRevision: number, leaseRevision: number): Txn {
  const lk = leaseKey(w.prefix, id);
  return {
    compares: [cmp.modRevision(splitKey(w.prefix, id), recordRevision), cmp.modRevision(lk, leaseRevision), cmp.lease(lk, w.sessionLease)],
    success: [op.delete(lk)],
  };
}

/**
 * Adopting an orphan: reads its progress, guarded by the tenancy as observed
 * (a lagging view may show a lease key that expired with the session; a lane
 * opened on it would work in vain while the split's next owner runs it).
 */
export function adoptTxn(w: Writer, id: string, recordRevision: number): Txn {
  return {
    compares: [cmp.modRevision(splitKey(w.prefix, id), recordRevision), cmp.lease(leaseKey(w.prefix, id), w.sessionLease)],
    success: [op.get(progressKey(w.prefix, id))],
  };
}

/** The publication fence as one publishing transaction uses it (decision 0015). */
export interface Fence {
  readonly key: string;
  /** The revision `publish` was last seen at (0: absent). */
  readonly revision: number;
  /** What every write puts there again. */
  readonly value: string;
}

/** The fence of a term: `publish`'s key and the value its writes put (the generation). */
export function publicationFence(prefix: string, fp: string, generation: number, revision: number): Fence {
  return { key: publishKey(prefix), revision, value: encodeRecord('publish', { v: SCHEMA_VERSION, fp, generation }) };
}

/** One publishing transaction: leadership ∧ the fence at the revision last seen → the batch, and the fence put again. */
export function publishTxn(batch: readonly Op[], leadership: Compare, fence: Fence): Txn {
  return { compares: [leadership, cmp.modRevision(fence.key, fence.revision)], success: [...batch, op.put(fence.key, fence.value)] };
}

/** What a publishing transaction spends on its guards: the leadership compare, the fence compare and the fence put. */
export const PUBLISH_GUARD_OPS = 2;

/**
 * Groups writes (each a few ops that must go together) into batches of at
 * most `maxOps` ops and `maxBytes` bytes, as `sizeOf` counts them (the
 * store's own byte estimate, `itemBytes` of store/store.ts, so a batch that
 * fits here passes the store's check). A single write over the limits goes
 * alone: the store refuses it, and only it.
 */
export function* batches(writes: readonly (readonly Op[])[], maxOps: number, maxBytes: number, sizeOf: (o: Op) => number): Generator<Op[]> {
  let batch: Op[] = [];
  let bytes = 0;
  for (const w of writes) {
    const size = w.reduce((s, o) => s + sizeOf(o), 0);
    if (batch.length > 0 && (batch.length + w.length > maxOps || bytes + size > maxBytes)) {
      yield batch;
      batch = [];
      bytes = 0;
    }
    batch.push(...w);
    bytes += size;
  }
  if (batch.length > 0) yield batch;
}
