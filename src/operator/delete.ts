/**
 * deleteJob: removes every key of a job (`splitfleet delete`), and only the
 * job's: its kinds and singletons (`listJobKeys`, decision 0027), never the
 * keys of a job nested under its prefix. A finished job
 * (its plan carries a verdict) with no live process is deleted outright; one
 * that runs, or still has processes, is refused unless forced, and the
 * refusal says what deleting it would stop.
 *
 * Forced, it first deletes the `plan` record alone (by CAS; a plan the leader
 * rewrote meanwhile is read again and deleted at its new revision): every process of
 * the job sees its plan gone and stops with JOB_DELETED rather than start the
 * job over (a new leader would otherwise re-plan into the empty prefix). It
 * then waits for their presence keys to go, and deletes the rest in batches,
 * listing again until nothing is left (a straggler's write may land between).
 * Both transactions are built by protocol/operator-txns.ts (`planDeleteTxn`,
 * `teardownTxn`; why the teardown needs no guard: decision 0038).
 * A submitted job's definition (`<root>/~jobs/<job>`, decision 0064) goes
 * first, so that no serving fleet joins the job again; a job submitted and
 * never started (no plan) is deleted by deleting its definition.
 */
import { SplitfleetError } from '../errors.js';
import { definitionKey } from '../protocol/definitions.js';
import { leaderKey, type KeyKind } from '../protocol/keys.js';
import { planDeleteTxn, teardownTxn } from '../protocol/operator-txns.js';
import { jobKeyRanges } from '../protocol/scope.js';
import { decodeRecord } from '../protocol/records.js';
import type { Store } from '../store/store.js';
import { ACTION_ATTEMPTS, contended, findJob, type FoundJob, type JobTarget } from './job.js';
import { liveMembers } from './control.js';
import { listJobKeys } from './scope.js';

/** What `deleteJob` deletes, and whether it may stop a running job. */
export interface DeleteOptions extends JobTarget {
  /** Delete a job that is running or has live processes (they stop). */
  force?: boolean;
  /** How long a forced delete waits for the job's processes to leave, ms (default 15 000). */
  waitMs?: number;
}

/** What `deleteJob` did. */
export interface DeleteResult {
  /** Keys deleted. */
  deleted: number;
  /** Live processes the deletion stopped (or found still present when the wait ran out). */
  stopped: string[];
  /** The job had a verdict ('complete' | 'stalled'), or null when it was still running. */
  verdict: 'complete' | 'stalled' | null;
}

/** What deleting the job would stop: its live members, its leader, the splits they hold. */
export async function whatDeleteStops(store: Store, job: FoundJob): Promise<{ members: string[]; leader: string | null; held: number }> {
  const members = [...(await liveMembers(store, job)).keys()].sort();
  const leaderKv = await store.get(leaderKey(job.prefix));
  let leader: string | null = null;
  if (leaderKv) {
    try {
      leader = decodeRecord('leader', leaderKv.key, leaderKv.value, job.fp).instance;
    } catch {
      leader = '(unreadable leader record)';
    }
  }
  const held = (await listJobKeys(store, job.prefix, ['lease'])).kvs.length;
  return { members, leader, held };
}

/** What `deleteJob` would delete (`splitfleet delete --dry-run`); nothing is written. */
export interface DeletePreview {
  /** Every key that would go, in key order. */
  keys: string[];
  /** How many of them of each kind (unreadable keys of a kind count under it). */
  byKind: Partial<Record<KeyKind, number>>;
  /** The job's verdict, or null while it runs. */
  verdict: 'complete' | 'stalled' | null;
  /** True when deleting needs `force` (no verdict, or live processes): what it would stop. */
  needsForce: boolean;
  /** What deleting would stop: live members, the leader, splits held (as the refusal names them). */
  stops: { members: string[]; leader: string | null; held: number };
}

/** Lists what deleting the job would remove and stop, without deleting anything. */
export async function previewDelete(options: JobTarget): Promise<DeletePreview> {
  const job = await findJob(options);
  const verdict = job.plan.verdict ?? null;
  const stops = await whatDeleteStops(options.store, job);
  const { kvs } = await listJobKeys(options.store, job.prefix);
  const byKind: Partial<Record<KeyKind, number>> = {};
  for (const range of jobKeyRanges(job.prefix)) {
    const n = kvs.filter((kv) => kv.key >= range.rangeStart && kv.key < range.rangeEnd).length;
    if (n > 0) byKind[range.kind] = n;
  }
  return { keys: kvs.map((kv) => kv.key), byKind, verdict, needsForce: verdict === null || stops.members.length > 0 || stops.leader !== null, stops };
}

