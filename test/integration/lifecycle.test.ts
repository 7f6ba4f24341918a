/**
 * The lifecycle ends (issue 31 item 3): `done` settles on every ending, not
 * only on a final plan's verdict, and `run()` stops gracefully on a signal,
 * closes at once on a second, and removes its listeners. In-process on
 * MemoryStore; the signals are emitted on `process` (no real signal: the
 * child-process test in run-signal.test.ts sends a real SIGTERM).
 */
import { afterEach, describe, expect, test } from 'vitest';
import { startCoordinator, type Coordinator } from '../../src/coordinator/coordinator.js';
import { silentLogger } from '../../src/coordinator/log.js';
import type { SplitHandle } from '../../src/coordinator/types.js';
import { MemoryStore } from '../../src/store/memory.js';
import { waitUntil, within } from '../support/wait.js';

const fast = { leaseDurationMs: 2000, opTimeoutMs: 500, rebalanceDelayMs: 0, drainDeadlineMs: 30_000, reconcileIntervalMs: 1000 };
const open: { store: MemoryStore; c?: Coordinator }[] = [];

afterEach(async () => {
  for (const o of open.splice(0)) {
    await o.c?.close().catch(() => undefined);
    await o.store.close();
  }
});

/** One coordinator on an open plan of two splits whose handler works until it is drained, then commits where it is. */
async function openJob(opts: { ignoreDrain?: boolean } = {}) {
  const store = new MemoryStore();
  const entry: { store: MemoryStore; c?: Coordinator } = { store };
  open.push(entry);
  const drained: string[] = [];
  const handler = async (split: SplitHandle) => {
    let n = (split.progress as number | null) ?? 0;
    for (;;) {
      if (split.signal.aborted) return;
      if (split.drainSignal.aborted && !opts.ignoreDrain) {
        await split.commit(n);
        drained.push(split.id);
        return;
      }
      n++;
      await new Promise((r) => setTimeout(r, 5));
    }
  };
  const c = await startCoordinator({
    store, job: 'open', instance: 'w0', maxInFlight: 2, logger: silentLogger, ...fast, handler,
    planner: () => ({ final: false, splits: [{ id: 'a', weight: 1 }, { id: 'b', weight: 1 }] }),
  });
  entry.c = c;
  await waitUntil('both splits held', () => c.held.length === 2);
  return { c, drained };
}

describe('done settles on every ending', () => {
  test("after stop() on an open plan: 'stopped', once the lanes have drained", async () => {
    const { c, drained } = await openJob();
    await c.stop();
    expect(await within('done after stop()', c.done, 10_000)).toBe('stopped');
    expect(drained.sort()).toEqual(['a', 'b']);
  });

  test("after close(): 'stopped'", async () => {
    const { c, drained } = await openJob();
    await c.close();
    expect(await within('done after close()', c.done, 10_000)).toBe('stopped');
    expect(drained).toEqual([]); // abrupt: no drain
  });

  test('a final plan still resolves with its verdict', async () => {
    const store = new MemoryStore();
    open.push({ store });
    const c = await startCoordinator({
      store, job: 'final', instance: 'w0', logger: silentLogger, ...fast,
      planner: () => ({ final: true, splits: [{ id: 'a', weight: 1 }] }),
      handler: async (split) => split.complete(),
    });
    open[open.length - 1]!.c = c;
    const result = await within('run() on a final plan', c.run({ signals: ['SIGUSR2'] }), 10_000);
    expect(result).toEqual({ outcome: 'complete', forced: false });
    expect(await c.done).toBe('complete');
    expect(process.listenerCount('SIGUSR2')).toBe(0);
  });
});

describe('run()', () => {
  test("stops gracefully on the first signal and resolves 'stopped', its listeners removed", async () => {
    const before = process.listenerCount('SIGUSR2');
    const { c, drained } = await openJob();
    const running = c.run({ signals: ['SIGUSR2'] });
    expect(process.listenerCount('SIGUSR2')).toBe(before + 1);
    process.emit('SIGUSR2', 'SIGUSR2');
    const result = await within('run() after a signal', running, 10_000);
    expect(result).toEqual({ outcome: 'stopped', signal: 'SIGUSR2', forced: false });
    expect(drained.sort()).toEqual(['a', 'b']);
    expect(process.listenerCount('SIGUSR2')).toBe(before);
    expect(c.health().state).toBe('stopped');
  });

  test('a second signal closes at once, without waiting for a drain that does not come', async () => {
    const { c, drained } = await openJob({ ignoreDrain: true });
    const running = c.run({ signals: ['SIGUSR2', 'SIGHUP'] });
    process.emit('SIGUSR2', 'SIGUSR2');
    await waitUntil('the stop to begin', () => c.health().state === 'stopping');
    process.emit('SIGHUP', 'SIGHUP');
    const result = await within('run() after a second signal', running, 10_000);
    expect(result).toEqual({ outcome: 'stopped', signal: 'SIGUSR2', forced: true });
    expect(drained).toEqual([]);
    expect(process.listenerCount('SIGHUP')).toBe(0);
  });

  test('refuses a signal that cannot be caught, or a name that is not one', async () => {
    const { c } = await openJob();
    await expect(c.run({ signals: ['SIGKILL'] })).rejects.toMatchObject({ code: 'INVALID_CONFIG', message: expect.stringContaining('signals[0]') });
    await expect(c.run({ signals: ['SIGTERM', 'SIGNOPE' as NodeJS.Signals] })).rejects.toMatchObject({ code: 'INVALID_CONFIG', message: expect.stringContaining('signals[1]') });
    await expect(c.run({ signals: 'SIGTERM' as unknown as NodeJS.Signals[] })).rejects.toMatchObject({ code: 'INVALID_CONFIG' });
  });
});
