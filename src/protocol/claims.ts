/**
 * Claims: whether a split can be claimed and what the claim costs
 * (substrate.md's table), which assigned splits to try now, and the split
 * record's transitions as pure functions.
 *
 * Invariants:
 * - Claimable means runnable, spec observed, and no live lease of another
 *   owner. An assignment is permission to try, not a promise the split is
 *   free: the previous owner's lease key must be gone first.
 * - Reclaims and expired takeovers consume a delivery attempt only when the
 *   tenancy they end committed no progress (`takeoverCost`: the poison case);
 *   creates and claims after a release never do. The attempt that would reach
 *   maxAttempts quarantines the split instead of claiming it.
 * - `epoch` counts tenancies: it is bumped by every claim (the only
 *   transition that installs an owner); release, failure, completion and
 *   quarantine clear the owner without starting a tenancy.
 * - An owner is present only on a runnable record with epoch ≥ 1.
 * - claimCandidates never offers more claims and quarantines than
 *   maxInFlight leaves lanes for, counting held and draining lanes.
 * - A failed split waits out its backoff: while its record's `notBefore` is
 *   after `now` it is not claimable ('waiting'). A claim, a quarantine and an
 *   operator's retry clear `notBefore`; a failure report sets it
 *   (retry-policy.ts), a permanent one quarantines at once.
 *
 * Pure: no I/O. Transitions throw SplitfleetError('INVALID_RECORD') when
 * applied to a record in the wrong state: that is a caller's bug, since the
 * owner derives every write from the record it last wrote itself.
 */

import { SplitfleetError } from '../errors.js';
import type { Json, ProgressRecord, SplitRecord } from './records.js';
import { SCHEMA_VERSION } from './records.js';
import { isWaiting, type FailureReport } from './retry-policy.js';
import { jsStringOrder } from '../js-order.js';

/** How a split became claimable (substrate.md, "Split lifecycle"). */
export type ClaimKind = 'create' | 'released' | 'reclaim' | 'expired';

/**
 * Why a split cannot be claimed. 'leased': another instance holds a live lease on it;
 * 'waiting': it failed and its backoff (`notBefore`) has not passed.
 */
export type UnclaimableReason = 'leased' | 'completed' | 'quarantined' | 'waiting';

/** A claimable split: how, and at what cost. */
export interface Claimable {
  kind: ClaimKind;
  /**
   * True for 'reclaim' and 'expired': the previous delivery ended badly. For
   * those it is provisional: `takeoverCost` settles it once the progress
   * record has been read (a tenancy that committed progress is not charged).
   */
  consumesAttempt: boolean;
  /** True when this is the attempt that reaches maxAttempts: quarantine instead of claiming. */
  quarantine: boolean;
}

export type ClaimClass = Claimable | { kind: 'unclaimable'; reason: UnclaimableReason };

/**
 * Classifies a claim of one split by `me`.
 *
 * @param record the split's progress record; undefined when none exists yet (a create).
 * @param leaseOwner the instance named by the live `lease.{id}` key, if any.
 * @param me this worker's stable instance id.
 * @param maxAttempts the delivery-attempt cap (config.maxAttempts).
 * @param now the worker's clock (epoch ms), against the record's `notBefore`; omitted, no
 *   backoff is in force (only tests of the other rules omit it: every shell passes it).
 * @param leaseEpoch the epoch the live `lease.{id}` key names, if known. Our own key naming an
 *   epoch above the record's is a leftover of a tenancy the record no longer knows (the record
 *   was deleted and created again, decision 0071): it blocks the claim like another's lease
 *   until it expires, since a reclaim over it would start a second tenancy of that same epoch
 *   and charge an attempt for a delivery that never failed (defect 39).
 */
