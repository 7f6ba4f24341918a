/**
 * work-assignment.md, "Revocation" and "Source refuses to drain": a member
 * joins, the leader moves half the splits off the first member, and the first
 * member's source answers the drain requests in one of three ways:
 *   cooperate → a final commit, then release: zero replay;
 *   decline   → the release is forced at once: replay ≤ one commit interval;
 *   ignore    → the release is forced at drainDeadlineMs: replay ≤ one commit interval.
 * In-process coordinators (one EtcdStore each) on a real etcd.
 */
import { describe, expect, test } from 'vitest';
import type { DrainBehaviour } from '../../src/testing/synthetic.js';
import { jobPrefix } from '../../src/protocol/keys.js';
import type { EtcdStore } from '../../src/store/etcd/etcd.js';
import type { EtcdHandle } from '../support/etcd.js';
import { useEtcdFleet } from '../support/etcd-fleet.js';
import { Recorder } from '../support/history.js';
import { counterValue, FAST, startInProcess, type InProcessMember } from '../support/in-process.js';
import { fenceProblems } from '../support/invariants.js';
import { heldBy, isSettled, readJob } from '../support/job-state.js';
import { Ledger } from '../../src/testing/ledger.js';
import { waitUntil } from '../support/wait.js';

const COMMIT_EVERY = 10;
const DRAIN_DEADLINE_MS = 1500;
let etcd: EtcdHandle;
let store: EtcdStore;
const open: InProcessMember[] = [];

useEtcdFleet(open, (s, e) => {
  store = s;
  etcd = e;
});

interface Outcome {
  moved: Map<string, number>;
  replay: Map<string, number>;
  recorder: Recorder;
  ledger: Ledger;
  first: InProcessMember;
}

/** w0 (source behaviour `drain`) holds all 8 splits; w1 joins; returns once every move is claimed by w1. */
async function moveHalf(drain: DrainBehaviour): Promise<Outcome> {
  const job = `drain-${drain}`;
  const prefix = jobPrefix('splitfleet', job);
  const ledger = new Ledger();
  const recorder = await Recorder.start(store, prefix);
  const base = {
    endpoint: etcd.endpoint, job, splits: 8, seed: 3, maxInFlight: 8, unitMs: 20, commitEvery: COMMIT_EVERY,
    minUnits: 5000, maxUnits: 5000, config: { ...FAST, drainDeadlineMs: DRAIN_DEADLINE_MS },
  };
  const first = await startInProcess({ ...base, instance: 'w0', drain }, ledger);
  open.push(first);
  await waitUntil('w0 to hold all 8 splits and commit each', async () => {
    const s = await readJob(store, prefix);
    return isSettled(s, ['w0'], 8) && [...s.splits.values()].every((r) => typeof r.progress === 'number');
  }, { timeoutMs: 20_000 });
  const before = await readJob(store, prefix);
  open.push(await startInProcess({ ...base, instance: 'w1', drain: 'cooperate' }, ledger));
  await waitUntil('the fleet to settle with w1 holding its share', async () => {
    const s = await readJob(store, prefix);
    return isSettled(s, ['w0', 'w1'], 8) && heldBy(s, 'w1').length > 0;
  }, { timeoutMs: 20_000 });
  const after = await readJob(store, prefix);
  const moved = new Map(heldBy(after, 'w1').map((id) => [id, before.splits.get(id)!.epoch as number]));
  await waitUntil('w1 to process a unit of every moved split', () => [...moved].every(([id, e]) => ledger.firstUnit(id, e + 1) !== undefined), { timeoutMs: 20_000 });
  await recorder.sync();

  const replay = new Map<string, number>();
  for (const [id, epoch] of moved) {
    const claim = recorder.of('split', id).find((e) => e.type === 'put' && e.rec!.epoch === epoch + 1)!;
    expect(claim.rec!.owner).toBe('w1');
    // The release that preceded the claim: same epoch, owner cleared, graceful (no attempt consumed).
    const puts = recorder.of('split', id).filter((e) => e.type === 'put' && e.rev < claim.rev);
    const release = puts[puts.length - 1]!;
    expect(release.rec).toMatchObject({ epoch, owner: '' });
    expect(claim.rec!.attempts).toBe(release.rec!.attempts);
    const resumed = (release.rec!.progress as number | null) ?? 0;
    expect(ledger.claimed(id, epoch + 1)?.progress).toBe(resumed);
    expect(ledger.firstUnit(id, epoch + 1)).toBe(resumed + 1);
    const r = ledger.lastProcessed(id, epoch) - resumed;
    expect(r).toBeGreaterThanOrEqual(0);
    replay.set(id, r);
    expect(fenceProblems(recorder.events, id)).toEqual([]);
  }
  // Splits that stayed on w0 were never touched.
  for (const id of heldBy(after, 'w0')) expect(after.leases.get(id)!.createRevision).toBe(before.leases.get(id)!.createRevision);
  return { moved, replay, recorder, ledger, first };
}

