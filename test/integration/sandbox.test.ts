/**
 * Sandboxed handlers (sandboxedHandler, `handlerModule`): the handler runs
 * on a worker thread, so a CPU-bound one no longer costs the session lease;
 * drains, aborts, commits, completion and errors cross the thread boundary.
 *
 * The lease test runs on real etcd, next to its control (the same spinning
 * handler unsandboxed, whose split must be fenced away and reclaimed, or the
 * sandboxed assertion proves nothing). MemoryStore cannot show the failure:
 * its lease expiry is a timer on the same event loop as the renewal, so a
 * blocked loop blocks the expiry too, and when the loop frees the renewal
 * (due first) re-arms the lease before the expiry timer runs. The other
 * tests use MemoryStore.
 *
 * The threads run the compiled dist/ (run `npm run build` first); the
 * handler modules are test/fixtures/sandbox-*.mjs.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { threadId } from 'node:worker_threads';
import { afterAll, afterEach, describe, expect, test } from 'vitest';
import { startCoordinator, type Coordinator, type CoordinatorOptions } from '../../src/coordinator/coordinator.js';
import { silentLogger } from '../../src/coordinator/log.js';
import { defaultSandboxThreadFile, sandboxedHandler, type SandboxedHandler } from '../../src/coordinator/sandbox/sandbox.js';
import type { PlannedSplit, SplitHandler } from '../../src/coordinator/types.js';
import { isSplitfleetError } from '../../src/errors.js';
import { jobPrefix } from '../../src/protocol/keys.js';
import { EtcdStore } from '../../src/store/etcd/etcd.js';
import { MemoryStore } from '../../src/store/memory.js';
import type { Store } from '../../src/store/store.js';
import { useEtcdFleet } from '../support/etcd-fleet.js';
import { Recorder } from '../support/history.js';
import { counterValue, type InProcessMember } from '../support/in-process.js';
import { readJob } from '../support/job-state.js';
import { sleep, waitUntil, within } from '../support/wait.js';

const fixture = (name: string): string => fileURLToPath(new URL(`../fixtures/${name}`, import.meta.url));
const HANDLERS = fixture('sandbox-handlers.mjs');
const SPIN = fixture('sandbox-spin.mjs');

if (!existsSync(defaultSandboxThreadFile())) {
  throw new Error(`${defaultSandboxThreadFile()} is missing: the sandbox threads run the compiled JS; run 'npm run build' first`);
}

const FAST = { leaseDurationMs: 2000, opTimeoutMs: 500, rebalanceDelayMs: 0, drainDeadlineMs: 1000, reconcileIntervalMs: 1000 };
const tmp = mkdtempSync(join(tmpdir(), 'splitfleet-sandbox-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

/** Sandboxes and coordinators a test opened, closed after it whatever happened. */
const sandboxes: SandboxedHandler[] = [];
const coordinators: Coordinator[] = [];
afterEach(async () => {
  await Promise.all(coordinators.splice(0).map((c) => c.close().catch(() => undefined)));
  await Promise.all(sandboxes.splice(0).map((s) => s.close()));
});

function sandbox(exportName: string, threads: number): SandboxedHandler {
  const s = sandboxedHandler(HANDLERS, { exportName, threads });
  sandboxes.push(s);
  return s;
}

const plan = (splits: PlannedSplit[]) => () => ({ final: true, splits });

async function start(
  store: Store, job: string, splits: PlannedSplit[], how: { handler: SplitHandler } | { handlerModule: string }, extra: Partial<CoordinatorOptions> = {},
): Promise<Coordinator> {
  const c = await startCoordinator({
    store, job, instance: 'w0', maxInFlight: splits.length, planner: plan(splits), logger: silentLogger, layout: 'keys', ...FAST, ...how, ...extra,
  });
  coordinators.push(c);
  return c;
}

const read = (path: string): string => (existsSync(path) ? readFileSync(path, 'utf8') : '');

