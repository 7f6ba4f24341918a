/**
 * The leader's writes as data: the campaign (with its plan generation bump), the
 * resignation, the verdict, the plan record after seeding, and the seeding of
 * spec and split records, each built here as a `Txn` (the compares that make
 * it safe and the ops it makes), as txns.ts builds the worker's. The leader
 * (coordinator/leader/leader.ts, seeding.ts) sends what it is given and reports the
 * outcome; it adds no compare and drops none.
 *
 * Invariants:
 * - Leadership is the `leader` key at the revision the term's campaign wrote
 *   it (`leadershipGuard`), the way etcd's `concurrency.Election` guards its
 *   writes by the key's revision. Every write of a term carries it, so a
 *   deposed leader's write lands nowhere.
 * - A campaign creates `leader` only where absent, under the session lease,
 *   naming generation = plan generation + 1, and bumps the plan record's
 *   generation in the same transaction, compared at the revision it was seen
 *   at (absent when there was none), so two terms never share a generation
 *   (decision 0084).
 * - Resigning deletes `leader` only at the revision it was observed at: never
 *   a successor's key.
 * - Seeding creates records only where absent (every key compared absent), so
 *   a record that exists, and the progress it stands for, is never reset.
 *
 * Pure: no I/O. It imports the store's contract (types and the `cmp`/`op`
 * builders of store/store.ts), never a backend (decision 0016).
 */
import { initialSplitRecord } from './claims.js';
import { divideKey, leaderKey, planKey, publishKey, specKey, splitKey } from './keys.js';
import { encodeRecord, PACKED_PLAN_VERSION, SCHEMA_VERSION, type DivisionAsk, type JobLayout, type Json, type JobVerdictRecord, type PlanRecord } from './records.js';
import type { Revisioned } from './txns.js';
import { cmp, op, type Compare, type Op, type Txn } from '../store/store.js';

/** The compare every write of a term carries: `leader` still at the revision its campaign wrote (-1: no term, never holds). */
export function leadershipGuard(prefix: string, termRevision: number): Compare {
  return cmp.modRevision(leaderKey(prefix), termRevision);
}

/** The plan record a new term writes: the one read with its generation, or a fresh one when the job has none yet. */
export function bumpedPlanRecord(plan: PlanRecord | undefined, fp: string, generation: number, layout: JobLayout = 'keys'): PlanRecord {
  if (plan) return { ...plan, generation };
  // The layout is chosen here, when the job is created, and never again (decision 0037).
  return layout === 'packed'
    ? { v: PACKED_PLAN_VERSION, fp, generation, final: false, planned: 0, layout: 'packed' }
    : { v: SCHEMA_VERSION, fp, generation, final: false, planned: 0 };
}

/**
 * A campaign, which is also its term's first write (decision 0084): `leader`
 * created where absent, under the session lease, naming generation = the
 * plan's generation + 1, and the plan record bumped to that generation,
 * compared at the revision the campaigner saw it at (absent when there was
 * none). The winner reads the publication fence in the same transaction
 * (decision 0015: the term's first publication needs no read of its own); the
 * loser reads `leader` and `plan`: another candidate won, or the plan moved
 * (campaign again on the plan read).
 */
export function campaignTxn(
  prefix: string, fp: string, instance: string, plan: Revisioned<PlanRecord> | undefined, sessionLease: string, layout: JobLayout = 'keys',
): Txn {
  const lead = leaderKey(prefix);
  const key = planKey(prefix);
  const generation = (plan?.rec.generation ?? 0) + 1;
  return {
    compares: [cmp.absent(lead), plan ? cmp.modRevision(key, plan.modRevision) : cmp.absent(key)],
    success: [
      op.put(lead, encodeRecord('leader', { v: SCHEMA_VERSION, fp, instance, generation }), sessionLease),
      op.put(key, encodeRecord('plan', bumpedPlanRecord(plan?.rec, fp, generation, layout))),
      op.get(publishKey(prefix)),
    ],
    failure: [op.get(lead), op.get(key)],
  };
}

/**
 * Deletes `leader` at the revision observed: a resignation (the term's own
 * revision), or a key of ours that no term stands on (a campaign that timed
 * out had landed). A successor's key has another revision and stays.
 */
export function resignTxn(prefix: string, leaderRevision: number): Txn {
  const key = leaderKey(prefix);
  return { compares: [cmp.modRevision(key, leaderRevision)], success: [op.delete(key)] };
}

/**
 * The job's verdict on the plan record: leadership ∧ the plan at the revision it was decided on.
 * `hook`: the leader has an `onJobFinished` hook, so the verdict goes with `hook: 'pending'`
 * (decision 0065); without one the record is what it always was.
 */
export function verdictTxn(prefix: string, leadership: Compare, plan: Revisioned<PlanRecord>, verdict: JobVerdictRecord, hook = false): Txn {
  const key = planKey(prefix);
  // The hook's key names this verdict: the generation that decided it and the plan's revision it was decided on.
  const rec: PlanRecord = { ...plan.rec, verdict, ...(hook ? { hook: 'pending' as const, hookKey: `${prefix}verdict@${plan.rec.generation}.${plan.modRevision}` } : {}) };
  return { compares: [leadership, cmp.modRevision(key, plan.modRevision)], success: [op.put(key, encodeRecord('plan', rec))] };
}

