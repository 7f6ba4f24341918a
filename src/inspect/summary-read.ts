/**
 * `inspect` at scale (decision 0040): reads a job's singletons and members
 * (`plan`, `leader`, `control`, `summary`, `worker.*`: a few keys and one per
 * member, whatever the split count) and answers from the leader's summary
 * when it speaks for the job now (written by the generation in office,
 * protocol/summary.ts `summaryTrust`). Otherwise (an older build's job, no
 * leader, a summary of a previous term or unreadable) it reads every record,
 * as `inspect` always did, and says why. Either way the result names its
 * source.
 *
 * Invariants:
 * - Read-only; every listing is the job's scope (decision 0027), at one revision.
 * - Never throws on what it reads: an unreadable record is a problem line.
 * - Per-split listings are split-read.ts's (paged); nothing here lists splits
 *   when the summary is trusted.
 */
import { jobPrefix, parseKey, type KeyKind } from '../protocol/keys.js';
import { decodeRecord, SCHEMA_VERSION, type ControlRecord, type LeaderRecord, type PlanRecord, type SummaryRecord, type WorkerRecord } from '../protocol/records.js';
import { inJobScope, jobKeyRanges } from '../protocol/scope.js';
import { appendHistory, historyEntry, readHistory, type HistoryEntry } from '../protocol/job-history.js';
import { decodeSummary, summaryTrust } from '../protocol/summary.js';
import type { KeyValue, Store } from '../store/store.js';
import { detectFingerprintHash, jobReport, planReport, readJobRecords, type JobReport } from './report.js';
import { jsStringOrder } from '../js-order.js';

/** Keys per page of a listing. */
const PAGE = 1000;
/** Keys per page of a packed job's `queue.*` range: a page record may be near a store request's size (decision 0037). */
const QUEUE_PAGE = 8;

/**
 * Below this many splits (as the summary counts them) every record is read anyway: it takes
 * well under the 2 s the summary is for, and gives the per-instance view (assignment vs holdings,
 * the split lists) that a summary cannot.
 */
export const SUMMARY_ABOVE_SPLITS = 10_000;

/** The kinds a summary answer reads: the singletons and the members' presence keys. */
export const SUMMARY_KINDS: readonly KeyKind[] = ['plan', 'leader', 'control', 'summary', 'worker'];

/** A job as its leader's summary tells it (`inspect` without `--splits`/`--split`, when the summary is trusted). */
export interface SummaryReport {
  source: 'summary';
  root: string;
  job: string;
  prefix: string;
  /** The store revision the keys were read at. */
  revision: number;
  fingerprintHash: string;
  exists: true;
  /** The summary itself: which generation wrote it, when (wall ms), and how old it was when read. */
  summary: { generation: number; writtenAt: number; ageMs: number };
  /** Null for a finished job whose fleet has stopped (its summary is still trusted: `summaryTrust`). */
  leader: { instance: string; generation: number; live: boolean } | null;
  plan: JobReport['plan'];
  /** Live members (presence keys), by instance, with their lane budgets. */
  members: { instance: string; leader: boolean; maxInFlight: number }[];
  /** Splits by state. `backoff`: queued, waiting out a failure's backoff; `revoking`: held, no longer assigned (in flight). */
  splits: { queued: number; backoff: number; held: number; revoking: number; completed: number; quarantined: number; parked: number; total: number; residuals: number };
  /** Summed weights by state. */
  weights: { queued: number; backoff: number; held: number; completed: number; quarantined: number; total: number };
  /** Lanes the summary counted over its members (sum of `maxInFlight`). */
  lanes: { members: number; total: number };
  progress: { completed: number; planned: number; completedWeight: number; totalWeight: number; fraction: number; verdict: 'complete' | 'stalled' | null };
  paused: boolean;
  evacuated: { instance: string; inForce: boolean }[];
  /** Why part of the job cannot move while the rest does, as the leader said it (null: all of it can). */
  stuck: string | null;
  problems: string[];
}

/** What `readJobReport` answered from: the summary, or every record (with why). */
export type InspectResult =
  | { source: 'summary'; report: SummaryReport }
  | { source: 'records'; report: JobReport; reason: string };

