/**
 * The state of one job, as an operator wants to read it: who leads, who is a
 * member with what lane budget and load, what each instance is assigned
 * against what it holds, splits by status, revocations in flight, plan
 * finality and progress. Built from the job's records as listed from the
 * store; used by `splitfleet inspect` and by the demo's live view.
 *
 * Invariants:
 * - Pure: records in, a report out. No I/O, no clock.
 * - Never throws on what it reads: a record this build cannot decode (another
 *   schema, another job's fingerprint, broken JSON) becomes a line in
 *   `problems` naming the key, and the rest of the job is still reported.
 * - A packed job's split without a record of its own is what its queue page
 *   says (packed-records.ts): completed when folded back, else queued.
 * - Reports only what the records say; it does not guess intentions. A split
 *   "draining" is held (a live lease key) by an instance whose assignment
 *   record exists and no longer names it: a revocation in flight.
 * - Carries no credentials: it never sees store options.
 */
import { jobVerdict } from '../protocol/completion.js';
import { parseKey } from '../protocol/keys.js';
import { decodeSummary } from '../protocol/summary.js';
import {
  decodeRecord, SCHEMA_VERSION, type AssignRecord, type ControlRecord, type LeaderRecord, type LeaseRecord, type PlanRecord, type RecordKind,
  type ProgressRecord, type SpecRecord, type SplitRecord, type WorkerRecord,
} from '../protocol/records.js';
import { dropPage, emptyQueueRecords, pageName, pagedSplit, putPage, setFolded, splitStatus, usesPages, type QueueRecords } from './packed-records.js';
import type { KeyValue } from '../store/store.js';
import { jsStringOrder } from '../js-order.js';

/** Every decoded record of one job, by kind. */
export interface JobRecords {
  plan: PlanRecord | undefined;
  leader: LeaderRecord | undefined;
  /** The operators' record (pause, evacuations). */
  control: ControlRecord | undefined;
  workers: Map<string, WorkerRecord>;
  specs: Map<string, SpecRecord>;
  splits: Map<string, SplitRecord>;
  /** Committed progress by split (`progress.{id}`): a tool's view; no worker or leader keeps these. */
  progress: Map<string, ProgressRecord>;
  leases: Map<string, LeaseRecord>;
  assigns: Map<string, AssignRecord>;
  /** A packed job's queue pages and folded bits (decision 0037); empty for the `keys` layout. */
  queue: QueueRecords;
  /** Of the leader's summary (decision 0040), what the full report takes from it: its term, and why part of the job cannot move. */
  summary?: { generation: number; stuck: string | undefined } | undefined;
}

/** An empty set of records. */
export function emptyJobRecords(): JobRecords {
  return {
    plan: undefined, leader: undefined, control: undefined, workers: new Map(), specs: new Map(), splits: new Map(), progress: new Map(), leases: new Map(), assigns: new Map(),
    queue: emptyQueueRecords(),
  };
}

/**
 * The fingerprint hash a job's records carry: the plan record's `fp` field,
 * else the first record under the prefix that has one. Undefined when nothing
 * under the prefix carries one (no job there).
 */
export function detectFingerprintHash(prefix: string, kvs: readonly KeyValue[]): string | undefined {
  const fpOf = (kv: KeyValue): string | undefined => {
    try {
      const v = JSON.parse(kv.value) as { fp?: unknown };
      return typeof v?.fp === 'string' ? v.fp : undefined;
    } catch {
      return undefined;
    }
  };
  const plan = kvs.find((kv) => parseKey(prefix, kv.key).kind === 'plan');
  const fromPlan = plan && fpOf(plan);
  if (fromPlan !== undefined) return fromPlan;
  for (const kv of kvs) {
    if (parseKey(prefix, kv.key).kind === 'unknown') continue;
    const fp = fpOf(kv);
    if (fp !== undefined) return fp;
  }
  return undefined;
}

/**
 * Applies one key's current value (or its deletion, with `value` undefined)
 * to `records`. Returns a problem line when the record cannot be decoded (the
 * key is then treated as absent), undefined otherwise. Keys of no known kind
 * are ignored.
 */