/** The hook ran (decision 0065): the plan record at the revision read, `hook: 'ran'`, guarded by leadership. */
export function hookRanTxn(prefix: string, leadership: Compare, plan: Revisioned<PlanRecord>): Txn {
  const key = planKey(prefix);
  return { compares: [leadership, cmp.modRevision(key, plan.modRevision)], success: [op.put(key, encodeRecord('plan', { ...plan.rec, hook: 'ran' }))] };
}

/** What a planner's run leaves on the plan record. */
export interface PlanOutcome {
  readonly generation: number;
  readonly final: boolean;
  readonly planned: number;
  readonly cursor: Json | undefined;
}

/**
 * The plan record after seeding, restated over the record as read (fields of
 * a newer minor version are kept); the previous cursor goes unless the
 * planner returned one.
 */
export function seededPlanRecord(current: PlanRecord, fp: string, o: PlanOutcome): PlanRecord {
  const { cursor: _previousCursor, ...kept } = current;
  return { ...kept, v: current.v, fp, generation: o.generation, final: o.final, planned: o.planned, ...(o.cursor !== undefined ? { cursor: o.cursor } : {}) };
}

/** A write of the plan record: the transaction, and the record it puts (so the writer need not decode its own write). */
export interface PlanWrite {
  readonly txn: Txn;
  readonly rec: PlanRecord;
}

/** A packed plan's bucket count, chosen when its first splits are seeded: leadership ∧ the plan at the revision read. */
export function bucketsTxn(prefix: string, leadership: Compare, plan: Revisioned<PlanRecord>, buckets: number): PlanWrite {
  const key = planKey(prefix);
  const rec: PlanRecord = { ...plan.rec, buckets };
  return { txn: { compares: [leadership, cmp.modRevision(key, plan.modRevision)], success: [op.put(key, encodeRecord('plan', rec))] }, rec };
}

/** The plan record after seeding: leadership ∧ the plan at the revision read → `seededPlanRecord`. */
export function planUpdateTxn(prefix: string, fp: string, leadership: Compare, plan: Revisioned<PlanRecord>, o: PlanOutcome): PlanWrite {
  const key = planKey(prefix);
  const rec = seededPlanRecord(plan.rec, fp, o);
  return { txn: { compares: [leadership, cmp.modRevision(key, plan.modRevision)], success: [op.put(key, encodeRecord('plan', rec))] }, rec };
}

/** One planned split, as seeding writes it. */
export interface SeededSplit {
  readonly id: string;
  readonly weight: number;
  readonly descriptor?: Json | undefined;
}

/**
 * The two records a planned split starts with: its spec (named for the
 * generation that planned it) and an initial split record. `maxBytes` bounds
 * the spec (RECORD_TOO_LARGE names the split past it).
 */
export function seedWrites(prefix: string, fp: string, generation: number, s: SeededSplit, maxBytes: number): Op[] {
  const spec = encodeRecord('spec', { v: SCHEMA_VERSION, fp, id: s.id, weight: s.weight, descriptor: s.descriptor ?? null, generation }, { maxBytes });
  return [op.put(specKey(prefix, s.id), spec), op.put(splitKey(prefix, s.id), encodeRecord('split', initialSplitRecord(s.id, fp)))];
}

/** A fresh split record for a split whose record was deleted (by hand, to get rid of an unreadable one). */
export function reseedWrite(prefix: string, fp: string, id: string): Op {
  return op.put(splitKey(prefix, id), encodeRecord('split', initialSplitRecord(id, fp)));
}

/**
 * Split records seeded again (`reseedWrite`): leadership ∧ the plan record at the revision the
 * leader read (a verdict written since, its own among them, makes it lose: a finished job runs
 * nothing more) ∧ every written key absent → the puts.
 */
export function reseedTxn(prefix: string, leadership: Compare, planRevision: number, puts: readonly Op[]): Txn {
  const txn = seedTxn(leadership, puts);
  return { compares: [cmp.modRevision(planKey(prefix), planRevision), ...txn.compares], success: txn.success };
}

/** Seeding puts, created only where absent: leadership ∧ every written key absent → the puts. */
export function seedTxn(leadership: Compare, puts: readonly Op[]): Txn {
  return { compares: [leadership, ...puts.map((o) => cmp.absent(o.key))], success: puts };
}

/**
 * The leader's division asks (decision 0063): `divide.{instance}` records put (asks, sorted by id)
 * or deleted (none left), guarded by leadership like every leader write.
 */
export function divideTxn(prefix: string, fp: string, leadership: Compare, generation: number, puts: ReadonlyMap<string, readonly DivisionAsk[]>, deletes: readonly string[]): Txn {
  const success: Op[] = [];
  for (const [instance, asks] of puts) {
    success.push(op.put(divideKey(prefix, instance), encodeRecord('divide', { v: SCHEMA_VERSION, fp, instance, generation, asks: [...asks] })));
  }
  for (const instance of deletes) success.push(op.delete(divideKey(prefix, instance)));
  return { compares: [leadership], success };
}
