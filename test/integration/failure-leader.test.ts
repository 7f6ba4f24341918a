/**
 * work-assignment.md, "Failure behaviour": the leader dies. No rebalancing
 * until re-election (about one lease); held work continues; assignments are
 * durable and survive the gap; the new leader's generation is higher.
 * Members are OS processes on a real etcd; the leader is SIGKILLed.
 */
import { describe, expect, test } from 'vitest';
import { jobPrefix } from '../../src/protocol/keys.js';
import type { EtcdStore } from '../../src/store/etcd/etcd.js';
import type { EtcdHandle } from '../support/etcd.js';
import { useEtcdProcessFleet } from '../support/etcd-fleet.js';
import { spawnFleetMember, type FleetMember } from '../support/fleet.js';
import { Recorder } from '../support/history.js';
import { FAST } from '../support/in-process.js';
import { fenceProblems } from '../support/invariants.js';
import { heldBy, isSettled, readJob } from '../support/job-state.js';
import { Ledger } from '../../src/testing/ledger.js';
import { waitUntil } from '../support/wait.js';

const NAMES = ['w0', 'w1', 'w2'];
let etcd: EtcdHandle;
let store: EtcdStore;
const members: FleetMember[] = [];

useEtcdProcessFleet(members, (s, e) => {
  store = s;
  etcd = e;
});

describe('the leader dies (SIGKILL)', () => {
  test('held work continues, records survive untouched until a new leader is elected, whose generation is higher', async () => {
    const job = 'leader-dies';
    const prefix = jobPrefix('splitfleet', job);
    const ledger = new Ledger();
    const recorder = await Recorder.start(store, prefix);
    const cfg = (instance: string) => ({
      endpoint: etcd.endpoint, job, instance, splits: 9, seed: 11, maxInFlight: 5, unitMs: 20, commitEvery: 10,
      minUnits: 5000, maxUnits: 5000, config: { ...FAST, rebalanceDelayMs: 0 },
    });
    const leader = ledger.follow(spawnFleetMember(cfg('w0')));
    members.push(leader);
    await leader.waitFor('leading', 20_000);
    for (const n of NAMES.slice(1)) members.push(ledger.follow(spawnFleetMember(cfg(n))));
    await waitUntil('the fleet to settle', async () => {
      const s = await readJob(store, prefix);
      return isSettled(s, NAMES, 9) && NAMES.every((n) => heldBy(s, n).length === 3);
    }, { timeoutMs: 30_000 });

    const before = await readJob(store, prefix);
    expect(before.leader!.rec.instance).toBe('w0');
    const oldGeneration = before.leader!.rec.generation as number;
    const survivors = ['w1', 'w2'];
    const survivorLanes = survivors.flatMap((n) => heldBy(before, n));
    const killRev = await recorder.sync();
    const killedAt = Date.now();
    await leader.kill();

    const elected = await waitUntil('a new leader to be elected', () =>
      recorder.of('leader').find((e) => e.type === 'put' && e.rev > killRev), { timeoutMs: 20_000 });
    // The new leader takes over the dead leader's splits (rebalanceDelayMs 0): wait for it to finish.
    await waitUntil('the fleet to settle on the two survivors', async () => isSettled(await readJob(store, prefix), survivors, 9), { timeoutMs: 30_000 });
    const end = await recorder.sync();

    // The gap: from the kill to the new leader's election nothing rewrote or deleted an assignment record.
    const gap = recorder.between(killRev, elected.rev, 'assign');
    expect(gap).toEqual([]);
    expect(recorder.of('leader').filter((e) => e.rev > killRev && e.rev < elected.rev).map((e) => e.type)).toEqual(['delete']);
    const gapMs = elected.at - killedAt;

    // Held work continued through the gap: every survivor lane processed units, and none was dropped.
    for (const id of survivorLanes) {
      const epoch = before.splits.get(id)!.epoch as number;
      const during = ledger.unitsOf(id, { epoch }).filter((u) => u.t > killedAt && u.t < elected.at);
      expect(during.length, `${id} processed units while leaderless`).toBeGreaterThan(0);
      expect(recorder.of('lease', id).filter((e) => e.rev > killRev && e.rev < end), `${id} lease key untouched`).toEqual([]);
    }
    const after = await readJob(store, prefix);
    for (const id of survivorLanes) {
      expect(after.leases.get(id)?.createRevision).toBe(before.leases.get(id)!.createRevision);
      expect(after.splits.get(id)!.epoch).toBe(before.splits.get(id)!.epoch);
    }

    // The survivors' records survived the gap unchanged (they are durable, not leased).
    for (const n of survivors) {
      const rewritten = recorder.of('assign', n).filter((e) => e.rev > killRev && e.rev < elected.rev);
      expect(rewritten).toEqual([]);
    }

    // A strictly higher generation: on the leader key, the plan record and every record it wrote.
    const newGeneration = elected.rec!.generation as number;
    expect(['w1', 'w2']).toContain(elected.rec!.instance);
    expect(newGeneration).toBeGreaterThan(oldGeneration);
    expect(after.plan!.generation).toBe(newGeneration);
    const written = recorder.between(elected.rev, end + 1, 'assign').filter((e) => e.type === 'put');
    expect(written.length).toBeGreaterThan(0);
    for (const e of written) expect(e.rec!.generation).toBe(newGeneration);
    for (const id of before.splits.keys()) expect(fenceProblems(recorder.events, id)).toEqual([]);
    console.log(`leader dies: leaderless for ${gapMs} ms (lease ${FAST.leaseDurationMs} ms); generation ${oldGeneration} → ${newGeneration}; ` +
      `${survivorLanes.length} survivor lanes processed ${survivorLanes.reduce((s, id) => s + ledger.unitsOf(id).filter((u) => u.t > killedAt && u.t < elected.at).length, 0)} units in the gap`);
    await recorder.close();
  });
});