export function classifyClaim(
  record: SplitRecord | undefined, leaseOwner: string | undefined, me: string, maxAttempts: number, now?: number, leaseEpoch?: number,
): ClaimClass {
  if (record?.status === 'completed') return { kind: 'unclaimable', reason: 'completed' };
  if (record?.status === 'quarantined') return { kind: 'unclaimable', reason: 'quarantined' };
  if (leaseOwner !== undefined && leaseOwner !== '' && leaseOwner !== me) {
    return { kind: 'unclaimable', reason: 'leased' };
  }
  if (leaseOwner === me && leaseEpoch !== undefined && leaseEpoch > (record?.epoch ?? 0)) {
    return { kind: 'unclaimable', reason: 'leased' };
  }
  if (now !== undefined && isWaiting(record, now)) return { kind: 'unclaimable', reason: 'waiting' };
  let kind: ClaimKind;
  if (leaseOwner === me) kind = 'reclaim'; // our own earlier run's lease is still live
  else if (record === undefined || (record.epoch === 0 && record.owner === '')) kind = 'create';
  else if (record.owner === '') kind = 'released';
  else kind = 'expired'; // an owner without a lease: it died (or it was us, before a restart)
  const consumesAttempt = kind === 'reclaim' || kind === 'expired';
  const attempts = record?.attempts ?? 0;
  return { kind, consumesAttempt, quarantine: consumesAttempt && attempts + 1 >= maxAttempts };
}

/** Whether a claim of this kind ends a tenancy (its cost then waits for the progress record: `takeoverCost`). */
export function isTakeover(kind: ClaimKind): boolean {
  return kind === 'reclaim' || kind === 'expired';
}

/**
 * What a takeover (a reclaim or an expired claim) costs, once the split's
 * progress record has been read (substrate.md, "Split lifecycle"): an attempt
 * only when the tenancy it ends (the record's epoch) committed no progress,
 * and a quarantine when that attempt reaches `maxAttempts`. A split that
 * kills its worker before its first commit is charged every time; one that
 * committed and lost its owner to an outage, a partition or a restart is not.
 *
 * @param progressEpoch the epoch `progress.{id}` names; undefined when there is no progress record.
 */
export function takeoverCost(
  record: SplitRecord, progressEpoch: number | undefined, maxAttempts: number,
): { consumesAttempt: boolean; quarantine: boolean } {
  const committed = record.epoch >= 1 && progressEpoch === record.epoch;
  return { consumesAttempt: !committed, quarantine: !committed && record.attempts + 1 >= maxAttempts };
}

/** What a worker has observed of one split. A split missing from the map has not been observed. */
export interface ObservedSplit {
  /** `split.{id}`; undefined when no record exists yet. */
  readonly record: SplitRecord | undefined;
  /** The instance named by the live `lease.{id}` key; undefined when the key is absent. */
  readonly leaseOwner: string | undefined;
  /** The epoch that key names (see classifyClaim's `leaseEpoch`). */
  readonly leaseEpoch?: number;
  /** Whether `spec.{id}` has been observed: without it the split cannot be started. */
  readonly specObserved: boolean;
  /** The spec's weight, when observed: a worker claims its named splits heaviest first. */
  readonly weight?: number;
}

export interface ClaimCandidatesInput {
  readonly me: string;
  /** Split ids this worker's assignment names. */
  readonly assigned: Iterable<string>;
  readonly splits: ReadonlyMap<string, ObservedSplit>;
  /** Splits with an open lane, draining or not. */
  readonly held: Iterable<string>;
  /** Splits being drained (counted as lanes even if absent from `held`). */
  readonly draining?: Iterable<string>;
  readonly maxInFlight: number;
  readonly maxAttempts: number;
  /** The worker's clock (epoch ms): a split whose `notBefore` is later waits (see classifyClaim). */
  readonly now?: number;
}

/** A split to try now; `quarantine` means write the quarantine instead of claiming. */
export interface ClaimCandidate {
  readonly id: string;
  readonly claim: ClaimKind;
  readonly consumesAttempt: boolean;
  readonly quarantine: boolean;
  /** The record's attempts before this claim (0 when no record exists). */
  readonly attempts: number;
}

