/**
 * waitForJob: the verdict of a job, from any process, without holding the
 * job (issue 50; decision 0064): it follows the job's `plan` record (one
 * key: `snapshotAndWatch` on it) until the leader writes the verdict, then
 * reads the leader's summary, if one was written.
 *
 * Invariants:
 * - Read-only: never writes, joins nothing.
 * - A job not started yet (submitted, no fleet serving its kind so far) is
 *   waited for; a plan seen and then gone is JOB_DELETED; an unreadable plan
 *   record is INVALID_RECORD; `signal` or `timeoutMs` ends the wait (TIMEOUT).
 * - A watch that breaks for good is started again from a fresh read.
 */
import { SplitfleetError, storeFailure } from '../errors.js';
import { jobPrefix, planKey, summaryKey } from '../protocol/keys.js';
import { decodeRecord, type JobVerdictRecord, type PlanRecord, type SummaryRecord } from '../protocol/records.js';
import { exactKey, type KeyValue, type Store, type WatchHandle } from '../store/store.js';
import { checkJobNames, recordField } from './job.js';

/** Which job to wait for, and for how long. */
export interface WaitForJobOptions {
  store: Store;
  /** Key prefix root (default `splitfleet`). */
  root?: string;
  job: string;
  /** Ends the wait (TIMEOUT) when aborted. */
  signal?: AbortSignal;
  /** Ends the wait (TIMEOUT) after this many ms; default: none. */
  timeoutMs?: number;
}

/** A finished job: its verdict, the plan's count, and the leader's last summary (absent when none was written). */
export interface JobResult {
  job: string;
  verdict: JobVerdictRecord;
  planned: number;
  summary: SummaryRecord | undefined;
}

/** Resolves once the job has a verdict (`complete` or `stalled`). */
export async function waitForJob(options: WaitForJobOptions): Promise<JobResult> {
  const root = options.root ?? 'splitfleet';
  checkJobNames(options.job, root);
  const prefix = jobPrefix(root, options.job);
  const key = planKey(prefix);
  const plan = await untilVerdict(options, key);
  const kv = await options.store.get(summaryKey(prefix));
  let summary: SummaryRecord | undefined;
  try {
    summary = kv ? decodeRecord('summary', kv.key, kv.value, String(recordField(kv.value, 'fp'))) : undefined;
  } catch {
    summary = undefined; // the verdict is the answer; a summary that cannot be read adds nothing
  }
  return { job: options.job, verdict: plan.verdict!, planned: plan.planned, summary };
}

/** Follows the plan record until it carries a verdict. */
function untilVerdict(options: WaitForJobOptions, key: string): Promise<PlanRecord> {
  return new Promise<PlanRecord>((resolve, reject) => {
    let seen = false;
    let done = false;
    let handle: WatchHandle | undefined;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const finish = (e: Error | undefined, plan?: PlanRecord) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      options.signal?.removeEventListener('abort', onAbort);
      void handle?.close().catch(() => undefined);
      if (e) reject(e);
      else resolve(plan!);
    };
    const onAbort = () => finish(new SplitfleetError('TIMEOUT', `waiting for job ${options.job}: aborted`));
    const look = (value: string | undefined) => {
      if (value === undefined) {
        if (seen) finish(new SplitfleetError('JOB_DELETED', `job ${options.job}: its plan record was deleted while waiting for its verdict`));
        return;
      }
      seen = true;
      try {
        const plan = decodeRecord('plan', key, value, String(recordField(value, 'fp')));
        if (plan.verdict !== undefined) finish(undefined, plan);
      } catch (e) {
        finish(storeFailure(e));
      }
    };
    const follow = () => {
      if (done) return;
      handle = options.store.snapshotAndWatch(key, {
        onSnapshot: (kvs: KeyValue[]) => look(kvs.find((kv) => kv.key === key)?.value),
        onEvent: (e) => look(e.type === 'put' ? e.value : undefined),
        // Broken for good (compacted, say): read again from now.
        onError: () => setTimeout(follow, 500),
      }, exactKey(key));
      handle.ready.catch(() => setTimeout(follow, 500));
    };
    if (options.signal?.aborted) return onAbort();
    options.signal?.addEventListener('abort', onAbort, { once: true });
    if (options.timeoutMs !== undefined) timer = setTimeout(() => finish(new SplitfleetError('TIMEOUT', `waiting for job ${options.job}: no verdict within ${options.timeoutMs} ms`)), options.timeoutMs);
    follow();
  });
}