/** Which job `readJobReport` reads, and when it may answer from the leader's summary. */
export interface ReadJobReportOptions {
  store: Store;
  job: string;
  root?: string;
  /** Wall-clock ms (default Date.now()): the summary's age, and the failed splits' backoffs. */
  now?: number;
  /** Read every record even when a summary is trusted (default false). */
  full?: boolean;
  /** Answer from a trusted summary only when it counts more splits than this (default SUMMARY_ABOVE_SPLITS). */
  summaryAbove?: number;
}

/** Lists the job's keys of `kinds` (default every kind) page by page at one revision. */
export async function listScope(store: Store, prefix: string, kinds?: Iterable<KeyKind>): Promise<{ kvs: KeyValue[]; revision: number }> {
  const kvs: KeyValue[] = [];
  let revision: number | undefined;
  for (const range of jobKeyRanges(prefix, kinds)) {
    let startAfter: string | undefined;
    for (;;) {
      const page = await store.list(prefix, {
        limit: range.kind === 'queue' ? QUEUE_PAGE : PAGE, rangeStart: range.rangeStart, rangeEnd: range.rangeEnd,
        ...(startAfter !== undefined ? { startAfter } : {}), ...(revision !== undefined ? { revision } : {}),
      });
      revision ??= page.revision;
      for (const kv of page.kvs) if (inJobScope(prefix, kv.key)) kvs.push(kv);
      if (!page.more || page.kvs.length === 0) break;
      startAfter = page.kvs[page.kvs.length - 1]!.key;
    }
  }
  return { kvs, revision: revision ?? (await store.list(prefix, { limit: 1 })).revision };
}

/** The job's state for `inspect`: from the leader's summary when it is trusted, else from every record. */
export async function readJobReport(options: ReadJobReportOptions): Promise<InspectResult> {
  const root = options.root ?? 'splitfleet';
  const prefix = jobPrefix(root, options.job);
  const now = options.now ?? Date.now();
  let reason = 'asked for every record';
  if (options.full !== true) {
    const { kvs, revision } = await listScope(options.store, prefix, SUMMARY_KINDS);
    const answer = fromSummary(kvs, { root, job: options.job, prefix, revision, now });
    const above = options.summaryAbove ?? SUMMARY_ABOVE_SPLITS;
    if (answer.report && answer.report.splits.total > above) return { source: 'summary', report: answer.report };
    reason = answer.report ? `${answer.report.splits.total} splits, not above ${above}: small enough to read whole` : answer.reason;
  }
  const report = await readFullReport({ ...options, now });
  return { source: 'records', report: { ...report, source: { kind: 'records', reason } }, reason };
}

/** The job's state from every record of its scope, as `inspect` read it before summaries (no `source`). */
export async function readFullReport(options: Omit<ReadJobReportOptions, 'full'>): Promise<JobReport> {
  const root = options.root ?? 'splitfleet';
  const prefix = jobPrefix(root, options.job);
  const { kvs, revision } = await listScope(options.store, prefix);
  const { records, fp, problems } = readJobRecords(prefix, kvs);
  return jobReport(records, { root, job: options.job, prefix, revision, fingerprintHash: fp, problems, now: options.now ?? Date.now() });
}

interface Where { root: string; job: string; prefix: string; revision: number; now: number }

/** Decoded singletons and members of one listing. */
interface Singletons {
  plan?: PlanRecord; leader?: LeaderRecord; control?: ControlRecord; summary?: SummaryRecord;
  workers: Map<string, WorkerRecord>; problems: string[];
}

function decodeSingletons(prefix: string, fp: string, kvs: readonly KeyValue[]): Singletons {
  const out: Singletons = { workers: new Map(), problems: [] };
  for (const kv of kvs) {
    const parsed = parseKey(prefix, kv.key);
    try {
      switch (parsed.kind) {
        case 'plan': out.plan = decodeRecord('plan', kv.key, kv.value, fp); break;
        case 'leader': out.leader = decodeRecord('leader', kv.key, kv.value, fp); break;
        case 'control': out.control = decodeRecord('control', kv.key, kv.value, fp); break;
        case 'summary': out.summary = decodeSummary(kv.key, kv.value, fp); break;
        case 'worker': out.workers.set(parsed.id, decodeRecord('worker', kv.key, kv.value, fp)); break;
        default: break;
      }
    } catch (e) {
      const code = (e as { code?: string }).code;
      out.problems.push(`${kv.key}: ${code !== undefined ? `${code}: ` : ''}${(e as Error).message}`);
      // As the leader holds it (fail safe, decision 0026): an unreadable control record is a pause.
      if (parsed.kind === 'control') out.control = { v: SCHEMA_VERSION, fp, paused: true, evacuated: [] };
    }
  }
  return out;
}