describe('sandboxed handlers on MemoryStore', () => {
  test('handlerModule: the default export runs on threads other than this one, commits and completes', async () => {
    const store = new MemoryStore();
    const splits = [0, 1, 2].map((i) => ({ id: `s-${i}`, weight: 1, descriptor: { units: i } }));
    const c = await start(store, 'sandbox-default', splits, { handlerModule: HANDLERS }, { maxInFlight: 2 });
    expect(await within('the verdict', c.done, 30_000)).toBe('complete');
    const job = await readJob(store, jobPrefix('splitfleet', 'sandbox-default'));
    for (const [i, s] of [0, 1, 2].map((i) => [i, job.splits.get(`s-${i}`)!] as const)) {
      expect(s).toMatchObject({ status: 'completed', epoch: 1, attempts: 0, progress: { units: i } });
      expect(s.progress.threadId).not.toBe(threadId);
    }
    await store.close();
  });

  test('a spinning handler\'s commits and completion cross the boundary', async () => {
    const store = new MemoryStore();
    const c = await start(store, 'sandbox-spin', [{ id: 's-0', weight: 1, descriptor: { rounds: 3, spinMs: 200 } }], { handler: sandbox('spin', 1) });
    expect(await within('the verdict', c.done, 30_000)).toBe('complete');
    const s = (await readJob(store, jobPrefix('splitfleet', 'sandbox-spin'))).splits.get('s-0')!;
    expect(s).toMatchObject({ status: 'completed', epoch: 1, attempts: 0, progress: { round: 3 } });
    await store.close();
  });

  test('a drain crosses: to a handler awaiting its abort event (a message) and to one that never yields (the shared flag); final commits land', async () => {
    const store = new MemoryStore();
    const splits = [{ id: 's-await', weight: 1, descriptor: { mode: 'await' } }, { id: 's-spin', weight: 1, descriptor: { mode: 'spin' } }];
    // A deadline far beyond what a cooperative drain needs: a forced release here would be a failure, not a slow run.
    const c = await start(store, 'sandbox-drain', splits, { handler: sandbox('drainable', 2) }, { drainDeadlineMs: 20_000 });
    const prefix = jobPrefix('splitfleet', 'sandbox-drain');
    await waitUntil('both handlers to commit from their threads', async () => {
      const job = await readJob(store, prefix);
      return splits.every((s) => job.splits.get(s.id)?.progress?.drained === false);
    });
    await within('the graceful stop', c.stop(), 30_000);
    const job = await readJob(store, prefix);
    for (const { id } of splits) {
      // Released (owner cleared, no attempt spent) at the final commit the thread made after its drainSignal aborted.
      expect(job.splits.get(id)).toMatchObject({ status: 'runnable', owner: '', epoch: 1, attempts: 0, progress: { drained: true, aborted: false } });
    }
    expect(await counterValue(c.metrics.revocations, { outcome: 'cooperative' })).toBe(2);
    expect(await counterValue(c.metrics.revocations, { outcome: 'forced' })).toBe(0);
    await store.close();
  });

  test('a decline crosses: the release is forced at once, counted as declined', async () => {
    const store = new MemoryStore();
    const c = await start(store, 'sandbox-decline', [{ id: 's-0', weight: 1 }], { handler: sandbox('declines', 1) }, { drainDeadlineMs: 20_000 });
    const prefix = jobPrefix('splitfleet', 'sandbox-decline');
    await waitUntil('the handler to commit from its thread', async () => (await readJob(store, prefix)).splits.get('s-0')?.progress?.declined === false);
    // Without the decline crossing, this stop would wait out the 20 s deadline and count as forced.
    await within('the graceful stop', c.stop(), 30_000);
    expect(await counterValue(c.metrics.revocations, { outcome: 'declined' })).toBe(1);
    expect(await counterValue(c.metrics.revocations, { outcome: 'forced' })).toBe(0);
    expect((await readJob(store, prefix)).splits.get('s-0')).toMatchObject({ owner: '', epoch: 1, attempts: 0 });
    await store.close();
  });

  test.each([
    ['a forced revocation (stop, the drain unanswered until its deadline)', 'stop'],
    ['a stop without drain (close)', 'close'],
  ] as const)('%s terminates a spinning thread', async (_name, how) => {
    const store = new MemoryStore();
    const beat = join(tmp, `beat-${how}`);
    const c = await start(store, `sandbox-abort-${how}`, [{ id: 's-0', weight: 1, descriptor: { beat } }], { handler: sandbox('forever', 1) });
    // The heartbeat moves while the thread runs: the check below could fail.
    const first = await waitUntil('the spinning handler\'s heartbeat', () => read(beat) || undefined);
    await waitUntil('the heartbeat to move', () => read(beat) !== first);
    await within(`the coordinator's ${how}`, how === 'stop' ? c.stop() : c.close(), 20_000);
    if (how === 'stop') {
      expect(await counterValue(c.metrics.revocations, { outcome: 'forced' })).toBe(1);
      const s = (await readJob(store, jobPrefix('splitfleet', `sandbox-abort-${how}`))).splits.get('s-0')!;
      expect(s).toMatchObject({ owner: '', epoch: 1, attempts: 0, progress: { started: true } });
    }
    // A heartbeat write the thread had in flight when it was terminated still lands (a read then saw the
    // file truncated, '' and then '42'): let it, then the file must stay still.
    await sleep(100);
    const after = read(beat);
    await sleep(500); // ~25 heartbeats, had the thread survived
    expect(read(beat)).toBe(after);
    await store.close();
  });

  test('a handler that throws fails its split with the same message', async () => {
    const store = new MemoryStore();
    const c = await start(store, 'sandbox-throws', [{ id: 's-0', weight: 1 }], { handler: sandbox('throws', 1) }, { maxAttempts: 1 });
    expect(await within('the verdict', c.done, 30_000)).toBe('stalled');
    const s = (await readJob(store, jobPrefix('splitfleet', 'sandbox-throws'))).splits.get('s-0')!;
    expect(s).toMatchObject({ status: 'quarantined', attempts: 1, reason: 'boom on s-0' });
    await store.close();
  });

  test('LEASE_LOST reaches the thread with its code (isSplitfleetError there), and a handler that completed may return', async () => {
    const store = new MemoryStore();
    const out = join(tmp, 'after-complete.json');
    const c = await start(store, 'sandbox-lost', [{ id: 's-0', weight: 1, descriptor: { out } }], { handler: sandbox('afterComplete', 1) });
    expect(await within('the verdict', c.done, 30_000)).toBe('complete');
    const seen = JSON.parse(await waitUntil('the thread to report its late commit', () => read(out) || undefined)) as Record<string, unknown>;
    expect(seen).toMatchObject({ threw: true, code: 'LEASE_LOST', isSplitfleetError: true, aborted: true });
    const s = (await readJob(store, jobPrefix('splitfleet', 'sandbox-lost'))).splits.get('s-0')!;
    expect(s).toMatchObject({ status: 'completed', progress: { done: true } });
    await store.close();
  });

  test('refusals name the field and the problem', async () => {
    const store = new MemoryStore();
    const base = { store, job: 'sandbox-refused', instance: 'w0', planner: plan([]), logger: silentLogger, ...FAST };
    const refused = async (options: Partial<CoordinatorOptions>, message: RegExp) => {
      const e: unknown = await startCoordinator({ ...base, ...options } as CoordinatorOptions).then(
        (c) => { coordinators.push(c); return undefined; },
        (x: unknown) => x,
      );
      expect(isSplitfleetError(e, 'INVALID_CONFIG'), String(e)).toBe(true);
      expect((e as Error).message).toMatch(message);
    };
    await refused({ handler: async () => undefined, handlerModule: HANDLERS }, /^handler, handlerModule: give one of them, not both/);
    await refused({}, /^handler: must be a function.*handlerModule/);
    await refused({ handlerModule: '/no/such/module.mjs' }, /^handlerModule: handler module \/no\/such\/module\.mjs does not exist/);
    await refused({ handlerModule: fixture('sandbox-no-default.mjs') }, /^handlerModule: .*sandbox-no-default\.mjs has no export "default" that is a function \(no such export; its exports: handler\)/);
    await refused({ handlerModule: fixture('sandbox-broken.mjs') }, /^handlerModule: cannot load the handler: this module refuses to load/);

    const missing = sandbox('nope', 1);
    await expect(missing.ready()).rejects.toThrow(/no export "nope" that is a function/);
    expect(() => sandboxedHandler(HANDLERS, { threads: 0 })).toThrow(/threads must be an integer ≥ 1 \(got 0\)/);
    expect(() => sandboxedHandler('')).toThrow(/module must be a file path or a URL/);
    await store.close();
  });
});