export function applyRecord(records: JobRecords, prefix: string, fp: string, key: string, value: string | undefined): string | undefined {
  const parsed = parseKey(prefix, key);
  if (parsed.kind === 'unknown') return undefined;
  const id = 'id' in parsed ? parsed.id : '';
  const page = 'bucket' in parsed ? pageName(parsed.bucket, parsed.page) : '';
  const drop = () => {
    switch (parsed.kind) {
      case 'plan': records.plan = undefined; break;
      case 'leader': records.leader = undefined; break;
      case 'control': records.control = undefined; break;
      case 'worker': records.workers.delete(id); break;
      case 'spec': records.specs.delete(id); break;
      case 'split': records.splits.delete(id); break;
      case 'progress': records.progress.delete(id); break;
      case 'lease': records.leases.delete(id); break;
      case 'assign': records.assigns.delete(id); break;
      case 'queue': dropPage(records.queue, page); break;
      case 'folded': setFolded(records.queue, page, undefined); break;
      case 'summary': records.summary = undefined; break;
    }
  };
  if (value === undefined) {
    drop();
    return undefined;
  }
  try {
    const decode = <K extends RecordKind>(kind: K) => decodeRecord(kind, key, value, fp);
    switch (parsed.kind) {
      case 'plan': records.plan = decode('plan'); break;
      case 'leader': records.leader = decode('leader'); break;
      case 'control': records.control = decode('control'); break;
      case 'worker': records.workers.set(id, decode('worker')); break;
      case 'spec': records.specs.set(id, decode('spec')); break;
      case 'split': records.splits.set(id, decode('split')); break;
      case 'progress': records.progress.set(id, decode('progress')); break;
      case 'lease': records.leases.set(id, decode('lease')); break;
      case 'assign': records.assigns.set(id, decode('assign')); break;
      case 'queue': putPage(records.queue, decode('queue')); break;
      case 'folded': setFolded(records.queue, page, decode('folded')); break;
      case 'summary': {
        const sum = decodeSummary(key, value, fp);
        records.summary = { generation: sum.generation, stuck: sum.stuck };
        break;
      }
    }
    return undefined;
  } catch (e) {
    drop();
    // As the leader holds it (fail safe, decision 0026): an unreadable control record is a pause.
    if (parsed.kind === 'control') records.control = { v: SCHEMA_VERSION, fp, paused: true, evacuated: [] };
    const code = (e as { code?: string }).code;
    return `${key}: ${code !== undefined ? `${code}: ` : ''}${(e as Error).message}`;
  }
}

/** Decodes a listing of a job's prefix. `fp` defaults to {@link detectFingerprintHash}. */
export function readJobRecords(
  prefix: string, kvs: readonly KeyValue[], fp?: string,
): { records: JobRecords; fp: string | undefined; problems: string[] } {
  const records = emptyJobRecords();
  const hash = fp ?? detectFingerprintHash(prefix, kvs);
  const problems: string[] = [];
  if (hash === undefined) return { records, fp: undefined, problems };
  for (const kv of kvs) {
    const problem = applyRecord(records, prefix, hash, kv.key, kv.value);
    if (problem !== undefined) problems.push(problem);
  }
  return { records, fp: hash, problems };
}

/** Where a split stands. */
export type SplitState = 'queued' | 'running' | 'draining' | 'completed' | 'quarantined';

export interface MemberReport {
  instance: string;
  /** A presence key exists (the process is alive, as far as its lease says). */
  live: boolean;
  leader: boolean;
  /** Lane budget advertised on the presence key; null when not live. */
  maxInFlight: number | null;
  /** Split ids in its assignment record, sorted; null when it has no record. */
  assigned: string[] | null;
  /** Generation of the leader that wrote its assignment record. */
  assignmentGeneration: number | null;
  /** Split ids whose live lease key it owns (what it holds), sorted. */
  held: string[];
  /**
   * Assigned, not held: claims it should make (waiting, perhaps, for the previous owner to let go).
   * For a departed instance: splits withheld for it while the rebalance delay runs.
   */
  claiming: string[];
  /** Held, no longer assigned: revocations in flight (it is draining them). */
  revoking: string[];
  /** Sum of the weights of the splits it holds. */
  load: number;
  /** Sum of the weights of the splits it is assigned. */
  assignedLoad: number;
}

export interface RevocationReport {
  id: string;
  weight: number;
  /** The instance holding it (and draining it). */
  holder: string;
  /** The instance whose assignment names it now, if any. */
  assignedTo: string | null;
}

