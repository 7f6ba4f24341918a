/**
 * The operator in a simulated run (schedule.ts): the CLI's actions made on
 * the store while the fleet runs (pause, resume, evacuate, resume an
 * instance, retry), and what docs/operations.md says to do once the faults
 * end: lift every hold, and retry a job that ended `stalled`, starting again
 * the members that stopped on it. It drives processes only through the
 * harness (harness.ts).
 */
import { isSplitfleetError } from '../../src/errors.js';
import { evacuateInstance, pauseJob, resumeInstance, resumeJob } from '../../src/operator/control.js';
import { retrySplits } from '../../src/operator/retry.js';
import { controlKey, planKey } from '../../src/protocol/keys.js';
import type { Fleet } from './harness.js';
import type { OperatorAction } from './schedule.js';

const job = (fleet: Fleet) => ({ store: fleet.store, job: 'sim' });

/**
 * One operator action, as the CLI makes it. A refusal (the job is finished,
 * the instance not yet a member or not evacuated) is an operator's typo, not
 * the fleet's failure: the run goes on.
 */
export async function operate(fleet: Fleet, action: OperatorAction, instance: string | undefined): Promise<void> {
  try {
    switch (action) {
      case 'pause': await pauseJob(job(fleet)); break;
      case 'resume': await resumeJob(job(fleet)); break;
      case 'evacuate': if (instance !== undefined) await evacuateInstance({ ...job(fleet), instance }); break;
      case 'resumeInstance': if (instance !== undefined) await resumeInstance({ ...job(fleet), instance }); break;
      case 'retry': await retrySplits({ ...job(fleet), allQuarantined: true }); break;
    }
    fleet.events.push(`operator ${action}${instance !== undefined && action !== 'pause' && action !== 'resume' && action !== 'retry' ? ` ${instance}` : ''}`);
  } catch (e) {
    if (!isSplitfleetError(e, 'INVALID_INPUT')) throw e;
  }
}

/**
 * A job whose only splits left are quarantined (a split killed its owner
 * before its first commit `maxAttempts` times: the auditor checks each attempt)
 * or parked (an unreadable record: substrate.md, "Hostile records") ends
 * `stalled`. Once the faults end and the records are put back, the operator
 * does what docs/operations.md says: `splitfleet retry --all-quarantined`
 * clears the verdict, and the members that stopped on it are started again.
 * They must then complete.
 */
export async function recoverFromStall(fleet: Fleet): Promise<boolean> {
  const kv = await fleet.store.get(planKey(fleet.prefix));
  const verdict = kv ? (JSON.parse(kv.value) as { verdict?: string }).verdict : undefined;
  const stalled = fleet.procs.filter((p) => p.state === 'done' && p.verdict === 'stalled');
  // Stalled; or already retried (by a scheduled operator action, or by this recovery while a member's
  // view still showed the old verdict): the members that stopped on it still need starting again.
  if (verdict !== 'stalled' && stalled.length === 0) return false;
  if (verdict === 'stalled') await operate(fleet, 'retry', undefined);
  for (const p of stalled) {
    await p.coordinator?.close();
    p.state = 'stopped';
  }
  for (const instance of new Set(stalled.map((p) => p.instance))) fleet.start(instance);
  fleet.note(`operator retry after the stall: ${stalled.length} stalled member(s) started again`);
  await fleet.advance(0);
  return true;
}

/** Ends every operator hold: resume the job and every evacuated instance. */
export async function release(fleet: Fleet): Promise<void> {
  await operate(fleet, 'resume', undefined);
  const kv = await fleet.store.get(controlKey(fleet.prefix));
  const evacuated = kv ? (JSON.parse(kv.value) as { evacuated: { instance: string }[] }).evacuated : [];
  for (const e of evacuated) await operate(fleet, 'resumeInstance', e.instance);
}
