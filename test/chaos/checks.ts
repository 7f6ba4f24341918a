/**
 * The chaos auditor's checks, pure: a job's recorded etcd history (every
 * write, revision order) and the fleet's ledger (every processed unit, every
 * lane event, from the members' stdout) in; violations with context (split
 * id, revisions) and figures out.
 *
 * What is checked, per revision (the state before and after one etcd write):
 * - a live `lease.{id}` is never overwritten by another owner;
 * - while `lease.{id}` exists, `split.{id}` is runnable and names the same
 *   owner and epoch (so no revision ever shows two owners of one split);
 * - a split record's owner changes only by a claim, which bumps the epoch by
 *   exactly one and writes the claimant's lease key in the same revision;
 * - every other write by an owner (a commit of `progress.{id}`, release,
 *   completion, failure) is made while that owner's lease key is live, names
 *   the owner's epoch, and the ending ones delete the lease key;
 * - committed progress (`progress.{id}`, which split.{id} no longer carries)
 *   never decreases, nor does its epoch; a claim never writes it; epochs never
 *   go back; a terminal record (and its progress) is never written again;
 *   `split.{id}` changes only with ownership.
 * And over the whole run:
 * - every planned unit appears in the ledger (processed at least once), and
 *   every split ends completed with all its units committed in `progress.{id}`
 *   by the tenancy that completed it;
 * - every unit was processed by the owner of the epoch it names, after that
 *   tenancy's resume point;
 * - replay: each new tenancy re-processes at most `commitEvery` units already
 *   processed by earlier ones, and none of its predecessor's after a
 *   cooperative drain; in all, duplicates ≤ commitEvery × (forced moves,
 *   declines, failures and takeovers).
 *
 * The rules are written once, for this auditor and the simulation's
 * (test/simulation/auditor.ts), and reported here under this auditor's check
 * names: each split's ownership step (who may take it from whom, the attempt
 * a claim or quarantine consumes, the fence of an owner's writes, a lease key
 * agreeing with its record) is test/support/ownership-transitions.ts; the
 * epoch and owner fence, the lease rule and progress monotonicity are
 * test/support/invariants.ts, both plugged into the same replay
 * (test/support/history-replay.ts); units by their epoch's claimer, none
 * lost, duplicates bounded are test/support/units-ledger.ts. This auditor
 * keeps what only it can see: the transitions' kinds from the ledger's lane
 * events (a cooperative or declined drain, an adoption) and the failure
 * reports that alone may consume an attempt on a release. A packed job (decision 0037)
 * is held to the packed queue's checker (test/support/packed-invariants.ts,
 * first in the replay, its rules as check names: packed-checks.ts): its
 * splits are its pages', a fold-back is the one deletion of their keys, and a
 * folded split's last state is what its fold-back deleted. No I/O, no clock.
 */
import { replayHistory, type Revision } from '../support/history-replay.js';
import { invariantCheckers } from '../support/invariants.js';
import { ownershipStep, stepOf, type LeaseRecord, type ProgressRecord, type SplitRecord, type SplitRecords, type StepKind } from '../support/ownership-transitions.js';
import { packedChecker } from '../support/packed-invariants.js';
import { duplicates as duplicatesOf, missingUnits, overReplayBound, unitClaimProblem, unitCounts, unitRanges, type LedgerUnit } from '../support/units-ledger.js';
import { lastState, packedViolations, plannedUnits } from './packed-checks.js';
import type { LaneEvent } from '../../src/testing/ledger.js';
import type { HistoryEvent } from './auditor.js';

/** What the audit reads of the one ledger (test/support/ledger.ts): its units and lane events, times not needed. */
export type { LedgerUnit } from '../support/units-ledger.js';
export type LedgerEvent = Pick<LaneEvent, 'instance' | 'ev' | 'id' | 'epoch' | 'progress'> & { [k: string]: unknown };
export interface Ledger { units: LedgerUnit[]; events: LedgerEvent[] }

export interface AuditOptions {
  /** The handler's commit interval, in units: the replay bound per forced move or takeover. */
  commitEvery: number;
  /** Require every split to end completed (default true). */
  expectComplete?: boolean;
}

export interface Violation {
  check: string;
  split?: string;
  revisions?: number[];
  detail: string;
}

