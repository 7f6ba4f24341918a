/**
 * serveMetrics({ attachLater: true }): probes answer from process start,
 * before the coordinator exists (startCoordinator may wait startTimeoutMs for
 * etcd), and attach(coordinator) hands them over to its health and metrics.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { startCoordinator, type Coordinator } from '../../src/coordinator/coordinator.js';
import { silentLogger } from '../../src/coordinator/log.js';
import { Metrics } from '../../src/coordinator/metrics.js';
import { serveMetrics, type MetricsServer } from '../../src/metrics-server.js';
import { MemoryStore } from '../../src/store/memory.js';
import { waitUntil } from '../support/wait.js';

const servers: MetricsServer[] = [];
const coordinators: Coordinator[] = [];
const stores: MemoryStore[] = [];
afterEach(async () => {
  for (const c of coordinators.splice(0)) await c.close().catch(() => undefined);
  for (const s of stores.splice(0)) await s.close();
  await Promise.all(servers.splice(0).map((s) => s.close()));
});

async function get(url: string): Promise<{ status: number; body: string }> {
  const res = await fetch(url);
  return { status: res.status, body: await res.text() };
}

describe('serveMetrics with attachLater', () => {
  it("answers 'starting' before anything is attached: live, not ready, no metrics yet", async () => {
    const s = await serveMetrics({ port: 0, attachLater: true });
    servers.push(s);
    const healthz = await get(`${s.url}/healthz`);
    expect(healthz.status).toBe(200);
    expect(JSON.parse(healthz.body)).toMatchObject({ state: 'starting' });
    const readyz = await get(`${s.url}/readyz`);
    expect(readyz.status).toBe(503);
    expect(JSON.parse(readyz.body)).toMatchObject({ state: 'starting' });
    expect((await get(`${s.url}/metrics`)).status).toBe(503);
  });

  it("attach(coordinator) serves the coordinator's health and metrics from then on", async () => {
    const s = await serveMetrics({ port: 0, attachLater: true });
    servers.push(s);
    const store = new MemoryStore();
    stores.push(store);
    const c = await startCoordinator({
      store, job: 'attach', instance: 'pod-0', logger: silentLogger, leaseDurationMs: 2000, opTimeoutMs: 500,
      planner: () => ({ final: false, splits: [{ id: 'a', weight: 1 }] }),
      handler: async (split) => { await new Promise((r) => split.drainSignal.addEventListener('abort', r)); },
    });
    coordinators.push(c);
    s.attach(c);
    await waitUntil('the coordinator to run', () => c.health().state === 'running');
    const readyz = await get(`${s.url}/readyz`);
    expect(readyz.status).toBe(200);
    expect(JSON.parse(readyz.body)).toMatchObject({ state: 'running' });
    const metrics = await get(`${s.url}/metrics`);
    expect(metrics.status).toBe(200);
    expect(metrics.body).toContain('splitfleet_');
    await c.stop();
    expect((await get(`${s.url}/healthz`)).status).toBe(503); // stopped
  });

  it('keeps metrics given up front, and takes the health alone later', async () => {
    const metrics = new Metrics();
    const s = await serveMetrics({ port: 0, attachLater: true, metrics });
    servers.push(s);
    expect((await get(`${s.url}/metrics`)).status).toBe(200);
    s.attach({ health: () => ({ state: 'degraded', reason: 'etcd slow' }) });
    const readyz = await get(`${s.url}/readyz`);
    expect(readyz.status).toBe(503);
    expect(JSON.parse(readyz.body)).toEqual({ state: 'degraded', reason: 'etcd slow' });
    expect((await get(`${s.url}/healthz`)).status).toBe(200);
  });

  it('refuses a second attach, an attach without attachLater, and an attach with nothing to serve', async () => {
    const late = await serveMetrics({ port: 0, attachLater: true });
    const early = await serveMetrics({ port: 0, metrics: new Metrics() });
    servers.push(late, early);
    expect(() => early.attach({ metrics: new Metrics() })).toThrow(expect.objectContaining({ code: 'INVALID_CONFIG', message: expect.stringContaining('attachLater') }));
    expect(() => late.attach({ health: () => ({ state: 'running', reason: '' }) })).toThrow(expect.objectContaining({ code: 'INVALID_CONFIG', message: expect.stringContaining('registry') }));
    late.attach({ metrics: new Metrics() });
    expect(() => late.attach({ metrics: new Metrics() })).toThrow(expect.objectContaining({ code: 'INVALID_CONFIG', message: expect.stringContaining('already') }));
    await expect(serveMetrics({ port: 0 })).rejects.toMatchObject({ code: 'INVALID_CONFIG', message: expect.stringContaining('attachLater') });
  });
});
