/**
 * The dashboard's event stream under many clients (issue 28):
 * - at most `maxClients` streams at once: one more is answered 503 with the
 *   reason, and a stream that closes frees its place;
 * - every refreshed view is serialised once, however many streams send it
 *   (before: once per stream), and `/api/state` serves the same cached body
 *   (before: serialised again for every request);
 * - a client that connects and never reads loses its stream once its socket
 *   has stayed full for `stalledStreamMs`, so it cannot keep a place that a
 *   viewer needs (decision 0051), while a client that reads keeps its own;
 * - a bad maxClients or stalledStreamMs is refused.
 */
import { connect, type Socket } from 'node:net';
import { afterEach, describe, expect, test, vi } from 'vitest';
import { defaultFingerprint } from '../../src/config.js';
import { serveDashboard, type Dashboard } from '../../src/dashboard/serve.js';
import { jobPrefix, workerKey } from '../../src/protocol/keys.js';
import { encodeRecord, fingerprintHash, SCHEMA_VERSION } from '../../src/protocol/records.js';
import { MemoryStore } from '../../src/store/memory.js';

const JOB = 'dash-limits';
const P = jobPrefix('splitfleet', JOB);
const base = { v: SCHEMA_VERSION, fp: fingerprintHash(defaultFingerprint('splitfleet', JOB)) };
const worker = (s: MemoryStore, instance: string) => s.put(workerKey(P, instance), encodeRecord('worker', { ...base, instance, maxInFlight: 2, nonce: `n-${instance}` }));

let open: { dashboard: Dashboard; store: MemoryStore; streams: Stream[] } | undefined;
const sockets: Socket[] = [];
afterEach(async () => {
  vi.restoreAllMocks();
  for (const s of sockets.splice(0)) s.destroy();
  for (const s of open?.streams ?? []) s.close();
  await open?.dashboard.close();
  await open?.store.close();
  open = undefined;
});

/** An open event stream: the ids of the `state` messages it has received. */
interface Stream { ids: string[]; close(): void }

async function openStream(url: string): Promise<Stream | { status: number; body: string }> {
  const abort = new AbortController();
  const res = await fetch(`${url}events`, { signal: abort.signal });
  if (res.status !== 200) return { status: res.status, body: await res.text() };
  const ids: string[] = [];
  const reader = res.body!.getReader();
  let text = '';
  void (async () => {
    try {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) return;
        text += new TextDecoder().decode(value);
        let end: number;
        while ((end = text.indexOf('\n\n')) >= 0) {
          const message = text.slice(0, end);
          text = text.slice(end + 2);
          const id = /^id: (.*)$/m.exec(message)?.[1];
          if (message.includes('event: state') && id !== undefined) ids.push(id);
        }
      }
    } catch {
      // aborted
    }
  })();
  return { ids, close: () => abort.abort() };
}

async function until(ok: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 400; i++) {
    if (ok()) return;
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error(`never: ${what}`);
}

/** Like `until`, for a condition that must be asked over the network; returns what it answered. */
async function untilAsync<T>(ask: () => Promise<T | undefined>, what: string): Promise<T> {
  for (let i = 0; i < 300; i++) {
    const answer = await ask();
    if (answer !== undefined) return answer;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`never: ${what}`);
}

async function start(maxClients: number, more: { stalledStreamMs?: number; members?: number } = {}): Promise<{ dashboard: Dashboard; store: MemoryStore; streams: Stream[] }> {
  const store = new MemoryStore();
  await worker(store, 'a');
  // Long names make every view some tens of KB, so that a client that never reads fills its socket in a few dozen views.
  for (let i = 0; i < (more.members ?? 0); i++) await worker(store, `member-${String(i).padStart(4, '0')}-${'x'.repeat(80)}`);
  const dashboard = await serveDashboard({ store, job: JOB, refreshMs: 50, maxClients, ...(more.stalledStreamMs !== undefined ? { stalledStreamMs: more.stalledStreamMs } : {}) });
  open = { dashboard, store, streams: [] };
  return open;
}

