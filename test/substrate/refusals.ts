/**
 * What the substrate refuses, run on every backend, each refusal typed and
 * worded so an operator can act on it: unreadable records (the plan: refused
 * at start-up and fatal while running; a split's keys: nothing to a worker
 * that does not read them, parked by the leader, which reads them all), a
 * duplicate instance id (while a
 * restart of a crashed instance takes its place at once; a live duplicate stops), impossible
 * configuration, and a planner whose output breaks the rules.
 */

import { afterEach, describe, expect, it } from 'vitest';
import { startCoordinator } from '../../src/coordinator/coordinator.js';
import type { SplitHandle } from '../../src/coordinator/types.js';
import { assignKey, leaderKey, planKey, specKey, splitKey, workerKey } from '../../src/protocol/keys.js';
import { encodeRecord, fingerprintHash, SCHEMA_VERSION } from '../../src/protocol/records.js';
import { partitionable } from '../support/partition.js';
import { waitUntil } from '../support/wait.js';
import { expectCode, FAST, finalPlan, gate, JobContext, type SubstrateFixture } from './fixture.js';

const hold = async (s: SplitHandle) => {
  await new Promise((r) => s.signal.addEventListener('abort', r));
};
const openPlan = () => ({ final: false, splits: [{ id: 's-1', weight: 1 }] });

