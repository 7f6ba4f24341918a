/**
 * The health of a serving process (`serve()`, decision 0068): one state for a
 * process that serves zero to many jobs, each with a coordinator whose own
 * health (health.ts) says how that job goes here. `server.health()` is what
 * `/healthz` and `/readyz` answer (serveMetrics), as `coordinator.health()`
 * is for a single-job process, in the same states.
 *
 * Precedence:
 * - stopped: close() has returned;
 * - stopping: close() is draining the jobs;
 * - degraded: the definitions' watch stopped for good (no new job is seen);
 *   a joined job's coordinator is degraded (its reason, the first by job
 *   name); a job was left after an error (not rejoined while this process
 *   serves, or until its definition is deleted);
 * - running: otherwise, zero jobs included: an idle standing member is ready
 *   (a Deployment's rollout waits for new pods to be ready, and a fleet with
 *   nothing to do must still roll). A job whose coordinator is starting
 *   (joining) or ending (its verdict, before it is let go) is passing
 *   through: it is named in the reason, it degrades nothing.
 *
 * Pure: no timers, no I/O.
 */
import type { HealthState } from './health.js';

/** What a serving process observes of itself and its jobs. */
export interface ServingObservations {
  /** close() has returned. */
  closed: boolean;
  /** close() has begun. */
  closing: boolean;
  /** Why the definitions' watch stopped for good, if it did. */
  watchError?: string;
  /** The kinds served (for the idle reason). */
  kinds: readonly string[];
  /** Jobs joined now; `health` undefined while the job's coordinator is starting up (startCoordinator). */
  jobs: readonly { job: string; health: { state: HealthState; reason: string } | undefined }[];
  /** Jobs left after an error, and the error: this process does not rejoin them. */
  failed: readonly { job: string; reason: string }[];
}

/** The serving process's state and reason. */
export function assessServing(o: ServingObservations): { state: HealthState; reason: string } {
  if (o.closed) return { state: 'stopped', reason: 'stopped serving (close())' };
  if (o.closing) return { state: 'stopping', reason: `closing: draining ${plural(o.jobs.length, 'job')}` };
  if (o.watchError !== undefined) {
    return { state: 'degraded', reason: `the job definitions' watch stopped (${o.watchError}): no new job is seen until the process restarts` };
  }
  const byName = [...o.jobs].sort((a, b) => (a.job < b.job ? -1 : a.job > b.job ? 1 : 0));
  const degraded = byName.filter((j) => j.health?.state === 'degraded');
  if (degraded.length > 0) {
    const more = degraded.length > 1 ? ` (and ${plural(degraded.length - 1, 'more job')} degraded)` : '';
    return { state: 'degraded', reason: `job ${degraded[0]!.job}: ${degraded[0]!.health!.reason}${more}` };
  }
  if (o.failed.length > 0) {
    const first = [...o.failed].sort((a, b) => (a.job < b.job ? -1 : a.job > b.job ? 1 : 0))[0]!;
    const more = o.failed.length > 1 ? ` (and ${plural(o.failed.length - 1, 'more job')})` : '';
    return { state: 'degraded', reason: `left job ${first.job} after an error, not rejoined until the process restarts or the job is deleted: ${first.reason}${more}` };
  }
  if (byName.length === 0) return { state: 'running', reason: `serving no job: idle, waiting for jobs of kind ${o.kinds.join(', ')}` };
  const working = byName.filter((j) => j.health?.state === 'running').map((j) => j.job);
  const joining = byName.filter((j) => j.health === undefined || j.health.state === 'starting').map((j) => j.job);
  const ending = byName.filter((j) => j.health?.state === 'stopping' || j.health?.state === 'stopped').map((j) => j.job);
  const parts = [
    working.length > 0 ? `serving ${plural(working.length, 'job')} (${list(working)})` : 'serving no job yet',
    ...(joining.length > 0 ? [`joining ${list(joining)}`] : []),
    ...(ending.length > 0 ? [`ending ${list(ending)}`] : []),
  ];
  return { state: 'running', reason: parts.join('; ') };
}

function plural(n: number, what: string): string {
  return `${n} ${what}${n === 1 ? '' : 's'}`;
}

/** At most five names: a reason stays one line however many jobs a process serves. */
function list(jobs: readonly string[]): string {
  return jobs.length <= 5 ? jobs.join(', ') : `${jobs.slice(0, 5).join(', ')}, … ${jobs.length - 5} more`;
}
