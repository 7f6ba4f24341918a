/**
 * Checks: who may take a split from whom, and what each step of a split's
 * ownership writes (substrate.md), one split at one revision at a time. The
 * simulation's and the chaos auditor's rulebook, written once; each reports
 * a problem under its own name (the simulation's `property`, the chaos
 * auditor's `check`), as with the shared fence of invariants.ts.
 *
 * A step is the split's records (`split.{id}`, `lease.{id}`, `progress.{id}`)
 * just before a revision and just after it. The rules, by `rule`:
 * - seeding: a split is created at epoch 0, runnable, with no owner and no
 *   progress (`bad-seed`); neither its record nor its progress is deleted but
 *   by a packed job's fold-back (`split-deleted`, `progress-deleted`);
 * - `split.{id}` never carries progress (`progress-in-split`), is never
 *   written again once terminal (`terminal-rewritten`), and changes only with
 *   ownership (`rewritten-keeping-owner`);
 * - a claim (epoch +1) writes the claimant's lease key, same owner and epoch,
 *   in its revision (`claim-without-lease`); it is a `create` (the first
 *   claim), a `takeover` (an owner whose lease key is gone), a `reclaim` (the
 *   owner's own live key, at a new epoch) or `after-release` (no owner); a
 *   takeover or reclaim consumes one attempt unless the tenancy it ends
 *   committed progress (`progress.{id}` names its epoch), any other claim none
 *   (`claim-miscounted`);
 * - a quarantine takes exactly the one attempt that reaches the cap
 *   (`quarantine-miscounted`); by a takeover (its owner's lease key gone)
 *   only of a tenancy that committed nothing (`quarantine-burned-committed`),
 *   never over a live lease key it leaves standing
 *   (`quarantined-while-leased`), and never of a split released since
 *   (`quarantine-after-release`);
 * - every other write of an owned split (a release, failure, completion) is
 *   the owner's own, fenced: made while its lease key names it at its epoch
 *   (`unfenced-end`), deleting that key when it gives the split up
 *   (`lease-kept-after-release`); a split with no owner is written only by a
 *   claim or a quarantine (`write-to-unowned`);
 * - committed progress is written only for a runnable split's owner
 *   (`progress-while-unowned`, `progress-after-terminal`), at its epoch
 *   (`progress-wrong-epoch`), under its live lease key
 *   (`unfenced-progress`), never by a claim (`claim-wrote-progress`);
 * - after every step a live lease key agrees with its split record:
 *   runnable, same owner and epoch (`lease-record-disagree`).
 *
 * Who wrote a revision is not known here (chaos has no attribution): the
 * simulation checks the writer itself. Pure: records in, problems out.
 */
import type { HistoryEvent } from './history.js';

/** `split.{id}`, as far as ownership goes. */
export interface SplitRecord { epoch: number; status: string; owner: string; attempts?: number; [field: string]: unknown }
/** `lease.{id}`: the tenancy that holds the split. */
export interface LeaseRecord { owner: string; epoch: number; [field: string]: unknown }
/** `progress.{id}`: committed progress and the epoch whose fenced write put it there. */
export interface ProgressRecord { epoch: number; progress?: unknown; [field: string]: unknown }

/** One split's records at one moment (absent: no such key). */
export interface SplitRecords { split?: SplitRecord; lease?: LeaseRecord; progress?: ProgressRecord }

/** One split's records just before and just after one revision, and what the revision did to its keys. */
export interface OwnershipStep {
  id: string;
  before: SplitRecords;
  after: SplitRecords;
  /** The keys of the split the revision put, and those it deleted. */
  put: { split: boolean; lease: boolean; progress: boolean };
  deleted: { split: boolean; progress: boolean };
  /** A packed job (decision 0037): its fold-back deletes a split's records. */
  packed: boolean;
}

/** How a claim took the split: from nobody yet, from an expired owner, from itself, or after a release. */
export type ClaimKind = 'create' | 'takeover' | 'reclaim' | 'after-release';

/** What the step was, as far as ownership goes. */
export type StepKind =
  | { kind: 'claim'; from: ClaimKind; previousOwner: string; endedCommitted: boolean }
  | { kind: 'quarantine'; takeover: boolean }
  | { kind: 'end'; how: 'released' | 'failed' | 'completed' }
  | { kind: 'other' };

export interface OwnershipProblem { rule: string; detail: string }