/**
 * The order a worker claims its named splits in (substrate.md, "Prefetch"):
 * heaviest first by the spec's weight (the longest-processing-time order the
 * leader fills in, so the long splits start first and the short ones fill the
 * tail), then by id (JS string order). A split whose spec is not observed
 * sorts as weight 0 (it is not claimable anyway).
 */
export function claimOrder(splits: ReadonlyMap<string, ObservedSplit>): (a: string, b: string) => number {
  return (a, b) => (splits.get(b)?.weight ?? 0) - (splits.get(a)?.weight ?? 0) || jsStringOrder(a, b);
}

/**
 * Which assigned splits to try claiming now: assigned, not held or draining,
 * runnable, spec observed, and no live lease of another owner. In `claimOrder`
 * (heaviest first, then id) so the choice is deterministic; claims stop when
 * the lane budget (maxInFlight − lanes in use) is spent, and the rest of the
 * named splits (the prefetched ones) wait for the next lane to free. A
 * quarantine takes a lane too: it is provisional (every quarantine ends a
 * tenancy, and `takeoverCost` turns it into a plain claim when that tenancy
 * committed progress).
 */
export function claimCandidates(input: ClaimCandidatesInput): ClaimCandidate[] {
  const lanes = new Set(input.held);
  for (const id of input.draining ?? []) lanes.add(id);
  let free = Math.max(0, input.maxInFlight - lanes.size);
  const out: ClaimCandidate[] = [];
  if (free === 0) return out;
  for (const id of [...new Set(input.assigned)].sort(claimOrder(input.splits))) {
    if (lanes.has(id)) continue;
    const seen = input.splits.get(id);
    if (seen === undefined || !seen.specObserved) continue;
    const c = classifyClaim(seen.record, seen.leaseOwner, input.me, input.maxAttempts, input.now, seen.leaseEpoch);
    if (c.kind === 'unclaimable') continue;
    const candidate = { id, claim: c.kind, consumesAttempt: c.consumesAttempt, quarantine: c.quarantine,
      attempts: seen.record?.attempts ?? 0 };
    if (free === 0) break;
    free--;
    out.push(candidate);
  }
  return out;
}

// ---- record transitions ----------------------------------------------------

function refuse(record: SplitRecord, what: string, why: string): never {
  throw new SplitfleetError('INVALID_RECORD', `cannot ${what} split ${JSON.stringify(record.id)}: ${why}`);
}

function mustOwn(record: SplitRecord, me: string, what: string): void {
  if (record.status !== 'runnable') refuse(record, what, `it is ${record.status}`);
  if (record.owner !== me) {
    refuse(record, what, `it is owned by ${JSON.stringify(record.owner)}, not ${JSON.stringify(me)}`);
  }
}

/** The record a create claim starts from: epoch 0, runnable, no owner, no attempts (no progress key yet). */
export function initialSplitRecord(id: string, fp: string): SplitRecord {
  return { v: SCHEMA_VERSION, fp, id, epoch: 0, status: 'runnable', owner: '', attempts: 0 };
}

/**
 * `me` takes the split: epoch + 1, owner = me, one attempt consumed when the
 * claim kind says so, the backoff it waited out cleared. Refused for a
 * quarantining claim (use quarantinedRecord).
 */
export function claimedRecord(prev: SplitRecord, me: string, claim: Claimable): SplitRecord {
  if (prev.status !== 'runnable') refuse(prev, 'claim', `it is ${prev.status}`);
  if (claim.quarantine) refuse(prev, 'claim', 'this claim reaches max_attempts; quarantine it instead');
  const { notBefore: _waited, waitMs: _wait, ...rest } = prev;
  return { ...rest, epoch: prev.epoch + 1, owner: me,
    attempts: prev.attempts + (claim.consumesAttempt ? 1 : 0) };
}

