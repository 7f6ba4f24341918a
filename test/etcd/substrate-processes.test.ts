/**
 * The substrate with real fleet processes on a real etcd: what needs an OS
 * process to die or freeze. SIGKILL of an owner (its split is taken over once
 * its lease expires: an 'expired' claim that consumes an attempt), SIGSTOP of
 * an owner past its lease (its commits after SIGCONT are fenced; the split's
 * history never regresses), SIGKILL of the leader (a successor at generation
 * + 1; the dead leader's guarded write lands nowhere), and a duplicate
 * instance id (a live duplicate is fatal; a restart after a crash is not).
 *
 * Runs the compiled fleet member (`npx tsc -p tsconfig.json` first). One etcd
 * for the file; each test its own job. Waits are bounded; nothing asserts timing.
 */

import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { defaultFingerprint } from '../../src/config.js';
import { leaderKey, parseKey, planKey, progressKey, splitKey } from '../../src/protocol/keys.js';
import { decodeRecord, encodeRecord, fingerprintHash, SCHEMA_VERSION, type Json, type RecordKind, type RecordTypes, type SplitRecord } from '../../src/protocol/records.js';
import { EtcdStore } from '../../src/store/etcd/etcd.js';
import { cmp, op, type WatchHandle } from '../../src/store/store.js';
import { fleetProcessScript, killAllFleetMembers, spawnFleet, spawnFleetMember, type FleetMember, type FleetProcessConfig } from '../support/fleet.js';
import { waitUntil } from '../support/wait.js';
import { startEtcd, type EtcdHandle } from '../support/etcd.js';

const KNOBS = { leaseDurationMs: 2000, opTimeoutMs: 1000, rebalanceDelayMs: 0, drainDeadlineMs: 1000, reconcileIntervalMs: 1000 };

let etcd: EtcdHandle | undefined;
let store: EtcdStore;
const watches: WatchHandle[] = [];

beforeAll(async () => {
  fleetProcessScript(); // fails loudly, naming the build command, when dist/ is missing
  etcd = await startEtcd();
  store = new EtcdStore({ endpoints: [etcd.endpoint], opTimeoutMs: 5000 });
});
afterEach(async () => {
  await killAllFleetMembers();
  await Promise.all(watches.splice(0).map((w) => w.close()));
});
afterAll(async () => {
  await store?.close();
  await etcd?.stop();
});

let jobCounter = 0;

/** A split's record with its committed progress (`progress.{id}`, null before the first commit) beside it. */
type SplitState = SplitRecord & { progress: Json };

/** A job of `units`-unit splits, its key prefix and decoding helpers. */
function job(label: string, overrides: Partial<FleetProcessConfig> = {}) {
  const name = `proc-${label}-${++jobCounter}-${Math.random().toString(36).slice(2, 7)}`;
  const prefix = `splitfleet/${name}/`;
  const fp = fingerprintHash(defaultFingerprint('splitfleet', name));
  const base: Omit<FleetProcessConfig, 'instance'> = {
    endpoint: etcd!.endpoint, job: name, splits: 1, seed: 7, maxInFlight: 1, unitMs: 20, commitEvery: 5,
    minUnits: 100, maxUnits: 100, config: KNOBS, ...overrides,
  };
  const read = async <K extends RecordKind>(kind: K, key: string): Promise<RecordTypes[K] | undefined> => {
    const kv = await store.get(key);
    return kv && decodeRecord(kind, key, kv.value, fp);
  };
  return {
    name, prefix, fp, base, read,
    /** `split.{id}` and `progress.{id}` read in one transaction (one revision). */
    split: async (id: string): Promise<SplitState | undefined> => {
      const res = await store.txn({ compares: [], success: [op.get(splitKey(prefix, id)), op.get(progressKey(prefix, id))] });
      const [sk, pk] = res.reads;
      if (!sk) return undefined;
      const progress = pk ? decodeRecord('progress', pk.key, pk.value, fp).progress : null;
      return { ...decodeRecord('split', sk.key, sk.value, fp), progress };
    },
    /**
     * The split's state (record and committed progress) after every revision
     * that wrote either, from now on, in revision order (one job, one split).
     */
    async history(): Promise<SplitState[]> {
      const out: SplitState[] = [];
      let split: SplitRecord | undefined;
      let progress: Json = null;
      let lastRev = 0;
      const h = store.watch(prefix, {
        onEvent: (e) => {
          const parsed = parseKey(prefix, e.key);
          if (e.type !== 'put' || (parsed.kind !== 'split' && parsed.kind !== 'progress')) return;
          if (parsed.kind === 'split') split = decodeRecord('split', e.key, e.value ?? '', fp);
          else progress = decodeRecord('progress', e.key, e.value ?? '', fp).progress;
          if (!split) return;
          const state = { ...split, progress };
          // One entry per revision: a release or completion writes both keys at once.
          if (e.modRevision === lastRev) out[out.length - 1] = state;
          else out.push(state);
          lastRev = e.modRevision;
        },
      });
      watches.push(h);
      await h.ready;
      return out;
    },
  };
}

