/**
 * The job's end and a process's identity: when the leader may write the
 * verdict, what a coordinator concludes from the plan record it follows, and
 * when its presence key says another process runs under its instance id.
 *
 * Invariants:
 * - A verdict is written only on a final plan with none yet, once every
 *   planned split's record has been seen (parked ones included) and none can
 *   still run: 'stalled' when any split is quarantined or parked (a record
 *   of it cannot be read), else 'complete'.
 * - A plan seen and then gone is a deleted job: stop, never start it over.
 * - Only a presence key written after our own, carrying another run's
 *   nonce, is a duplicate; an older one is our previous session's, still in
 *   a lagging view.
 *
 * Pure: no I/O, no clock.
 */
import type { JobVerdictRecord, PlanRecord, SplitStatus } from './records.js';

/** What the leader's view says of the job's splits. */
export interface JobTally {
  /** Split records known, by status. */
  readonly counts: { readonly runnable: number; readonly completed: number; readonly quarantined: number };
  /** Each parked split's status as its readable record says (undefined: no readable record). */
  readonly parked: Iterable<SplitStatus | undefined>;
}

/** The parked splits of a tally: all of them, those whose readable record is runnable, those with no readable record. */
function parkedOf(tally: JobTally): { parked: number; runnable: number; unrecorded: number } {
  let parked = 0;
  let runnable = 0;
  let unrecorded = 0;
  for (const st of tally.parked) {
    parked++;
    if (st === 'runnable') runnable++;
    else if (st === undefined) unrecorded++;
  }
  return { parked, runnable, unrecorded };
}

/** The verdict to write on `plan` now, or undefined when it is not (yet) the leader's to write. */
export function jobVerdict(plan: PlanRecord | undefined, tally: JobTally): JobVerdictRecord | undefined {
  if (!plan || !plan.final || plan.verdict) return undefined;
  const { counts } = tally;
  // A parked split cannot run: like a quarantined one, it leaves the job stalled once nothing else
  // can run. Its readable record, if any, counts as runnable.
  const parked = parkedOf(tally);
  const recorded = counts.runnable + counts.completed + counts.quarantined;
  if (recorded + parked.unrecorded < plan.planned || counts.runnable > parked.runnable) return undefined;
  return counts.quarantined > 0 || parked.parked > 0 ? 'stalled' : 'complete';
}

/**
 * Splits a final plan counts that the tally does not know at all (neither a record nor a parked
 * place): a queue page, or a split's spec and record, gone from the store (deleted by hand, or
 * restored from an older backup; decision 0072). 0 for an open plan.
 */
export function unaccountedSplits(plan: PlanRecord | undefined, tally: JobTally): number {
  if (!plan?.final) return 0;
  const { counts } = tally;
  return Math.max(0, plan.planned - (counts.runnable + counts.completed + counts.quarantined + parkedOf(tally).unrecorded));
}

/** What a coordinator concludes from the plan record it follows. */
export type JobOutcome =
  | { kind: 'running' }
  /** The plan was seen and is gone (`splitfleet delete --force`): stop, rather than start the job over. */
  | { kind: 'deleted' }
  /** The leader wrote the verdict: the job is over for every instance. */
  | { kind: 'finished'; verdict: JobVerdictRecord };

export function jobOutcome(plan: PlanRecord | undefined, planSeen: boolean): JobOutcome {
  if (planSeen && !plan) return { kind: 'deleted' };
  // A verdict whose onJobFinished hook has still to run (decision 0065): the processes stay, idle,
  // so that a leader lost while running it is replaced by one that runs it again.
  if (plan?.final && plan.verdict !== undefined && plan.hook !== 'pending') return { kind: 'finished', verdict: plan.verdict };
  return { kind: 'running' };
}

/** Our presence key as observed, and our session's own write of it. */
export interface PresenceObservation {
  readonly seen: { readonly nonce: string; readonly modRevision: number } | undefined;
  readonly nonce: string;
  /** The revision at which our session last wrote the key. */
  readonly presenceRevision: number;
}

/** What our presence key says: fine, gone (recreate it), or another live process under our id. */
export function presenceVerdict(o: PresenceObservation): 'ours' | 'missing' | 'duplicate' {
  if (!o.seen) return 'missing';
  return o.seen.nonce !== o.nonce && o.seen.modRevision > o.presenceRevision ? 'duplicate' : 'ours';
}
