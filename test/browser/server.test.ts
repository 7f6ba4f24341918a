/**
 * The dashboard's server without a browser, on the MemoryStore with records
 * written by hand:
 * - started before its job, it waits ("no job"), then follows it as records
 *   appear, the first ones logged as joins;
 * - a revocation that starts and ends between two refreshes is still logged
 *   (events come from each record's change, not from report against report);
 * - `/api/state` and the first `/events` message carry the view; members
 *   arrive as counts; the page carries its hashed CSP; POST is refused, and a
 *   non-loopback Host is refused; close() ends open event streams;
 * - bound to an IPv4-mapped loopback address (`::ffff:127.0.0.1`) it checks
 *   the Host as on 127.0.0.1 (decision 0051);
 * - nothing it does writes to the store;
 * - `inspect --serve` refuses a bad port and `--watch`/`--json` beside it (exit 2).
 */
import { spawn } from 'node:child_process';
import { request } from 'node:http';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, test } from 'vitest';
import type { DashboardView } from '../../src/inspect/dashboard-view.js';
import { serveDashboard, type Dashboard } from '../../src/dashboard/serve.js';
import { assignKey, jobPrefix, leaderKey, leaseKey, planKey, specKey, splitKey, workerKey } from '../../src/protocol/keys.js';
import { defaultFingerprint } from '../../src/config.js';
import { encodeRecord, fingerprintHash, SCHEMA_VERSION } from '../../src/protocol/records.js';
import { MemoryStore } from '../../src/store/memory.js';

const root = fileURLToPath(new URL('../../', import.meta.url));
const CLI = join(root, 'dist/src/cli/main.js');
const JOB = 'dash-unit';
const P = jobPrefix('splitfleet', JOB);
const base = { v: SCHEMA_VERSION, fp: fingerprintHash(defaultFingerprint('splitfleet', JOB)) };

const put = {
  plan: (s: MemoryStore) => s.put(planKey(P), encodeRecord('plan', { ...base, generation: 1, final: true, planned: 2 })),
  leader: (s: MemoryStore, instance: string) => s.put(leaderKey(P), encodeRecord('leader', { ...base, instance, generation: 1 })),
  worker: (s: MemoryStore, instance: string) => s.put(workerKey(P, instance), encodeRecord('worker', { ...base, instance, maxInFlight: 2, nonce: `n-${instance}` })),
  assign: (s: MemoryStore, instance: string, splits: string[]) => s.put(assignKey(P, instance), encodeRecord('assign', { ...base, instance, generation: 1, splits })),
  lease: (s: MemoryStore, id: string, owner: string) => s.put(leaseKey(P, id), encodeRecord('lease', { ...base, id, owner, nonce: `n-${owner}`, epoch: 1 })),
  spec: (s: MemoryStore, id: string, weight: number) => s.put(specKey(P, id), encodeRecord('spec', { ...base, id, weight, descriptor: null, generation: 1 })),
  split: (s: MemoryStore, id: string, owner: string) => s.put(splitKey(P, id), encodeRecord('split', { ...base, id, epoch: 1, status: 'runnable', owner, attempts: 0 })),
};

let open: { dashboard: Dashboard; store: MemoryStore } | undefined;
afterEach(async () => {
  await open?.dashboard.close();
  await open?.store.close();
  open = undefined;
});

async function start(): Promise<{ dashboard: Dashboard; store: MemoryStore }> {
  const store = new MemoryStore();
  const dashboard = await serveDashboard({ store, job: JOB, refreshMs: 50 });
  open = { dashboard, store };
  return open;
}

