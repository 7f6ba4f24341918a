/**
 * The substrate's ownership rules, run on every backend: one winner per
 * claim race, fenced commits after a lost lease (progress never regresses),
 * quarantine at max_attempts, the job verdict on every instance (idle
 * standbys included), and leader failover with a fenced deposed leader.
 *
 * Each test is its own job. Waits are bounded polls; nothing asserts timing.
 */

import { afterEach, describe, expect, it } from 'vitest';
import type { Coordinator } from '../../src/coordinator/coordinator.js';
import type { SplitHandle } from '../../src/coordinator/types.js';
import { isSplitfleetError } from '../../src/errors.js';
import { assignKey, leaderKey, leaseKey, planKey, workerKey } from '../../src/protocol/keys.js';
import { encodeRecord, SCHEMA_VERSION, type ProgressRecord, type SplitRecord } from '../../src/protocol/records.js';
import { cmp, op, type Store } from '../../src/store/store.js';
import { partitionable } from '../support/partition.js';
import { sleep, waitUntil } from '../support/wait.js';
import { counterValue, finalPlan, gate, JobContext, type SubstrateFixture } from './fixture.js';

/**
 * Committed progress (`progress.{id}`) and the epoch that wrote it never go
 * down, and neither does `split.{id}`'s epoch; returns the offending pair if
 * they do.
 */
function regression(splits: { revision: number; rec: SplitRecord }[], progress: { revision: number; rec: ProgressRecord }[]): string | undefined {
  const num = (p: unknown) => (typeof p === 'number' ? p : 0);
  for (let i = 1; i < progress.length; i++) {
    const a = progress[i - 1]!.rec;
    const b = progress[i]!.rec;
    if (a.id !== b.id) continue;
    if (num(b.progress) < num(a.progress) || b.epoch < a.epoch) return `${JSON.stringify(a)} → ${JSON.stringify(b)}`;
  }
  for (let i = 1; i < splits.length; i++) {
    const a = splits[i - 1]!.rec;
    const b = splits[i]!.rec;
    if (a.id === b.id && b.epoch < a.epoch) return `${JSON.stringify(a)} → ${JSON.stringify(b)}`;
  }
  return undefined;
}

/** The progress committed before store revision `revision` (what a claim at that revision resumed from). */
function progressBefore(history: { revision: number; rec: ProgressRecord }[], revision: number): unknown {
  return history.filter((h) => h.revision < revision).at(-1)?.rec.progress ?? null;
}

/** Revokes the etcd lease the live `lease.{id}` key hangs on (the owner's process lease): as if it expired. */
async function expireOwnerLease(ctx: JobContext, id: string): Promise<string> {
  const kv = await waitUntil(`lease key of ${id}`, () => ctx.store.get(leaseKey(ctx.prefix, id)));
  expect(kv.lease, 'a lease key is attached to its owner process lease').toBeDefined();
  await ctx.store.revokeLease(kv.lease!);
  return kv.lease!;
}