export function refusalSuite(backend: string, fixture: () => SubstrateFixture): void {
  const contexts: JobContext[] = [];
  const job = (label: string) => {
    const ctx = new JobContext(fixture(), backend, label);
    contexts.push(ctx);
    return ctx;
  };
  afterEach(async () => {
    await Promise.all(contexts.splice(0).map((c) => c.close()));
  });

  describe(`unreadable records (${backend})`, () => {
    const planV2 = (ctx: JobContext) => JSON.stringify({ v: 2, fp: ctx.fp, generation: 1, final: true, planned: 0 });
    /**
     * `own`: a job-level key every instance reads for itself (the plan): refused at start-up.
     * `job`: a split's keys, which a worker reads only for the splits it is named for or holds,
     * and the leader reads for all: the worker is not refused and runs on; the leader parks
     * that split and runs on (issue 11; test/etcd/blast-radius.test.ts covers the parking).
     */
    const cases: { name: string; scope: 'own' | 'job'; key: (c: JobContext) => string; value: (c: JobContext) => string; code: string; says: string }[] = [
      { name: 'malformed JSON in a split record', scope: 'job', key: (c) => splitKey(c.prefix, 'x'), value: () => '{"v":1,"fp":', code: 'INVALID_RECORD', says: 'not valid JSON' },
      { name: 'another schema version of the plan', scope: 'own', key: (c) => planKey(c.prefix), value: planV2, code: 'INVALID_RECORD', says: 'schema version 2' },
      { name: 'a broken field in a split record', scope: 'job', key: (c) => splitKey(c.prefix, 'x'), value: (c) => JSON.stringify({ v: 1, fp: c.fp, id: 'x', epoch: -1, status: 'runnable', owner: '', attempts: 0 }), code: 'INVALID_RECORD', says: 'epoch' },
      {
        name: 'another job\'s fingerprint on a spec',
        scope: 'job',
        key: (c) => specKey(c.prefix, 'x'),
        value: () => encodeRecord('spec', { v: SCHEMA_VERSION, fp: fingerprintHash('some other job'), id: 'x', weight: 1, descriptor: null, generation: 1 }),
        code: 'FINGERPRINT_MISMATCH',
        says: fingerprintHash('some other job'),
      },
    ];

    /** Holds the `leader` key under a lease of the test's own, so no coordinator leads until it is revoked. */
    const holdLeadership = async (ctx: JobContext): Promise<string> => {
      const lease = await ctx.store.grantLease(30);
      await ctx.store.put(leaderKey(ctx.prefix), encodeRecord('leader', { v: SCHEMA_VERSION, fp: ctx.fp, instance: 'test-leader', generation: 1 }), { lease });
      return lease;
    };
    /** Names `splits` in w-0's assignment record, as a leader would. */
    const assign = (ctx: JobContext, splits: string[]) =>
      ctx.store.put(assignKey(ctx.prefix, 'w-0'), encodeRecord('assign', { v: SCHEMA_VERSION, fp: ctx.fp, instance: 'w-0', generation: 1, splits }));

    for (const c of cases.filter((x) => x.scope === 'own')) {
      it(`${c.name}: startCoordinator rejects with ${c.code}, naming the key and the problem`, async () => {
        const ctx = job('bad-start');
        const key = c.key(ctx);
        await ctx.store.put(key, c.value(ctx));
        const err = await expectCode(ctx.start('w-0', openPlan, hold), c.code, key, c.says);
        if (c.code === 'FINGERPRINT_MISMATCH') expect(err.message).toContain(ctx.fp);
        // Refused before joining: no presence key was written.
        expect(await ctx.store.get(workerKey(ctx.prefix, 'w-0'))).toBeUndefined();
      });
    }

    for (const c of cases.filter((x) => x.scope === 'job')) {
      it(`${c.name}: a worker that does not lead starts and runs on it; once it leads, it parks that split and runs on`, async () => {
        const ctx = job('bad-job');
        const key = c.key(ctx);
        await ctx.store.put(key, c.value(ctx));
        const leadership = await holdLeadership(ctx);
        await ctx.seedSplit('s-1');
        await ctx.seedSplit('s-2');
        await assign(ctx, ['s-1']);
        // Not refused: the worker never reads the keys of a split it is not concerned with.
        const w = await ctx.start('w-0', openPlan, hold);
        let failed: unknown;
        w.done.catch((e: unknown) => (failed = e));
        await waitUntil('w-0 to hold s-1', () => w.held.includes('s-1'));
        // Written again while it runs (a new revision): still nothing to the worker. It goes on
        // following its assignment.
        await ctx.store.put(key, c.value(ctx));
        await assign(ctx, ['s-1', 's-2']);
        await waitUntil('w-0 to hold s-2 too', () => w.held.includes('s-2'));
        expect(failed).toBeUndefined();
        expect(w.isLeader).toBe(false);
        // The leader reads every split record: the same process, once it leads, parks that split
        // (issue 11) and goes on deciding; its own lanes are untouched.
        await ctx.store.revokeLease(leadership);
        await waitUntil('w-0 to lead and decide', () => w.isLeader && (w.leaderStats?.decisions ?? 0) >= 1);
        expect(failed).toBeUndefined();
        expect(w.held).toEqual(['s-1', 's-2']);
      });
    }

    // (A split's bad record arriving while running is parked, not refused: test/etcd/blast-radius.test.ts.)
    for (const c of cases.filter((x) => x.scope === 'own')) {
      it(`${c.name} arriving while running: done fails on every instance with ${c.code}, naming the key`, async () => {
        const ctx = job('bad-live');
        const a = await ctx.start('w-0', openPlan, hold);
        const b = await ctx.start('w-1', openPlan, hold);
        await ctx.waitSplit('claimed', 's-1', (r) => r.owner !== '');
        const leader = await waitUntil('a leader', () => [a, b].find((x) => x.isLeader));
        const key = c.key(ctx);
        await ctx.store.put(key, c.value(ctx));
        await expectCode(leader.done, c.code, key, c.says);
        // A plan this build cannot read stops every instance: each follows the plan record.
        await expectCode((leader === a ? b : a).done, c.code, key, c.says);
      });
    }

    it('a key of no known kind beside the job is ignored, not refused', async () => {
      const ctx = job('notes');
      await ctx.store.put(`${ctx.prefix}operator-note`, 'not a record');
      const release = gate();
      const c = await ctx.start('w-0', finalPlan(['one']), async (s) => {
        await release.promise;
        await s.complete(1);
      });
      // Outside every kind's range (jobKeyRanges, decision 0027): the leader never even reads it.
      const leaderView = () => (c as unknown as { leader?: { jobView?: { unknownKeys: number } } }).leader?.jobView;
      await waitUntil('the leader to build its view', () => leaderView() !== undefined);
      release.open();
      expect(await c.done).toBe('complete');
      expect(leaderView()?.unknownKeys ?? 0).toBe(0);
      expect((await ctx.store.get(`${ctx.prefix}operator-note`))?.value).toBe('not a record');
    });
  });

  describe(`instance identity (${backend})`, () => {
    it('a second live process under one instance id takes the presence key; the first, seeing another run\'s nonce on it, stops with DUPLICATE_INSTANCE', async () => {
      const ctx = job('dup');
      const first = await ctx.start('dup', openPlan, hold);
      await ctx.waitSplit('claimed by the first run', 's-1', (r) => r.owner === 'dup' && r.epoch === 1);
      const presence = (await ctx.store.get(workerKey(ctx.prefix, 'dup')))!;
      // A second process under the same id starts at once, as a restart would (it cannot tell the two apart).
      const second = await ctx.start('dup', openPlan, hold);
      await expectCode(first.done, 'DUPLICATE_INSTANCE', '"dup"', 'instance ids must be unique');
      const now = (await ctx.store.get(workerKey(ctx.prefix, 'dup')))!;
      expect(now.value).not.toBe(presence.value); // the second run's nonce
      expect(now.lease).not.toBe(presence.lease);
      // The fence kept them apart: the split moved by a claim (epoch 2), and the second run holds it.
      await ctx.waitSplit('reclaimed by the second run', 's-1', (r) => r.owner === 'dup' && r.epoch === 2);
      await waitUntil('the second run to hold s-1', () => second.held.includes('s-1'));
    });

    it('a restart of a crashed instance (same id) takes its place at once and reclaims its split from the old run\'s live lease key', async () => {
      const ctx = job('restart');
      const link = partitionable(await ctx.f.connect());
      await ctx.start('pod-0', openPlan, hold, { store: link.store });
      await ctx.waitSplit('claimed by pod-0', 's-1', (r) => r.owner === 'pod-0');
      const old = (await ctx.store.get(workerKey(ctx.prefix, 'pod-0')))!;
      link.cut(); // the process is gone as far as the store is concerned; its lease is never renewed again
      const restarted = await ctx.start('pod-0', openPlan, hold);
      const now = (await ctx.store.get(workerKey(ctx.prefix, 'pod-0')))!;
      expect(now.lease).not.toBe(old.lease);
      expect(now.modRevision).toBeGreaterThan(old.modRevision);
      // It takes its own split back from the old run's still-live lease key: a reclaim, which
      // consumes an attempt (substrate.md), with no wait for the old lease to expire.
      const rec = await ctx.waitSplit('reclaimed by the restarted pod-0', 's-1', (r) => r.owner === 'pod-0' && r.epoch === 2);
      expect(rec.attempts).toBe(1);
      await waitUntil('the restarted pod-0 to hold s-1', () => restarted.held.includes('s-1'));
    });
  });

  describe(`configuration and planner refusals (${backend})`, () => {
    const bad: { name: string; knobs: Record<string, unknown>; says: string[] }[] = [
      { name: 'drainDeadlineMs below opTimeoutMs', knobs: { opTimeoutMs: 1000, drainDeadlineMs: 500 }, says: ['drainDeadlineMs', 'must be ≥ opTimeoutMs (1000)', 'got 500'] },
      { name: 'a zero lease', knobs: { leaseDurationMs: 0 }, says: ['leaseDurationMs', 'must be an integer ≥ 1000', 'got 0'] },
      { name: 'a lease that is not whole seconds', knobs: { leaseDurationMs: 2500 }, says: ['leaseDurationMs', 'whole number of seconds'] },
      { name: 'opTimeoutMs not below the lease', knobs: { leaseDurationMs: 2000, opTimeoutMs: 2000 }, says: ['opTimeoutMs', 'must be below leaseDurationMs (2000)'] },
      { name: 'a negative rebalanceDelayMs', knobs: { rebalanceDelayMs: -1 }, says: ['rebalanceDelayMs', 'must be an integer ≥ 0', 'got -1'] },
      { name: 'a negative maxInFlight', knobs: { maxInFlight: -2 }, says: ['maxInFlight', 'must be an integer ≥ 1'] },
      { name: 'an unknown option', knobs: { leaseDuration: 3000 }, says: ['leaseDuration: unknown option', 'did you mean leaseDurationMs'] },
    ];
    for (const c of bad) {
      it(`startCoordinator refuses ${c.name} with INVALID_CONFIG naming the option and the rule; nothing is written`, async () => {
        const ctx = job('config');
        await expectCode(ctx.start('w-0', openPlan, hold, c.knobs as never), 'INVALID_CONFIG', ...c.says);
        expect((await ctx.store.list(ctx.prefix)).kvs).toEqual([]);
        });
    }

    it('a handler that is not a function is refused with INVALID_CONFIG', async () => {
      const ctx = job('handler');
      const store = await ctx.f.connect();
      await expectCode(
        startCoordinator({ store, job: ctx.job, instance: 'w-0', ...FAST, planner: openPlan, handler: 'nope' as never }),
        'INVALID_CONFIG', 'handler',
      );
      expect((await ctx.store.list(ctx.prefix)).kvs).toEqual([]);
      if (store !== ctx.store) await store.close();
    });

    const planners: { name: string; splits: () => { id: string; weight: number; descriptor?: unknown }[]; code: string; says: string[] }[] = [
      { name: 'duplicate ids', splits: () => [{ id: 'a', weight: 1 }, { id: 'b', weight: 1 }, { id: 'a', weight: 2 }], code: 'PLANNER_FAILURE', says: ['[2].id', '"a" appears twice (first at [0])'] },
      { name: 'a fractional weight', splits: () => [{ id: 'a', weight: 1.5 }], code: 'PLANNER_FAILURE', says: ['"a".weight', 'got 1.5'] },
      { name: 'a negative weight', splits: () => [{ id: 'a', weight: -1 }], code: 'PLANNER_FAILURE', says: ['"a".weight', 'got -1'] },
      { name: 'an id over 1,024 UTF-8 bytes', splits: () => [{ id: 'ok/a b', weight: 1 }, { id: 'x'.repeat(1025), weight: 1 }], code: 'PLANNER_FAILURE', says: ['[1].id', 'at most 1024 UTF-8 bytes (got 1025)'] },
      { name: 'an id with a lone surrogate', splits: () => [{ id: 'a\uD800', weight: 1 }], code: 'PLANNER_FAILURE', says: ['[0].id', 'no lone surrogates'] },
      { name: 'a descriptor over 1.5 MiB', splits: () => [{ id: 'ok', weight: 1 }, { id: 'huge', weight: 1, descriptor: { blob: 'x'.repeat(1.6 * 1024 * 1024) } }], code: 'RECORD_TOO_LARGE', says: ['spec record of split "huge"', 'over the limit'] },
    ];
    for (const c of planners) {
      it(`a planner returning ${c.name}: done fails with ${c.code}, and no split is seeded`, async () => {
        const ctx = job('planner');
        const w = await ctx.start('w-0', () => ({ final: true, splits: c.splits() as never }), hold);
        await expectCode(w.done, c.code, ...c.says);
        expect((await ctx.store.list(`${ctx.prefix}spec.`)).kvs).toEqual([]);
        });
    }

    it('a planner that throws: done fails with PLANNER_FAILURE carrying its message', async () => {
      const ctx = job('planner-throws');
      const w = await ctx.start('w-0', () => {
        throw new Error('bucket listing denied');
      }, hold);
      await expectCode(w.done, 'PLANNER_FAILURE', 'bucket listing denied');
    });
  });
}
