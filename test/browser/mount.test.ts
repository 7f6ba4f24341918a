/**
 * The dashboard mounted in a host's app (decision 0067), without a browser,
 * on the MemoryStore with jobs written by hand (jobs-fixture.ts):
 * - in a Node server under a base path, behind the host's own check: the
 *   base redirects to itself with a slash, the job list (kinds from the
 *   definitions, states, done/planned), a job's view and one split by id;
 *   no Host check of its own; no actions unless enabled;
 * - the job list's rate and ETA appear from the second read;
 * - in a hono app (`mountDashboard`) behind the app's authentication, with
 *   actions enabled: refused without the page's header or a JSON body; pause,
 *   resume and retry do what the library's actions do, and a refusal is the
 *   library's message.
 */
import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Hono } from 'hono';
import { afterEach, describe, expect, test } from 'vitest';
import { createDashboard, mountDashboard, type MountedDashboard } from '../../src/dashboard/mount.js';
import type { JobListView } from '../../src/dashboard/job-list.js';
import type { DashboardView } from '../../src/inspect/dashboard-view.js';
import { controlKey, jobPrefix, splitKey } from '../../src/protocol/keys.js';
import { MemoryStore } from '../../src/store/memory.js';
import { putSplit, ROOT, stampOf, writeJobs } from './jobs-fixture.js';
import { definitionFingerprint } from '../../src/protocol/definitions.js';

let cleanup: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

async function withJobs(): Promise<MemoryStore> {
  const store = new MemoryStore();
  await writeJobs(store);
  cleanup.push(() => store.close());
  return store;
}

async function dashboardOf(options: Parameters<typeof createDashboard>[0]): Promise<MountedDashboard> {
  const d = await createDashboard(options);
  cleanup.push(() => d.close());
  return d;
}

