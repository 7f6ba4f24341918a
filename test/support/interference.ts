/**
 * Interference from outside the fleet, for the leader and assignment failure
 * tests: a hand-held second leadership (a rogue leader that writes assignment
 * records unguarded) and a store wrapper that loses assignment writes.
 *
 * Invariants: the rogue takes leadership in one transaction or not at all;
 * the fault wrapper changes nothing while `failing` is unset.
 */
import { defaultFingerprint } from '../../src/config.js';
import { SplitfleetError } from '../../src/errors.js';
import { jobPrefix, leaderKey, planKey } from '../../src/protocol/keys.js';
import { encodeRecord, fingerprintHash, SCHEMA_VERSION } from '../../src/protocol/records.js';
import { cmp, op, type Store, type Txn, type TxnResult } from '../../src/store/store.js';

export interface RogueLeader {
  generation: number;
  leaseId: string;
  /** Writes assign.{instance} as this leader would (unguarded: the rogue's write lands). */
  publish(instance: string, splits: string[]): Promise<number>;
  /** Gives the leader key up, so the fleet elects one of its own again. */
  resign(): Promise<void>;
}

/**
 * Takes the job's leadership away from the elected coordinator in one
 * transaction (the `leader` key replaced at the revision read, the plan's
 * generation bumped), as a second leader would after an election the first
 * has not yet noticed. The coordinators see a leader and do not campaign.
 */
export async function takeLeadership(store: Store, root: string, job: string, instance = 'rogue-leader'): Promise<RogueLeader> {
  const prefix = jobPrefix(root, job);
  const fp = fingerprintHash(defaultFingerprint(root, job));
  const leaderKv = await store.get(leaderKey(prefix));
  const planKv = await store.get(planKey(prefix));
  if (!leaderKv || !planKv) throw new Error('takeLeadership: the job has no leader or plan yet');
  const plan = JSON.parse(planKv.value) as Record<string, any>;
  const generation = (plan.generation as number) + 1;
  const leaseId = await store.grantLease(60);
  const res = await store.txn({
    compares: [cmp.modRevision(leaderKey(prefix), leaderKv.modRevision), cmp.modRevision(planKey(prefix), planKv.modRevision)],
    success: [
      op.put(leaderKey(prefix), encodeRecord('leader', { v: SCHEMA_VERSION, fp, instance, generation }), leaseId),
      op.put(planKey(prefix), encodeRecord('plan', { ...(plan as any), generation })),
    ],
  });
  if (!res.won) throw new Error('takeLeadership: the leader key or plan moved under us; retry');
  return {
    generation,
    leaseId,
    publish: (member, splits) =>
      store.put(`${prefix}assign.${member}`, encodeRecord('assign', { v: SCHEMA_VERSION, fp, instance: member, generation, splits })),
    resign: async () => {
      await store.revokeLease(leaseId);
    },
  };
}

/**
 * A store whose transactions that write `assign.` records fail (as a lost
 * request) while `failing` is set. Everything else passes through.
 */
export class AssignmentFaults {
  failing = false;
  failures = 0;

  wrap(inner: Store): Store {
    const faults = this;
    return new Proxy(inner, {
      get(target, prop, receiver) {
        if (prop === 'txn') {
          return (txn: Txn): Promise<TxnResult> => {
            const writesAssign = txn.success.some((o) => o.op !== 'get' && /\/assign\./.test(o.key));
            if (faults.failing && writesAssign) {
              faults.failures++;
              return Promise.reject(new SplitfleetError('STORE_UNAVAILABLE', 'injected: assignment write lost', { retryable: true }));
            }
            return target.txn(txn);
          };
        }
        const v = Reflect.get(target, prop, receiver) as unknown;
        return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
      },
    });
  }
}
