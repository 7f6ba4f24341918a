/**
 * submitJob: creates a job as data (issue 50; decision 0064), from any
 * process: its definition (a kind and parameters) at `<root>/~jobs/<job>`,
 * which every fleet serving that kind under the root picks up (`serve`).
 *
 * Invariants:
 * - One create-if-absent transaction: the same definition again is
 *   idempotent (the first submission's record is returned); another under
 *   that name is refused (JOB_CONFLICT) with both shown, nothing written.
 * - A job whose prefix already holds a plan of another fingerprint (a job
 *   started with `startCoordinator` under that name) is refused too.
 */
import { SplitfleetError } from '../errors.js';
import {
  canonicalJson, decodeDefinition, definitionKey, definitionRecord, encodeDefinition, sameDefinition, type DefinitionRecord,
} from '../protocol/definitions.js';
import { jobPrefix, planKey } from '../protocol/keys.js';
import { fingerprintHash, type Json } from '../protocol/records.js';
import type { Store } from '../store/store.js';
import { checkJobNames, recordField } from './job.js';

/** A job to submit: where, its name, its kind and parameters. */
export interface SubmitJobOptions {
  store: Store;
  /** Key prefix root (default `splitfleet`). */
  root?: string;
  /** The job's name: `[A-Za-z0-9._-]{1,128}`, unique under the root. */
  job: string;
  /** What kind of job: a fleet serving this kind runs it (`serve({ kinds })`). */
  kind: string;
  /** The job's parameters (JSON, at most 64 KiB): what its kind's planner is given. */
  params: Json;
  /** The submission time (default Date.now()). */
  now?: number;
}

/** What a submission did: `created`, or `existing` (the same definition was there: nothing written). */
export interface SubmittedJob {
  outcome: 'created' | 'existing';
  definition: DefinitionRecord;
}

/** Writes the job's definition unless the same one is there; refuses another under its name (JOB_CONFLICT). */
export async function submitJob(options: SubmitJobOptions): Promise<SubmittedJob> {
  const root = options.root ?? 'splitfleet';
  checkJobNames(options.job, root);
  const wanted = definitionRecord(root, options.job, options.kind, options.params, options.now ?? Date.now());
  const key = definitionKey(root, options.job);
  const defined = await options.store.get(key);
  if (defined) return sameOrConflict(options.job, root, key, defined.value, wanted);
  // A job of that name started another way (its plan under another fingerprint) is not this one.
  const plan = await options.store.get(planKey(jobPrefix(root, options.job)));
  if (plan && recordField(plan.value, 'fp') !== fingerprintHash(wanted.fingerprint)) {
    throw new SplitfleetError('JOB_CONFLICT', `job ${options.job} under ${root}/ already runs with another fingerprint (its plan's fp ${String(recordField(plan.value, 'fp'))}, this definition's ${fingerprintHash(wanted.fingerprint)}): delete it first, or submit under another name`);
  }
  const res = await options.store.createIfAbsent(key, encodeDefinition(wanted));
  if (res.won) return { outcome: 'created', definition: wanted };
  // Another submission got there first: the same job, or a conflict.
  const existing = res.reads[0] ?? (await options.store.get(key));
  if (!existing) throw new SplitfleetError('STORE_UNAVAILABLE', `${key}: the create lost, yet nothing is there; submit again`, { retryable: true });
  return sameOrConflict(options.job, root, key, existing.value, wanted);
}

/** The definition there: the same job (idempotent), or JOB_CONFLICT with both shown. */
function sameOrConflict(job: string, root: string, key: string, value: string, wanted: DefinitionRecord): SubmittedJob {
  const had = decodeDefinition(key, value);
  if (sameDefinition(had, wanted)) return { outcome: 'existing', definition: had };
  throw new SplitfleetError('JOB_CONFLICT',
    `job ${job} under ${root}/ is already defined differently: it is ${had.kind} ${canonicalJson(had.params)}, this is ${wanted.kind} ${canonicalJson(wanted.params)}; submit under another name, or delete the job first`);
}