/** The summary report, or why the summary cannot answer. Pure. */
export function fromSummary(kvs: readonly KeyValue[], where: Where): { report: SummaryReport; reason?: undefined } | { report?: undefined; reason: string } {
  const fp = detectFingerprintHash(where.prefix, kvs);
  if (fp === undefined) return { reason: 'nothing of the job carries a fingerprint (no such job, or no plan yet)' };
  const s = decodeSingletons(where.prefix, fp, kvs);
  const unreadable = s.problems.find((p) => p.startsWith(`${where.prefix}summary:`) || p.startsWith(`${where.prefix}plan:`) || p.startsWith(`${where.prefix}leader:`));
  if (unreadable !== undefined) return { reason: `a record the summary answer needs cannot be read (${unreadable})` };
  const trust = summaryTrust(s.summary, s.leader, s.plan, where.now);
  if (!trust.trusted) return { reason: trust.reason };
  const sum = s.summary!;
  const leader = s.leader;
  const total = sum.queued + sum.backoff + sum.held + sum.completed + sum.quarantined;
  const totalWeight = sum.queuedWeight + sum.backoffWeight + sum.heldWeight + sum.completedWeight + sum.quarantinedWeight;
  const plan = s.plan;
  return {
    report: {
      source: 'summary',
      root: where.root, job: where.job, prefix: where.prefix, revision: where.revision, fingerprintHash: fp, exists: true,
      summary: { generation: sum.generation, writtenAt: sum.writtenAt, ageMs: trust.ageMs },
      leader: leader ? { instance: leader.instance, generation: leader.generation, live: s.workers.has(leader.instance) } : null,
      plan: plan ? planReport(plan, sum.seeded) : null,
      members: [...s.workers.values()].sort((a, b) => jsStringOrder(a.instance, b.instance))
        .map((w) => ({ instance: w.instance, leader: w.instance === leader?.instance, maxInFlight: w.maxInFlight })),
      splits: {
        queued: sum.queued, backoff: sum.backoff, held: sum.held, revoking: sum.revoking,
        completed: sum.completed, quarantined: sum.quarantined, parked: sum.parked, total, residuals: sum.residuals ?? 0,
      },
      weights: {
        queued: sum.queuedWeight, backoff: sum.backoffWeight, held: sum.heldWeight,
        completed: sum.completedWeight, quarantined: sum.quarantinedWeight, total: totalWeight,
      },
      lanes: { members: sum.members, total: sum.lanes },
      progress: {
        completed: sum.completed, planned: plan?.planned ?? total, completedWeight: sum.completedWeight, totalWeight,
        fraction: totalWeight > 0 ? sum.completedWeight / totalWeight : (total > 0 && sum.completed + sum.quarantined === total ? 1 : 0),
        verdict: plan?.verdict ?? null,
      },
      paused: s.control?.paused ?? false,
      evacuated: (s.control?.evacuated ?? []).map((e) => ({ instance: e.instance, inForce: s.workers.get(e.instance)?.nonce === e.nonce })),
      stuck: sum.stuck ?? null,
      problems: s.problems,
    },
  };
}

/**
 * The leader's event history as the job's singletons carry it (decision 0070), trusted or not (a
 * past event stays true when the summary's counts are stale): the summary's `history`, and the
 * plan's verdict when the history does not end on it (the fleet may stop before the leader writes
 * the summary after its verdict; it is dated by the last summary, else `now`). None when nothing
 * can be read. Pure.
 */
export function summaryHistory(prefix: string, kvs: readonly KeyValue[], now: number): HistoryEntry[] {
  const fp = detectFingerprintHash(prefix, kvs);
  if (fp === undefined) return [];
  const s = decodeSingletons(prefix, fp, kvs);
  const history = readHistory(s.summary?.history);
  const verdict = s.plan?.verdict;
  const planKv = kvs.find((kv) => parseKey(prefix, kv.key).kind === 'plan');
  const told = [...history].reverse().find((e) => e.kind === 'verdict');
  if (verdict === undefined || planKv === undefined || (told?.kind === 'verdict' && told.verdict === verdict)) return history;
  return appendHistory(history, [historyEntry({ kind: 'verdict', verdict }, planKv.modRevision, s.summary?.writtenAt ?? now)]);
}
