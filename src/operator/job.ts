/**
 * What every operator action starts from: the job it names on a store, found
 * by its `plan` record (whose `fp` every other record of the job carries).
 * An action on a job that is not there is refused (INVALID_INPUT), never a
 * write into an empty prefix.
 */
import { SplitfleetError } from '../errors.js';
import { jobPrefix, planKey } from '../protocol/keys.js';
import { decodeRecord, type PlanRecord } from '../protocol/records.js';
import type { KeyValue, Store } from '../store/store.js';
import { resolveConfig } from '../config.js';

/** Which job an operator action acts on. */
export interface JobTarget {
  store: Store;
  job: string;
  /** Key prefix root (default `splitfleet`). */
  root?: string;
}

/** A job found on the store: its prefix, fingerprint hash and plan record as read. */
export interface FoundJob {
  job: string;
  root: string;
  prefix: string;
  fp: string;
  plan: PlanRecord;
  planKv: KeyValue;
}

/**
 * One field of a stored record, read before the record can be decoded (decoding
 * needs the fingerprint hash, which is itself such a field) or where only that
 * field matters; undefined when the value is not a JSON object or lacks it.
 */
export function recordField(value: string, field: string): unknown {
  try {
    const parsed: unknown = JSON.parse(value);
    return typeof parsed === 'object' && parsed !== null ? (parsed as Record<string, unknown>)[field] : undefined;
  } catch {
    return undefined;
  }
}

/** Validates the names with the library's own rules (a refusal names the field). */
export function checkJobNames(job: string, root: string): void {
  try {
    resolveConfig({ job, root, instance: 'operator' });
  } catch (e) {
    if (e instanceof SplitfleetError && e.code === 'INVALID_CONFIG') throw new SplitfleetError('INVALID_INPUT', e.message);
    throw e;
  }
}

/** Reads the job's plan record; refuses a job that is not on the store. */
export async function findJob(target: JobTarget): Promise<FoundJob> {
  const root = target.root ?? 'splitfleet';
  checkJobNames(target.job, root);
  const prefix = jobPrefix(root, target.job);
  const kv = await target.store.get(planKey(prefix));
  if (!kv) {
    throw new SplitfleetError('INVALID_INPUT', `job: no job "${target.job}" under ${root}/ (it has no plan record; \`splitfleet jobs --root ${root}\` lists the jobs)`);
  }
  const fp = recordField(kv.value, 'fp');
  if (typeof fp !== 'string') throw new SplitfleetError('INVALID_RECORD', `plan record at ${kv.key}: has no fingerprint hash fp; repair it before acting on the job`);
  const plan = decodeRecord('plan', kv.key, kv.value, fp);
  return { job: target.job, root, prefix, fp, plan, planKv: kv };
}

/** Fails an action whose guarded write lost every attempt: somebody else keeps changing the record. */
export function contended(what: string): SplitfleetError {
  return new SplitfleetError('STORE_UNAVAILABLE', `${what}: the record kept changing under us (another operator or the leader); try again`, { retryable: true });
}

/** How many times an action re-reads and retries a guarded write that lost. */
export const ACTION_ATTEMPTS = 5;