/**
 * How a tenancy began, i.e. how its predecessor ended: 'create' (first claim),
 * 'cooperative' (released after a drain that committed its tail),
 * 'declined' (the source declined the drain; released at once), 'forced'
 * (released without a completed drain: the drain deadline passed, or the
 * handler stopped on a store failure), 'failed' (a failure report),
 * 'takeover' (the owner's lease expired: it died, froze or lost etcd),
 * 'reclaim' (the same instance took its own live lease key back).
 */
export type TransitionKind = 'create' | 'cooperative' | 'declined' | 'forced' | 'failed' | 'takeover' | 'reclaim';

export interface Transition {
  split: string;
  epoch: number;
  rev: number;
  owner: string;
  previousOwner: string;
  kind: TransitionKind;
  /** Committed progress the tenancy resumed from. */
  resumeAt: number;
  /** Units at or below what earlier tenancies processed that this one had to redo. */
  replay: number;
}

export interface AuditFigures {
  splits: number;
  unitsPlanned: number;
  unitsProcessed: number;
  duplicates: number;
  transitions: Record<TransitionKind, number>;
  /** Largest replay of any forced move, failure or takeover. */
  maxReplay: number;
  /** commitEvery × the transitions allowed to replay (all but creates and cooperative moves): the duplicates' ceiling. */
  replayBound: number;
  maxAttempts: number;
  leaderTerms: number;
  /** A packed job's splits folded back into their pages (0 for the keys layout). */
  folded: number;
  /** The buckets a packed job's queue pages are in (0 for the keys layout). */
  buckets: number;
  revisions: number;
  /** From the first to the last recorded write of the job. */
  durationMs: number;
}

export interface AuditReport {
  violations: Violation[];
  figures: AuditFigures;
  transitions: Transition[];
}

type Rec = Record<string, any>;
const progressOf = (r: Rec | undefined): number => (typeof r?.progress === 'number' ? r.progress : 0);

/** The shared ownership rules (test/support/ownership-transitions.ts) under this auditor's check names. */
const CHECKS: Record<string, string> = {
  'split-deleted': 'split-record-deleted', 'progress-deleted': 'progress-record-deleted', 'bad-seed': 'bad-seed',
  'terminal-rewritten': 'terminal-rewritten', 'progress-in-split': 'progress-in-split-record', 'claim-without-lease': 'claim-without-lease',
  'claim-miscounted': 'attempts-miscounted', 'quarantine-miscounted': 'attempts-miscounted', 'quarantine-after-release': 'attempt-burned',
  'quarantine-burned-committed': 'attempt-burned', 'quarantined-while-leased': 'quarantined-while-leased', 'write-to-unowned': 'write-to-unowned',
  'unfenced-end': 'unfenced-write', 'rewritten-keeping-owner': 'split-rewritten-without-ownership-change', 'lease-kept-after-release': 'lease-kept-after-release',
  'progress-after-terminal': 'terminal-rewritten', 'progress-while-unowned': 'write-to-unowned', 'progress-wrong-epoch': 'unfenced-write',
  'unfenced-progress': 'unfenced-write', 'claim-wrote-progress': 'claim-changed-progress', 'lease-record-disagree': 'lease-record-disagree',
};
/** Rules of the revision's own writes, reported at it alone (the rest name the lease key's and the record's revisions too). */
const ONE_REVISION = new Set(['split-deleted', 'progress-deleted', 'bad-seed', 'progress-in-split', 'claim-without-lease', 'claim-wrote-progress']);

