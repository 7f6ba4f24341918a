/**
 * retrySplits: returns quarantined splits to runnable with their attempts
 * reset (`splitfleet retry`). Each batch is one transaction guarded by every
 * split record's revision as read, so a split that changed meanwhile is read
 * again, never overwritten. Each batch also compares and rewrites the plan
 * record, clearing a `stalled` verdict in the same transaction, so a verdict
 * decided before the retry cannot land after it (decision 0058): while a
 * fleet runs, its leader assigns the splits at once; a fleet that had
 * stopped on the verdict is started again. The transactions are built by
 * protocol/operator-txns.ts (`retryTxn`, `clearVerdictTxn`).
 *
 * A packed job (decision 0037) needs nothing else: a quarantined split always
 * keeps its own record (it is never folded back). A named split with no
 * record is refused as what its queue page says it is (queued, or completed
 * and folded back), found from its id alone (packed-read.ts).
 */
import { SplitfleetError } from '../errors.js';
import { idProblem, isValidId, planKey, splitKey } from '../protocol/keys.js';
import { isRetryableWait } from '../protocol/claims.js';
import { clearVerdictTxn, retryTxn } from '../protocol/operator-txns.js';
import { decodeRecord, type PlanRecord, type SplitRecord } from '../protocol/records.js';
import type { KeyValue, Store } from '../store/store.js';
import { ACTION_ATTEMPTS, contended, findJob, type FoundJob, type JobTarget } from './job.js';
import { pagedState } from './packed-read.js';
import { jobKeyPages } from './scope.js';

/** Which splits `retrySplits` returns to runnable: named ones, or every quarantined one. */
export interface RetryOptions extends JobTarget {
  /** These splits (each must be quarantined, or runnable and waiting out a failure's backoff). */
  splits?: string[];
  /** Every quarantined split of the job. */
  allQuarantined?: boolean;
}

/** What `retrySplits` did. */
export interface RetryResult {
  /** Split ids returned to runnable, sorted. */
  retried: string[];
  /** The plan's `stalled` verdict was cleared: a fleet that had stopped on it must be started again. */
  verdictCleared: boolean;
}

/**
 * Returns quarantined splits to runnable with their attempts reset, then
 * clears a `stalled` verdict. Refuses (INVALID_INPUT) a split that is not
 * quarantined or does not exist, before writing anything.
 */
export async function retrySplits(options: RetryOptions): Promise<RetryResult> {
  const { job, targets: first } = await retryTargets(options);
  const { store } = options;
  let targets = first;
  const retried: string[] = [];
  let verdictCleared = false;
  // Compares and ops are limited per branch: a split costs one of each, the summary's delete and the plan's put one op each (retryTxn).
  const perTxn = store.limits.maxOpsPerTxn - 2;
  for (let attempt = 0; targets.length > 0; attempt++) {
    if (attempt >= ACTION_ATTEMPTS) throw contended('retrying quarantined splits');
    const lost: string[] = [];
    for (let i = 0; i < targets.length; i += perTxn) {
      const batch = targets.slice(i, i + perTxn);
      // The plan as it is now: each batch rewrites it, so a verdict decided before it cannot land after it.
      const plan = await readPlan(store, job);
      const res = await store.txn(retryTxn(job.prefix, batch.map((t) => ({ rec: t.rec, modRevision: t.kv.modRevision })), plan));
      if (res.won) {
        retried.push(...batch.map((t) => t.rec.id));
        if (plan.rec.verdict === 'stalled') verdictCleared = true;
      } else lost.push(...batch.map((t) => t.rec.id));
    }
    // A batch lost: one of its splits changed. Read them again; those still quarantined (or waiting) are retried.
    targets = lost.length === 0 ? [] : (await Promise.all(lost.map((id) => readSplit(store, job, id))))
      .filter((t): t is Target => t !== undefined && (t.rec.status === 'quarantined' || isRetryableWait(t.rec)));
  }
  // Nothing to retry, but a stalled verdict (a second retry after the first's splits ran and quarantined again, say).
  if (retried.length === 0 && job.plan.verdict === 'stalled') verdictCleared = await clearStalled(store, job);
  return { retried: retried.sort(), verdictCleared };
}

/** The plan record as it is now, with its revision; a job whose plan went meanwhile is refused. */
async function readPlan(store: Store, job: FoundJob): Promise<{ rec: PlanRecord; modRevision: number }> {
  const kv = await store.get(planKey(job.prefix));
  if (!kv) throw new SplitfleetError('INVALID_INPUT', `job "${job.job}": its plan record is gone (deleted meanwhile?); nothing was retried in this batch`);
  return { rec: decodeRecord('plan', kv.key, kv.value, job.fp), modRevision: kv.modRevision };
}

