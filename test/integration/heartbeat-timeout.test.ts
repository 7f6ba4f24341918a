/**
 * Issue 29 item 4, the heartbeat timeout (substrate.md "Heartbeat timeout",
 * decision 0033), on MemoryStore and a VirtualClock, time driven step by step:
 * - a handler that hangs (never commits, never returns, ignores its signal)
 *   has its signal aborted with HEARTBEAT_TIMEOUT once it has been silent for
 *   heartbeatTimeoutMs; at the drain deadline after that the lane reports a
 *   failure (one attempt, reason `timeout: …`, event kind 'timeout') and
 *   frees itself, and a later lane completes the split;
 * - the stale handler's later commit and completion are refused (LEASE_LOST)
 *   and write nothing;
 * - a handler that returns once aborted reports the failure at once;
 * - a handler that heartbeats (or commits) more often than the timeout is
 *   never timed out, however long it runs.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { VirtualClock } from '../../src/clock.js';
import { startCoordinator, type Coordinator } from '../../src/coordinator/coordinator.js';
import type { CoordinatorEventMap } from '../../src/coordinator/events.js';
import { silentLogger } from '../../src/coordinator/log.js';
import type { SplitHandle } from '../../src/coordinator/types.js';
import { isSplitfleetError, SplitfleetError } from '../../src/errors.js';
import { jobPrefix, progressKey, splitKey } from '../../src/protocol/keys.js';
import { MemoryStore } from '../../src/store/memory.js';
import type { Store, Txn, TxnResult } from '../../src/store/store.js';
import { counterValue } from '../support/in-process.js';
import { runUntil, settle, stepUntil as stepTime } from '../support/virtual-time.js';

const LEASE = 3000;
const TIMEOUT = 2000;
const DRAIN = 1000;

const stepUntil = (clock: VirtualClock, check: () => boolean, ms = 20 * LEASE): Promise<boolean> => stepTime(clock, check, ms, 50);

let running: Coordinator[] = [];
afterEach(async () => {
  for (const c of running) await c.close().catch(() => undefined);
  running = [];
});

type Failed = CoordinatorEventMap['split-failed'];

async function start(job: string, handler: (h: SplitHandle) => Promise<void>, clock: VirtualClock, store: Store, failed: Failed[] = []): Promise<Coordinator> {
  const c = await settle(clock, startCoordinator({
    store, clock, job, instance: 'w0', logger: silentLogger, maxInFlight: 2,
    leaseDurationMs: LEASE, opTimeoutMs: 1000, rebalanceDelayMs: 0, reconcileIntervalMs: 1000, drainDeadlineMs: DRAIN,
    heartbeatTimeoutMs: TIMEOUT,
    planner: () => ({ splits: [{ id: 's-0', weight: 1 }], final: true }),
    handler,
    on: { 'split-failed': (e) => { failed.push(e); } },
  }));
  running.push(c);
  return c;
}

/** A promise that never settles: the hung handler's body. */
const never = (): Promise<void> => new Promise<void>(() => undefined);