export function audit(history: readonly HistoryEvent[], ledger: Ledger, options: AuditOptions): AuditReport {
  const violations: Violation[] = [];
  const v = (check: string, split: string | undefined, revisions: number[], detail: string) => {
    if (violations.length < 200) violations.push({ check, split, revisions, detail });
  };
  const splits = new Map<string, { rec: Rec; rev: number }>();
  const leases = new Map<string, { rec: Rec; rev: number }>();
  const progress = new Map<string, { rec: Rec; rev: number }>();
  const units = new Map<string, number>();
  const claims = new Map<string, Map<number, Transition>>();
  const ends = new Map<string, { how: 'released' | 'failed'; owner: string; progress: number; rev: number }>();
  let leaderTerms = 0;
  // The packed queue's rules (decision 0037), first in the replay: its layout is the revision's.
  const packed = packedChecker();
  // Failure reports the handlers made (instance|split|attempts after it): the only releases that may consume an attempt.
  const failureReports = new Set(ledger.events.filter((e) => e.ev === 'failed').map((e) => `${e.instance}|${e.id}|${Number(e.attempts)}`));
  const attemptsOf = (r: Rec | undefined): number => Number(r?.attempts ?? 0);

  // Ownership transitions, revision by revision: the shared rulebook (test/support/ownership-transitions.ts) per split,
  // a checker of the one replay beside the shared invariants; what it says of claims and ends feeds the ledger's checks.
  const ownership = ({ rev, events: group }: Revision): void => {
    const touched = new Set<string>();
    for (const e of group) if ((e.kind === 'split' || e.kind === 'lease' || e.kind === 'progress') && e.id) touched.add(e.id);
    const before = new Map([...touched].map((id) => [id, { split: splits.get(id), lease: leases.get(id), progress: progress.get(id) }]));
    for (const e of group) {
      if (e.type === 'put' && e.rec === undefined) v('unparseable-record', e.id, [rev], `${e.key} holds a value that is not JSON`);
      if (e.kind === 'leader' && e.type === 'put') leaderTerms++;
      if (e.kind === 'spec' && e.type === 'put' && e.id) units.set(e.id, Number(e.rec?.descriptor?.units ?? 0));
      if (e.kind === 'split' && e.id) {
        if (e.type === 'put' && e.rec) splits.set(e.id, { rec: e.rec, rev });
        else if (e.type === 'delete' && packed.layout === 'packed') splits.delete(e.id); // a fold-back, or packedChecker reports what it was
      }
      if (e.kind === 'lease' && e.id) {
        if (e.type === 'put' && e.rec) leases.set(e.id, { rec: e.rec, rev });
        else leases.delete(e.id);
      }
      if (e.kind === 'progress' && e.id) {
        if (e.type === 'put' && e.rec) progress.set(e.id, { rec: e.rec, rev });
        else if (e.type === 'delete' && packed.layout === 'packed') progress.delete(e.id);
      }
    }
    for (const id of touched) {
      const b = before.get(id)!;
      const records = (s?: { rec: Rec }, l?: { rec: Rec }, p?: { rec: Rec }): SplitRecords =>
        ({ split: s?.rec as SplitRecord | undefined, lease: l?.rec as LeaseRecord | undefined, progress: p?.rec as ProgressRecord | undefined });
      const after = records(splits.get(id), leases.get(id), progress.get(id));
      const { step, problems } = ownershipStep(stepOf(id, group, records(b.split, b.lease, b.progress), after, packed.layout === 'packed'));
      const revs = [b.lease?.rev, splits.get(id)?.rev, rev].filter((r): r is number => r !== undefined);
      for (const p of problems) v(CHECKS[p.rule] ?? p.rule, id, ONE_REVISION.has(p.rule) ? [rev] : revs, p.detail);
      tenancyStep(id, rev, step, { split: b.split?.rec, lease: b.lease, progress: b.progress?.rec }, splits.get(id)?.rec, revs);
    }
  };

  /** What a step means for the ledger's checks: a claim's transition, an end's kind, a failure report's presence. */
  const tenancyStep = (id: string, rev: number, step: StepKind, b: { split?: Rec; lease?: { rec: Rec }; progress?: Rec }, as: Rec | undefined, revs: number[]): void => {
    const { split: bs, lease: bl } = b;
    const consumed = attemptsOf(as) - attemptsOf(bs);
    const reported = (owner: string) => failureReports.has(`${owner}|${id}|${attemptsOf(as)}`);
    if (step.kind === 'claim') {
      const kind: TransitionKind = step.from === 'after-release' ? (ends.get(id)?.how === 'failed' ? 'failed' : 'forced') : step.from; // cooperative is decided from the ledger below
      const t: Transition = { split: id, epoch: as!.epoch, rev, owner: as!.owner, previousOwner: bs!.owner || ends.get(id)?.owner || '', kind, resumeAt: progressOf(b.progress), replay: 0 };
      if (!claims.has(id)) claims.set(id, new Map());
      claims.get(id)!.set(as!.epoch, t);
    } else if (step.kind === 'quarantine' && !step.takeover && bl && bs!.owner !== '' && consumed === 1 && !reported(bs!.owner)) {
      v('attempt-burned', id, revs, `split.${id} quarantined by its owner ${bs!.owner} without a failure report from its handler`);
    } else if (step.kind === 'end' && step.how !== 'completed') {
      const failed = consumed > 0;
      if (failed && (consumed !== 1 || !reported(bs!.owner))) {
        v('attempt-burned', id, revs, `split.${id} released by ${bs!.owner} moving attempts ${attemptsOf(bs)} → ${attemptsOf(as)} without a failure report from its handler (a store failure or a drain must not consume an attempt)`);
      }
      ends.set(id, { how: failed ? 'failed' : 'released', owner: bs!.owner, progress: progressOf(progress.get(id)?.rec), rev });
    }
  };

  // The invariants every suite checks alike (test/support/invariants.ts), plugged into the same replay, under this auditor's names.
  const shared = invariantCheckers();
  replayHistory(history, [packed, { revision: ownership }, ...shared]);
  // A packed job's splits are its pages' (promoted or not); a folded one's last state is what its fold-back deleted.
  if (packed.layout === 'packed') for (const [id, n] of plannedUnits(packed)) units.set(id, n);
  for (const p of packedViolations(packed, options.expectComplete ?? true)) v(p.check, p.split, p.revisions ?? [], p.detail);
  const names: Record<string, string> = {
    'progress-regressed': 'progress-regressed', 'progress-epoch-regressed': 'epoch-jump', 'epoch-moved': 'epoch-jump',
    'owner-changed-without-claim': 'owner-changed-without-epoch-bump', 'claim-without-owner': 'claim-without-owner', 'lease-overwritten': 'lease-overwritten',
  };
  for (const p of shared.flatMap((c) => c.problems)) v(names[p.rule]!, p.split, p.revisions, p.detail);

  // ---- the ledger --------------------------------------------------------------
  // The units ledger's checks (test/support/units-ledger.ts): each unit by its epoch's claimer, none lost, duplicates bounded.
  const seen = unitCounts(ledger.units);
  const maxByEpoch = new Map<string, Map<number, number>>();
  for (const u of ledger.units) {
    const t = claims.get(u.id)?.get(u.epoch);
    const owned = unitClaimProblem(u, t ? [t.owner] : []);
    if (owned) v(owned.rule === 'unclaimed' ? 'unit-without-claim' : 'unit-by-non-owner', u.id, t ? [t.rev] : [], owned.detail);
    else if (u.unit <= t!.resumeAt) v('unit-before-resume-point', u.id, [t!.rev], `${u.instance} processed unit ${u.unit} at epoch ${u.epoch}, resumed from ${t!.resumeAt}`);
    if (!maxByEpoch.has(u.id)) maxByEpoch.set(u.id, new Map());
    const m = maxByEpoch.get(u.id)!;
    m.set(u.epoch, Math.max(m.get(u.epoch) ?? 0, u.unit));
  }
  // An adoption (a claim or write of this session whose reply was lost, taken up as it landed:
  // src/protocol/orphans.ts) restarts the handler within the same tenancy, from the progress the
  // store holds: a second 'claimed' event at that epoch, by its owner, at or past the claim's
  // resume point. It writes nothing, and may replay up to one commit interval, like a forced move.
  const reported = new Set<string>();
  let adoptions = 0;
  for (const e of ledger.events) {
    if (e.ev !== 'claimed' || !e.id || e.epoch === undefined) continue;
    const t = claims.get(e.id)?.get(e.epoch);
    const again = `${e.id}|${e.epoch}`;
    if (t && t.owner === e.instance && reported.has(again) && (e.progress ?? 0) >= t.resumeAt) {
      adoptions++;
      continue;
    }
    reported.add(again);
    if (!t || t.owner !== e.instance || t.resumeAt !== (e.progress ?? 0)) {
      v('claimed-event-mismatch', e.id, t ? [t.rev] : [], `${e.instance} reported claiming ${e.id} epoch ${e.epoch} at progress ${e.progress}; the store shows ${t ? `${t.owner} at ${t.resumeAt}` : 'no such claim'}`);
    }
  }
  // A hand-over by tenancy e: keyed by its epoch when the event names one. Without the epoch, an
  // earlier tenancy's drain at the same progress by the same instance made a later store-failure
  // release look cooperative (seen in CI: proxy-cut-delay, seed 20261135).
  const handover = (ev: string) => new Set(ledger.events.filter((e) => e.ev === ev)
    .map((e) => `${e.instance}|${e.id}|${e.epoch ?? '?'}|${e.progress ?? 0}`));
  const drainedSet = handover('drained');
  const declinedSet = handover('declined');
  const handedOverBy = (set: Set<string>, owner: string, id: string, epoch: number | undefined, at: number) =>
    set.has(`${owner}|${id}|${epoch ?? '?'}|${at}`) || set.has(`${owner}|${id}|?|${at}`);
  const transitions: Transition[] = [];
  for (const [id, byEpoch] of claims) {
    const epochs = [...byEpoch.keys()].sort((a, b) => a - b);
    const maxes = maxByEpoch.get(id) ?? new Map<number, number>();
    for (const [i, epoch] of epochs.entries()) {
      const t = byEpoch.get(epoch)!;
      const before = i > 0 ? epochs[i - 1] : undefined;
      let prior = 0;
      for (const [e, m] of maxes) if (e < epoch) prior = Math.max(prior, m);
      t.replay = Math.max(0, prior - t.resumeAt);
      if (t.kind === 'forced' && handedOverBy(drainedSet, t.previousOwner, id, before, t.resumeAt)) t.kind = 'cooperative';
      else if (t.kind === 'forced' && handedOverBy(declinedSet, t.previousOwner, id, before, t.resumeAt)) t.kind = 'declined';
      // A cooperative drain hands over everything its tenancy processed; older tenancies' tails may still replay.
      const handedOver = before === undefined ? 0 : (maxes.get(before) ?? 0);
      if (t.kind === 'cooperative' && handedOver > t.resumeAt) {
        v('cooperative-replayed', id, [t.rev], `epoch ${epoch} (${t.owner}) followed a cooperative drain by ${t.previousOwner} at ${t.resumeAt}, but that tenancy had processed up to unit ${handedOver}`);
      }
      if (t.replay > options.commitEvery) {
        v('replay-over-bound', id, [t.rev], `epoch ${epoch} (${t.owner}, after ${t.kind} from ${t.previousOwner}) resumed at ${t.resumeAt} but units up to ${prior} had been processed: ${t.replay} > commitEvery ${options.commitEvery}`);
      }
      transitions.push(t);
    }
  }
  let unitsPlanned = 0;
  let duplicates = 0;
  for (const [id, n] of units) {
    unitsPlanned += n;
    const counts = seen.get(id) ?? new Map<number, number>();
    const missing = missingUnits((u) => counts.has(u), 1, n);
    if (missing.length > 0) v('unit-never-processed', id, [], `units ${unitRanges(missing)} of ${id} (of ${n}) appear in no ledger`);
    duplicates += duplicatesOf(counts.values());
    const { split: rec, progress: p } = lastState(packed, id, splits.get(id), progress.get(id));
    if ((options.expectComplete ?? true) && !(rec?.rec.status === 'completed' && progressOf(p) === n && p?.epoch === rec.rec.epoch)) {
      v('not-completed', id, rec ? [rec.rev] : [], `split.${id} ended ${rec ? `${rec.rec.status} at epoch ${rec.rec.epoch}, progress.${id} ${p ? `${progressOf(p)} (epoch ${p.epoch})` : 'absent'}` : 'absent'}, expected completed at ${n}`);
    }
  }
  const counts = { create: 0, cooperative: 0, declined: 0, forced: 0, failed: 0, takeover: 0, reclaim: 0 } as Record<TransitionKind, number>;
  for (const t of transitions) counts[t.kind]++;
  const causes = transitions.filter((t) => t.kind !== 'create' && t.kind !== 'cooperative').length + adoptions;
  const replayBound = options.commitEvery * causes;
  if (overReplayBound(duplicates, options.commitEvery, causes)) {
    v('duplicates-over-bound', undefined, [], `${duplicates} units were processed more than once; ${replayBound / options.commitEvery} forced moves and takeovers allow at most ${replayBound}`);
  }
  const first = history[0];
  const last = history[history.length - 1];
  return {
    violations,
    transitions,
    figures: {
      splits: units.size,
      unitsPlanned,
      unitsProcessed: ledger.units.length,
      duplicates,
      transitions: counts,
      maxReplay: Math.max(0, ...transitions.filter((t) => t.kind !== 'create' && t.kind !== 'cooperative').map((t) => t.replay)),
      replayBound,
      maxAttempts: Math.max(0, ...[...splits.values(), ...[...packed.folds.values()].map((f) => ({ rec: f.split ?? {} }))].map((s) => Number(s.rec.attempts ?? 0))),
      leaderTerms,
      folded: packed.folds.size,
      buckets: packed.bucketsWithPages,
      revisions: first && last ? last.rev - first.rev + 1 : 0,
      durationMs: first && last ? last.at - first.at : 0,
    },
  };
}