/**
 * The `progress.{id}` record the owner of `split` writes: its progress, at
 * its epoch. Progress lives in a key of its own so that commits touch
 * neither `split.{id}` nor anybody who watches it (docs/decisions/0007).
 */
export function progressRecord(split: SplitRecord, me: string, progress: Json, previous?: ProgressRecord): ProgressRecord {
  mustOwn(split, me, 'commit');
  // Fields a newer minor version put on the previous record ride along (forward compatibility), and so
  // do a division's (its end and weight hold for every later tenancy); a decline is its tenancy's only.
  const next: ProgressRecord = { ...previous, v: SCHEMA_VERSION, fp: split.fp, id: split.id, epoch: split.epoch, progress };
  if (previous !== undefined && previous.epoch !== split.epoch) delete next.declined;
  return next;
}

/** A graceful release (after a drain, or at shutdown): owner cleared, no attempt consumed. */
export function releasedRecord(prev: SplitRecord, me: string): SplitRecord {
  mustOwn(prev, me, 'release');
  return { ...prev, owner: '' };
}

/** The terminal commit: status completed, owner cleared (the lease key goes in the same transaction). */
export function completedRecord(prev: SplitRecord, me: string): SplitRecord {
  mustOwn(prev, me, 'complete');
  return { ...prev, status: 'completed', owner: '' };
}

/**
 * The source reported that it cannot process the split: one attempt consumed,
 * owner cleared, and quarantined when that attempt reaches `maxAttempts` or
 * the report is permanent; otherwise runnable again from `report.notBefore`
 * (its backoff: retry-policy.ts's `failureReport`).
 */
export function failedRecord(prev: SplitRecord, me: string, report: FailureReport, maxAttempts: number): SplitRecord {
  mustOwn(prev, me, 'fail');
  const attempts = prev.attempts + 1;
  const { notBefore: _old, waitMs: _oldWait, ...rest } = prev;
  if (report.permanent || attempts >= maxAttempts) return { ...rest, owner: '', attempts, reason: report.reason, status: 'quarantined' };
  return { ...rest, owner: '', attempts, reason: report.reason, status: 'runnable', notBefore: report.notBefore, waitMs: report.waitMs };
}

/**
 * A claim that would consume the attempt reaching max_attempts parks the split
 * instead: status quarantined, owner cleared, that attempt recorded.
 */
export function quarantinedRecord(prev: SplitRecord, reason: string): SplitRecord {
  if (prev.status !== 'runnable') refuse(prev, 'quarantine', `it is ${prev.status}`);
  const { notBefore: _waited, waitMs: _wait, ...rest } = prev;
  return { ...rest, status: 'quarantined', owner: '', attempts: prev.attempts + 1, reason };
}

/**
 * An operator's retry (`splitfleet retry`): a quarantined split, or a
 * runnable one waiting out a failure's backoff (`notBefore`: clearable, so a
 * clock skew between processes never parks a split beyond an operator's
 * reach), is runnable again with its attempts reset, its reason and backoff
 * cleared. The epoch stays (the next claim bumps it), and so does its
 * committed progress, which the next owner resumes from.
 */
export function retriedRecord(prev: SplitRecord): SplitRecord {
  if (prev.status !== 'quarantined' && !isRetryableWait(prev)) {
    refuse(prev, 'retry', prev.status === 'runnable' ? 'it is runnable and waits out no backoff, not quarantined' : `it is ${prev.status}, not quarantined`);
  }
  const { reason: _reason, notBefore: _waited, waitMs: _wait, ...rest } = prev;
  return { ...rest, status: 'runnable', owner: '', attempts: 0 };
}

/** A runnable, unowned split waiting out a failure's backoff: what a retry may clear besides a quarantine. */
export function isRetryableWait(rec: SplitRecord): boolean {
  return rec.status === 'runnable' && rec.owner === '' && rec.notBefore !== undefined;
}