/** What `retrySplits` would do (`splitfleet retry --dry-run`); nothing is written. */
export interface RetryPreview {
  /** The quarantined splits that would be runnable again, sorted. */
  wouldRetry: string[];
  /** The plan's `stalled` verdict would be cleared. */
  verdictWouldClear: boolean;
}

/** Lists the splits `retrySplits` would retry, refusing what it would refuse, without writing. */
export async function previewRetry(options: RetryOptions): Promise<RetryPreview> {
  const { job, targets } = await retryTargets(options);
  return { wouldRetry: targets.map((t) => t.rec.id).sort(), verdictWouldClear: targets.length > 0 || job.plan.verdict === 'stalled' };
}

/** Checks the options and reads the splits to retry (every named one quarantined). */
async function retryTargets(options: RetryOptions): Promise<{ job: FoundJob; targets: Target[] }> {
  const given = options.splits ?? [];
  if ((given.length > 0) === (options.allQuarantined === true)) {
    throw new SplitfleetError('INVALID_INPUT', 'split: name the splits to retry (--split ID…) or pass --all-quarantined, not both and not neither');
  }
  const seen = new Set<string>();
  for (const id of given) {
    if (!isValidId(id)) throw new SplitfleetError('INVALID_INPUT', `split ${JSON.stringify(id)}: ${idProblem(id)}`);
    if (seen.has(id)) throw new SplitfleetError('INVALID_INPUT', `split "${id}": named twice`);
    seen.add(id);
  }
  const job = await findJob(options);
  const targets = options.allQuarantined ? await quarantined(options.store, job) : await named(options.store, job, given);
  return { job, targets };
}

interface Target { kv: KeyValue; rec: SplitRecord }

async function readSplit(store: Store, job: FoundJob, id: string): Promise<Target | undefined> {
  const kv = await store.get(splitKey(job.prefix, id));
  return kv ? { kv, rec: decodeRecord('split', kv.key, kv.value, job.fp) } : undefined;
}

/** The named splits, every one checked before anything is written. */
async function named(store: Store, job: FoundJob, ids: string[]): Promise<Target[]> {
  const out: Target[] = [];
  for (const id of ids) {
    const t = await readSplit(store, job, id);
    if (!t) throw await noRecord(store, job, id);
    if (t.rec.status !== 'quarantined' && !isRetryableWait(t.rec)) {
      const what = t.rec.status === 'runnable' ? 'runnable and waits out no backoff' : t.rec.status;
      throw new SplitfleetError('INVALID_INPUT', `split "${id}": is ${what}, not quarantined; only a quarantined split, or one waiting out a failure's backoff, can be retried`);
    }
    out.push(t);
  }
  return out;
}

/**
 * The refusal for a split with no record: a packed job's split may be in its queue page, queued
 * (never held, so never quarantined) or folded back as completed; else the job has no such split.
 */
async function noRecord(store: Store, job: FoundJob, id: string): Promise<SplitfleetError> {
  const paged = await pagedState(store, job.prefix, job.plan, id);
  if (!paged) return new SplitfleetError('INVALID_INPUT', `split "${id}": job "${job.job}" has no such split`);
  const state = paged === 'folded' ? 'completed (folded back into its queue page)' : 'queued (in its queue page, with no record of its own)';
  return new SplitfleetError('INVALID_INPUT', `split "${id}": is ${state}, not quarantined; only a quarantined split can be retried`);
}

/** Every quarantined split, listed page by page (an unreadable record is not retried: it is no known state). */
async function quarantined(store: Store, job: FoundJob): Promise<Target[]> {
  const out: Target[] = [];
  for await (const page of jobKeyPages(store, job.prefix, ['split'])) {
    for (const kv of page) {
      try {
        const rec = decodeRecord('split', kv.key, kv.value, job.fp);
        if (rec.status === 'quarantined') out.push({ kv, rec });
      } catch {
        // Parked by the leader; `inspect` lists it as a problem.
      }
    }
  }
  return out;
}

/** Clears a `stalled` verdict by CAS, re-reading when the plan moved meanwhile. */
async function clearStalled(store: Store, job: FoundJob): Promise<boolean> {
  const key = planKey(job.prefix);
  for (let attempt = 0; attempt < ACTION_ATTEMPTS; attempt++) {
    const kv = await store.get(key);
    if (!kv) return false;
    const plan = decodeRecord('plan', kv.key, kv.value, job.fp);
    if (plan.verdict !== 'stalled') return false;
    const res = await store.txn(clearVerdictTxn(job.prefix, { rec: plan, modRevision: kv.modRevision }));
    if (res.won) return true;
  }
  throw contended(`clearing the verdict on ${key}`);
}