describe('heartbeatTimeoutMs', () => {
  it('times out a hung handler: its signal aborts, the lane fails at the drain deadline and frees itself, a later lane completes the split', async () => {
    const clock = new VirtualClock();
    const store = new MemoryStore({ clock });
    const failed: Failed[] = [];
    const handles: SplitHandle[] = [];
    let claimedAt = -1;
    let abortedAt = -1;
    const c = await start('hb-hang', async (h) => {
      handles.push(h);
      if (h.epoch === 1) {
        claimedAt = clock.now();
        h.signal.addEventListener('abort', () => (abortedAt = clock.now()));
        return never(); // hangs: no commit, no heartbeat, never returns, ignores its signal
      }
      await h.complete(42);
    }, clock, store, failed);

    let heldAtFailure: string[] | undefined;
    c.on('split-failed', () => (heldAtFailure ??= c.held));
    expect(await stepUntil(clock, () => handles.length === 1)).toBe(true);
    const stale = handles[0]!;
    expect(await stepUntil(clock, () => stale.signal.aborted)).toBe(true);
    // Aborted for the timeout, after a full timeout of silence, and no sooner.
    expect(isSplitfleetError(stale.signal.reason, 'HEARTBEAT_TIMEOUT')).toBe(true);
    expect((stale.signal.reason as Error).message).toMatch(/timeout: the handler neither committed nor heartbeated/);
    expect(abortedAt - claimedAt).toBeGreaterThanOrEqual(TIMEOUT);
    expect(abortedAt - claimedAt).toBeLessThan(TIMEOUT + 100);

    // The handler has not returned; at the drain deadline the lane reports the failure and frees itself.
    expect(await stepUntil(clock, () => failed.length === 1)).toBe(true);
    expect(clock.now() - abortedAt).toBeGreaterThanOrEqual(DRAIN);
    expect(failed[0]).toMatchObject({ id: 's-0', epoch: 1, attempts: 1, kind: 'timeout' });
    expect(failed[0]!.reason).toMatch(/^timeout: /);
    expect(await counterValue(c.metrics.handlerFailures, { kind: 'timeout' })).toBe(1);
    expect(await counterValue(c.metrics.handlerFailures, { kind: 'error' })).toBe(0);
    expect(heldAtFailure).toEqual([]); // freed, though its handler never returned

    // A later lane (epoch 2) completes the split, and the job completes.
    expect(await stepUntil(clock, () => c.health().state === 'stopped')).toBe(true);
    await expect(c.done).resolves.toBe('complete');
    expect(handles.map((h) => h.epoch)).toEqual([1, 2]);
    expect(handles[1]!.attempts).toBe(1);
    const prefix = jobPrefix('splitfleet', 'hb-hang');
    const rec = JSON.parse((await store.get(splitKey(prefix, 's-0')))!.value) as { status: string; epoch: number };
    expect(rec).toMatchObject({ status: 'completed', epoch: 2 });
  });

  it("fences the stale handler: its commit and completion after the timeout are refused and write nothing", async () => {
    const clock = new VirtualClock();
    const store = new MemoryStore({ clock });
    const handles: SplitHandle[] = [];
    const failed: Failed[] = [];
    // The second lane holds its split until told, so the stale writes meet a split held by someone else's tenancy.
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    await start('hb-fence', async (h) => {
      handles.push(h);
      if (h.epoch === 1) return never();
      await h.commit(7);
      h.heartbeat();
      await gate;
      await h.complete(8);
    }, clock, store, failed);
    const prefix = jobPrefix('splitfleet', 'hb-fence');

    expect(await stepUntil(clock, () => handles.length === 1 && handles[0]!.signal.aborted)).toBe(true);
    const stale = handles[0]!;
    // Before the lane's report: refused already (the lane is timed out).
    const early = stale.commit(1);
    await runUntil(clock, clock.now() + 10);
    await expect(early).rejects.toSatisfy((e: unknown) => isSplitfleetError(e, 'LEASE_LOST') && /timed out/.test((e as Error).message));

    expect(await stepUntil(clock, () => handles.length === 2)).toBe(true);
    expect(failed.map((f) => f.kind)).toEqual(['timeout']);
    const progressBefore = await store.get(progressKey(prefix, 's-0'));
    // After the lane ended, while another tenancy holds the split: still refused, still nothing written.
    const late = [stale.commit(99), stale.complete(100), stale.fail('stale')];
    await runUntil(clock, clock.now() + 100);
    for (const p of late) await expect(p).rejects.toSatisfy((e: unknown) => isSplitfleetError(e, 'LEASE_LOST'));
    expect((await store.get(progressKey(prefix, 's-0')))?.modRevision).toBe(progressBefore?.modRevision);
    const rec = JSON.parse((await store.get(splitKey(prefix, 's-0')))!.value) as { status: string; epoch: number; owner: string };
    expect(rec).toMatchObject({ status: 'runnable', epoch: 2, owner: 'w0' });
    release();
    expect(await stepUntil(clock, () => running[0]!.health().state === 'stopped')).toBe(true);
    await expect(running[0]!.done).resolves.toBe('complete');
    expect(JSON.parse((await store.get(progressKey(prefix, 's-0')))!.value)).toMatchObject({ progress: 8, epoch: 2 });
  });

  it('reports the failure at once when the timed-out handler returns before the drain deadline', async () => {
    const clock = new VirtualClock();
    const store = new MemoryStore({ clock });
    const failed: Failed[] = [];
    let abortedAt = -1;
    let failedAt = -1;
    const c = await start('hb-return', async (h) => {
      if (h.epoch > 1) return h.complete(1);
      await new Promise<void>((resolve) => h.signal.addEventListener('abort', () => {
        abortedAt = clock.now();
        resolve();
      }));
      // Returns as a handler that sees `signal` abort should: no release, a timeout failure.
    }, clock, store, failed);
    c.on('split-failed', () => (failedAt = clock.now()));
    expect(await stepUntil(clock, () => failed.length === 1)).toBe(true);
    expect(failed[0]).toMatchObject({ kind: 'timeout', attempts: 1, epoch: 1 });
    expect(failedAt - abortedAt).toBeLessThan(DRAIN);
    expect(await stepUntil(clock, () => c.health().state === 'stopped')).toBe(true);
    await expect(c.done).resolves.toBe('complete');
  });

  it('never times out a handler that heartbeats or commits more often than the timeout', async () => {
    const clock = new VirtualClock();
    const store = new MemoryStore({ clock });
    const failed: Failed[] = [];
    const handles: SplitHandle[] = [];
    const sleep = (ms: number): Promise<void> => new Promise((resolve) => clock.setTimer(ms, resolve));
    const c = await start('hb-alive', async (h) => {
      handles.push(h);
      // 10 timeouts long: heartbeats with details, one commit in the middle, never silent for a whole timeout.
      for (let i = 0; i < 40; i++) {
        await sleep(TIMEOUT / 2);
        if (i === 20) await h.commit(i);
        else h.heartbeat({ step: i });
        if (h.signal.aborted) return;
      }
      await h.complete(40);
    }, clock, store, failed);
    expect(await stepUntil(clock, () => c.health().state === 'stopped', 60 * LEASE)).toBe(true);
    await expect(c.done).resolves.toBe('complete');
    expect(failed).toEqual([]);
    expect(handles.map((h) => [h.epoch, h.signal.reason?.code])).toEqual([[1, 'LEASE_LOST']]); // aborted only by its own completion
  });

  it('does not time out a lane whose handler has returned while its release waits out a store outage', async () => {
    const clock = new VirtualClock();
    const inner = new MemoryStore({ clock });
    const prefix = jobPrefix('splitfleet', 'hb-returned');
    // While `failing`, every transaction writing the split record is refused (retryable), as etcd down would.
    let failing = false;
    const store = new Proxy(inner, {
      get(target, prop, receiver) {
        if (prop === 'txn') {
          return async (t: Txn): Promise<TxnResult> => {
            if (failing && t.success.some((o) => o.op === 'put' && o.key === splitKey(prefix, 's-0'))) {
              throw new SplitfleetError('STORE_UNAVAILABLE', 'etcd unreachable (injected)', { retryable: true });
            }
            return target.txn(t);
          };
        }
        const v = Reflect.get(target, prop, receiver) as unknown;
        return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
      },
    });
    const failed: Failed[] = [];
    const ended: string[] = [];
    const handles: SplitHandle[] = [];
    const c = await start('hb-returned', async (h) => {
      handles.push(h);
      if (h.epoch > 1) return h.complete(2);
      await h.commit(1);
      failing = true; // the handler returns: its release meets the outage
    }, clock, store, failed);
    c.on('split-released', (e) => ended.push(`released:${e.epoch}:${e.cause}`));
    c.on('split-lost', (e) => ended.push(`lost:${e.epoch}`));
    expect(await stepUntil(clock, () => failing)).toBe(true);
    await runUntil(clock, clock.now() + 3 * TIMEOUT); // the release retries for three timeouts
    expect(ended).toEqual([]);
    expect(handles[0]!.signal.aborted).toBe(false);
    failing = false;
    expect(await stepUntil(clock, () => c.health().state === 'stopped')).toBe(true);
    await expect(c.done).resolves.toBe('complete');
    expect(failed).toEqual([]);
    expect(ended).toEqual(['released:1:handler']);
    expect(handles.map((h) => [h.epoch, h.attempts])).toEqual([[1, 0], [2, 0]]);
  });
});
