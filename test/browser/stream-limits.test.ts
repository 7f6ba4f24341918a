/**
 * The dashboard's event stream under many clients (issue 28):
 * - at most `maxClients` streams at once: one more is answered 503 with the
 *   reason, and a stream that closes frees its place;
 * - every refreshed view is serialised once, however many streams send it
 *   (before: once per stream);
 * - a bad maxClients is refused.
 */
import { afterEach, describe, expect, test, vi } from 'vitest';
import { defaultFingerprint } from '../../src/config.js';
import { serveDashboard, type Dashboard } from '../../src/inspect/serve.js';
import { jobPrefix, workerKey } from '../../src/protocol/keys.js';
import { encodeRecord, fingerprintHash, SCHEMA_VERSION } from '../../src/protocol/records.js';
import { MemoryStore } from '../../src/store/memory.js';

const JOB = 'dash-limits';
const P = jobPrefix('splitfleet', JOB);
const base = { v: SCHEMA_VERSION, fp: fingerprintHash(defaultFingerprint('splitfleet', JOB)) };
const worker = (s: MemoryStore, instance: string) => s.put(workerKey(P, instance), encodeRecord('worker', { ...base, instance, maxInFlight: 2, nonce: `n-${instance}` }));

let open: { dashboard: Dashboard; store: MemoryStore; streams: Stream[] } | undefined;
afterEach(async () => {
  vi.restoreAllMocks();
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

async function start(maxClients: number): Promise<{ dashboard: Dashboard; store: MemoryStore; streams: Stream[] }> {
  const store = new MemoryStore();
  await worker(store, 'a');
  const dashboard = await serveDashboard({ store, job: JOB, refreshMs: 50, maxClients });
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

  test('maxClients must be an integer ≥ 1', async () => {
    const store = new MemoryStore();
    await expect(serveDashboard({ store, job: JOB, maxClients: 0 })).rejects.toMatchObject({ code: 'INVALID_CONFIG', message: expect.stringMatching(/maxClients/) });
    await store.close();
  });
});
