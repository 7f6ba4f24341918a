/**
 * work-assignment.md, "Nobody guarantees … that two workers cannot briefly
 * both believe they hold a split … A stale, split-brained, or simply wrong
 * leader cannot produce two owners." Two leaders overlap: the test takes the
 * leadership away from the elected coordinator in one transaction (as a
 * second leader would) and then
 *   - the deposed leader's publishing step is fenced: nothing it writes lands;
 *   - the second leader names splits the first member still holds to another
 *     member as well: the claim waits for the lease key to go, ownership
 *     changes only through epoch bumps, and no two tenancies commit at one epoch.
 * In-process coordinators on a real etcd.
 */
import { describe, expect, test } from 'vitest';
import { defaultFingerprint } from '../../src/config.js';
import { silentLogger } from '../../src/coordinator/log.js';
import { Metrics } from '../../src/coordinator/metrics.js';
import { LeaderView } from '../../src/coordinator/leader/leader-view.js';
import { publishAssignments } from '../../src/coordinator/leader/publish.js';
import { systemClock } from '../../src/clock.js';
import { fingerprintHash } from '../../src/protocol/records.js';
import { jobPrefix, leaderKey } from '../../src/protocol/keys.js';
import type { EtcdStore } from '../../src/store/etcd/etcd.js';
import { cmp } from '../../src/store/store.js';
import type { EtcdHandle } from '../support/etcd.js';
import { useEtcdFleet } from '../support/etcd-fleet.js';
import { Recorder } from '../support/history.js';
import { counterValue, FAST, startInProcess, type InProcessMember } from '../support/in-process.js';
import { takeLeadership } from '../support/interference.js';
import { fenceProblems } from '../support/invariants.js';
import { heldBy, isSettled, readJob } from '../support/job-state.js';
import { Ledger } from '../../src/testing/ledger.js';
import { waitUntil } from '../support/wait.js';

const COMMIT_EVERY = 10;
let etcd: EtcdHandle;
let store: EtcdStore;
const open: InProcessMember[] = [];

useEtcdFleet(open, (s, e) => {
  store = s;
  etcd = e;
});

async function settledPair(job: string, ledger: Ledger): Promise<{ w0: InProcessMember; w1: InProcessMember; recorder: Recorder }> {
  const prefix = jobPrefix('splitfleet', job);
  const recorder = await Recorder.start(store, prefix);
  const base = {
    endpoint: etcd.endpoint, job, splits: 6, seed: 13, maxInFlight: 6, unitMs: 20, commitEvery: COMMIT_EVERY,
    minUnits: 5000, maxUnits: 5000, config: { ...FAST },
  };
  const w0 = await startInProcess({ ...base, instance: 'w0' }, ledger);
  open.push(w0);
  await waitUntil('w0 to lead', () => w0.coordinator.isLeader, { timeoutMs: 20_000 });
  const w1 = await startInProcess({ ...base, instance: 'w1' }, ledger);
  open.push(w1);
  await waitUntil('the pair to settle, three splits each', async () => {
    const s = await readJob(store, prefix);
    return isSettled(s, ['w0', 'w1'], 6) && heldBy(s, 'w0').length === 3;
  }, { timeoutMs: 20_000 });
  return { w0, w1, recorder };
}