export interface JobReport {
  root: string;
  job: string;
  prefix: string;
  /** The store revision the records were read at. */
  revision: number;
  /** The fingerprint hash the records were decoded against; null when nothing is stored. */
  fingerprintHash: string | null;
  /** Anything is stored under the prefix. */
  exists: boolean;
  leader: { instance: string; generation: number; live: boolean } | null;
  /** `seeded`: the splits its records (specs, or a packed job's pages) hold. `layout`: present for a packed job only. */
  plan: { generation: number; final: boolean; planned: number; seeded: number; layout?: 'packed'; buckets?: number } | null;
  /** Live members and departed instances that still have an assignment record or hold a lease. */
  members: MemberReport[];
  splits: Record<SplitState, number> & { total: number };
  progress: {
    completed: number;
    /** The plan's count when there is a plan, else the splits seen. */
    planned: number;
    completedWeight: number;
    totalWeight: number;
    /** Completed weight over total weight (1 when there is none). */
    fraction: number;
    /** A final plan whose every split is terminal: 'complete', or 'stalled' if any is quarantined. */
    verdict: 'complete' | 'stalled' | null;
  };
  revocations: RevocationReport[];
  quarantined: { id: string; attempts: number; reason: string | null }[];
  /**
   * Failed splits waiting out their backoff (queued, `notBefore` after the report's `now`),
   * soonest first: `retryAt` epoch ms, `inMs` from the report's `now`. Empty without a `now`.
   */
  retrying: { id: string; attempts: number; reason: string | null; retryAt: number; inMs: number }[];
  /** The leader publishes empty assignments (`splitfleet pause`): lanes drain, nothing is claimed. */
  paused: boolean;
  /**
   * Evacuated instances (`splitfleet evacuate`). `inForce` is false once the instance has restarted
   * (another run) or left: the entry is kept until the next operator action but no longer holds it.
   */
  evacuated: { instance: string; inForce: boolean }[];
  /**
   * Why part of the job cannot move while the rest does, in the leader's words (its health reason,
   * from its summary of the current term; issue 49); null when all of it can, or no such summary.
   */
  stuck: string | null;
  /** Records that could not be decoded, one line each, naming the key. */
  problems: string[];
  /**
   * Where `inspect` read it from, when it chose (summary-read.ts): every record, and why the
   * leader's summary could not answer. Absent for a report built by other callers.
   */
  source?: { kind: 'records'; reason: string };
}

export interface ReportInfo {
  root: string;
  job: string;
  prefix: string;
  revision: number;
  fingerprintHash: string | undefined;
  problems?: readonly string[];
  /** Epoch ms, against the failed splits' `notBefore` ("retrying in …"); absent, none is listed. */
  now?: number;
}

/** The state of one split in `records` (a packed split without a record: completed if folded, else queued). */
export function splitState(records: JobRecords, id: string): SplitState {
  const rec = records.splits.get(id);
  if (rec?.status === 'completed') return 'completed';
  if (rec?.status === 'quarantined') return 'quarantined';
  if (rec === undefined && splitStatus(records, id) === 'completed') return 'completed';
  const lease = records.leases.get(id);
  if (!lease) return 'queued';
  const assigned = records.assigns.get(lease.owner)?.splits;
  return assigned !== undefined && !assigned.includes(id) ? 'draining' : 'running';
}

/** Every instance that is live, has an assignment record or holds a lease, with what it holds and is assigned. */
function memberReports(records: JobRecords, weightOf: (id: string) => number): MemberReport[] {
  const heldBy = new Map<string, string[]>();
  for (const [id, lease] of records.leases) {
    const list = heldBy.get(lease.owner) ?? [];
    list.push(id);
    heldBy.set(lease.owner, list);
  }
  const instances = new Set<string>([...records.workers.keys(), ...records.assigns.keys(), ...heldBy.keys()]);
  return [...instances].sort().map((instance) => {
    const worker = records.workers.get(instance);
    const assign = records.assigns.get(instance);
    const held = (heldBy.get(instance) ?? []).sort();
    const heldSet = new Set(held);
    const assigned = assign ? [...assign.splits] : null;
    const assignedSet = new Set(assigned ?? []);
    const runnable = (id: string) => records.splits.get(id)?.status !== 'completed' && records.splits.get(id)?.status !== 'quarantined';
    return {
      instance,
      live: worker !== undefined,
      leader: records.leader?.instance === instance,
      maxInFlight: worker?.maxInFlight ?? null,
      assigned,
      assignmentGeneration: assign?.generation ?? null,
      held,
      claiming: (assigned ?? []).filter((id) => !heldSet.has(id) && runnable(id)),
      revoking: assigned === null ? [] : held.filter((id) => !assignedSet.has(id)),
      load: held.reduce((s, id) => s + weightOf(id), 0),
      assignedLoad: (assigned ?? []).reduce((s, id) => s + weightOf(id), 0),
    };
  });
}

/** A split's weight: its spec's, else (a packed job) its page's, which holds every split's (a spec is a copy made on promotion). */
function weights(records: JobRecords, paged: boolean): (id: string) => number {
  return (id) => records.specs.get(id)?.weight ?? (paged ? pagedSplit(records.queue, id)?.weight : undefined) ?? 0;
}

