/**
 * The operator actions' writes as data (`splitfleet delete`, `retry`,
 * `pause`/`resume`/`evacuate`): each built here as a `Txn`, as txns.ts builds
 * the worker's and leader-txns.ts the leader's. An action in src/operator/
 * reads, calls one of these, sends what it is given and reports the outcome.
 * A new operator action is a function here plus a thin command there.
 *
 * Invariants:
 * - Every write compares the record it rewrites at the revision the action
 *   read it at (absent when there was none), so an action that raced a
 *   fleet's write loses and reads again; it never overwrites what it did not
 *   see.
 * - A retry rewrites only quarantined records (`retriedRecord`, claims.ts:
 *   INVALID_RECORD otherwise) and clears only a `stalled` verdict.
 * - A forced delete removes the plan record first, alone, at its revision:
 *   its disappearance is what stops every process of the job (JOB_DELETED).
 *   The teardown that follows is unguarded (`teardownTxn`): it removes a job
 *   whose processes have stopped or were never there (decision 0038).
 *
 * Pure: no I/O. It imports the store's contract (types and the `cmp`/`op`
 * builders of store/store.ts), never a backend (decision 0016).
 */
import { SplitfleetError } from '../errors.js';
import { retriedRecord } from './claims.js';
import { isNeutral, type ControlState } from './control.js';
import { controlKey, planKey, splitKey, summaryKey } from './keys.js';
import { encodeRecord, SCHEMA_VERSION, type ControlRecord, type PlanRecord, type SplitRecord } from './records.js';
import type { Revisioned } from './txns.js';
import { cmp, op, type Txn } from '../store/store.js';

/** The first step of a forced delete: the plan record, alone, at the revision read. */
export function planDeleteTxn(prefix: string, planRevision: number): Txn {
  const key = planKey(prefix);
  return { compares: [cmp.modRevision(key, planRevision)], success: [op.delete(key)] };
}

/**
 * Deletes the listed keys of a job being torn down, unguarded: the job is
 * finished and idle, or its plan went first (`planDeleteTxn`) and its
 * processes stopped. A straggler's write that lands meanwhile is listed and
 * deleted in the next round.
 */
export function teardownTxn(keys: readonly string[]): Txn {
  return { compares: [], success: keys.map((k) => op.delete(k)) };
}

/**
 * Returns quarantined splits to runnable with their attempts reset, as one
 * transaction: every record compared at the revision read, so one that moved
 * fails the batch and is read again. A record that is not quarantined is
 * refused (INVALID_RECORD) before anything is built. The job's summary is
 * deleted in the same transaction: a finished job's summary is trusted
 * without a leader (`summaryTrust`), and must not outlive the first record a
 * retry changes (decision 0040 addendum).
 *
 * The plan record is compared at the revision read and written again in the
 * same transaction (a `stalled` verdict cleared, any other plan as read): a
 * verdict is written only over the plan revision it was decided on
 * (`verdictTxn`), so one decided before this retry can no longer land after
 * it and stop the fleet with runnable splits (decision 0058). Two ops beyond
 * the records: a batch holds at most `maxOpsPerTxn - 2` of them.
 */
export function retryTxn(prefix: string, records: readonly Revisioned<SplitRecord>[], plan: Revisioned<PlanRecord>): Txn {
  const next = records.map((r) => retriedRecord(r.rec));
  const planned = plan.rec.verdict === 'stalled' ? clearedStalledPlan(plan.rec) : plan.rec;
  return {
    compares: [...records.map((r) => cmp.modRevision(splitKey(prefix, r.rec.id), r.modRevision)), cmp.modRevision(planKey(prefix), plan.modRevision)],
    success: [
      ...next.map((rec) => op.put(splitKey(prefix, rec.id), encodeRecord('split', rec))),
      op.delete(summaryKey(prefix)),
      op.put(planKey(prefix), encodeRecord('plan', planned)),
    ],
  };
}

/** A `stalled` plan with its verdict cleared, so the job runs again; refuses any other plan (INVALID_RECORD). */
export function clearedStalledPlan(plan: PlanRecord): PlanRecord {
  if (plan.verdict !== 'stalled') {
    throw new SplitfleetError('INVALID_RECORD', `cannot clear the verdict of the plan record: it is ${plan.verdict ?? 'without a verdict'}, not stalled; only a stalled verdict is cleared by retry`);
  }
  // The hook's state goes with the verdict it was for: the next verdict has its own.
  const { verdict: _verdict, hook: _hook, hookKey: _hookKey, ...rest } = plan;
  return rest;
}

/** Clears a `stalled` verdict: the plan at the revision read → `clearedStalledPlan`. */
export function clearVerdictTxn(prefix: string, plan: Revisioned<PlanRecord>): Txn {
  const key = planKey(prefix);
  return { compares: [cmp.modRevision(key, plan.modRevision)], success: [op.put(key, encodeRecord('plan', clearedStalledPlan(plan.rec)))] };
}

/** The control record as an action read it. */
export interface ObservedControl {
  /** The raw value and revision at `control`, or undefined when there is none. */
  readonly kv: { readonly value: string; readonly modRevision: number } | undefined;
  /** The record decoded, or undefined when absent or unreadable (it is then overwritten). */
  readonly record: ControlRecord | undefined;
}

/**
 * The write that makes `control` say `next`: the record at the revision read
 * (absent when there was none) → deleted when `next` asks nothing, else put
 * (restated over the record as read: fields of a newer minor version are
 * kept). Undefined when the store already says so: nothing to write.
 */
export function controlTxn(prefix: string, fp: string, observed: ObservedControl, next: ControlState): Txn | undefined {
  const key = controlKey(prefix);
  const { kv } = observed;
  const guard = kv ? cmp.modRevision(key, kv.modRevision) : cmp.absent(key);
  if (isNeutral(next)) return kv ? { compares: [guard], success: [op.delete(key)] } : undefined;
  const value = encodeRecord('control', { ...(observed.record ?? {}), v: SCHEMA_VERSION, fp, paused: next.paused, evacuated: next.evacuated });
  if (kv && kv.value === value) return undefined;
  return { compares: [guard], success: [op.put(key, value)] };
}