/**
 * Deletes every key of the job (decision 0027: its own, never a nested job's). Refuses (INVALID_INPUT, naming what it would
 * stop) a job without a verdict or with live processes unless `force`.
 */
export async function deleteJob(options: DeleteOptions): Promise<DeleteResult> {
  const { store } = options;
  // A submitted job's definition (decision 0064) goes first: no serving fleet may join it again.
  const definition = definitionKey(options.root ?? 'splitfleet', options.job);
  const defined = await store.get(definition);
  let job: FoundJob;
  try {
    job = await findJob(options);
  } catch (e) {
    // Submitted, never started (no plan): its definition is all there is.
    if (!defined || !(e instanceof SplitfleetError) || e.code !== 'INVALID_INPUT') throw e;
    // Lost: another hand deleted it first (a definition is never rewritten in place), so this call deleted nothing.
    const gone = await store.deleteIf(definition, defined.modRevision);
    return { deleted: gone.won ? 1 : 0, stopped: [], verdict: null };
  }
  const verdict = job.plan.verdict ?? null;
  const stops = await whatDeleteStops(store, job);
  const running = verdict === null || stops.members.length > 0 || stops.leader !== null;
  if (running && options.force !== true) {
    const what = [
      verdict === null ? 'no verdict yet' : `verdict ${verdict}`,
      stops.leader !== null ? `leader ${stops.leader}` : 'no leader',
      `${stops.members.length} live member${stops.members.length === 1 ? '' : 's'}${stops.members.length > 0 ? ` (${stops.members.slice(0, 10).join(', ')}${stops.members.length > 10 ? ', …' : ''})` : ''}`,
      `${stops.held} held split${stops.held === 1 ? '' : 's'}`,
    ].join('; ');
    throw new SplitfleetError('INVALID_INPUT', `force: job "${job.job}" is not finished and idle (${what}); deleting it stops every process of it: pass --force to delete it anyway`);
  }
  let deleted = 0;
  if (defined && (await store.deleteIf(definition, defined.modRevision)).won) deleted++;
  if (running) {
    // The plan first, alone: its disappearance is what stops every process of the job.
    if (await deletePlan(store, job)) deleted++;
    await untilGone(store, job, options.waitMs ?? 15_000);
  }
  const left = [...(await liveMembers(store, job)).keys()];
  for (let round = 0; round < 5; round++) {
    const { kvs } = await listJobKeys(store, job.prefix);
    if (kvs.length === 0) break;
    const per = store.limits.maxOpsPerTxn;
    for (let i = 0; i < kvs.length; i += per) {
      const res = await store.txn(teardownTxn(kvs.slice(i, i + per).map((kv) => kv.key)));
      if (res.won) deleted += Math.min(per, kvs.length - i);
    }
  }
  return { deleted, stopped: [...new Set([...stops.members, ...left])].sort(), verdict };
}

/**
 * Deletes the plan record by CAS, whatever it holds by then: the job is being deleted by force, and
 * its leader writes the plan while it runs (a generation bump, the planned count, a verdict), so a
 * lost compare is read again and the delete sent at the new revision; ACTION_ATTEMPTS losses in a
 * row are `contended`. False when the plan is gone already (another hand deleted it: the processes
 * stop all the same).
 */
async function deletePlan(store: Store, job: FoundJob): Promise<boolean> {
  let modRevision = job.planKv.modRevision;
  for (let attempt = 0; attempt < ACTION_ATTEMPTS; attempt++) {
    if ((await store.txn(planDeleteTxn(job.prefix, modRevision))).won) return true;
    const now = await store.get(job.planKv.key);
    if (!now) return false;
    modRevision = now.modRevision;
  }
  throw contended(`deleting the plan record ${job.planKv.key}`);
}

/** Waits (polling) until the job has no live presence key, or `waitMs` passes. */
async function untilGone(store: Store, job: FoundJob, waitMs: number): Promise<void> {
  const deadline = Date.now() + waitMs;
  while (Date.now() < deadline) {
    const { kvs } = await listJobKeys(store, job.prefix, ['worker']);
    if (kvs.length === 0) return;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}