const attemptsOf = (r: SplitRecord | undefined): number => Number(r?.attempts ?? 0);
const describe = (r: SplitRecord | undefined): string => (r ? `${r.status}, owner ${r.owner || '(none)'} epoch ${r.epoch}` : 'absent');
const names = (l: LeaseRecord | undefined): string => (l ? `named ${l.owner} epoch ${l.epoch}` : 'was absent');
/** The lease key names the split's owner at its epoch: the fence of every owner's write. */
const fenced = (l: LeaseRecord | undefined, s: SplitRecord): boolean => !!l && l.owner === s.owner && l.epoch === s.epoch;
/** Whether the tenancy of `epoch` committed progress: `progress.{id}` names it. */
const committedAt = (p: ProgressRecord | undefined, epoch: number): boolean => p !== undefined && Number(p.epoch) === epoch;

/** Split `id`'s step in one revision (`group`: its events, test/support/history-replay.ts), given its records before and after. */
export function stepOf(id: string, group: readonly HistoryEvent[], before: SplitRecords, after: SplitRecords, packed: boolean): OwnershipStep {
  const wrote = (kind: string, type: 'put' | 'delete') => group.some((e) => e.kind === kind && e.id === id && e.type === type);
  return {
    id, before, after, packed,
    put: { split: wrote('split', 'put'), lease: wrote('lease', 'put'), progress: wrote('progress', 'put') },
    deleted: { split: wrote('split', 'delete'), progress: wrote('progress', 'delete') },
  };
}

/** Checks one step; returns what it was and what it broke (empty when every rule holds). */
export function ownershipStep(step: OwnershipStep): { step: StepKind; problems: OwnershipProblem[] } {
  const problems: OwnershipProblem[] = [];
  const fail = (rule: string, detail: string) => problems.push({ rule, detail });
  const { id, before, after, put, deleted } = step;
  if (deleted.split && !step.packed) fail('split-deleted', `split.${id} was deleted`);
  if (deleted.progress && !step.packed) fail('progress-deleted', `progress.${id} was deleted`);
  if (put.progress && after.progress) progressRules(step, fail);
  let kind: StepKind = { kind: 'other' };
  if (put.split && after.split) kind = splitRules(step, fail);
  const { lease: al, split: as } = after;
  if (al && !(as && as.status === 'runnable' && as.owner === al.owner && as.epoch === al.epoch)) {
    fail('lease-record-disagree', `lease.${id} names ${al.owner} epoch ${al.epoch} but split.${id} is ${describe(as)}`);
  }
  return { step: kind, problems };
}

/** A commit of `progress.{id}`: the runnable owner's, at its epoch, under its lease key, never a claim's. */
function progressRules({ id, before, after, put }: OwnershipStep, fail: (rule: string, detail: string) => void): void {
  const bs = before.split;
  const ap = after.progress!;
  if (!bs || bs.status !== 'runnable' || bs.owner === '') {
    fail(bs && bs.status !== 'runnable' ? 'progress-after-terminal' : 'progress-while-unowned', `progress.${id} written while split.${id} is ${describe(bs)}`);
    return;
  }
  if (Number(ap.epoch) !== bs.epoch) fail('progress-wrong-epoch', `progress.${id} names epoch ${ap.epoch}; split.${id} is at ${bs.epoch}`);
  if (!fenced(before.lease, bs)) fail('unfenced-progress', `progress.${id} written for ${bs.owner} epoch ${bs.epoch} while its lease key ${names(before.lease)}`);
  if (put.split && after.split && after.split.epoch !== bs.epoch) fail('claim-wrote-progress', `claim of split.${id} wrote progress.${id}`);
}

/** A put of `split.{id}`: a seeding, a claim, a quarantine or an owner's end. */
function splitRules(step: OwnershipStep, fail: (rule: string, detail: string) => void): StepKind {
  const { id, before: { split: bs }, after: { split: as } } = step;
  if (!as) return { kind: 'other' };
  if (!bs) {
    if (!(as.epoch === 0 && as.owner === '' && as.status === 'runnable' && !('progress' in as))) fail('bad-seed', `split.${id} was created as ${JSON.stringify(as)}`);
    return { kind: 'other' };
  }
  if (bs.status !== 'runnable') fail('terminal-rewritten', `split.${id} was ${bs.status} and was written again: ${JSON.stringify(as)}`);
  if ('progress' in as) fail('progress-in-split', `split.${id} carries progress (it belongs in progress.${id}): ${JSON.stringify(as)}`);
  if (as.epoch === bs.epoch + 1) return claimRules(step, bs, as, fail);
  // An owner change without a claim, or an epoch moving other than by +1 or 0: invariants.ts's splitFence.
  if (as.epoch !== bs.epoch || (as.owner !== bs.owner && as.owner !== '')) return { kind: 'other' };
  if (as.status === 'quarantined') return quarantineRules(step, bs, as, fail);
  if (bs.owner === '') {
    fail('write-to-unowned', `split.${id} had no owner and was written: ${JSON.stringify(as)}`);
    return { kind: 'other' };
  }
  return endRules(step, bs, as, fail);
}