/** Polls the view until `ok` holds (the refresh is asynchronous). */
async function until(d: Dashboard, ok: (v: DashboardView) => boolean): Promise<DashboardView> {
  for (let i = 0; i < 400; i++) {
    const v = d.view();
    if (ok(v)) return v;
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error(`the view never got there: ${JSON.stringify(d.view().events.map((e) => e.text))}`);
}

function raw(url: string, method: string, host?: string): Promise<{ status: number; headers: Record<string, unknown>; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method, headers: host ? { host } : {} }, (res) => {
      let body = '';
      res.on('data', (c: Buffer) => (body += c.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

describe('serveDashboard', () => {
  test('waits for its job, then logs what happens, including a revocation shorter than a refresh', async () => {
    const { dashboard, store } = await start();
    expect(dashboard.view().report.exists).toBe(false);

    await put.plan(store);
    await put.worker(store, 'a');
    await put.worker(store, 'b');
    await put.leader(store, 'a');
    await put.spec(store, 's1', 100);
    await put.split(store, 's1', 'a');
    await put.assign(store, 'a', ['s1']);
    await put.assign(store, 'b', []);
    await put.lease(store, 's1', 'a');
    const joined = await until(dashboard, (v) => v.report.members.some((m) => m.instance === 'a' && m.heldCount === 1));
    expect(joined.events.map((e) => e.kind)).toEqual(['join', 'join', 'leader']);
    expect(joined.report.members.find((m) => m.instance === 'a')).toMatchObject({ live: true, leader: true, heldCount: 1, assignedCount: 1, load: 100 });
    expect(joined.report.members[0]).not.toHaveProperty('held');

    // A whole handoff in one burst: several writes before the next refresh.
    const revision = (await store.listAll(P)).revision;
    await put.assign(store, 'b', ['s1']);
    await put.assign(store, 'a', []);
    await store.delete(leaseKey(P, 's1'));
    await put.lease(store, 's1', 'b');
    const moved = await until(dashboard, (v) => v.events.some((e) => e.kind === 'claim'));
    expect(moved.events.slice(3).map((e) => e.text)).toEqual([
      's1 moved a → b',
      'revocation of s1 from a started (assigned to b)',
      'revocation of s1 from a ended: let go (released, completed or expired)',
      's1 claimed by b (held by a before)',
    ]);
    expect(moved.events.map((e) => e.seq)).toEqual([1, 2, 3, 4, 5, 6, 7]);
    // Only our own four writes moved the revision: the dashboard wrote nothing.
    expect((await store.listAll(P)).revision).toBe(revision + 4);
  });

  test('HTTP: the page with its CSP, the state as JSON, an event stream that close() ends; GET only, loopback Host only', async () => {
    const { dashboard, store } = await start();
    await put.worker(store, 'a');
    await until(dashboard, (v) => v.report.exists);
    expect(dashboard.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/$/);

    const page = await raw(dashboard.url, 'GET');
    expect(page.status).toBe(200);
    expect(String(page.headers['content-security-policy'])).toMatch(/script-src 'sha256-[A-Za-z0-9+/=]+'/);
    expect(page.body).toContain('<script>');

    const state = JSON.parse((await raw(`${dashboard.url}api/state`, 'GET')).body) as DashboardView;
    expect(state.job).toBe(JOB);
    expect(state.report.members.map((m) => m.instance)).toEqual(['a']);

    expect((await raw(`${dashboard.url}api/state`, 'POST')).status).toBe(404);
    expect((await raw(dashboard.url, 'GET', 'rebind.example:80')).status).toBe(421);
    expect((await raw(dashboard.url, 'GET', `localhost:${dashboard.port}`)).status).toBe(200);

    const res = await fetch(`${dashboard.url}events`);
    expect(res.headers.get('content-type')).toContain('text/event-stream');
    const reader = res.body!.getReader();
    let text = '';
    while (!text.includes('\n\n')) text += new TextDecoder().decode((await reader.read()).value);
    expect(text).toMatch(/^event: state\ndata: /);
    const first = JSON.parse(/data: (.*)\n/.exec(text)![1]!) as DashboardView;
    expect(first.report.members.map((m) => m.instance)).toEqual(['a']);

    // close() must not hang on the open stream, and the stream ends.
    await dashboard.close();
    for (;;) {
      const { done } = await reader.read().catch(() => ({ done: true }));
      if (done) break;
    }
  });
});

describe('serveDashboard bound to an IPv4-mapped loopback address', () => {
  test('a rebound name is refused (421); loopback names, mapped ones included, are answered', async () => {
    const store = new MemoryStore();
    const dashboard = await serveDashboard({ store, job: JOB, host: '::ffff:127.0.0.1' });
    open = { dashboard, store };
    expect(dashboard.url).toBe(`http://[::ffff:127.0.0.1]:${dashboard.port}/`);
    const refused = await raw(`${dashboard.url}api/state`, 'GET', `rebind.example:${dashboard.port}`);
    expect(refused.status).toBe(421);
    expect(refused.body).toMatch(/not a loopback name/);
    // The mapped address as a client sends it (the URL standard's spelling; hono's adapter answers 400 to others before any check).
    for (const h of [`[::ffff:7f00:1]:${dashboard.port}`, `[::ffff:7f00:1]`, `localhost:${dashboard.port}`]) {
      expect([h, (await raw(`${dashboard.url}api/state`, 'GET', h)).status]).toEqual([h, 200]);
    }
  });
});

describe('splitfleet inspect --serve (options)', () => {
  const run = (args: string[]) => new Promise<{ code: number | null; stderr: string }>((resolve) => {
    const child = spawn(process.execPath, [CLI, 'inspect', '--etcd', 'http://127.0.0.1:1', '--job', 'j', ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    child.on('close', (code) => resolve({ code, stderr }));
  });

  test.each([
    [['--serve', 'http'], /^splitfleet inspect: --serve: must be a port number 0 ≤ port ≤ 65535 \(got "http"\)\n$/],
    [['--serve', '70000'], /--serve: must be a port number/],
    [['--serve', '8080', '--watch'], /^splitfleet inspect: --serve: cannot be combined with --watch/],
    [['--serve', '8080', '--json'], /^splitfleet inspect: --serve: cannot be combined with --json/],
  ])('%j is refused (exit 2)', async (args, message) => {
    const { code, stderr } = await run(args);
    expect(stderr).toMatch(message);
    expect(code).toBe(2);
  });
});
