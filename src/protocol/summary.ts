/**
 * The job summary (decision 0040): one small record, `summary`, that the
 * leader keeps so that the tools (`splitfleet jobs`, `inspect`, the
 * dashboard's first page) read a few keys instead of every split. This file
 * builds the record from figures the leader already holds, the transaction
 * that writes it, and the rule by which a reader trusts it.
 *
 * Invariants:
 * - Bounded size: counts and summed weights, never lists of ids, so the
 *   record stays a few hundred bytes whatever the job's size; the one list it
 *   carries, the recent events (`history`, job-history.ts, decision 0070), is
 *   bounded by count and bytes to keep it under MAX_SUMMARY_BYTES
 *   (which bounds it both ways).
 * - The write is guarded by leadership (the leader's guard compare, as its
 *   other writes are): a deposed leader's summary lands nowhere.
 * - A reader trusts a summary only when it was written by the generation the
 *   `leader` key names now: anything else (no leader, an older term's, an
 *   unreadable one) sends it back to reading every record.
 *
 * Pure: no I/O, no clock (the time comes in as an argument).
 */
import { SplitfleetError } from '../errors.js';
import { op, type Compare, type Txn } from '../store/store.js';
import { trimHistory, type HistoryEntry } from './job-history.js';
import { summaryKey, utf8ByteLength } from './keys.js';
import { MAX_STUCK_CHARS } from './record-schemas.js';
import { decodeRecord, encodeRecord, SCHEMA_VERSION, type LeaderRecord, type PlanRecord, type SummaryRecord } from './records.js';

/** The largest summary, in UTF-8 bytes, written or trusted: far above its fixed fields, far below a store request. */
export const MAX_SUMMARY_BYTES = 8 * 1024;

/** Splits and summed weight of one state. */
export interface Tally {
  readonly splits: number;
  readonly weight: number;
}

/** What the leader knows of its job, in figures (coordinator/leader/job-summary.ts reads them off its view). */
export interface SummaryFigures {
  /** fingerprintHash of the job's fingerprint. */
  readonly fp: string;
  /** The generation (leader term) writing it. */
  readonly generation: number;
  /** Wall-clock ms since the epoch. */
  readonly writtenAt: number;
  /** The plan record as the leader holds it (undefined before its first plan). */
  readonly plan: Pick<PlanRecord, 'planned' | 'final'> | undefined;
  /** Specs seen. */
  readonly seeded: number;
  /** Runnable and unheld, the waiting ones included (the leader's backlog metric's `queued`). */
  readonly queued: Tally;
  /** Of `queued`: failed splits waiting out their backoff. */
  readonly backoff: Tally;
  /** Under a live lease and still assigned to their holder. */
  readonly running: Tally;
  /** Under a live lease, no longer assigned to their holder: revocations in flight. */
  readonly draining: Tally;
  readonly completed: Tally;
  readonly quarantined: Tally;
  /** Splits set aside because a record of theirs cannot be read. */
  readonly parked: number;
  /** The live members' lane budgets (`maxInFlight`), one entry per member. */
  readonly lanes: Iterable<number>;
  /** Residuals of divided splits known (decision 0063); counted among the states above. */
  readonly residuals?: number;
  /** The recent notable events, oldest first (job-history.ts); trimmed to its bounds here. */
  readonly history?: readonly HistoryEntry[];
  /** Why part of the job cannot move (the leader's `stuckReason`); cut to MAX_STUCK_CHARS here. */
  readonly stuck?: string | undefined;
}

const whole = (n: number) => Math.max(0, Math.round(n));
const weight = (n: number) => (Number.isFinite(n) && n > 0 ? n : 0);

/** The summary record of `f`. Total: figures out of range are clamped (a count is never negative). */
export function summaryRecord(f: SummaryFigures): SummaryRecord {
  let members = 0;
  let lanes = 0;
  for (const l of f.lanes) {
    members++;
    lanes += whole(l);
  }
  const waiting = { splits: Math.min(whole(f.backoff.splits), whole(f.queued.splits)), weight: Math.min(weight(f.backoff.weight), weight(f.queued.weight)) };
  const draining = whole(f.draining.splits);
  // A copy of each entry: the record must not share objects with the writer's live history.
  const history = trimHistory(f.history ?? []).map((e) => ({ ...e }));
  const record: SummaryRecord = {
    v: SCHEMA_VERSION, fp: f.fp, generation: whole(f.generation), writtenAt: whole(f.writtenAt),
    planned: whole(f.plan?.planned ?? 0), final: f.plan?.final ?? false, seeded: whole(f.seeded),
    queued: whole(f.queued.splits) - waiting.splits, queuedWeight: Math.max(0, weight(f.queued.weight) - waiting.weight),
    backoff: waiting.splits, backoffWeight: waiting.weight,
    held: whole(f.running.splits) + draining, heldWeight: weight(f.running.weight) + weight(f.draining.weight), revoking: draining,
    completed: whole(f.completed.splits), completedWeight: weight(f.completed.weight),
    quarantined: whole(f.quarantined.splits), quarantinedWeight: weight(f.quarantined.weight),
    parked: whole(f.parked), members, lanes,
    ...(whole(f.residuals ?? 0) > 0 ? { residuals: whole(f.residuals ?? 0) } : {}),
    ...(f.stuck ? { stuck: f.stuck.length > MAX_STUCK_CHARS ? `${f.stuck.slice(0, MAX_STUCK_CHARS - 1)}…` : f.stuck } : {}),
    ...(history.length > 0 ? { history } : {}),
  };
  return history.length > 0 ? summaryWithinBound(record) : record;
}

