/**
 * What a division writes (substrate.md, "Dividing a running split";
 * decision 0063): the handler's proposal checked, the parent's progress
 * record with its new end, and the residual's spec and split records, all in
 * the lane's fenced transaction (txns.ts `laneTxn` with its `also` part).
 *
 * Invariants:
 * - A division is the lane's commit (the same compares: split record at the
 *   claim's revision, progress at the lane's last write, lease ours) plus the
 *   residual's creation, compared absent: all of it lands, or none.
 * - The parent's committed progress is unchanged by a division; its record
 *   gains `divisions` (the seq), `end` and `weight` (the primary part's).
 * - The residual is a fresh runnable split (epoch 0, no owner, no attempt
 *   spent) whose spec names its parent; its id is residual-ids.ts's.
 * - A decline writes only `declined` (the seq) on the parent's progress
 *   record, fenced the same way, so the leader stops asking this tenancy.
 *
 * Pure: no I/O, no clock.
 */
import { isValidWeight } from '../split-model.js';
import { specKey, splitKey } from './keys.js';
import { progressRecord } from './claims.js';
import { encodeRecord, SCHEMA_VERSION, type DivisionAsk, type Json, type ProgressRecord, type SpecRecord, type SplitRecord } from './records.js';
import { isJson } from './record-schemas.js';
import { residualId } from './residual-ids.js';
import { cmp, op, type Compare, type Op } from '../store/store.js';

/** What a handler proposes when asked to divide (`split.onDivide`). */
export interface DivisionProposal {
  /** The primary part's new end, as the handler's own position type has it (the handle's `end` from now on). */
  readonly end: Json;
  /** The residual: everything a worker needs to start it, and its weight (the planner's unit). */
  readonly residual: { readonly descriptor: Json; readonly weight: number };
  /** The primary part's weight after the division; default: its weight less the residual's (at least 1). */
  readonly weight?: number;
  /** The share of the primary part now done, if the handler knows it (the leader's next estimate). */
  readonly done?: number;
}

/** The rule a proposal breaks, naming the field, or undefined. */
export function proposalProblem(p: unknown): string | undefined {
  if (typeof p !== 'object' || p === null) return `the proposal must be an object { end, residual: { descriptor, weight } } (got ${p === null ? 'null' : typeof p})`;
  const q = p as Partial<Record<keyof DivisionProposal, unknown>>;
  if (q.end === undefined || !isJson(q.end)) return 'proposal.end: must be JSON (the primary part\'s new end)';
  const r = q.residual as { descriptor?: unknown; weight?: unknown } | undefined;
  if (typeof r !== 'object' || r === null) return 'proposal.residual: must be an object { descriptor, weight }';
  if (r.descriptor === undefined || !isJson(r.descriptor)) return 'proposal.residual.descriptor: must be JSON';
  if (!isValidWeight(r.weight) || r.weight < 1) return `proposal.residual.weight: must be an integer ≥ 1 (got ${String(r.weight)})`;
  if (q.weight !== undefined && (!isValidWeight(q.weight) || q.weight < 1)) return `proposal.weight: must be an integer ≥ 1 (got ${String(q.weight)})`;
  if (q.done !== undefined && !(typeof q.done === 'number' && q.done >= 0 && q.done <= 1)) return `proposal.done: must be a number 0 ≤ x ≤ 1 (got ${String(q.done)})`;
  return undefined;
}

/**
 * The rule a commit's arguments break, or undefined: `done` is a share (0 to 1), and a number
 * progress may not pass a number end (after a division, the units past it are the residual's).
 */
export function commitProblem(progress: unknown, options: { done?: unknown } | undefined, end: Json | undefined): string | undefined {
  const done = options?.done;
  if (done !== undefined && !(typeof done === 'number' && done >= 0 && done <= 1)) return `commit options.done: must be a number 0 ≤ x ≤ 1 (got ${String(done)})`;
  if (typeof progress === 'number' && typeof end === 'number' && progress > end) {
    return `commit progress ${progress} is past the split's end ${end}: the units after it belong to its residual since the division landed`;
  }
  return undefined;
}

/** The parts of the parent a division reads: its records as the lane holds them. */
export interface DividingLane {
  readonly prefix: string;
  readonly me: string;
  readonly record: SplitRecord;
  readonly spec: SpecRecord;
  readonly progressRecord: ProgressRecord | undefined;
  /** The committed progress (unchanged by the division). */
  readonly committed: Json;
}

/** The weight of a split's current part: its progress record's after a division, else its spec's. */
export function partWeight(spec: { weight: number }, progress: ProgressRecord | undefined): number {
  return progress?.weight ?? spec.weight;
}

/** A division as written: the parent's new progress record, the residual's id, and the extra compares and ops. */
export interface DivisionWrite {
  readonly committed: ProgressRecord;
  readonly residualId: string;
  readonly residualWeight: number;
  readonly also: { readonly compares: readonly Compare[]; readonly success: readonly Op[] };
}

/** The division `proposal` makes of the lane's split, as the `seq`-th. Throws INVALID_RECORD when a record cannot be encoded. */
export function divisionWrite(lane: DividingLane, ask: Pick<DivisionAsk, 'seq'>, proposal: DivisionProposal): DivisionWrite {
  const { record, spec } = lane;
  const rid = residualId(record.id, ask.seq);
  const before = partWeight(spec, lane.progressRecord);
  const weight = proposal.weight ?? Math.max(1, before - proposal.residual.weight);
  const base = progressRecord(record, lane.me, lane.committed, lane.progressRecord);
  const committed: ProgressRecord = { ...base, divisions: ask.seq, end: proposal.end, weight };
  if (proposal.done !== undefined) committed.done = proposal.done;
  else delete committed.done; // the old share was of the old part
  const residualSpec: SpecRecord = {
    v: SCHEMA_VERSION, fp: record.fp, id: rid, weight: proposal.residual.weight, descriptor: proposal.residual.descriptor, generation: spec.generation, parent: record.id,
  };
  const residualRecord: SplitRecord = { v: SCHEMA_VERSION, fp: record.fp, id: rid, epoch: 0, status: 'runnable', owner: '', attempts: 0 };
  const sk = specKey(lane.prefix, rid);
  const rk = splitKey(lane.prefix, rid);
  return {
    committed, residualId: rid, residualWeight: proposal.residual.weight,
    also: {
      compares: [cmp.absent(sk), cmp.absent(rk)],
      success: [op.put(sk, encodeRecord('spec', residualSpec)), op.put(rk, encodeRecord('split', residualRecord))],
    },
  };
}

/** A decline of the `seq`-th division: the parent's progress record with `declined`. */
export function declineRecord(lane: DividingLane, seq: number): ProgressRecord {
  return { ...progressRecord(lane.record, lane.me, lane.committed, lane.progressRecord), declined: seq };
}
