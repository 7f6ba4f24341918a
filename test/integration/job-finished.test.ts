/**
 * onJobFinished (issue 50, item 3; decision 0065), on MemoryStore with the real coordinator: the
 * hook runs once per verdict across the fleet, on the leader, and every process stays until it
 * has run; a leader lost while running it is replaced by one that runs it again with the same
 * key (at least once); a hook that throws is run again; the plan records that it ran.
 */
import { describe, expect, it } from 'vitest';
import type { Coordinator } from '../../src/coordinator/coordinator.js';
import type { JobFinished } from '../../src/coordinator/leader/finished-hook.js';
import { jobPrefix, planKey } from '../../src/protocol/keys.js';
import { MemoryStore } from '../../src/store/memory.js';
import { useMemoryFleet } from '../support/memory-fleet.js';

const coordinators = useMemoryFleet();

const knobs = { layout: 'keys' as const, leaseDurationMs: 1000, opTimeoutMs: 300, drainDeadlineMs: 500, reconcileIntervalMs: 500 };
const planner = () => ({ final: true, splits: Array.from({ length: 6 }, (_, i) => ({ id: `s${i}`, weight: 1 })) });

async function fleet(store: MemoryStore, job: string, n: number, hook: (who: string) => (f: JobFinished) => unknown): Promise<Coordinator[]> {
  const cs: Coordinator[] = [];
  for (let i = 0; i < n; i++) {
    const c = await coordinators.start({ store, job, instance: `w${i}`, ...knobs, planner, handler: async (s) => { await s.complete(1); }, onJobFinished: hook(`w${i}`) });
    cs.push(c);
  }
  return cs;
}

const planOf = async (store: MemoryStore, job: string) => JSON.parse((await store.get(planKey(jobPrefix('splitfleet', job))))!.value) as { verdict?: string; hook?: string };

describe('onJobFinished', () => {
  it('runs once per verdict across three processes, on the leader, and the plan records it', async () => {
    const store = new MemoryStore();
    const calls: { who: string; f: JobFinished }[] = [];
    const cs = await fleet(store, 'once', 3, (who) => (f) => { calls.push({ who, f }); });
    expect(await Promise.all(cs.map((c) => c.done))).toEqual(['complete', 'complete', 'complete']);
    expect(calls).toHaveLength(1);
    expect(calls[0]!.f).toMatchObject({ root: 'splitfleet', job: 'once', verdict: 'complete', planned: 6 });
    expect(calls[0]!.f.key).toMatch(/^splitfleet\/once\/verdict@\d+\.\d+$/);
    expect(await planOf(store, 'once')).toMatchObject({ verdict: 'complete', hook: 'ran' });
  });

  it('a leader lost while running it is replaced by one that runs it again, with the same key; the fleet waits for it', async () => {
    const store = new MemoryStore();
    const calls: { who: string; key: string }[] = [];
    let firstRunner: string | undefined;
    const cs = await fleet(store, 'again', 2, (who) => async (f) => {
      calls.push({ who, key: f.key });
      if (firstRunner === undefined) {
        firstRunner = who;
        await new Promise(() => undefined); // hangs: its process is about to die
      }
    });
    const until = async (pred: () => boolean) => { for (let i = 0; i < 400 && !pred(); i++) await new Promise((r) => setTimeout(r, 25)); };
    await until(() => firstRunner !== undefined);
    expect(firstRunner).toBeDefined();
    // The hook is pending: nobody has finished.
    expect(await planOf(store, 'again')).toMatchObject({ verdict: 'complete', hook: 'pending' });
    const dying = cs[Number(firstRunner!.slice(1))]!;
    const survivor = cs.find((c) => c !== dying)!;
    await dying.close(); // its lease goes at once; the survivor campaigns and runs the hook again
    await expect(survivor.done).resolves.toBe('complete');
    expect(calls).toHaveLength(2);
    expect(calls[1]!.key).toBe(calls[0]!.key);
    expect(calls[1]!.who).not.toBe(calls[0]!.who);
    expect(await planOf(store, 'again')).toMatchObject({ hook: 'ran' });
  });

  it('a hook that throws is run again until it returns', async () => {
    const store = new MemoryStore();
    let runs = 0;
    const cs = await fleet(store, 'retry', 1, () => () => {
      runs++;
      if (runs === 1) throw new Error('the report service is down');
    });
    await expect(cs[0]!.done).resolves.toBe('complete');
    expect(runs).toBe(2);
  });

  it('without a hook, the verdict is what it always was: no hook state on the plan', async () => {
    const store = new MemoryStore();
    const c = await coordinators.start({ store, job: 'plain', instance: 'w0', ...knobs, planner, handler: async (s) => { await s.complete(1); } });
    await expect(c.done).resolves.toBe('complete');
    expect((await planOf(store, 'plain')).hook).toBeUndefined();
  });
});