/** The listing's problems, and a `keys` job's stray queue pages (not counted: not its layout). */
function reportProblems(records: JobRecords, paged: boolean, info: ReportInfo): string[] {
  const problems = [...(info.problems ?? [])];
  if (!paged && records.queue.pages.size > 0) {
    problems.push(`${records.queue.pages.size} queue page(s) under a job whose plan is not packed: not counted (a job's layout is fixed by its plan record, decision 0037)`);
  }
  return problems;
}

/** Builds the report. Pure and total. */
export function jobReport(records: JobRecords, info: ReportInfo): JobReport {
  const paged = usesPages(records);
  const weightOf = weights(records, paged);
  const assignedTo = new Map<string, string>();
  for (const [instance, rec] of records.assigns) for (const id of rec.splits) assignedTo.set(id, instance);
  const members = memberReports(records, weightOf);

  const counts: Record<SplitState, number> & { total: number } = {
    queued: 0, running: 0, draining: 0, completed: 0, quarantined: 0, total: 0,
  };
  let completedWeight = 0;
  let totalWeight = 0;
  const revocations: RevocationReport[] = [];
  const quarantined: JobReport['quarantined'] = [];
  const retrying: JobReport['retrying'] = [];
  const ids = [...new Set([...records.splits.keys(), ...records.specs.keys(), ...(paged ? records.queue.slots.keys() : [])])].sort();
  for (const id of ids) {
    const state = splitState(records, id);
    counts[state]++;
    counts.total++;
    const w = weightOf(id);
    totalWeight += w;
    if (state === 'completed') completedWeight += w;
    if (state === 'draining') {
      revocations.push({ id, weight: w, holder: records.leases.get(id)!.owner, assignedTo: assignedTo.get(id) ?? null });
    }
    if (state === 'quarantined') {
      const rec = records.splits.get(id)!;
      quarantined.push({ id, attempts: rec.attempts, reason: rec.reason ?? null });
    }
    const rec = records.splits.get(id);
    if (state === 'queued' && info.now !== undefined && rec?.notBefore !== undefined && rec.notBefore > info.now) {
      retrying.push({ id, attempts: rec.attempts, reason: rec.reason ?? null, retryAt: rec.notBefore, inMs: rec.notBefore - info.now });
    }
  }
  retrying.sort((a, b) => a.retryAt - b.retryAt || jsStringOrder(a.id, b.id));

  const plan = records.plan;
  const planned = plan ? plan.planned : counts.total;
  const terminal = counts.completed + counts.quarantined;
  // The leader's word when it has written it; else what the records add up to (a job whose leader
  // is gone), by the leader's own rule.
  const verdict = plan?.verdict
    ?? jobVerdict(plan, { counts: { runnable: counts.total - terminal, completed: counts.completed, quarantined: counts.quarantined }, parked: [] })
    ?? null;
  const problems = reportProblems(records, paged, info);
  const exists = plan !== undefined || records.leader !== undefined || members.length > 0 || ids.length > 0
    || problems.length > 0;

  return {
    root: info.root,
    job: info.job,
    prefix: info.prefix,
    revision: info.revision,
    fingerprintHash: info.fingerprintHash ?? null,
    exists,
    leader: records.leader
      ? { instance: records.leader.instance, generation: records.leader.generation, live: records.workers.has(records.leader.instance) }
      : null,
    plan: plan ? planReport(plan, paged ? records.queue.slots.size : records.specs.size) : null,
    members,
    splits: counts,
    progress: {
      completed: counts.completed,
      planned,
      completedWeight,
      totalWeight,
      fraction: totalWeight > 0 ? completedWeight / totalWeight : (counts.total > 0 && terminal === counts.total ? 1 : 0),
      verdict,
    },
    revocations,
    quarantined,
    retrying,
    paused: records.control?.paused ?? false,
    evacuated: (records.control?.evacuated ?? []).map((e) => ({ instance: e.instance, inForce: records.workers.get(e.instance)?.nonce === e.nonce })),
    // The leader's own words, only from a summary of the term the leader key names (an older one may be stale).
    stuck: records.summary !== undefined && records.summary.generation === records.leader?.generation ? records.summary.stuck ?? null : null,
    problems,
  };
}

/** The report's plan line: a packed plan says so, with its bucket count (absent until its first splits are seeded). */
export function planReport(plan: PlanRecord, seeded: number): NonNullable<JobReport['plan']> {
  const layout = plan.layout === 'packed' ? { layout: 'packed' as const, ...(plan.buckets !== undefined ? { buckets: plan.buckets } : {}) } : {};
  return { generation: plan.generation, final: plan.final, planned: plan.planned, seeded, ...layout };
}
