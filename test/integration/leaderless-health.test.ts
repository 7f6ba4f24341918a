/**
 * Issue 28, "health tells the truth": a job with no working leader for
 * longer than two leases makes every process `degraded` with the reason (so
 * `/readyz` fails), and a leader that appears makes it `running` again. Two
 * ways to have none: no candidate can win the `leader` key, or one wins it
 * but can never write the plan (its generation never reaches the plan
 * record). MemoryStore on a VirtualClock, time driven step by step.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { VirtualClock } from '../../src/clock.js';
import { startCoordinator, type Coordinator } from '../../src/coordinator/coordinator.js';
import { silentLogger } from '../../src/coordinator/log.js';
import { SplitfleetError } from '../../src/errors.js';
import { jobPrefix, leaderKey, planKey } from '../../src/protocol/keys.js';
import { MemoryStore } from '../../src/store/memory.js';
import type { Txn, TxnResult } from '../../src/store/store.js';

const LEASE = 3000;
const flush = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/** Refuses (retryably) every write of the `leader` key, or of the `plan` key, while `blocked` says so. */
class Refusing extends MemoryStore {
  blocked: 'leader' | 'plan' | undefined;
  constructor(clock: VirtualClock, private readonly prefix: string) {
    super({ clock });
  }
  override txn(txn: Txn): Promise<TxnResult> {
    const key = this.blocked === 'leader' ? leaderKey(this.prefix) : this.blocked === 'plan' ? planKey(this.prefix) : undefined;
    if (key !== undefined && txn.success.some((o) => o.op === 'put' && o.key === key)) {
      return Promise.reject(new SplitfleetError('STORE_UNAVAILABLE', `write of ${key} refused (test)`, { retryable: true }));
    }
    return super.txn(txn);
  }
}

/** Moves virtual time to `until`, one timer at a time, settling promise chains after each. */
async function runUntil(clock: VirtualClock, until: number): Promise<void> {
  for (let i = 0; i < 100_000 && clock.step(until); i++) await flush();
  await flush();
}

let running: Coordinator[] = [];
afterEach(async () => {
  for (const c of running) await c.close().catch(() => undefined);
  running = [];
});

async function start(blocked: 'leader' | 'plan'): Promise<{ clock: VirtualClock; store: Refusing; c: Coordinator }> {
  const clock = new VirtualClock();
  const store = new Refusing(clock, jobPrefix('splitfleet', 'leaderless'));
  store.blocked = blocked;
  const starting = startCoordinator({
    store, clock, job: 'leaderless', instance: 'w0', logger: silentLogger,
    leaseDurationMs: LEASE, opTimeoutMs: 1000, rebalanceDelayMs: 0, reconcileIntervalMs: 1000,
    planner: () => ({ splits: [{ id: 's-0', weight: 1 }], final: false }),
    handler: async (h) => {
      await new Promise<void>((resolve) => h.drainSignal.addEventListener('abort', () => resolve()));
    },
  });
  let c: Coordinator | undefined;
  void starting.then((x) => (c = x));
  for (let i = 0; i < 100 && !c; i++) await runUntil(clock, clock.now() + 10);
  if (!c) throw new Error('did not start');
  running.push(c);
  return { clock, store, c };
}

describe('health with no working leader', () => {
  for (const blocked of ['leader', 'plan'] as const) {
    it(`${blocked === 'leader' ? 'no candidate can win the leader key' : 'a leader that cannot write the plan'}: running, then degraded after two leases, then running once a leader leads`, async () => {
      const { clock, store, c } = await start(blocked);
      const t0 = clock.now();
      await runUntil(clock, t0 + 2 * LEASE - 200);
      expect(c.health().state).toBe('running');
      await runUntil(clock, t0 + 2 * LEASE + 200);
      expect(c.health().state).toBe('degraded');
      expect(c.health().reason).toMatch(blocked === 'leader' ? /^the job has had no leader for more than 2 leases/ : /^the job has had (no leader|a leader \(generation 1\) that has not written the plan)/);
      expect(c.isLeader).toBe(false);

      store.blocked = undefined;
      await runUntil(clock, clock.now() + LEASE);
      expect(c.isLeader).toBe(true);
      expect(c.health()).toMatchObject({ state: 'running' });
    });
  }
});