/** The member that first emits 'claimed'. */
const firstClaimer = (members: FleetMember[]) =>
  waitUntil('a member to claim the split', () => members.find((m) => m.has('claimed')), {
    describe: () => members.map((m) => m.describe(3)).join('\n'),
  });

/** Splits ids of the synthetic planner: obj-0 … obj-(n-1), zero-padded to the width of n-1. */
const splitId = (i: number, n: number) => `obj-${String(i).padStart(String(n - 1).length, '0')}`;

/** Progress and epoch never go down across one split's history. */
function regressions(history: SplitState[]): string[] {
  const bad: string[] = [];
  const num = (p: unknown) => (typeof p === 'number' ? p : 0);
  for (let i = 1; i < history.length; i++) {
    const [a, b] = [history[i - 1]!, history[i]!];
    if (num(b.progress) < num(a.progress) || b.epoch < a.epoch) bad.push(`${JSON.stringify(a)} → ${JSON.stringify(b)}`);
  }
  return bad;
}

describe('fleet processes on etcd', () => {
  it('SIGKILL of an owner: after its lease expires the split is claimed elsewhere (an expired claim, one attempt consumed) and resumes from committed progress', async () => {
    const j = job('sigkill');
    const id = splitId(0, 1);
    const members = spawnFleet(j.base, ['p-a', 'p-b']);
    const owner = await firstClaimer(members);
    const other = members.find((m) => m !== owner)!;
    await owner.waitFor((e) => e.ev === 'unit' && (e.unit as number) >= 12, 15_000, 'twelve units processed');
    await owner.kill('SIGKILL');
    const atDeath = (await j.split(id))!;
    expect(atDeath).toMatchObject({ epoch: 1, owner: owner.instance, attempts: 0, status: 'runnable' });
    expect(atDeath.progress as number).toBeGreaterThanOrEqual(10);
    const claimed = await other.waitFor((e) => e.ev === 'claimed' && e.id === id, 20_000, 'the takeover');
    expect(claimed).toMatchObject({ epoch: 2, progress: atDeath.progress });
    const taken = await waitUntil('the takeover record', async () => {
      const r = await j.split(id);
      return r && (r.epoch >= 2 || r.status !== 'runnable') ? r : undefined;
    });
    // The dead owner had committed (progress ≥ 10 at its death): the takeover consumes no attempt (decision 0031).
    expect(taken.attempts).toBe(0);
    await other.waitFor('verdict', 20_000);
    expect(other.eventsOf('verdict')[0]!.verdict).toBe('complete');
    expect(await j.split(id)).toMatchObject({ status: 'completed', epoch: 2, attempts: 0, owner: '', progress: 100 });
    // At least once: every unit was processed by someone; the replayed tail is at most one commit interval.
    const units = new Set([...owner.eventsOf('unit'), ...other.eventsOf('unit')].map((e) => e.unit as number));
    expect(units.size).toBe(100);
    const replayed = owner.eventsOf('unit').filter((e) => (e.unit as number) > (atDeath.progress as number)).length;
    expect(replayed).toBeLessThanOrEqual(j.base.commitEvery);
  });

  it('SIGSTOP of an owner past its lease, then SIGCONT: its commits are fenced, the split moved at epoch + 1, progress never regressed', async () => {
    const j = job('sigstop', { minUnits: 150, maxUnits: 150, commitEvery: 4 });
    const id = splitId(0, 1);
    const history = await j.history();
    const members = spawnFleet(j.base, ['p-a', 'p-b']);
    const owner = await firstClaimer(members);
    const other = members.find((m) => m !== owner)!;
    await owner.waitFor((e) => e.ev === 'unit' && (e.unit as number) >= 10, 15_000, 'ten units processed');
    owner.pause();
    const frozen = (await j.split(id))!;
    expect(frozen).toMatchObject({ epoch: 1, owner: owner.instance });
    await other.waitFor((e) => e.ev === 'claimed' && e.id === id, 20_000, 'the takeover while the owner is stopped');
    const moved = await waitUntil('the takeover in the history', () => {
      const i = history.findIndex((r) => r.epoch === 2);
      return i >= 0 ? i : undefined;
    });
    // An attempt only if the stopped owner's tenancy had committed nothing (decision 0031).
    expect(history[moved]).toMatchObject({ owner: other.instance, attempts: ((frozen.progress as number | null) ?? 0) > 0 ? 0 : 1, progress: frozen.progress });
    owner.resume();
    await other.waitFor('verdict', 20_000);
    await owner.waitFor('verdict', 20_000, "the resumed owner's verdict (it rejoins and sees the job end)");
    expect([owner, other].map((m) => m.eventsOf('verdict')[0]!.verdict)).toEqual(['complete', 'complete']);
    // Whatever the resumed owner did, none of it landed: after the move every record is the new tenancy's.
    expect(history.slice(moved).every((r) => r.epoch === 2 && r.owner !== owner.instance)).toBe(true);
    expect(regressions(history)).toEqual([]);
    expect(owner.eventsOf('completed')).toEqual([]);
    expect(history.at(-1)).toMatchObject({ status: 'completed', epoch: 2, progress: 150 });
    // The stale owner's last commit is the progress the new owner resumed from; nothing it did after SIGCONT counts.
    expect(Math.max(...history.filter((r) => r.epoch === 1).map((r) => r.progress as number))).toBe(frozen.progress);
  });

  it('SIGKILL of the leader: a successor leads at generation + 1, and the dead leader\'s guarded write lands nowhere', async () => {
    const j = job('leader', { splits: 3, minUnits: 60, maxUnits: 60, unitMs: 25 });
    const members = spawnFleet(j.base, ['p-a', 'p-b', 'p-c']);
    const leader = await waitUntil('a leader', () => members.find((m) => m.has('leading')), {
      describe: () => members.map((m) => m.describe(3)).join('\n'),
    });
    const leaderKv = await waitUntil('the leader key', () => store.get(leaderKey(j.prefix)));
    const gen = decodeRecord('leader', leaderKey(j.prefix), leaderKv.value, j.fp);
    expect(gen.instance).toBe(leader.instance);
    await waitUntil('the plan at the leader generation', async () => (await j.read('plan', planKey(j.prefix)))?.generation === gen.generation);
    await leader.kill('SIGKILL');
    const next = await waitUntil('a leader at a higher generation', async () => {
      const r = await j.read('leader', leaderKey(j.prefix));
      return r && r.generation > gen.generation ? r : undefined;
    }, { timeoutMs: 20_000 });
    expect(next.generation).toBe(gen.generation + 1);
    expect(next.instance).not.toBe(leader.instance);
    const successor = members.find((m) => m.instance === next.instance)!;
    await successor.waitFor('leading');
    await waitUntil('the plan generation bumped', async () => (await j.read('plan', planKey(j.prefix)))?.generation === gen.generation + 1);
    const ghost = `${j.prefix}assign.ghost`;
    const value = encodeRecord('assign', { v: SCHEMA_VERSION, fp: j.fp, instance: 'ghost', generation: gen.generation, splits: [] });
    const res = await store.txn({ compares: [cmp.modRevision(leaderKey(j.prefix), leaderKv.modRevision)], success: [op.put(ghost, value)] });
    expect(res.won).toBe(false);
    expect(await store.get(ghost)).toBeUndefined();
    const survivors = members.filter((m) => m !== leader);
    for (const m of survivors) await m.waitFor('verdict', 25_000);
    expect(survivors.map((m) => m.eventsOf('verdict')[0]!.verdict)).toEqual(['complete', 'complete']);
  });

  it('a duplicate instance id: the second live process takes the presence key and the first stops (DUPLICATE_INSTANCE); a restart after a crash takes its place at once', async () => {
    const j = job('dup', { minUnits: 5000, maxUnits: 5000 });
    const id = splitId(0, 1);
    const first = spawnFleetMember({ ...j.base, instance: 'pod-0' });
    await first.waitFor('claimed', 15_000);
    const second = spawnFleetMember({ ...j.base, instance: 'pod-0' });
    const fatal = await first.waitFor('fatal', 15_000);
    expect(fatal.code).toBe('DUPLICATE_INSTANCE');
    expect(fatal.message).toContain('"pod-0"');
    expect((await first.exited).code).toBe(3);
    expect(second.running).toBe(true);
    expect(second.has('fatal')).toBe(false);
    const taken = await second.waitFor((e) => e.ev === 'claimed' && e.id === id, 15_000);
    expect(taken.epoch).toBe(2);
    // Crash and restart under the same id at once: the old presence key and lease keys are still live.
    await second.kill('SIGKILL');
    const restarted = spawnFleetMember({ ...j.base, instance: 'pod-0' });
    await restarted.waitFor('started', 15_000);
    const reclaimed = await restarted.waitFor((e) => e.ev === 'claimed' && e.id === id, 15_000);
    expect(reclaimed.epoch).toBe(3);
    expect(restarted.has('fatal')).toBe(false);
    // Two takeovers (the duplicate's, the restart's reclaim), each charged only if the tenancy it ended had committed nothing.
    const after = (await j.split(id))!;
    expect(after).toMatchObject({ owner: 'pod-0', epoch: 3 });
    expect(after.attempts).toBeLessThanOrEqual(2);
  });
});
