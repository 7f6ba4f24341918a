/**
 * work-assignment.md, invariant 3 ("Stable under unchanged input … a
 * steady-state fleet publishes nothing and therefore drains nothing"): once
 * a fleet has settled, the leader keeps deciding (its listing backstop
 * re-reads the job every reconcileIntervalMs) while the workers keep
 * committing progress, and not one assignment record is written.
 * In-process coordinators on a real etcd.
 */
import { describe, expect, test } from 'vitest';
import { jobPrefix } from '../../src/protocol/keys.js';
import type { EtcdStore } from '../../src/store/etcd/etcd.js';
import type { EtcdHandle } from '../support/etcd.js';
import { useEtcdFleet } from '../support/etcd-fleet.js';
import { Recorder } from '../support/history.js';
import { counterValue, FAST, startInProcess, type InProcessMember } from '../support/in-process.js';
import { isSettled, readJob } from '../support/job-state.js';
import { Ledger } from '../../src/testing/ledger.js';
import { waitUntil } from '../support/wait.js';

let etcd: EtcdHandle;
let store: EtcdStore;
const open: InProcessMember[] = [];

useEtcdFleet(open, (s, e) => {
  store = s;
  etcd = e;
});

describe('a steady fleet', () => {
  test('writes no assignment record while it works (the decision is a fixpoint)', async () => {
    const job = 'steady';
    const prefix = jobPrefix('splitfleet', job);
    const ledger = new Ledger();
    const recorder = await Recorder.start(store, prefix);
    const names = ['w0', 'w1', 'w2'];
    const base = {
      endpoint: etcd.endpoint, job, splits: 12, seed: 9, maxInFlight: 6, unitMs: 20, commitEvery: 10,
      minUnits: 2000, maxUnits: 6000, config: { ...FAST, reconcileIntervalMs: 700 },
    };
    for (const instance of names) open.push(await startInProcess({ ...base, instance }, ledger));
    await waitUntil('the fleet to settle', async () => isSettled(await readJob(store, prefix), names, 12), { timeoutMs: 20_000 });
    const leader = await waitUntil('one leader', () => open.find((m) => m.coordinator.isLeader), { timeoutMs: 20_000 });

    const startRev = await recorder.sync();
    const stats0 = { ...leader.coordinator.leaderStats! };
    const published0 = await counterValue(leader.coordinator.metrics.recordsPublished);
    const commitsSince = () => recorder.events.filter((e) => e.kind === 'split' && e.type === 'put' && e.rev > startRev).length;
    // A few seconds of work, measured in events rather than time: at least three leader
    // decisions (backstop re-reads) and five commits per split.
    await waitUntil('three more leader decisions and five commits per split', () =>
      leader.coordinator.leaderStats!.decisions >= stats0.decisions + 3 && commitsSince() >= 12 * 5, { timeoutMs: 20_000 });
    const endRev = await recorder.sync();

    const writes = recorder.between(startRev, endRev + 1, 'assign');
    expect(writes).toEqual([]);
    expect(leader.coordinator.leaderStats!.recordsWritten).toBe(stats0.recordsWritten);
    expect(await counterValue(leader.coordinator.metrics.recordsPublished)).toBe(published0);
    // …and therefore nothing moved: no claim, release or drain anywhere.
    const ownerChanges = recorder.between(startRev, endRev + 1, 'lease');
    expect(ownerChanges).toEqual([]);
    for (const m of open) expect(m.coordinator.held.length).toBeGreaterThan(0);
    console.log(`steady: ${leader.coordinator.leaderStats!.decisions - stats0.decisions} decisions, ${commitsSince()} commits, ${writes.length} assignment records written`);
    await recorder.close();
  });
});