/**
 * `record` with its oldest history entries dropped until it encodes within MAX_SUMMARY_BYTES: the
 * history's own bound leaves room for the fixed fields, and this keeps a summary writable whatever
 * they hold (a summary over the bound would never be written, nor trusted).
 */
export function summaryWithinBound(record: SummaryRecord): SummaryRecord {
  let history = record.history ?? [];
  for (;;) {
    const over = utf8ByteLength(encodeRecord('summary', history.length > 0 ? { ...record, history } : { ...record, history: undefined })) - MAX_SUMMARY_BYTES;
    if (over <= 0 || history.length === 0) break;
    let drop = 0;
    for (let freed = 0; drop < history.length && freed < over; drop++) freed += utf8ByteLength(JSON.stringify(history[drop])) + 1;
    history = history.slice(drop);
  }
  const { history: _all, ...rest } = record;
  return history.length > 0 ? { ...rest, history } : rest;
}

/** Whether two summaries say the same (their `writtenAt` aside): an unchanged summary is not written again. */
export function sameSummary(a: SummaryRecord | undefined, b: SummaryRecord | undefined): boolean {
  if (a === undefined || b === undefined) return a === b;
  return encodeRecord('summary', { ...a, writtenAt: 0 }) === encodeRecord('summary', { ...b, writtenAt: 0 });
}

/** The transaction writing `record`: leadership (`guard`, the leader's own compare) → put `summary`. */
export function summaryTxn(prefix: string, guard: Compare, record: SummaryRecord): Txn {
  return { compares: [guard], success: [op.put(summaryKey(prefix), encodeRecord('summary', record, { maxBytes: MAX_SUMMARY_BYTES }))] };
}

/**
 * Decodes a stored summary, refusing one over MAX_SUMMARY_BYTES before it is parsed.
 * @throws SplitfleetError('INVALID_RECORD') naming the key and the bound, or whatever decodeRecord throws.
 */
export function decodeSummary(key: string, raw: string | Uint8Array, fp: string): SummaryRecord {
  const bytes = typeof raw === 'string' ? (raw.length > MAX_SUMMARY_BYTES / 3 ? utf8ByteLength(raw) : raw.length) : raw.length;
  if (bytes > MAX_SUMMARY_BYTES) {
    throw new SplitfleetError('INVALID_RECORD', `summary record at ${key}: ${bytes} bytes, over the summary's limit of ${MAX_SUMMARY_BYTES} (rule: a summary holds counts, never ids)`);
  }
  return decodeRecord('summary', key, raw, fp);
}

/** The summary is the finished job's: of the final plan's generation, the plan carries a verdict, and nothing is queued, waiting or held. */
function finishedBy(summary: SummaryRecord, plan: PlanRecord | undefined): boolean {
  return plan !== undefined && plan.verdict !== undefined && plan.final === true && summary.final && plan.generation === summary.generation
    && summary.queued === 0 && summary.backoff === 0 && summary.held === 0 && summary.revoking === 0;
}

/** Whether a reader may answer from a summary, and if not, why. */
export type SummaryTrust =
  | { trusted: true; ageMs: number }
  | { trusted: false; reason: string };

/**
 * Whether `summary` speaks for the job now: written by the generation the
 * `leader` key names (and the plan carries), so by the leader in office; or,
 * with no leader, the finished job's (`finishedBy`: its fleet stopped on the
 * verdict, and only a retry, which deletes the summary, changes it again).
 * `now` is wall-clock ms; the age is what the reader reports (never a reason
 * to distrust: a quiet job's summary is old and still true).
 */
export function summaryTrust(
  summary: SummaryRecord | undefined, leader: LeaderRecord | undefined, plan: PlanRecord | undefined, now: number,
): SummaryTrust {
  if (summary === undefined) return { trusted: false, reason: 'the job has no summary record (an older build\'s leader, or none yet)' };
  if (leader === undefined) {
    // A finished job's last summary stays true once its fleet has stopped: nothing is left to run, the
    // plan of its generation carries the verdict, and a retry deletes the summary with the first record it changes.
    if (finishedBy(summary, plan)) return { trusted: true, ageMs: Math.max(0, now - summary.writtenAt) };
    return { trusted: false, reason: `no leader: the summary of generation ${summary.generation} may be out of date` };
  }
  if (leader.generation !== summary.generation) {
    return { trusted: false, reason: `the summary is of generation ${summary.generation}, the leader's is ${leader.generation} (not yet rewritten by this leader)` };
  }
  if (plan !== undefined && plan.generation !== summary.generation) {
    return { trusted: false, reason: `the summary is of generation ${summary.generation}, the plan's is ${plan.generation}` };
  }
  return { trusted: true, ageMs: Math.max(0, now - summary.writtenAt) };
}
