/**
 * Jobs as data and a standing fleet on a real etcd (issue 50; decision 0064): two processes
 * serve two kinds; a third process, which runs nothing, submits three jobs of those kinds and
 * awaits each verdict. Each job runs with its planner given its parameters; the serving
 * processes share their lanes among the jobs they joined; each job's onFinished runs once; a submission repeated is idempotent,
 * a different one under a taken name is refused with both shown.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { silentLogger } from '../../src/coordinator/log.js';
import { serve, type Server } from '../../src/coordinator/serve.js';
import type { SplitHandle } from '../../src/coordinator/types.js';
import { submitJob } from '../../src/operator/submit.js';
import { waitForJob } from '../../src/operator/wait.js';
import { EtcdStore } from '../../src/store/etcd/etcd.js';
import { runCli } from '../support/cli.js';
import { startEtcd, type EtcdHandle } from '../support/etcd.js';

let etcd: EtcdHandle;
beforeAll(async () => {
  etcd = await startEtcd();
});
afterAll(async () => {
  await etcd?.stop();
});

describe('a standing fleet serves submitted jobs (etcd)', () => {
  it('three jobs of two kinds, submitted from elsewhere, each awaited to its verdict; lanes shared', async () => {
    const root = `sf${Date.now().toString(36)}`;
    const ran = new Map<string, string[]>(); // job → split ids handled
    const lanesSeen: number[][] = [];
    const finished: string[] = [];
    const record = (job: string, id: string) => ran.set(job, [...(ran.get(job) ?? []), id]);
    const kinds = {
      export: {
        planner: (p: { tables: number }) => ({ final: true, splits: Array.from({ length: p.tables }, (_, i) => ({ id: `t${i}`, weight: 1 + i })) }),
        handler: async (s: SplitHandle) => {
          await new Promise((r) => setTimeout(r, 20));
          await s.complete(1);
        },
      },
      reindex: {
        planner: (p: { shards: string[] }) => ({ final: true, splits: p.shards.map((id) => ({ id, weight: 5 })) }),
        handler: async (s: SplitHandle) => {
          await new Promise((r) => setTimeout(r, 20));
          await s.complete(1);
        },
      },
    };
    const stores = [0, 1, 2].map(() => new EtcdStore({ endpoints: etcd.endpoint, opTimeoutMs: 1000 }));
    const servers: Server[] = [];
    try {
      for (const [i, store] of stores.slice(0, 2).entries()) {
        servers.push(await serve({
          store, root, instance: `pod-${i}`, maxInFlight: 4,
          options: { logger: silentLogger, leaseDurationMs: 2000, opTimeoutMs: 1000, rebalanceDelayMs: 0, drainDeadlineMs: 1000, layout: 'keys' },
          kinds: {
            export: { planner: kinds.export.planner, handler: async (s, job) => { record(job.job, s.id); await kinds.export.handler(s); }, onFinished: (f) => { finished.push(f.job); } },
            reindex: { planner: kinds.reindex.planner, onFinished: (f) => { finished.push(f.job); }, handler: async (s, job) => { record(job.job, s.id); lanesSeen.push(servers.map((x) => x.jobs().map((j) => j.lanes).reduce((a, b) => a + b, 0))); await kinds.reindex.handler(s); } },
          },
        }));
      }
      // The submitter: runs nothing, holds no job.
      const submitter = stores[2]!;
      const submitted = await Promise.all([
        submitJob({ store: submitter, root, job: 'export-a', kind: 'export', params: { tables: 6 } }),
        submitJob({ store: submitter, root, job: 'export-b', kind: 'export', params: { tables: 4 } }),
        submitJob({ store: submitter, root, job: 'reindex-1', kind: 'reindex', params: { shards: ['x', 'y', 'z'] } }),
      ]);
      expect(submitted.map((s) => s.outcome)).toEqual(['created', 'created', 'created']);
      // Again, the same: idempotent. Another definition under a taken name: refused, both shown.
      expect((await submitJob({ store: submitter, root, job: 'export-a', kind: 'export', params: { tables: 6 } })).outcome).toBe('existing');
      await expect(submitJob({ store: submitter, root, job: 'export-a', kind: 'export', params: { tables: 7 } }))
        .rejects.toMatchObject({ code: 'JOB_CONFLICT', message: expect.stringMatching(/it is export \{"tables":6\}, this is export \{"tables":7\}/) });
      const results = await Promise.all(['export-a', 'export-b', 'reindex-1'].map((job) => waitForJob({ store: submitter, root, job, timeoutMs: 60_000 })));
      expect(results.map((r) => r.verdict)).toEqual(['complete', 'complete', 'complete']);
      expect(results.map((r) => r.planned)).toEqual([6, 4, 3]);
      // Each job ran its own plan, made from its parameters.
      expect([...(ran.get('export-a') ?? [])].sort()).toEqual(['t0', 't1', 't2', 't3', 't4', 't5']);
      expect([...(ran.get('export-b') ?? [])].sort()).toEqual(['t0', 't1', 't2', 't3']);
      expect([...(ran.get('reindex-1') ?? [])].sort()).toEqual(['x', 'y', 'z']);
      // While jobs ran together, each process's shares summed to its lanes (4), one at least per job.
      for (const seen of lanesSeen) for (const total of seen) if (total > 0) expect(total).toBeGreaterThanOrEqual(2);
      // Each job's onJobFinished ran once across the two processes (the fleet waits for it).
      for (let i = 0; i < 200 && finished.length < 3; i++) await new Promise((r) => setTimeout(r, 50));
      await new Promise((r) => setTimeout(r, 300));
      expect([...finished].sort()).toEqual(['export-a', 'export-b', 'reindex-1']);
      // A waiter on a finished job answers at once, from the records.
      expect((await waitForJob({ store: submitter, root, job: 'export-b' })).verdict).toBe('complete');
    } finally {
      await Promise.all(servers.map((s) => s.close()));
      await Promise.all(stores.map((s) => s.close()));
    }
  });

  it('splitfleet submit and wait: a job submitted from the command line, served, awaited; a conflict refused (exit 2)', async () => {
    const root = `cli${Date.now().toString(36)}`;
    const store = new EtcdStore({ endpoints: etcd.endpoint, opTimeoutMs: 1000 });
    const server = await serve({
      store, root, instance: 'pod-0', maxInFlight: 2,
      options: { logger: silentLogger, leaseDurationMs: 2000, opTimeoutMs: 1000, rebalanceDelayMs: 0, layout: 'keys' },
      kinds: { count: { planner: (p: { n: number }) => ({ final: true, splits: Array.from({ length: p.n }, (_, i) => ({ id: `c${i}`, weight: 1 })) }), handler: (s) => s.complete(1) } },
    });
    try {
      const base = ['--etcd', etcd.endpoint, '--root', root];
      const sub = await runCli(['submit', ...base, '--job', 'count-5', '--kind', 'count', '--params', '{"n":5}']);
      expect(sub.code, sub.stderr).toBe(0);
      expect(sub.stdout).toMatch(/job count-5: submitted: count \{"n":5\}/);
      const again = await runCli(['submit', ...base, '--job', 'count-5', '--kind', 'count', '--params', '{"n":5}']);
      expect(again.stdout).toMatch(/already submitted, the same/);
      const clash = await runCli(['submit', ...base, '--job', 'count-5', '--kind', 'count', '--params', '{"n":6}']);
      expect(clash.code).toBe(2);
      expect(clash.stderr).toMatch(/already defined differently/);
      const bad = await runCli(['submit', ...base, '--job', 'x', '--kind', 'count', '--params', '{n:1}']);
      expect(bad.code).toBe(2);
      expect(bad.stderr).toMatch(/--params: must be JSON/);
      const waited = await runCli(['wait', ...base, '--job', 'count-5', '--timeout', '60', '--json']);
      expect(waited.code, waited.stderr).toBe(0);
      expect(JSON.parse(waited.stdout)).toMatchObject({ job: 'count-5', verdict: 'complete', planned: 5 });
    } finally {
      await server.close();
      await store.close();
    }
  });
});
