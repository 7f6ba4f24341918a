/**
 * listJobs: the jobs under a root (`splitfleet jobs`), each with its verdict,
 * progress and members. Jobs are found by skipping from one job's prefix to
 * the next (one small read per job, not a listing of every key). Each job's
 * counts come from its leader's summary when that speaks for the job now
 * (written by the generation in office: protocol/summary.ts, decision 0040);
 * otherwise (an older build's job, no leader) its split records are counted
 * page by page (a packed job's queue pages and folded bits too:
 * packed-read.ts), and the summary says which it was.
 */
import { SplitfleetError } from '../errors.js';
import { leaderKey, planKey, summaryKey } from '../protocol/keys.js';
import { decodeRecord, type LeaderRecord, type PlanRecord, type SummaryRecord } from '../protocol/records.js';
import { decodeSummary, summaryTrust } from '../protocol/summary.js';
import type { Store } from '../store/store.js';
import { checkJobNames, recordField } from './job.js';
import { liveMembers } from './control.js';
import { countPackedSplits } from './packed-read.js';
import { jobKeyPages } from './scope.js';

/** One job under a root, as `splitfleet jobs` lists it. */
export interface JobSummary {
  job: string;
  /** The plan record; null when the prefix has keys but no (readable) plan. `layout`: present for a packed job only. */
  plan: { final: boolean; planned: number; generation: number; layout?: 'packed' } | null;
  verdict: 'complete' | 'stalled' | null;
  paused: boolean;
  leader: string | null;
  members: string[];
  splits: { runnable: number; completed: number; quarantined: number; total: number };
  /** A problem reading the job (its plan record, say), or null. */
  problem: string | null;
  /**
   * Where the counts came from: the leader's summary (`ageMs` old when read), or every split
   * record (`reason`: why the summary could not answer), a packed job's queue pages and folded bits
   * included. Null when the plan record cannot be read.
   */
  source: { kind: 'summary'; generation: number; ageMs: number } | { kind: 'records'; reason: string } | null;
}

/**
 * Lists the jobs under `root` (default `splitfleet`), each with its verdict,
 * split counts by status, live members and leader. Read-only.
 */
export async function listJobs(options: { store: Store; root?: string; now?: number }): Promise<JobSummary[]> {
  const root = options.root ?? 'splitfleet';
  checkJobNames('x', root);
  const base = `${root}/`;
  const out: JobSummary[] = [];
  let from: string | undefined;
  for (;;) {
    const page = await options.store.list(base, { limit: 1, ...(from !== undefined ? { rangeStart: from } : {}) });
    const kv = page.kvs[0];
    if (!kv) return out;
    const rest = kv.key.slice(base.length);
    const slash = rest.indexOf('/');
    if (slash <= 0) {
      from = `${kv.key}\0`; // a key directly under the root: no job
      continue;
    }
    const job = rest.slice(0, slash);
    // The next job's keys start after `<root>/<job>/…`: '0' is the character after '/'.
    from = `${base}${job}0`;
    try {
      checkJobNames(job, root);
    } catch {
      continue; // not a name a job can have: not ours
    }
    out.push(await summarise(options.store, base, job, options.now ?? Date.now()));
  }
}

async function summarise(store: Store, base: string, job: string, now: number): Promise<JobSummary> {
  const prefix = `${base}${job}/`;
  const summary: JobSummary = {
    job, plan: null, verdict: null, paused: false, leader: null, members: [],
    splits: { runnable: 0, completed: 0, quarantined: 0, total: 0 }, problem: null, source: null,
  };
  const planKv = await store.get(planKey(prefix));
  let fp: string | undefined;
  let plan: PlanRecord | undefined;
  try {
    if (!planKv) throw new SplitfleetError('INVALID_INPUT', 'no plan record (a job that never planned, or a partial delete)');
    const field = recordField(planKv.value, 'fp');
    fp = typeof field === 'string' ? field : undefined;
    plan = decodeRecord('plan', planKv.key, planKv.value, fp ?? '');
  } catch (e) {
    summary.problem = (e as Error).message;
    return summary;
  }
  summary.plan = { final: plan.final, planned: plan.planned, generation: plan.generation, ...(plan.layout === 'packed' ? { layout: 'packed' as const } : {}) };
  summary.verdict = plan.verdict ?? null;
  const found = { job, root: base.slice(0, -1), prefix, fp: plan.fp, plan, planKv };
  summary.members = [...(await liveMembers(store, found)).keys()].sort();
  const fieldOf = async (key: string, field: string) => {
    const kv = await store.get(key);
    return kv ? recordField(kv.value, field) : undefined;
  };
  const leader = await fieldOf(`${prefix}leader`, 'instance');
  summary.leader = typeof leader === 'string' ? leader : null;
  summary.paused = (await fieldOf(`${prefix}control`, 'paused')) === true;
  const fromSummary = await leaderSummary(store, prefix, plan, now);
  if (fromSummary.record) {
    const r = fromSummary.record;
    const runnable = r.queued + r.backoff + r.held;
    summary.splits = { runnable, completed: r.completed, quarantined: r.quarantined, total: runnable + r.completed + r.quarantined };
    summary.source = { kind: 'summary', generation: r.generation, ageMs: fromSummary.ageMs };
    return summary;
  }
  summary.source = { kind: 'records', reason: fromSummary.reason };
  if (plan.layout === 'packed') {
    const { problems, ...counts } = await countPackedSplits(store, prefix, plan.fp);
    summary.splits = counts;
    // A page that cannot be read leaves its splits uncounted: the counts are short, and say so.
    if (problems.length > 0) summary.problem = `${problems.length} record(s) cannot be read, so the counts are incomplete: ${problems[0]}`;
    return summary;
  }
  for await (const page of jobKeyPages(store, prefix, ['split'])) {
    for (const kv of page) {
      const status = recordField(kv.value, 'status'); // unreadable: counted in the total only (`inspect` names it)
      summary.splits.total++;
      if (status === 'runnable' || status === 'completed' || status === 'quarantined') summary.splits[status]++;
    }
  }
  return summary;
}

/** The job's summary record when it speaks for the job now (summaryTrust), else why not. */
async function leaderSummary(
  store: Store, prefix: string, plan: PlanRecord, now: number,
): Promise<{ record: SummaryRecord; ageMs: number; reason?: undefined } | { record?: undefined; reason: string }> {
  const [summaryKv, leaderKv] = await Promise.all([store.get(summaryKey(prefix)), store.get(leaderKey(prefix))]);
  let record: SummaryRecord | undefined;
  let leader: LeaderRecord | undefined;
  try {
    record = summaryKv ? decodeSummary(summaryKv.key, summaryKv.value, plan.fp) : undefined;
    leader = leaderKv ? decodeRecord('leader', leaderKv.key, leaderKv.value, plan.fp) : undefined;
  } catch (e) {
    return { reason: `unreadable: ${(e as Error).message}` };
  }
  const trust = summaryTrust(record, leader, plan, now);
  return trust.trusted ? { record: record!, ageMs: trust.ageMs } : { reason: trust.reason };
}
