/**
 * serve() shares a process's lanes among the jobs it serves (decision 0064), on MemoryStore:
 * each job's presence record advertises its share, shares follow the jobs joined (⌊L / n⌋, the
 * first L mod n one more, by name), a finished job gives its share back, a finished job is not
 * joined again, and a kind the fleet does not serve is left alone.
 */
import { describe, expect, it } from 'vitest';
import { silentLogger } from '../../src/coordinator/log.js';
import { serve } from '../../src/coordinator/serve.js';
import { deleteJob } from '../../src/operator/delete.js';
import { submitJob } from '../../src/operator/submit.js';
import { waitForJob } from '../../src/operator/wait.js';
import { jobPrefix, workerKey } from '../../src/protocol/keys.js';
import { MemoryStore } from '../../src/store/memory.js';
import { gatedHoldKind } from '../support/gated-kind.js';

const until = async (what: string, pred: () => boolean | Promise<boolean>, ms = 10_000) => {
  const end = Date.now() + ms;
  while (!(await pred())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
};

describe('serve: lanes shared among jobs', () => {
  it('shares follow the jobs joined, a finished job gives its share back, and no job is joined twice', async () => {
    const store = new MemoryStore();
    // Every split of a job waits for that job's gate, so the job stays joined until the test opens it.
    const hold = gatedHoldKind();
    const open = hold.open;
    const started: string[] = [];
    const server = await serve({
      store, instance: 'pod-0', maxInFlight: 5,
      options: { logger: silentLogger, leaseDurationMs: 2000, opTimeoutMs: 500, rebalanceDelayMs: 0, drainDeadlineMs: 500, layout: 'keys' },
      onJobStarted: (job) => started.push(job),
      kinds: {
        hold: hold.kind,
      },
    });
    const lanesOf = async (job: string) => {
      const kv = await store.get(workerKey(jobPrefix('splitfleet', job), 'pod-0'));
      return kv ? (JSON.parse(kv.value) as { maxInFlight: number }).maxInFlight : undefined;
    };
    try {
      await submitJob({ store, job: 'a', kind: 'hold', params: { n: 8 } });
      await until('job a at 5 lanes', async () => (await lanesOf('a')) === 5);
      await submitJob({ store, job: 'b', kind: 'hold', params: { n: 8 } });
      await submitJob({ store, job: 'other', kind: 'not-ours', params: null });
      // Two jobs: 3 and 2 (the first by name gets the odd lane), advertised on each job's presence record.
      await until('shares 3 and 2', async () => (await lanesOf('a')) === 3 && (await lanesOf('b')) === 2);
      expect(server.jobs().map((j) => [j.job, j.lanes]).sort()).toEqual([['a', 3], ['b', 2]]);
      expect(await lanesOf('other')).toBeUndefined();
      // Job a finishes: b gets every lane back.
      for (let i = 0; i < 20 && server.jobs().some((j) => j.job === 'a'); i++) {
        open('a');
        await new Promise((r) => setTimeout(r, 50));
      }
      await until('job a let go', () => !server.jobs().some((j) => j.job === 'a'));
      await until('b at 5 lanes', async () => (await lanesOf('b')) === 5);
      // Its definition seen again (a rewrite): a finished job is not joined twice.
      const def = await store.get('splitfleet/~jobs/a');
      await store.put('splitfleet/~jobs/a', def!.value);
      await new Promise((r) => setTimeout(r, 100));
      expect(started.filter((j) => j === 'a')).toHaveLength(1);
      for (let i = 0; i < 20 && server.jobs().length > 0; i++) {
        open('b');
        await new Promise((r) => setTimeout(r, 50));
      }
      await until('job b let go', () => server.jobs().length === 0);
    } finally {
      hold.openAll();
      await server.close();
    }
  });

  it('delete removes a submitted job\'s definition, started or not, so no fleet joins it again', async () => {
    const store = new MemoryStore();
    await submitJob({ store, job: 'never-started', kind: 'k', params: 1 });
    expect(await deleteJob({ store, job: 'never-started' })).toEqual({ deleted: 1, stopped: [], verdict: null });
    expect(await store.get('splitfleet/~jobs/never-started')).toBeUndefined();
    await expect(deleteJob({ store, job: 'never-started' })).rejects.toMatchObject({ code: 'INVALID_INPUT' });
    const server = await serve({
      store, instance: 'pod-0', maxInFlight: 2, options: { logger: silentLogger, layout: 'keys', rebalanceDelayMs: 0 },
      kinds: { k: { planner: () => ({ final: true, splits: [{ id: 'only', weight: 1 }] }), handler: (s) => s.complete(1) } },
    });
    try {
      await submitJob({ store, job: 'ran', kind: 'k', params: 2 });
      expect((await waitForJob({ store, job: 'ran', timeoutMs: 10_000 })).verdict).toBe('complete');
    } finally {
      await server.close();
    }
    const r = await deleteJob({ store, job: 'ran' });
    expect(r.verdict).toBe('complete');
    expect(await store.get('splitfleet/~jobs/ran')).toBeUndefined();
  });
});