/** Epoch +1: the claimant's lease key in the same revision, and the attempt it consumes. */
function claimRules({ id, before, after, put }: OwnershipStep, bs: SplitRecord, as: SplitRecord, fail: (rule: string, detail: string) => void): StepKind {
  const al = after.lease;
  if (!(as.owner !== '' && put.lease && al && al.owner === as.owner && al.epoch === as.epoch)) {
    fail('claim-without-lease', `split.${id} epoch ${as.epoch} claimed by ${as.owner} without its lease key in the same revision${al ? ` (lease key ${al.owner}@${al.epoch})` : ''}`);
  }
  let from: ClaimKind;
  if (bs.epoch === 0) from = 'create';
  else if (bs.owner !== '') from = before.lease && before.lease.owner === as.owner ? 'reclaim' : 'takeover';
  else from = 'after-release';
  // substrate.md: a claim of an expired or own lease consumes one delivery attempt, unless the tenancy it
  // ends committed progress; every other claim none.
  const endedCommitted = committedAt(before.progress, bs.epoch);
  const consumes = (from === 'takeover' || from === 'reclaim') && !endedCommitted ? 1 : 0;
  if (attemptsOf(as) - attemptsOf(bs) !== consumes) {
    fail('claim-miscounted', `split.${id} epoch ${as.epoch} (${from}${bs.owner !== '' ? ` of a tenancy that committed ${endedCommitted ? 'progress' : 'nothing'}` : ''}) moved attempts ${attemptsOf(bs)} → ${attemptsOf(as)}; such a claim consumes ${consumes}`);
  }
  return { kind: 'claim', from, previousOwner: bs.owner, endedCommitted };
}

/** Quarantined at the same epoch: the one attempt that reaches the cap, by the owner or by a takeover that finds nothing committed. */
function quarantineRules({ id, before, after }: OwnershipStep, bs: SplitRecord, as: SplitRecord, fail: (rule: string, detail: string) => void): StepKind {
  const bl = before.lease;
  // An owner's own failure deletes its lease key in the same revision; a takeover finds none live.
  if (bl && bs.owner !== '' && after.lease) fail('quarantined-while-leased', `split.${id} quarantined with lease.${id} of ${bl.owner} live`);
  const consumed = attemptsOf(as) - attemptsOf(bs);
  if (consumed !== 1) {
    fail('quarantine-miscounted', `split.${id} quarantined moving attempts ${attemptsOf(bs)} → ${attemptsOf(as)}; quarantine takes the one attempt that reaches the cap`);
  } else if (bs.owner === '') {
    fail('quarantine-after-release', `split.${id} was released and then quarantined: a claim after a release consumes no attempt`);
  } else if (!bl && committedAt(before.progress, bs.epoch)) {
    fail('quarantine-burned-committed', `split.${id} quarantined on a takeover of epoch ${bs.epoch}, which committed progress: such a takeover consumes no attempt`);
  }
  return { kind: 'quarantine', takeover: bs.owner !== '' && !bl };
}

/** The owner's release, failure or completion: fenced by its live lease key, which it deletes when it gives the split up. */
function endRules({ id, before, after }: OwnershipStep, bs: SplitRecord, as: SplitRecord, fail: (rule: string, detail: string) => void): StepKind {
  if (!fenced(before.lease, bs)) fail('unfenced-end', `split.${id} written for ${bs.owner} epoch ${bs.epoch} while its lease key ${names(before.lease)}`);
  if (as.owner !== '') {
    if (as.status === 'runnable') fail('rewritten-keeping-owner', `split.${id} rewritten at epoch ${as.epoch} with its owner kept (a commit belongs in progress.${id})`);
    return { kind: 'other' };
  }
  // Giving the split up deletes the key that fenced it (absent before: unfenced, and nothing deleted either).
  if (!(before.lease && !after.lease)) fail('lease-kept-after-release', `split.${id} released by ${bs.owner} but lease.${id} was not deleted in the same revision`);
  if (as.status === 'completed') return { kind: 'end', how: 'completed' };
  return { kind: 'end', how: attemptsOf(as) > attemptsOf(bs) ? 'failed' : 'released' };
}
