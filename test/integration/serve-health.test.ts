/**
 * A serving process behind serveMetrics (decision 0068), on MemoryStore:
 * `attach(server)` serves its health and every joined job's metrics. Serving
 * no job it is live and ready (idle); two jobs' series share one exposition,
 * labelled by job and kind, one HELP per name; a job left after an error
 * (its planner threw) makes it unready but live until that job is deleted; a
 * job let go takes its series with it; closed, it is neither live nor ready.
 * serve() retries a store it cannot reach yet, up to startTimeoutMs.
 */
import { describe, expect, it } from 'vitest';
import { silentLogger } from '../../src/coordinator/log.js';
import { serve } from '../../src/coordinator/serve.js';
import { serveMetrics } from '../../src/metrics-server.js';
import { deleteJob } from '../../src/operator/delete.js';
import { submitJob } from '../../src/operator/submit.js';
import { SplitfleetError } from '../../src/errors.js';
import { MemoryStore } from '../../src/store/memory.js';
import type { Store } from '../../src/store/store.js';
import { gatedHoldKind } from '../support/gated-kind.js';

const until = async (what: string, pred: () => boolean | Promise<boolean>, describe: () => unknown = () => '', ms = 10_000) => {
  const end = Date.now() + ms;
  while (!(await pred())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}: ${JSON.stringify(await describe())}`);
    await new Promise((r) => setTimeout(r, 20));
  }
};

describe('serveMetrics attached to a serving process', () => {
  it('health and metrics of zero, two, and a failed job; a finished job leaves the exposition; closed is stopped', async () => {
    const store = new MemoryStore();
    const hold = gatedHoldKind();
    const server = await serve({
      store, instance: 'pod-0', maxInFlight: 5,
      options: { logger: silentLogger, leaseDurationMs: 2000, opTimeoutMs: 500, rebalanceDelayMs: 0, drainDeadlineMs: 500, layout: 'keys' },
      onError: () => undefined,
      kinds: {
        hold: hold.kind,
        boom: { planner: () => { throw new Error('no such table'); }, handler: (s) => s.complete(1) },
      },
    });
    const http = await serveMetrics({ attachLater: true, port: 0 });
    http.attach(server);
    const get = async (path: string) => {
      const res = await fetch(`${http.url}${path}`);
      const text = await res.text();
      return { status: res.status, text, body: text.startsWith('{') ? (JSON.parse(text) as { state: string; reason: string }) : undefined };
    };
    const sample = (text: string, series: string) => text.split('\n').find((l) => l.startsWith(`${series} `))?.split(' ')[1];
    try {
      // Zero jobs: live and ready, idle.
      expect(await get('/healthz')).toMatchObject({ status: 200, body: { state: 'running' } });
      expect(await get('/readyz')).toMatchObject({ status: 200, body: { state: 'running', reason: 'serving no job: idle, waiting for jobs of kind hold, boom' } });
      expect(sample((await get('/metrics')).text, 'splitfleet_served_jobs')).toBe('0');

      // Two jobs: one exposition, each job's series labelled; each holds its lane share (3 and 2 of 5).
      await submitJob({ store, job: 'a', kind: 'hold', params: { n: 4 } });
      await submitJob({ store, job: 'b', kind: 'hold', params: { n: 4 } });
      const lanes = async (job: string) => sample((await get('/metrics')).text, `splitfleet_lanes{splitfleet_job="${job}",splitfleet_kind="hold"}`);
      await until('a holds 3 lanes and b 2', async () => (await lanes('a')) === '3' && (await lanes('b')) === '2', async () => (await get('/metrics')).text.match(/^splitfleet_lanes.*$/gm));
      const text = (await get('/metrics')).text;
      expect(text.match(/^# HELP splitfleet_lanes /gm)).toHaveLength(1);
      expect(text.match(/^# TYPE splitfleet_claims_total counter$/gm)).toHaveLength(1);
      expect(sample(text, 'splitfleet_served_jobs')).toBe('2');
      await until('ready, serving a and b', async () => (await get('/readyz')).body?.reason === 'serving 2 jobs (a, b)', async () => (await get('/readyz')).body);
      expect((await get('/readyz')).status).toBe(200);

      // A job whose planner throws ends its coordinator: the process stays live, is not ready, says why.
      await submitJob({ store, job: 'bad', kind: 'boom', params: null });
      await until('unready after job bad failed', async () => (await get('/readyz')).status === 503, async () => (await get('/readyz')).body);
      expect((await get('/readyz')).body).toMatchObject({ state: 'degraded', reason: expect.stringMatching(/^left job bad after an error, .*: the planner threw: no such table/) });
      expect((await get('/healthz')).status).toBe(200);
      expect(server.jobs().map((j) => j.job).sort()).toEqual(['a', 'b']);
      // Deleting that job clears it.
      await deleteJob({ store, job: 'bad', force: true });
      await until('ready again once bad is deleted', async () => (await get('/readyz')).status === 200, async () => (await get('/readyz')).body);

      // Job a finishes: its series leave the exposition, b's stay.
      for (let i = 0; i < 40 && server.jobs().some((j) => j.job === 'a'); i++) {
        hold.open('a');
        await new Promise((r) => setTimeout(r, 50));
      }
      await until('job a let go', () => !server.jobs().some((j) => j.job === 'a'));
      const after = (await get('/metrics')).text;
      expect(after).not.toContain('splitfleet_job="a"');
      expect(after).toContain('splitfleet_job="b"');
      expect(sample(after, 'splitfleet_served_jobs')).toBe('1');
    } finally {
      hold.openAll();
      await server.close();
    }
    try {
      expect(server.health()).toMatchObject({ state: 'stopped' });
      expect(await get('/healthz')).toMatchObject({ status: 503, body: { state: 'stopped' } });
      expect((await get('/readyz')).status).toBe(503);
      expect(sample((await get('/metrics')).text, 'splitfleet_served_jobs')).toBe('0');
    } finally {
      await http.close();
    }
  }, 30_000);
});

describe('serve() start-up against a store not there yet', () => {
  /** A store whose first `failures` watches fail as an unreachable etcd's do. */
  const flaky = (failures: number): { store: Store; attempts: () => number } => {
    const inner = new MemoryStore();
    let n = 0;
    const store = Object.create(inner) as Store;
    store.snapshotAndWatch = (prefix, handler, options) => {
      if (++n > failures) return inner.snapshotAndWatch(prefix, handler, options);
      const e = new SplitfleetError('STORE_UNAVAILABLE', `unreachable (attempt ${n})`, { retryable: true });
      handler.onError?.(e);
      return { ready: Promise.reject(e), close: async () => undefined };
    };
    return { store, attempts: () => n };
  };
  const kinds = { k: { planner: () => ({ final: true, splits: [] }), handler: async () => undefined } };

  it('retries until the store answers, and reports nothing meanwhile', async () => {
    const { store, attempts } = flaky(2);
    const errors: Error[] = [];
    const server = await serve({ store, instance: 'pod-0', kinds, options: { startTimeoutMs: 10_000 }, onError: (e) => errors.push(e) });
    try {
      expect(attempts()).toBe(3);
      expect(errors).toEqual([]);
      expect(server.health()).toMatchObject({ state: 'running', reason: 'serving no job: idle, waiting for jobs of kind k' });
    } finally {
      await server.close();
    }
  });

  it("refuses a kind's bad coordinator options at once, naming the kind, before touching the store", async () => {
    const { store, attempts } = flaky(0);
    await expect(serve({ store, instance: 'pod-0', kinds, options: { drainDeadlineMs: 3000 } })).rejects.toMatchObject({
      code: 'INVALID_CONFIG', message: expect.stringMatching(/^serve kinds\.k: .*drainDeadlineMs: must be ≥ opTimeoutMs/),
    });
    await expect(serve({ store, instance: 'pod-0', kinds: { ...kinds, other: { ...kinds.k, options: { maxAttempts: 0 } } } })).rejects.toMatchObject({
      code: 'INVALID_CONFIG', message: expect.stringMatching(/^serve kinds\.other: .*maxAttempts/),
    });
    expect(attempts()).toBe(0);
  });

  it('rejects with the last failure once startTimeoutMs has passed (0: at the first)', async () => {
    const { store, attempts } = flaky(100);
    await expect(serve({ store, instance: 'pod-0', kinds, options: { startTimeoutMs: 0 } })).rejects.toMatchObject({ code: 'STORE_UNAVAILABLE', message: 'unreachable (attempt 1)' });
    expect(attempts()).toBe(1);
    const t = Date.now();
    await expect(serve({ store, instance: 'pod-0', kinds, options: { startTimeoutMs: 600 } })).rejects.toMatchObject({ code: 'STORE_UNAVAILABLE' });
    expect(attempts()).toBeGreaterThanOrEqual(3);
    expect(Date.now() - t).toBeLessThan(3000);
  });
});
