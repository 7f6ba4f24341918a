/**
 * Issue 49, partial stalls: a member that holds an assignment but claims
 * nothing (here the store refuses its claims, as etcd does to a role that
 * may read the job but not write its lease keys). Its named splits stay
 * still while the rest of the job moves; the leader's health says
 * `degraded`, naming a split and the member, after UNCLAIMED_INTERVALS
 * reconcile intervals. MemoryStore on a VirtualClock.
 */
import { describe, expect, it } from 'vitest';
import { VirtualClock } from '../../src/clock.js';
import type { SplitHandle } from '../../src/coordinator/types.js';
import { SplitfleetError } from '../../src/errors.js';
import { MemoryStore } from '../../src/store/memory.js';
import type { Store, Txn } from '../../src/store/store.js';
import { useMemoryFleet } from '../support/memory-fleet.js';
import { settle, stepUntil } from '../support/virtual-time.js';

const coordinators = useMemoryFleet();

/** `inner`, refusing every transaction that puts a lease key (permission denied, not retryable). */
function refusingClaims(inner: MemoryStore): Store {
  return new Proxy(inner, {
    get(target, prop, receiver) {
      const v = Reflect.get(target, prop, receiver) as unknown;
      if (typeof v !== 'function') return v;
      const f = (v as (...a: unknown[]) => unknown).bind(target);
      if (prop !== 'txn') return f;
      return async (txn: Txn) => {
        if (txn.success.some((o) => o.op === 'put' && o.key.includes('/lease.'))) {
          throw new SplitfleetError('STORE_UNAVAILABLE', 'etcdserver: permission denied', { retryable: false });
        }
        return f(txn);
      };
    },
  }) as unknown as Store;
}

describe('a member that is named splits and claims none', () => {
  it('is reported by the leader\'s health as part of the job that cannot move', async () => {
    const clock = new VirtualClock();
    const store = new MemoryStore({ clock });
    const knobs = { job: 'unclaimed', maxInFlight: 2, prefetch: 0, layout: 'keys' as const, leaseDurationMs: 3000, opTimeoutMs: 1000, reconcileIntervalMs: 1000 };
    const planner = () => ({ final: true, splits: Array.from({ length: 6 }, (_, k) => ({ id: `s-${k}`, weight: 1 })) });
    const hold = (h: SplitHandle) => new Promise<void>((resolve) => h.drainSignal.addEventListener('abort', () => resolve()));
    const leader = await settle(clock, coordinators.start({ ...knobs, store, clock, instance: 'good', planner, handler: hold }));
    expect(await stepUntil(clock, () => leader.isLeader, 10_000, 100)).toBe(true);
    const broken = await settle(clock, coordinators.start({ ...knobs, store: refusingClaims(store), clock, instance: 'broken', planner, handler: hold }));
    expect(await stepUntil(clock, () => leader.health().state === 'degraded', 20_000, 100)).toBe(true);
    expect(leader.health().reason).toMatch(/^part of the job cannot move: \d+ splits? named but not claimed for over 3 s by a member with a free lane \("s-\d+" at "broken"/);
    expect(broken.held).toEqual([]);
  });
});