async function revocations(m: InProcessMember, outcome: string): Promise<number> {
  return counterValue(m.coordinator.metrics.revocations, { outcome });
}

describe('revocation', () => {
  test("'cooperate': the source drains to a final commit and the transfer replays nothing", async () => {
    const { moved, replay, first, ledger, recorder } = await moveHalf('cooperate');
    expect(moved.size).toBeGreaterThan(0);
    expect([...replay.values()]).toEqual([...moved.keys()].map(() => 0));
    expect(ledger.duplicates(moved.keys())).toEqual([]);
    expect(await revocations(first, 'cooperative')).toBe(moved.size);
    expect(await revocations(first, 'forced')).toBe(0);
    expect(await revocations(first, 'declined')).toBe(0);
    expect(ledger.events.filter((e) => e.ev === 'drained' && e.instance === 'w0').length).toBe(moved.size);
    await recorder.close();
  });

  test("'decline': the release is forced at once; the uncommitted tail replays, at most one commit interval", async () => {
    const { moved, replay, first, ledger, recorder } = await moveHalf('decline');
    expect(moved.size).toBeGreaterThan(0);
    for (const [id, r] of replay) expect(r, `${id} replay`).toBeLessThanOrEqual(COMMIT_EVERY);
    expect(await revocations(first, 'declined')).toBe(moved.size);
    expect(await revocations(first, 'cooperative')).toBe(0);
    expect(ledger.events.filter((e) => e.ev === 'declined' && e.instance === 'w0').map((e) => e.id).sort()).toEqual([...moved.keys()].sort());
    // Declining is immediate: no drain waited for the deadline.
    const { values } = await first.coordinator.metrics.drainDuration.get();
    const count = values.find((v) => v.metricName === 'splitfleet_drain_seconds_count')!.value;
    const quick = values.find((v) => v.metricName === 'splitfleet_drain_seconds_bucket' && v.labels.le === 1)!.value;
    expect(count).toBe(moved.size);
    expect(quick).toBe(moved.size);
    console.log(`decline: replay per moved split ${[...replay.values()].join(',')} units (commit interval ${COMMIT_EVERY})`);
    await recorder.close();
  });

  test("'ignore' with a short drainDeadlineMs: the release is forced at the deadline; replay at most one commit interval", async () => {
    const { moved, replay, first, ledger, recorder } = await moveHalf('ignore');
    expect(moved.size).toBeGreaterThan(0);
    for (const [id, r] of replay) expect(r, `${id} replay`).toBeLessThanOrEqual(COMMIT_EVERY);
    expect(await revocations(first, 'forced')).toBe(moved.size);
    expect(await revocations(first, 'cooperative')).toBe(0);
    // Every drain ran at least the deadline (forced then, not before), and the source kept working meanwhile.
    const { values } = await first.coordinator.metrics.drainDuration.get();
    const early = values.find((v) => v.metricName === 'splitfleet_drain_seconds_bucket' && v.labels.le === 1)!.value;
    expect(early).toBe(0);
    for (const [id, epoch] of moved) {
      const release = recorder.of('split', id).filter((e) => e.type === 'put' && e.rec!.epoch === epoch && e.rec!.owner === '')[0]!;
      // The release carries the last commit, not a final one: the handler never drained.
      expect(ledger.lastProcessed(id, epoch)).toBeGreaterThanOrEqual((release.rec!.progress as number) ?? 0);
    }
    console.log(`ignore (deadline ${DRAIN_DEADLINE_MS} ms): replay per moved split ${[...replay.values()].join(',')} units (commit interval ${COMMIT_EVERY})`);
    await recorder.close();
  });
});
