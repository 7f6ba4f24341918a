/**
 * Per-call options of the one store decorator (withCallOptions): a label and
 * a deadline of its own for the calls made through one handle, still recorded
 * once; on a store without the decorator the deadline still bounds the call.
 * The session's renewal uses it to answer within one renewal interval.
 */
import { describe, expect, it } from 'vitest';
import { VirtualClock } from '../../../src/clock.js';
import { SplitfleetError } from '../../../src/errors.js';
import { Metrics } from '../../../src/coordinator/metrics.js';
import { instrumentStore, withCallOptions } from '../../../src/store/instrumented.js';
import { MemoryStore } from '../../../src/store/memory.js';

function stuckStore(): MemoryStore {
  const inner = new MemoryStore({ clock: new VirtualClock() });
  const hung = new Promise<never>(() => undefined);
  return Object.assign(Object.create(inner) as MemoryStore, { keepAliveOnce: () => hung });
}

describe('withCallOptions', () => {
  it('a shorter deadline and a label for one handle; the decorator\'s own calls keep theirs', async () => {
    const clock = new VirtualClock();
    const metrics = new Metrics();
    const store = instrumentStore(stuckStore(), metrics, clock, 1000);
    const renewal = withCallOptions(store, { label: 'renewing the session lease', deadlineMs: 100 }, clock).keepAliveOnce('1').catch((e: unknown) => e);
    const plain = store.keepAliveOnce('1').catch((e: unknown) => e);
    await clock.advance(100);
    const e = await renewal;
    expect(e).toBeInstanceOf(SplitfleetError);
    expect(e).toMatchObject({ code: 'TIMEOUT', retryable: true });
    expect((e as Error).message).toMatch(/^renewing the session lease took longer/);
    let settled = false;
    void plain.finally(() => (settled = true));
    await clock.advance(899);
    expect(settled).toBe(false);
    await clock.advance(1);
    expect((await plain as Error).message).toMatch(/^store call keepAliveOnce took longer/);
  });

  it('on a store without the decorator, a deadline still bounds the call; without one, the store is returned as is', async () => {
    const clock = new VirtualClock();
    const raw = stuckStore();
    expect(withCallOptions(raw, { label: 'x' }, clock)).toBe(raw);
    const call = withCallOptions(raw, { deadlineMs: 50 }, clock).keepAliveOnce('1').catch((e: unknown) => e);
    await clock.advance(50);
    expect(await call).toMatchObject({ code: 'TIMEOUT' });
  });
});
