/**
 * pauseJob, resumeJob, evacuateInstance, resumeInstance: the operator
 * actions that edit the job's `control` record (decision 0011), which the
 * leader honours on its next decision. Each is one compare-and-swap on the
 * record (created if absent, deleted once it asks nothing), re-read and
 * retried when it loses, and written only when it changes something.
 *
 * An unreadable record (garbage, beyond the decode bounds, another
 * fingerprint) is what the leader holds it as: paused, nothing evacuated
 * (fail safe). An action overwrites it by CAS on its revision, and says so
 * (`replaced`), so an operator can always repair it with `pause` or `resume`.
 * The write is built by protocol/operator-txns.ts (`controlTxn`).
 */
import { isSplitfleetError, SplitfleetError } from '../errors.js';
import {
  isNeutral, NO_CONTROL, staleEvacuations, withEvacuated, withoutEvacuated, withPaused, type ControlState,
} from '../protocol/control.js';
import { controlKey, idProblem, isValidId } from '../protocol/keys.js';
import { controlTxn } from '../protocol/operator-txns.js';
import { decodeRecord, type ControlRecord, type WorkerRecord } from '../protocol/records.js';
import type { Store } from '../store/store.js';
import { ACTION_ATTEMPTS, contended, findJob, type FoundJob, type JobTarget } from './job.js';
import { listJobKeys } from './scope.js';

/** What a control action did. */
export interface ControlResult {
  /** False when the record already said so (nothing was written). */
  changed: boolean;
  paused: boolean;
  evacuated: string[];
  /** Set when the record was unreadable and this action overwrote it: why it could not be read. */
  replaced?: string;
}

/** How the leader holds an unreadable control record (coordinator/leader/leader-records.ts): paused, nothing evacuated. */
const UNREADABLE: ControlState = Object.freeze({ paused: true, evacuated: [] }) as ControlState;

/** Pause: the leader publishes empty assignments; lanes drain cooperatively, nothing new is claimed, progress is kept. */
export async function pauseJob(target: JobTarget): Promise<ControlResult> {
  const job = await findJob(target);
  if (job.plan.verdict) throw finished(job, 'pause');
  return editControl(target.store, job, (s) => withPaused(s, true));
}

/** Resume: undoes pause. */
export async function resumeJob(target: JobTarget): Promise<ControlResult> {
  const job = await findJob(target);
  return editControl(target.store, job, (s) => withPaused(s, false));
}

/**
 * Evacuate: the instance's current run is assigned nothing and drains, ahead
 * of a deploy. Its restart (a new run) or `resumeInstance` undoes it.
 */
export async function evacuateInstance(target: JobTarget & { instance: string }): Promise<ControlResult> {
  const job = await findJob(target);
  checkInstance(target.instance);
  if (job.plan.verdict) throw finished(job, 'evacuate an instance of');
  const members = await liveMembers(target.store, job);
  const run = members.get(target.instance);
  if (run === undefined) {
    const names = [...members.keys()].sort();
    throw new SplitfleetError('INVALID_INPUT', `instance: "${target.instance}" is not a live member of job "${job.job}" `
      + `(${names.length === 0 ? 'it has no live members' : `members: ${names.slice(0, 20).join(', ')}${names.length > 20 ? ', …' : ''}`})`);
  }
  return editControl(target.store, job, (s) => withEvacuated(s, target.instance, run.nonce), members);
}

/** Undoes the evacuation of one instance. Refused when the instance is not evacuated. */
export async function resumeInstance(target: JobTarget & { instance: string }): Promise<ControlResult> {
  const job = await findJob(target);
  checkInstance(target.instance);
  return editControl(target.store, job, (s) => {
    if (!s.evacuated.some((e) => e.instance === target.instance)) {
      const names = s.evacuated.map((e) => e.instance);
      throw new SplitfleetError('INVALID_INPUT', `instance: "${target.instance}" is not evacuated in job "${job.job}" `
        + `(${names.length === 0 ? 'no instance is' : `evacuated: ${names.join(', ')}`})`);
    }
    return withoutEvacuated(s, target.instance);
  });
}

/** The job's live members: instance → presence record. */
export async function liveMembers(store: Store, job: FoundJob): Promise<Map<string, WorkerRecord>> {
  const { kvs } = await listJobKeys(store, job.prefix, ['worker']);
  const out = new Map<string, WorkerRecord>();
  for (const kv of kvs) {
    try {
      const rec = decodeRecord('worker', kv.key, kv.value, job.fp);
      out.set(rec.instance, rec);
    } catch {
      // An unreadable presence record is no member (as the leader sees it).
    }
  }
  return out;
}

function checkInstance(instance: string): void {
  if (!isValidId(instance)) throw new SplitfleetError('INVALID_INPUT', `instance: ${idProblem(instance)}`);
}

function finished(job: FoundJob, what: string): SplitfleetError {
  return new SplitfleetError('INVALID_INPUT', `job: "${job.job}" is finished (verdict ${job.plan.verdict}): there is nothing to ${what}`);
}

/**
 * Reads the control record, applies `edit`, and writes the result by CAS
 * (deleting the record when it asks nothing). Evacuations of runs that are no
 * longer live are dropped on the way: they hold nothing any more.
 */
async function editControl(
  store: Store, job: FoundJob, edit: (state: ControlState) => ControlState, members?: Map<string, WorkerRecord>,
): Promise<ControlResult> {
  const key = controlKey(job.prefix);
  for (let attempt = 0; attempt < ACTION_ATTEMPTS; attempt++) {
    const kv = await store.get(key);
    let current: ControlRecord | undefined;
    let unreadable: string | undefined;
    try {
      current = kv ? decodeRecord('control', kv.key, kv.value, job.fp) : undefined;
    } catch (e) {
      if (!isSplitfleetError(e, 'INVALID_RECORD') && !isSplitfleetError(e, 'FINGERPRINT_MISMATCH')) throw e;
      unreadable = e.message;
    }
    const before: ControlState = current ? { paused: current.paused, evacuated: current.evacuated } : unreadable !== undefined ? UNREADABLE : NO_CONTROL;
    const live = members ?? await liveMembers(store, job);
    const nonces = new Map([...live].map(([i, w]) => [i, w.nonce]));
    const edited = edit(before);
    const stale = new Set(staleEvacuations(edited, nonces));
    const next: ControlState = { ...edited, evacuated: edited.evacuated.filter((e) => !stale.has(e)) };
    const result = { paused: next.paused, evacuated: next.evacuated.map((e) => e.instance), ...(unreadable !== undefined ? { replaced: unreadable } : {}) };
    // Restated over the record as read (controlTxn): fields of a newer minor version are kept.
    const txn = controlTxn(job.prefix, job.fp, { kv, record: current }, next);
    if (txn === undefined) return { changed: false, ...result };
    const res = await store.txn(txn);
    if (res.won) return { changed: unreadable !== undefined || isNeutral(before) !== isNeutral(next) || before.paused !== next.paused || !sameEvacuations(before, next), ...result };
  }
  throw contended(`writing ${key}`);
}

function sameEvacuations(a: ControlState, b: ControlState): boolean {
  return a.evacuated.length === b.evacuated.length && a.evacuated.every((e, i) => e.instance === b.evacuated[i]!.instance && e.nonce === b.evacuated[i]!.nonce);
}
