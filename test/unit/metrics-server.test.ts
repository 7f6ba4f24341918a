/**
 * serveMetrics over real HTTP on an ephemeral port: /metrics is the
 * registry's Prometheus text with its content type, /healthz and /readyz
 * follow the health function's state (and a throwing one), unknown paths are
 * 404, it binds where told, and close() really stops listening.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { Registry } from 'prom-client';
import { Metrics } from '../../src/coordinator/metrics.js';
import { serveMetrics, type HealthReport, type HealthState, type MetricsServer } from '../../src/metrics-server.js';

// Captured before any server starts: hono's adapter would replace them on its first use.
const PRISTINE = [globalThis.Request, globalThis.Response];
const open: MetricsServer[] = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((s) => s.close()));
});

async function start(options: Parameters<typeof serveMetrics>[0]): Promise<MetricsServer> {
  const s = await serveMetrics(options);
  open.push(s);
  return s;
}

describe('serveMetrics', () => {
  it('serves the registry as Prometheus text, constant labels and new series included', async () => {
    const metrics = new Metrics({ labels: { splitfleet_job: 'backfill' } });
    metrics.completions.inc(3);
    metrics.setBacklog({
      queued: { splits: 5, weight: 500 }, running: { splits: 2, weight: 40 }, draining: { splits: 0, weight: 0 },
      completed: { splits: 3, weight: 60 }, quarantined: { splits: 1, weight: 7 },
    });
    const s = await start({ metrics, port: 0 });
    expect(s.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(s.url).not.toMatch(/:0$/);
    const res = await fetch(`${s.url}/metrics`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe(metrics.registry.contentType);
    const text = await res.text();
    expect(text).toContain('splitfleet_completions_total{splitfleet_job="backfill"} 3');
    expect(text).toContain('splitfleet_backlog_weight{splitfleet_job="backfill",state="queued"} 500');
    expect(text).toBe(await metrics.registry.metrics());
  });

  it('serves a registry given directly', async () => {
    const registry = new Registry();
    const metrics = new Metrics({ registry });
    metrics.sessionLosses.inc();
    const s = await start({ registry, port: 0 });
    expect(await (await fetch(`${s.url}/metrics`)).text()).toContain('splitfleet_session_losses_total 1');
  });

  it('answers /healthz and /readyz from the health function, per state', async () => {
    let report: HealthReport = { state: 'starting', reason: 'reading the job' };
    const s = await start({ metrics: new Metrics(), port: 0, health: () => report });
    const expected: Record<HealthState, [number, number]> = {
      starting: [200, 503],
      running: [200, 200],
      degraded: [200, 503],
      stopping: [200, 503],
      stopped: [503, 503],
    };
    for (const [state, [live, ready]] of Object.entries(expected) as [HealthState, [number, number]][]) {
      report = { state, reason: `because ${state}` };
      const h = await fetch(`${s.url}/healthz`);
      const r = await fetch(`${s.url}/readyz`);
      expect([state, h.status, r.status]).toEqual([state, live, ready]);
      expect(h.headers.get('content-type')).toMatch(/^application\/json/);
      expect(await h.json()).toEqual({ state, reason: `because ${state}` });
      expect(await r.json()).toEqual({ state, reason: `because ${state}` });
    }
  });

  it('a health function that throws is a failed probe, not a crashed endpoint', async () => {
    const s = await start({
      metrics: new Metrics(), port: 0,
      health: () => {
        throw new Error('coordinator gone');
      },
    });
    for (const path of ['/healthz', '/readyz']) {
      const res = await fetch(`${s.url}${path}`);
      expect(res.status).toBe(503);
      expect(await res.json()).toEqual({ state: 'unknown', reason: 'health check threw: coordinator gone' });
    }
    expect((await fetch(`${s.url}/metrics`)).status).toBe(200);
  });

  it('without a health function /healthz and /readyz are 404, as is any other path', async () => {
    const s = await start({ metrics: new Metrics(), port: 0 });
    expect((await fetch(`${s.url}/healthz`)).status).toBe(404);
    expect((await fetch(`${s.url}/readyz`)).status).toBe(404);
    expect((await fetch(`${s.url}/`)).status).toBe(404);
  });

  it('a registry that fails to collect answers 500 with its message', async () => {
    const s = await start({ registry: { contentType: 'text/plain', metrics: () => Promise.reject(new Error('collect failed')) }, port: 0 });
    const res = await fetch(`${s.url}/metrics`);
    expect(res.status).toBe(500);
    expect(await res.text()).toContain('collect failed');
  });

  it('close() stops listening even with a keep-alive connection open, and is idempotent', async () => {
    const s = await serveMetrics({ metrics: new Metrics(), port: 0 });
    await (await fetch(`${s.url}/metrics`, { headers: { connection: 'keep-alive' } })).text();
    await s.close();
    await s.close();
    await expect(fetch(`${s.url}/metrics`)).rejects.toThrow();
  });

  it('refuses a busy port, a bad port and a missing registry with INVALID_CONFIG', async () => {
    const s = await start({ metrics: new Metrics(), port: 0 });
    const port = Number(new URL(s.url).port);
    await expect(serveMetrics({ metrics: new Metrics(), port })).rejects.toMatchObject({ code: 'INVALID_CONFIG', message: expect.stringContaining('EADDRINUSE') });
    await expect(serveMetrics({ metrics: new Metrics(), port: 70000 })).rejects.toMatchObject({ code: 'INVALID_CONFIG' });
    await expect(serveMetrics({ port: 0 })).rejects.toMatchObject({ code: 'INVALID_CONFIG', message: expect.stringContaining('registry') });
  });

  it('leaves the global Request and Response alone', async () => {
    const s = await start({ metrics: new Metrics(), port: 0 });
    await (await fetch(`${s.url}/metrics`)).text();
    expect(globalThis.Request).toBe(PRISTINE[0]);
    expect(globalThis.Response).toBe(PRISTINE[1]);
  });
});