describe('two leaders briefly overlapping', () => {
  test("the deposed leader's publishing step is fenced: nothing it writes lands", async () => {
    const job = 'overlap-fenced';
    const prefix = jobPrefix('splitfleet', job);
    const { w0, recorder } = await settledPair(job, new Ledger());
    const before = await readJob(store, prefix);
    const deposedRevision = before.leader!.modRevision;
    const rogue = await takeLeadership(store, 'splitfleet', job);
    await waitUntil('w0 to notice it was deposed', () => !w0.coordinator.isLeader, { timeoutMs: 20_000 });
    const fromRev = await recorder.sync();

    // The first leader, still believing in its term, publishes a decision giving everything to w1.
    const all = [...before.splits.keys()].sort();
    // Deposed, w0 dropped its whole-job view: build the one it had while leading (paged listing, watches).
    const fingerprint = defaultFingerprint('splitfleet', job);
    const stale = new LeaderView(w0.store, prefix, fingerprintHash(fingerprint), fingerprint, (e) => {
      throw e;
    }, systemClock);
    await stale.start();
    const res = await publishAssignments({
      // The fence read afresh (as a term's first write does): only the leadership guard can refuse it here.
      store: w0.store, fence: { revision: undefined }, view: stale, fingerprint, decide: async () => {
        throw new Error('the object-form assigner decides here');
      },
      generation: before.leader!.rec.generation as number, guard: cmp.modRevision(leaderKey(prefix), deposedRevision),
      rebalanceDelayMs: 0, now: Date.now(), window: undefined, metrics: new Metrics(), log: silentLogger,
      assigner: async () => ({
        assignment: { w0: [], w1: all },
        stats: { assigned: 6, queued: 0, improvingMoves: 0, backstopHit: false, maxLoad: 0, minLoad: 0, lowerBound: 0, imbalance: 1, computeMs: 0 },
      }),
    }, new Set());
    await stale.close();
    const toRev = await recorder.sync();
    expect(res.complete).toBe(false);
    expect(res.written).toBe(0);
    expect(recorder.between(fromRev, toRev + 1, 'assign')).toEqual([]);
    const after = await readJob(store, prefix);
    for (const [m, a] of before.assigns) expect(after.assigns.get(m)).toEqual(a);
    await rogue.resign();
    await recorder.close();
  });

  test('a split named to two workers has one owner: the claim waits for the lease key to go; owners change only by epoch bumps', async () => {
    const job = 'overlap-double';
    const prefix = jobPrefix('splitfleet', job);
    const ledger = new Ledger();
    const { w0, w1, recorder } = await settledPair(job, ledger);
    const rogue = await takeLeadership(store, 'splitfleet', job);
    await waitUntil('w0 to notice it was deposed', () => !w0.coordinator.isLeader, { timeoutMs: 20_000 });
    const before = await readJob(store, prefix);
    const [x, y] = heldBy(before, 'w0') as [string, string];
    const ex = before.splits.get(x)!.epoch as number;
    const ey = before.splits.get(y)!.epoch as number;
    const w1Claims = await counterValue(w1.coordinator.metrics.claims);

    // The second leader names x and y to w1 while w0's record still names them too.
    const doubleRev = await rogue.publish('w1', [...heldBy(before, 'w1'), x, y]);
    await waitUntil('w1 to see x and y in its assignment', () => w1.coordinator.view.assign?.rec.splits.includes(x), { timeoutMs: 20_000 });
    // Give w1 every chance to act: wait for w0 to commit x three more times meanwhile.
    await waitUntil('w0 to keep committing x', () =>
      recorder.of('split', x).filter((e) => e.rev > doubleRev && e.rec?.owner === 'w0').length >= 3, { timeoutMs: 10_000 });
    let s = await readJob(store, prefix);
    expect(s.leases.get(x)).toMatchObject({ owner: 'w0', createRevision: before.leases.get(x)!.createRevision });
    expect(s.splits.get(x)).toMatchObject({ owner: 'w0', epoch: ex });
    expect(w1.coordinator.held).not.toContain(x);
    expect(await counterValue(w1.coordinator.metrics.claims), 'w1 did not even try: the lease key is not its').toBe(w1Claims);

    // x: the second leader withdraws it from w0, which drains and releases; only then does w1 claim it.
    await rogue.publish('w0', heldBy(before, 'w0').filter((id) => id !== x));
    await waitUntil('w1 to hold x', async () => (await readJob(store, prefix)).leases.get(x)?.owner === 'w1', { timeoutMs: 20_000 });
    // y: still named to both, until w0 goes away abruptly (its lease revoked, its lanes dropped unwritten).
    await w0.close();
    await waitUntil('w1 to hold y', async () => (await readJob(store, prefix)).leases.get(y)?.owner === 'w1', { timeoutMs: 20_000 });
    await waitUntil('w1 to process x and y', () => ledger.firstUnit(x, ex + 1) !== undefined && ledger.firstUnit(y, ey + 1) !== undefined, { timeoutMs: 20_000 });
    await recorder.sync();

    for (const [id, epoch, kind] of [[x, ex, 'released'], [y, ey, 'expired']] as const) {
      const leaseEvents = recorder.of('lease', id).filter((e) => e.rev > doubleRev);
      // One key, one owner at a time: w0's key went before w1's was created.
      expect(leaseEvents.map((e) => [e.type, e.rec?.owner])).toEqual([['delete', undefined], ['put', 'w1']]);
      const claim = recorder.of('split', id).find((e) => e.type === 'put' && e.rec!.epoch === epoch + 1)!;
      expect(claim.rev).toBe(leaseEvents[1]!.rev);
      expect(claim.rec!.owner).toBe('w1');
      // Nothing by w1 at w0's epoch, nothing by w0 after w1's claim.
      expect(recorder.of('split', id).filter((e) => e.rec?.owner === 'w1' && e.rec.epoch === epoch)).toEqual([]);
      expect(recorder.of('split', id).filter((e) => e.rev > claim.rev && e.rec?.owner === 'w0')).toEqual([]);
      const prior = recorder.of('split', id).filter((e) => e.type === 'put' && e.rev < claim.rev);
      const resumed = (prior[prior.length - 1]!.rec!.progress as number | null) ?? 0;
      expect(ledger.claimed(id, epoch + 1)?.progress).toBe(resumed);
      const replay = ledger.lastProcessed(id, epoch) - resumed;
      if (kind === 'released') {
        expect(replay, 'a cooperative transfer replays nothing').toBe(0);
        expect(claim.rec!.attempts).toBe(prior[prior.length - 1]!.rec!.attempts);
      } else {
        expect(replay).toBeLessThanOrEqual(COMMIT_EVERY);
        // w0 committed at epoch ey before it went: the takeover consumes no attempt (substrate.md, decision 0031).
        expect(claim.rec!.attempts, 'a takeover of a tenancy that committed consumes no attempt').toBe(prior[prior.length - 1]!.rec!.attempts);
      }
    }
    for (const id of before.splits.keys()) expect(fenceProblems(recorder.events, id), id).toEqual([]);
    s = await readJob(store, prefix);
    expect(s.leader!.rec.instance).toBe('rogue-leader');
    await rogue.resign();
    await recorder.close();
  });
});