describe('the dashboard event stream', () => {
  test('at most maxClients streams: one more gets 503 saying why; a closed stream frees its place', async () => {
    const { dashboard, streams } = await start(3);
    for (let i = 0; i < 3; i++) {
      const s = await openStream(dashboard.url);
      expect(s, `stream ${i}`).toHaveProperty('ids');
      streams.push(s as Stream);
    }
    await until(() => streams.every((s) => s.ids.length > 0), 'every stream has its first view');
    const refused = await openStream(dashboard.url);
    expect(refused).toEqual({ status: 503, body: expect.stringMatching(/3 event streams are open already/) });
    // The page and the state are not streams: still answered.
    expect((await fetch(`${dashboard.url}api/state`)).status).toBe(200);

    streams.shift()!.close();
    let again: Stream | { status: number } = { status: 0 };
    for (let i = 0; i < 200 && !('ids' in again); i++) {
      again = await openStream(dashboard.url);
      if (!('ids' in again)) await new Promise((r) => setTimeout(r, 25));
    }
    expect(again).toHaveProperty('ids');
    streams.push(again as Stream);
  });

  test('each refreshed view is serialised once, whatever the number of streams', async () => {
    const { dashboard, store, streams } = await start(64);
    for (let i = 0; i < 5; i++) streams.push(await openStream(dashboard.url) as Stream);
    await until(() => streams.every((s) => s.ids.length > 0), 'every stream has its first view');

    const stringify = vi.spyOn(JSON, 'stringify');
    const viewsSerialised = () => stringify.mock.calls.filter(([v]) => typeof v === 'object' && v !== null && 'generatedAt' in v && 'report' in v).length;
    const seen = streams.map((s) => s.ids.length);
    for (const name of ['b', 'c', 'd']) {
      await worker(store, name);
      await until(() => dashboard.view().report.members.some((m) => m.instance === name), `${name} in the view`);
    }
    const latest = String(dashboard.view().generatedAt);
    await until(() => streams.every((s) => s.ids.at(-1) === latest), 'every stream has the latest view');
    const sent = new Set(streams.flatMap((s, i) => s.ids.slice(seen[i])));
    expect(sent.size).toBeGreaterThanOrEqual(3);
    expect(viewsSerialised()).toBe(sent.size);
  });

  test('/api/state is serialised once per view, whatever the number of requests, and follows the next view', async () => {
    const { dashboard, store } = await start(64);
    const stringify = vi.spyOn(JSON, 'stringify');
    const viewsSerialised = () => stringify.mock.calls.filter(([v]) => typeof v === 'object' && v !== null && 'generatedAt' in v && 'report' in v).length;
    const bodies: string[] = [];
    for (let i = 0; i < 20; i++) {
      const res = await fetch(`${dashboard.url}api/state`);
      expect(res.headers.get('content-type')).toMatch(/^application\/json/);
      expect(res.headers.get('cache-control')).toBe('no-store');
      bodies.push(await res.text());
    }
    expect(new Set(bodies).size).toBe(1);
    expect((JSON.parse(bodies[0]!) as { generatedAt: number }).generatedAt).toBe(dashboard.view().generatedAt);
    expect(viewsSerialised()).toBe(1);

    await worker(store, 'b');
    await until(() => dashboard.view().report.members.some((m) => m.instance === 'b'), 'b in the view');
    for (let i = 0; i < 20; i++) {
      const state = await (await fetch(`${dashboard.url}api/state`)).json() as { generatedAt: number; report: { members: { instance: string }[] } };
      expect(state.generatedAt).toBe(dashboard.view().generatedAt);
      expect(state.report.members.map((m) => m.instance)).toContain('b');
    }
    expect(viewsSerialised()).toBe(2);
  });

  test('clients that connect and never read lose their streams; a viewer then gets one, and a reading stream is kept', async () => {
    const { dashboard, store, streams } = await start(3, { stalledStreamMs: 400, members: 400 });
    // Places: the reading stream and the two that never read; later, the two viewers in theirs.
    const reading = await openStream(dashboard.url);
    expect(reading).toHaveProperty('ids');
    streams.push(reading as Stream);
    const closed: Promise<void>[] = [];
    for (let i = 0; i < 2; i++) {
      // A real socket that asks for the stream and then never reads a byte.
      const s = connect(dashboard.port, '127.0.0.1');
      sockets.push(s);
      s.on('error', () => undefined);
      closed.push(new Promise((resolve) => s.once('close', () => resolve())));
      s.write(`GET /events HTTP/1.1\r\nHost: 127.0.0.1:${dashboard.port}\r\n\r\n`);
      s.pause();
    }
    // Every place is taken: a viewer is refused (a stream opened before the two were counted goes back).
    await untilAsync(async () => {
      const s = await openStream(dashboard.url);
      if ('ids' in s) s.close();
      return 'status' in s && s.status === 503 ? true : undefined;
    }, 'a viewer is refused while the two hold their places');

    // Views keep coming (the job changes every few ms), filling the sockets of the two that never read.
    let busy = true;
    const changes = (async () => {
      for (let n = 1; busy; n++) {
        await store.put(workerKey(P, 'a'), encodeRecord('worker', { ...base, instance: 'a', maxInFlight: 1 + (n % 50), nonce: 'n-a' }));
        await new Promise((r) => setTimeout(r, 10));
      }
    })().catch(() => undefined); // the store closes after a failed test: the loop just ends
    try {
      const viewer = await untilAsync(async () => {
        const s = await openStream(dashboard.url);
        return 'ids' in s ? s : undefined;
      }, 'a viewer gets a stream');
      streams.push(viewer);
      await until(() => viewer.ids.length > 0, 'the viewer has its first view');
      // A second viewer gets a place only once the other one that never read is dropped too: resuming
      // before that would let it read and be kept (CI saw that race under load, and the wait below hang).
      const second = await untilAsync(async () => {
        const s = await openStream(dashboard.url);
        return 'ids' in s ? s : undefined;
      }, 'a second viewer gets a stream');
      streams.push(second);
      // The two that never read were dropped (their sockets end once read); the one that reads was not.
      for (const s of sockets) s.resume();
      await Promise.all(closed);
      const before = (reading as Stream).ids.length;
      await until(() => (reading as Stream).ids.length > before + 2, 'the reading stream still gets views');
    } finally {
      busy = false;
      await changes;
    }
  });

  test('maxClients must be an integer ≥ 1, stalledStreamMs a positive integer', async () => {
    const store = new MemoryStore();
    await expect(serveDashboard({ store, job: JOB, maxClients: 0 })).rejects.toMatchObject({ code: 'INVALID_CONFIG', message: expect.stringMatching(/maxClients/) });
    for (const stalledStreamMs of [0, -1, 1.5, Number.NaN]) {
      await expect(serveDashboard({ store, job: JOB, stalledStreamMs }), String(stalledStreamMs)).rejects.toMatchObject({ code: 'INVALID_CONFIG', message: expect.stringMatching(/stalledStreamMs/) });
    }
    await store.close();
  });
});