describe('on etcd: a CPU-bound handler and the session lease', () => {
  let store: EtcdStore;
  let endpoint: string;
  const open: InProcessMember[] = [];
  useEtcdFleet(open, (s, e) => {
    store = s;
    endpoint = e.endpoint;
  });

  const LEASE_MS = 2000;
  // Each round holds the CPU for two lease durations without yielding: in-thread, the renewals
  // (every LEASE_MS / 3) cannot run, etcd expires the lease and the split is fenced away.
  const SPLIT = { id: 's-0', weight: 1, descriptor: { rounds: 2, spinMs: 2 * LEASE_MS } };

  async function member(job: string, how: { handler: SplitHandler } | { handlerModule: string }): Promise<Coordinator> {
    const own = new EtcdStore({ endpoints: [endpoint], opTimeoutMs: 2000 });
    const c = await startCoordinator({
      store: own, job, instance: 'w0', maxInFlight: 1, planner: plan([SPLIT]), logger: silentLogger,
      ...FAST, leaseDurationMs: LEASE_MS, reconcileIntervalMs: 2000, ...how,
    });
    open.push({ instance: 'w0', coordinator: c, store: own, close: async () => { await c.close().catch(() => undefined); await own.close(); } });
    return c;
  }

  test('sandboxed (handlerModule), the lease never lapses: both commits land and the split completes in its first tenancy', async () => {
    const job = 'sandbox-lease';
    const prefix = jobPrefix('splitfleet', job);
    const recorder = await Recorder.start(store, prefix);
    const c = await member(job, { handlerModule: SPIN });
    expect(await within('the verdict', c.done, 60_000)).toBe('complete');
    await recorder.sync();
    const puts = recorder.of('split', 's-0').filter((e) => e.type === 'put');
    // Created by the planner at epoch 0, claimed once at epoch 1, never again.
    expect(puts.map((e) => e.rec!.epoch)).toEqual([0, ...puts.slice(1).map(() => 1)]);
    expect(puts.at(-1)!.rec).toMatchObject({ status: 'completed', epoch: 1, attempts: 0, progress: { round: 2 } });
    // Both commits (made after a spin each) landed, then the completion.
    const progress = recorder.of('progress', 's-0').filter((e) => e.type === 'put').map((e) => e.rec!.progress.round);
    expect(progress).toEqual([1, 2, 2]);
    // One claim, one lease key, deleted by the completion only; one session all along.
    expect(recorder.of('lease', 's-0').map((e) => e.type)).toEqual(['put', 'delete']);
    expect(recorder.of('worker', 'w0').filter((e) => e.type === 'put')).toHaveLength(1);
    await recorder.close();
  });

  test('control: the same handler unsandboxed loses its lease and the split is fenced away and reclaimed', async () => {
    const job = 'sandbox-lease-control';
    const prefix = jobPrefix('splitfleet', job);
    const recorder = await Recorder.start(store, prefix);
    const spin = (await import(SPIN)) as { default: SplitHandler };
    await member(job, { handler: spin.default });
    // A read can time out while this very thread spins (the handler runs on it): read again.
    await waitUntil('the split to be reclaimed at a new epoch', async () => {
      const job = await readJob(store, prefix).catch(() => undefined);
      return (job?.splits.get('s-0')?.epoch ?? 0) >= 2;
    }, { timeoutMs: 40_000 });
    // The sync's own write can time out the same way while the handler spins on: try again.
    await waitUntil('the history recorder to sync', () => recorder.sync().then(() => true, () => false), { timeoutMs: 40_000 });
    // The lease key went with the session's lease (one revision deleting it and the presence
    // key: an expiry), not by a write of the lane; then a second tenancy.
    const firstDelete = recorder.of('lease', 's-0').find((e) => e.type === 'delete')!;
    expect(recorder.of('worker', 'w0').some((e) => e.type === 'delete' && e.rev === firstDelete.rev)).toBe(true);
    expect(recorder.of('split', 's-0').some((e) => e.type === 'put' && e.rec!.epoch === 2 && e.rev > firstDelete.rev)).toBe(true);
    await recorder.close();
  });
});
