/**
 * What `Coordinator.view` hands out: a copy of this instance's own records
 * as observed (plan, leader, presence, assignment), frozen, so no caller can
 * reach or change the view the worker and the candidacy decide on. A test
 * hook, not part of the public surface.
 */
import type { AssignRecord, LeaderRecord, PlanRecord, WorkerRecord } from '../../protocol/records.js';
import type { Seen } from './seen.js';
import type { WorkerView } from './worker-view.js';

/**
 * What `Coordinator.view` hands out: copies of this instance's own records as observed.
 * @internal
 */
export interface CoordinatorSnapshot {
  readonly plan: Readonly<Seen<PlanRecord>> | undefined;
  /** Whether a plan record has ever been observed (a plan seen, then gone, is a deleted job). */
  readonly planSeen: boolean;
  readonly leader: Readonly<Seen<LeaderRecord>> | undefined;
  readonly self: Readonly<Seen<WorkerRecord>> | undefined;
  readonly assign: Readonly<Seen<AssignRecord>> | undefined;
  readonly revision: number;
  readonly prefix: string;
}

function deepFreeze<T>(o: T): T {
  if (o && typeof o === 'object' && !Object.isFrozen(o)) {
    Object.freeze(o);
    for (const v of Object.values(o)) deepFreeze(v);
  }
  return o;
}

/** A frozen copy of what `view` holds of this instance's own keys. */
export function snapshotOf(v: WorkerView): CoordinatorSnapshot {
  return deepFreeze(structuredClone({ plan: v.plan, planSeen: v.planSeen, leader: v.leader, self: v.self, assign: v.assign, revision: v.revision, prefix: v.prefix }));
}