/** A host's Node server: only requests with its token reach the dashboard, which lives under /ops/dash. */
async function hostServer(d: MountedDashboard): Promise<string> {
  const server: Server = createServer((req, res) => {
    if (req.headers.authorization !== 'Bearer host-token') return void res.writeHead(401).end('the host says no\n');
    if (req.url?.startsWith('/ops/dash')) return d.handler(req, res);
    res.writeHead(404).end('the host has no such page\n');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  cleanup.push(() => new Promise((resolve) => server.close(() => resolve())));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

function raw(url: string, options: { method?: string; headers?: Record<string, string>; body?: string } = {}): Promise<{ status: number; headers: Record<string, unknown>; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method: options.method ?? 'GET', headers: options.headers ?? {} }, (res) => {
      let body = '';
      res.on('data', (c: Buffer) => (body += c.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
    });
    req.on('error', reject);
    req.end(options.body);
  });
}

const auth = { authorization: 'Bearer host-token' };

describe('createDashboard in a Node server', () => {
  test('under a base path, behind the host\'s check: the list, a job, a split; no Host check, no actions', async () => {
    const store = await withJobs();
    const d = await dashboardOf({ store, basePath: '/ops/dash/' });
    const host = await hostServer(d);

    expect((await raw(`${host}/ops/dash/`)).status).toBe(401); // the host's check runs first
    const bare = await raw(`${host}/ops/dash?x=1`, { headers: auth });
    expect([bare.status, bare.headers['location']]).toEqual([308, '/ops/dash/?x=1']);
    expect((await raw(`${host}/ops/dashboard/`, { headers: auth })).status).toBe(404);

    // A name the host chose, not loopback: a mounted dashboard leaves names to its host.
    const page = await raw(`${host}/ops/dash/`, { headers: { ...auth, host: 'ops.example.com' } });
    expect(page.status).toBe(200);
    expect(page.body).toContain('id="jobs-body"');
    expect(page.body).toContain('data-home=""');
    expect(String(page.headers['content-security-policy'])).toMatch(/script-src 'sha256-[A-Za-z0-9+/=]+'/);
    expect((await raw(`${host}/ops/dash/jobs/`, { headers: auth })).body).toContain('data-home="../"');

    const list = JSON.parse((await raw(`${host}/ops/dash/api/jobs`, { headers: auth })).body) as JobListView;
    expect(list.root).toBe(ROOT);
    expect(list.jobs.map((j) => [j.job, j.kind, j.state, j.done, j.planned, j.quarantined, j.members])).toEqual([
      ['alpha', null, 'running', 1, 3, 1, 1],
      ['beta', 'export', 'submitted', 0, 0, 0, 0],
      ['gamma', 'report', 'paused', 0, 2, 0, 0],
    ]);
    expect(list.jobs.every((j) => j.ratePerSecond === null && j.problem === null)).toBe(true);

    const jobPage = await raw(`${host}/ops/dash/job/alpha/`, { headers: auth });
    expect(jobPage.body).toContain('href="../../jobs/"');
    expect(jobPage.body).toContain('data-actions="false"');
    expect((await raw(`${host}/ops/dash/job/alpha`, { headers: auth })).headers['location']).toBe('alpha/');
    const state = JSON.parse((await raw(`${host}/ops/dash/job/alpha/api/state`, { headers: auth })).body) as DashboardView;
    expect([state.job, state.report.quarantined.map((q) => q.id)]).toEqual(['alpha', ['s2']]);

    const split = JSON.parse((await raw(`${host}/ops/dash/job/alpha/api/split?id=s2`, { headers: auth })).body) as { ok: boolean; split: { status: string; reason: string } };
    expect(split).toMatchObject({ ok: true, split: { status: 'quarantined', reason: 'poisoned: bad row 7' } });
    const none = await raw(`${host}/ops/dash/job/alpha/api/split?id=s9`, { headers: auth });
    expect([none.status, JSON.parse(none.body)]).toEqual([404, { ok: false, error: 'job alpha has no split "s9"' }]);
    expect((await raw(`${host}/ops/dash/job/${encodeURIComponent('a/b')}/api/state`, { headers: auth })).status).toBe(404);
    // Without a job named at start, the base's own data routes name none.
    expect((await raw(`${host}/ops/dash/api/state`, { headers: auth })).status).toBe(404);

    // Read-only: no action route at all.
    const revision = (await store.listAll(ROOT)).revision;
    const post = await raw(`${host}/ops/dash/job/alpha/actions/pause`, {
      method: 'POST', headers: { ...auth, 'content-type': 'application/json', 'x-splitfleet-action': '1' }, body: '{}',
    });
    expect(post.status).toBe(404);
    expect((await store.listAll(ROOT)).revision).toBe(revision);
  });

  test('the job list gives a rate and an ETA from its second read a second or more after the first', async () => {
    const store = await withJobs();
    const d = await dashboardOf({ store, listRefreshMs: 10 });
    const read = async () => (await (await d.fetch(new Request('http://dash/api/jobs'))).json() as JobListView).jobs.find((j) => j.job === 'gamma')!;
    expect(await read()).toMatchObject({ done: 0, planned: 2, ratePerSecond: null, etaMs: null });
    const g = stampOf('gamma', definitionFingerprint(ROOT, 'gamma', 'report', { month: '2024-06' }));
    await putSplit(store, 'gamma', 'g1', 'completed', undefined, g);
    await new Promise((r) => setTimeout(r, 1_100));
    const row = await read();
    expect(row.done).toBe(1);
    // One split in about 1.1 s, one left: about a second to go.
    expect(row.ratePerSecond).toBeGreaterThan(0.5);
    expect(row.ratePerSecond).toBeLessThan(1);
    expect(row.etaMs).toBeGreaterThan(1_000);
    expect(row.etaMs).toBeLessThan(2_000);
  });

  test('follows at most maxOpenJobs jobs: one more closes one nobody views, or is refused while each has a viewer', async () => {
    const store = await withJobs();
    const d = await dashboardOf({ store, maxOpenJobs: 1 });
    const get = (path: string) => d.fetch(new Request(`http://dash${path}`));
    expect((await get('/job/alpha/api/state')).status).toBe(200);
    // alpha is idle (its request is answered): gamma takes its place.
    expect((await get('/job/gamma/api/state')).status).toBe(200);
    const stream = await get('/job/gamma/events');
    const reader = stream.body!.getReader();
    expect(new TextDecoder().decode((await reader.read()).value)).toMatch(/^event: state\n/);
    const refused = await get('/job/alpha/api/state');
    expect([refused.status, await refused.text()]).toEqual([503, expect.stringContaining('1 jobs are followed already, each with a viewer')]);
    await reader.cancel();
    for (let i = 0; i < 100 && (await get('/job/alpha/api/state')).status !== 200; i++) await new Promise((r) => setTimeout(r, 20));
    expect((await get('/job/alpha/api/state')).status).toBe(200);
  });

  test('a job named with dots only is reached through its ~ segment', async () => {
    const store = await withJobs();
    await putSplit(store, '..', 'x1', 'runnable');
    const d = await dashboardOf({ store });
    const list = await (await d.fetch(new Request('http://dash/api/jobs'))).json() as JobListView;
    expect(list.jobs.map((j) => j.job)).toContain('..');
    const view = await (await d.fetch(new Request('http://dash/job/~../api/state'))).json() as DashboardView;
    expect([view.job, view.prefix]).toEqual(['..', 'splitfleet/../']);
  });

  test('refuses a bad base path and a bad job name', async () => {
    const store = await withJobs();
    await expect(createDashboard({ store, basePath: 'ops' })).rejects.toThrow(/basePath must be a path starting with '\/'/);
    await expect(createDashboard({ store, job: 'a/b' })).rejects.toMatchObject({ code: 'INVALID_CONFIG' });
  });
});

describe('mountDashboard in a hono app, with actions', () => {
  async function hono(actions: boolean) {
    const store = await withJobs();
    const d = await dashboardOf({ store, actions });
    // The host's own Env: the adapter must take any hono app.
    const app = new Hono<{ Variables: { user: string } }>();
    app.use('/dash/*', async (c, next) => {
      if (c.req.header('authorization') !== 'Bearer host-token') return c.text('the host says no', 401);
      c.set('user', 'ops');
      await next();
    });
    mountDashboard(app, '/dash', d);
    const act = (job: string, name: string, body: unknown, headers: Record<string, string> = { 'content-type': 'application/json', 'x-splitfleet-action': '1' }) =>
      app.request(`/dash/job/${job}/actions/${name}`, { method: 'POST', headers: { ...auth, ...headers }, body: JSON.stringify(body) });
    return { store, app, act };
  }

  test('the host\'s authentication first; an action needs the page\'s header and a JSON body', async () => {
    const { store, app, act } = await hono(true);
    expect((await app.request('/dash/api/jobs')).status).toBe(401);
    expect((await app.request('/dash', { headers: auth })).headers.get('location')).toBe('/dash/');
    expect(await (await app.request('/dash/job/alpha/', { headers: auth })).text()).toContain('data-actions="true"');

    const before = (await store.listAll(ROOT)).revision;
    const noHeader = await act('alpha', 'pause', {}, { 'content-type': 'application/json' });
    expect(noHeader.status).toBe(403);
    expect(await noHeader.json()).toEqual({ ok: false, error: expect.stringContaining('needs the header x-splitfleet-action: 1') });
    // What an HTML form can send: refused.
    expect((await act('alpha', 'pause', {}, { 'content-type': 'application/x-www-form-urlencoded', 'x-splitfleet-action': '1' })).status).toBe(415);
    expect((await act('alpha', 'explode', {})).status).toBe(404);
    expect((await store.listAll(ROOT)).revision).toBe(before);
  });

  test('pause, resume and retry do what the library\'s actions do; a refusal is the library\'s message', async () => {
    const { store, act } = await hono(true);
    const A = jobPrefix(ROOT, 'alpha');

    const paused = await act('alpha', 'pause', {});
    expect([paused.status, await paused.json()]).toEqual([200, { ok: true, action: 'pause', job: 'alpha', result: { changed: true, paused: true, evacuated: [] } }]);
    expect(JSON.parse((await store.get(controlKey(A)))!.value)).toMatchObject({ paused: true });
    expect(await (await act('alpha', 'resume', {})).json()).toMatchObject({ ok: true, result: { changed: true, paused: false } });
    expect(await store.get(controlKey(A))).toBeUndefined(); // a record that asks nothing is deleted

    const retried = await act('alpha', 'retry', { split: 's2' });
    expect(await retried.json()).toEqual({ ok: true, action: 'retry', job: 'alpha', result: { retried: ['s2'], verdictCleared: false } });
    expect(JSON.parse((await store.get(splitKey(A, 's2')))!.value)).toMatchObject({ status: 'runnable', attempts: 0 });

    const refused = await act('alpha', 'retry', { split: 's1' });
    expect(refused.status).toBe(400);
    expect(await refused.json()).toEqual({ ok: false, error: expect.stringMatching(/^split "s1": is completed, not quarantined/) });
    expect((await act('nosuch', 'pause', {})).status).toBe(400);
    expect(await (await act('alpha', 'retry', { allQuarantined: true })).json()).toMatchObject({ ok: true, result: { retried: [] } });
  });

  test('without actions enabled, the same requests find no route', async () => {
    const { act } = await hono(false);
    expect((await act('alpha', 'pause', {})).status).toBe(404);
  });
});