export function ownershipSuite(backend: string, fixture: () => SubstrateFixture): void {
  const contexts: JobContext[] = [];
  const job = (label: string) => {
    const ctx = new JobContext(fixture(), backend, label);
    contexts.push(ctx);
    return ctx;
  };
  afterEach(async () => {
    await Promise.all(contexts.splice(0).map((c) => c.close()));
  });

  describe(`claims and fencing (${backend})`, () => {
    it('eight claim transactions racing for one split: exactly one wins, seven lose as a value, epoch bumped once', async () => {
      const ctx = job('race');
      await ctx.seedSplit('only');
      const clients: Store[] = await Promise.all(Array.from({ length: 8 }, () => ctx.f.connect()));
      const leases = await Promise.all(clients.map((c) => c.grantLease(5)));
      const kv = (await ctx.store.get(`${ctx.prefix}split.only`))!;
      // Every racer read the same record and no lease key (null: read, absent): all eight
      // transactions are in flight at once, none reads after another's landed.
      const read = { rec: (await ctx.split('only'))!, modRevision: kv.modRevision, leaseOwner: null };
      const results = await Promise.all(clients.map((c, i) => ctx.claimTxn(c, 'only', `w-${i}`, leases[i]!, read)));
      const won = results.flatMap((r, i) => (r !== 'unclaimable' && r.won ? [i] : []));
      const lost = results.filter((r) => r !== 'unclaimable' && !r.won);
      expect(won).toHaveLength(1);
      expect(lost).toHaveLength(7);
      const rec = (await ctx.split('only'))!;
      expect(rec).toMatchObject({ epoch: 1, owner: `w-${won[0]}`, attempts: 0, status: 'runnable' });
      expect(await ctx.read('lease', leaseKey(ctx.prefix, 'only'))).toMatchObject({ owner: `w-${won[0]}`, epoch: 1 });
      // A loser that reads again sees a live lease of another owner: unclaimable, still no exception.
      const again = await Promise.all(clients.map((c, i) => (i === won[0] ? 'skip' : ctx.claimTxn(c, 'only', `w-${i}`, leases[i]!))));
      expect(again.filter((r) => r !== 'skip').every((r) => r === 'unclaimable')).toBe(true);
      expect((await ctx.split('only'))!.epoch).toBe(1);
      await Promise.all(clients.map((c, i) => c.revokeLease(leases[i]!)));
      if (clients[0] !== ctx.store) await Promise.all(clients.map((c) => c.close()));
    });

    it('eight coordinators each told to claim the same split (split-brained assignments): one claim wins, epoch 1', async () => {
      const ctx = job('brain');
      await ctx.seedSplit('only');
      const history = await ctx.splitHistory();
      const instances = Array.from({ length: 8 }, (_, i) => `w-${i}`);
      // Forged records: every instance's assignment names the split, as eight confused leaders might write.
      for (const instance of instances) {
        await ctx.store.put(assignKey(ctx.prefix, instance), encodeRecord('assign', { v: SCHEMA_VERSION, fp: ctx.fp, instance, generation: 0, splits: ['only'] }));
      }
      const runs: string[] = [];
      const fleet = await Promise.all(instances.map((instance) => ctx.start(instance, finalPlan(['only']), async (s) => {
        runs.push(instance);
        await s.complete('done');
      })));
      expect(await Promise.all(fleet.map((c) => c.done))).toEqual(instances.map(() => 'complete'));
      expect(runs).toHaveLength(1);
      expect(await ctx.state('only')).toMatchObject({ epoch: 1, status: 'completed', owner: '', attempts: 0, progress: 'done', progressEpoch: 1 });
      // One claim landed (the only put naming an owner); every other racer lost or saw the live lease.
      expect(history.filter((h) => h.rec.owner !== '').map((h) => h.rec.owner)).toEqual(runs);
      const wins = await Promise.all(fleet.map((c) => counterValue(c.metrics.claims, { outcome: 'won' })));
      expect(wins.reduce((a, b) => a + b, 0)).toBe(1);
    });

    it('an owner paused past its lease cannot commit: nothing written, signal aborted, claimed elsewhere at epoch + 1, progress never regresses', async () => {
      const ctx = job('fence');
      const history = await ctx.splitHistory();
      const commits = await ctx.progressHistory();
      const firstRan = gate<string>();
      const resume = gate();
      const fenced: { error?: unknown; abortedAfter?: boolean } = {};
      const runs: { instance: string; epoch: number; progress: unknown; attempts: number }[] = [];
      const handler = (instance: string) => async (s: SplitHandle) => {
        runs.push({ instance, epoch: s.epoch, progress: s.progress, attempts: s.attempts });
        if (s.epoch === 1) {
          for (let p = 1; p <= 3; p++) await s.commit(p);
          firstRan.open(instance);
          await resume.promise;
          // Back from the pause, past its lease: the next commit must land nowhere.
          await s.commit(4).then(() => (fenced.error = 'the commit was written'), (e: unknown) => (fenced.error = e));
          fenced.abortedAfter = s.signal.aborted;
          return;
        }
        let p = s.progress as number;
        while (p < 5) await s.commit(++p);
        await s.complete(6);
      };
      // Each instance talks to the store through a link the test can cut: a paused process does no I/O.
      const links = { a: partitionable(await ctx.f.connect()), b: partitionable(await ctx.f.connect()) };
      const a = await ctx.start('a', finalPlan(['s']), handler('a'), { maxInFlight: 1, store: links.a.store });
      const b = await ctx.start('b', finalPlan(['s']), handler('b'), { maxInFlight: 1, store: links.b.store });
      const first = (await firstRan.promise) as 'a' | 'b';
      const other = first === 'a' ? 'b' : 'a';
      expect(await ctx.state('s')).toMatchObject({ epoch: 1, owner: first, progress: 3, progressEpoch: 1 });
      links[first].cut(); // paused
      await expireOwnerLease(ctx, 's'); // its lease runs out meanwhile
      const claimed = await waitUntil('the split claimed elsewhere', () => history.find((h) => h.rec.epoch === 2));
      const taken = claimed.rec;
      // The ended tenancy committed progress 3: the takeover consumes no attempt (substrate.md, decision 0031).
      expect(taken).toMatchObject({ owner: other, attempts: 0 });
      expect(progressBefore(commits, claimed.revision)).toBe(3); // what the takeover resumed from
      links[first].heal(); // resumed
      resume.open();
      await waitUntil('the stale commit to return', () => fenced.abortedAfter !== undefined);
      expect(isSplitfleetError(fenced.error, 'LEASE_LOST'), String(fenced.error)).toBe(true);
      expect(fenced.abortedAfter).toBe(true);
      expect(await Promise.all([a.done, b.done])).toEqual(['complete', 'complete']);
      expect(await ctx.state('s')).toMatchObject({ status: 'completed', epoch: 2, attempts: 0, owner: '', progress: 6, progressEpoch: 2 });
      expect(runs.map((r) => [r.instance, r.epoch])).toEqual([[first, 1], [other, 2]]);
      expect(runs[1]).toMatchObject({ progress: 3, attempts: 0 }); // resumed from the last committed progress
      expect(await counterValue({ a, b }[other].metrics.claims, { kind: 'expired', outcome: 'won' })).toBe(1);
      // Through the watch: the stale commit never landed, and nothing ever went backwards.
      expect(commits.some((h) => h.rec.epoch === 1 && h.rec.progress === 4)).toBe(false);
      expect(regression(history, commits)).toBeUndefined();
      const claim2 = history.findIndex((h) => h.rec.epoch === 2);
      expect(history.slice(claim2).every((h) => h.rec.epoch === 2 && h.rec.owner !== first)).toBe(true);
      expect(commits.filter((h) => h.revision > claimed.revision).every((h) => h.rec.epoch === 2)).toBe(true);
      // The terminal write: split completed and its final progress, in one transaction.
      expect(history.at(-1)!.rec).toMatchObject({ status: 'completed' });
      expect(commits.at(-1)!.rec).toMatchObject({ progress: 6, epoch: 2 });
      expect(commits.at(-1)!.revision).toBe(history.at(-1)!.revision);
      // Commits never touched split.{id}: it moved only with ownership (seeded, claim 1, claim 2, completion).
      expect(history.map((h) => [h.rec.epoch, h.rec.owner, h.rec.status])).toEqual([
        [0, '', 'runnable'], [1, first, 'runnable'], [2, other, 'runnable'], [2, '', 'completed'],
      ]);
    });
    it('an owner that finds its lease gone rejoins with a fresh session instead of retrying with the dead lease', async () => {
      const ctx = job('rejoin');
      const open = () => ({ final: false, splits: [{ id: 'x', weight: 1 }, { id: 'y', weight: 1 }] });
      const busy = async (s: SplitHandle) => {
        // Commits as it goes, so a commit soon meets the lost lease (fenced), before any renewal would notice.
        for (let p = 1; !s.signal.aborted; p++) {
          await sleep(20);
          await s.commit(p).catch(() => undefined);
        }
      };
      // A long rebalance delay keeps the owner's assignment naming its split after its presence goes.
      const knobs = { maxInFlight: 1, rebalanceDelayMs: 10_000 };
      const leader = await ctx.start('leader', open, busy, knobs);
      await waitUntil('the first instance to lead', () => leader.isLeader);
      const link = partitionable(await ctx.f.connect(), { haltAfterLeaseLost: 50 });
      const owner = await ctx.start('owner', open, busy, { ...knobs, store: link.store });
      await waitUntil('both instances to hold a split', () => leader.held.length === 1 && owner.held.length === 1);
      const presence = (await ctx.store.get(workerKey(ctx.prefix, 'owner')))!;
      await ctx.store.revokeLease(presence.lease!);
      const rejoined = await waitUntil('the owner back with a fresh session lease', async () => {
        const kv = await ctx.store.get(workerKey(ctx.prefix, 'owner'));
        return kv && kv.lease !== presence.lease ? kv : undefined;
      }, { describe: () => `the owner's requests were answered LEASE_LOST ${link.leaseLost} times (stuck retrying with its dead lease?)` });
      expect(rejoined.lease).toBeDefined();
      // A claim or two may meet the dead lease; a worker that kept retrying would pile them up.
      expect(link.leaseLost).toBeLessThanOrEqual(3);
    });
  });

  describe(`quarantine and the verdict (${backend})`, () => {
    it('a handler that always throws: quarantined at maxAttempts, never offered again; the final plan is stalled on every instance', async () => {
      const ctx = job('throws');
      const calls = new Map<string, string[]>();
      const runsOfBad: string[] = []; // instance, epoch and attempts of each run: what to read when the count is off
      const handler = (instance: string) => async (s: SplitHandle) => {
        calls.set(instance, [...(calls.get(instance) ?? []), s.id]);
        if (s.id === 'bad') runsOfBad.push(`${instance} epoch ${s.epoch} attempts ${s.attempts}`);
        if (s.id === 'bad') throw new Error('cannot parse this object');
        await s.complete(1);
      };
      const ids = ['bad', 'good-1', 'good-2'];
      // Six one-lane members, three splits: 'bad' runs at most three times, so at least one member runs nothing.
      const members = ['w-0', 'w-1', 'w-2', 'w-3', 'w-4', 'w-5'];
      const fleet: Coordinator[] = [];
      for (const i of members) fleet.push(await ctx.start(i, finalPlan(ids), handler(i), { maxAttempts: 3, maxInFlight: 1 }));
      expect(await Promise.all(fleet.map((c) => c.done))).toEqual(members.map(() => 'stalled'));
      expect(await ctx.split('bad')).toMatchObject({ status: 'quarantined', attempts: 3, owner: '', reason: 'cannot parse this object' });
      expect(await ctx.split('good-1')).toMatchObject({ status: 'completed' });
      expect(await ctx.split('good-2')).toMatchObject({ status: 'completed' });
      const all = [...calls.values()].flat();
      // A run of 'bad' that threw while its split was being revoked (the leader moved it as members
      // joined) is a failed drain: a forced release, no attempt (docs/protocol.md, Revocation). Every
      // other run costs one. The good splits complete at once, so every forced release is one of 'bad'.
      let forced = 0;
      for (const c of fleet) for (const v of (await c.metrics.revocations.get()).values) if (v.labels.outcome !== 'cooperative') forced += v.value;
      expect(all.filter((id) => id === 'bad'), runsOfBad.join('; ')).toHaveLength(3 + forced);
      expect(forced, 'revocations of a split that throws at once').toBeLessThanOrEqual(2);
      expect(fleet.some((c) => !calls.has(c.instance)), 'an idle standby that ran nothing').toBe(true);
    });

    it('an open plan never offers a quarantined split again', async () => {
      const ctx = job('parked');
      let badRuns = 0;
      const open = () => ({ final: false, splits: [{ id: 'bad', weight: 1 }, { id: 'keep', weight: 1 }] });
      const handler = async (s: SplitHandle) => {
        if (s.id === 'bad') {
          badRuns++;
          await s.fail('corrupt');
          return;
        }
        await new Promise((r) => s.signal.addEventListener('abort', r));
      };
      await ctx.start('w-0', open, handler, { maxAttempts: 2, replanIntervalMs: 200 });
      await ctx.start('w-1', open, handler, { maxAttempts: 2, replanIntervalMs: 200 });
      await ctx.waitSplit('quarantined', 'bad', (r) => r.status === 'quarantined');
      await waitUntil('no assignment record naming the quarantined split', async () => {
        const page = await ctx.store.list(`${ctx.prefix}assign.`);
        return page.kvs.length > 0 && page.kvs.every((kv) => !kv.value.includes('"bad"'));
      });
      await sleep(1500); // replans and backstops come and go
      expect(badRuns).toBe(2);
      expect(await ctx.split('bad')).toMatchObject({ status: 'quarantined', attempts: 2, reason: 'corrupt' });
    });

    it('repeated expiries quarantine the split by a claim at maxAttempts; the verdict is stalled', async () => {
      const ctx = job('expiries');
      const holders: { instance: string; epoch: number }[] = [];
      const handler = (instance: string) => async (s: SplitHandle) => {
        holders.push({ instance, epoch: s.epoch });
        await new Promise((r) => s.signal.addEventListener('abort', r));
      };
      const fleet: Coordinator[] = [];
      for (const i of ['w-0', 'w-1']) fleet.push(await ctx.start(i, finalPlan(['s']), handler(i), { maxAttempts: 2 }));
      await ctx.waitSplit('claimed', 's', (r) => r.epoch === 1 && r.owner !== '');
      await expireOwnerLease(ctx, 's');
      await ctx.waitSplit('claimed again after the expiry', 's', (r) => r.epoch === 2 && r.owner !== '');
      expect((await ctx.split('s'))!.attempts).toBe(1);
      await expireOwnerLease(ctx, 's');
      const parked = await ctx.waitSplit('quarantined', 's', (r) => r.status === 'quarantined');
      expect(parked).toMatchObject({ attempts: 2, owner: '', epoch: 2 });
      expect(parked.reason).toContain('max_attempts (2)');
      expect(await Promise.all(fleet.map((c) => c.done))).toEqual(['stalled', 'stalled']);
      expect(holders.map((h) => h.epoch)).toEqual([1, 2]);
    });

    it('all completed: complete on every instance, idle standbys included', async () => {
      const ctx = job('complete');
      const ran = new Set<string>();
      const fleet: Coordinator[] = [];
      for (const i of ['w-0', 'w-1', 'w-2']) {
        fleet.push(await ctx.start(i, finalPlan(['one']), async (s) => {
          ran.add(i);
          await s.commit(1);
          await s.complete(2);
        }));
      }
      expect(await Promise.all(fleet.map((c) => c.done))).toEqual(['complete', 'complete', 'complete']);
      expect(ran.size).toBe(1);
      expect(await ctx.state('one')).toMatchObject({ status: 'completed', progress: 2, epoch: 1, attempts: 0 });
      // A standby that joins after the end sees the verdict at once.
      const late = await ctx.start('w-late', finalPlan(['one']), async () => undefined);
      expect(await late.done).toBe('complete');
    });
  });

  describe(`leadership (${backend})`, () => {
    it('leader failover: the next leader has a higher generation, and the deposed leader\'s guarded write lands nowhere', async () => {
      const ctx = job('failover');
      const open = () => ({ final: false, splits: [{ id: 's-1', weight: 1 }, { id: 's-2', weight: 2 }] });
      const hold = async (s: SplitHandle) => {
        await new Promise((r) => s.signal.addEventListener('abort', r));
      };
      const fleet: Coordinator[] = [];
      for (const i of ['w-0', 'w-1', 'w-2']) fleet.push(await ctx.start(i, open, hold));
      const leader = await waitUntil('a leader', () => fleet.find((c) => c.isLeader));
      const oldKey = (await ctx.store.get(leaderKey(ctx.prefix)))!;
      const oldGen = (await ctx.read('leader', leaderKey(ctx.prefix)))!.generation;
      await waitUntil('the plan record at the leader generation', async () => (await ctx.read('plan', planKey(ctx.prefix)))?.generation === oldGen);
      await leader.close();
      const next = await waitUntil('a new leader', () => fleet.find((c) => c !== leader && c.isLeader));
      const rec = await waitUntil('the new leader key', () => ctx.read('leader', leaderKey(ctx.prefix)));
      expect(rec).toMatchObject({ instance: next.instance, generation: oldGen + 1 });
      await waitUntil('the plan generation bumped', async () => (await ctx.read('plan', planKey(ctx.prefix)))?.generation === oldGen + 1);
      // The deposed leader's write, guarded by its own leader key revision, writes nothing.
      const ghost = assignKey(ctx.prefix, 'ghost');
      const value = encodeRecord('assign', { v: SCHEMA_VERSION, fp: ctx.fp, instance: 'ghost', generation: oldGen, splits: ['s-1'] });
      const res = await ctx.store.txn({ compares: [cmp.modRevision(leaderKey(ctx.prefix), oldKey.modRevision)], success: [op.put(ghost, value)] });
      expect(res.won).toBe(false);
      expect(await ctx.store.get(ghost)).toBeUndefined();
      // The same write guarded by the live leader key lands (the guard, not the payload, refused it).
      const liveKey = (await ctx.store.get(leaderKey(ctx.prefix)))!;
      expect((await ctx.store.txn({ compares: [cmp.modRevision(leaderKey(ctx.prefix), liveKey.modRevision)], success: [op.delete(ghost)] })).won).toBe(true);
    });

    it('a leader whose lease expires is deposed: another instance leads at generation + 1', async () => {
      const ctx = job('deposed');
      const open = () => ({ final: false, splits: [{ id: 's-1', weight: 1 }] });
      const fleet: Coordinator[] = [];
      for (const i of ['w-0', 'w-1']) fleet.push(await ctx.start(i, open, async (s) => void (await new Promise((r) => s.signal.addEventListener('abort', r)))));
      const leader = await waitUntil('a leader', () => fleet.find((c) => c.isLeader));
      const before = (await ctx.store.get(leaderKey(ctx.prefix)))!;
      const gen = (await ctx.read('leader', leaderKey(ctx.prefix)))!.generation;
      await ctx.store.revokeLease(before.lease!);
      // The old leader's session is lost; it rejoins with a fresh lease and may win the next
      // term itself, so "deposed" means: its old term is over and any term it holds is new.
      const rec = await waitUntil('a leader at a higher generation', async () => {
        const r = await ctx.read('leader', leaderKey(ctx.prefix));
        return r && r.generation > gen ? r : undefined;
      });
      expect(rec.generation).toBe(gen + 1);
      await waitUntil('the old leader to lead only under the new term', () => !leader.isLeader || rec.instance === leader.instance);
      await waitUntil('the plan generation bumped', async () => (await ctx.read('plan', planKey(ctx.prefix)))?.generation === gen + 1);
      const res = await ctx.store.txn({ compares: [cmp.modRevision(leaderKey(ctx.prefix), before.modRevision)], success: [op.put(planKey(ctx.prefix), 'clobbered')] });
      expect(res.won).toBe(false);
      expect((await ctx.read('plan', planKey(ctx.prefix)))!.generation).toBe(gen + 1);
    });
  });
}
