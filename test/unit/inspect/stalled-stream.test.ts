/**
 * The rule that drops a dashboard event stream whose client stopped reading
 * (decision 0051), on samples written by hand: bytes waiting with none sent
 * for `stalledMs` drop it, any byte sent or an empty buffer resets the clock,
 * and more than `maxUnsentBytes` waiting drops it at once. `watchStream`
 * applies the rule on a timer and calls `drop` once. (The same on real
 * sockets: test/browser/stream-limits.test.ts.)
 */
import { afterEach, describe, expect, test, vi } from 'vitest';
import { stallVerdict, watchStream, type StallState, type StreamSample } from '../../../src/inspect/stalled-stream.js';

const limits = { stalledMs: 1000, maxUnsentBytes: 10_000 };
const fresh: StallState = { sent: 0, stalledSince: undefined };

/** Runs the rule over samples taken at the given times; the verdicts in order. */
function run(samples: [number, StreamSample][]): string[] {
  let state = fresh;
  return samples.map(([at, sample]) => {
    const v = stallVerdict(state, sample, limits, at);
    if (v.kind === 'keep') state = v.state;
    return v.kind;
  });
}

describe('stallVerdict', () => {
  test('bytes waiting and none sent for stalledMs: dropped, saying why', () => {
    expect(run([[0, { unsent: 500, sent: 0 }], [999, { unsent: 500, sent: 0 }], [1000, { unsent: 900, sent: 0 }]])).toEqual(['keep', 'keep', 'drop']);
    const v = stallVerdict({ sent: 0, stalledSince: 0 }, { unsent: 900, sent: 0 }, limits, 1200);
    expect(v).toEqual({ kind: 'drop', reason: 'the client has read nothing for 1200 ms while 900 bytes wait (the bound is 1000 ms)' });
  });

  test('a client that reads, however slowly, is kept: any byte sent resets the clock', () => {
    expect(run([[0, { unsent: 500, sent: 0 }], [900, { unsent: 500, sent: 1 }], [1800, { unsent: 500, sent: 1 }], [2700, { unsent: 500, sent: 2 }], [3600, { unsent: 500, sent: 2 }]]))
      .toEqual(['keep', 'keep', 'keep', 'keep', 'keep']);
  });

  test('nothing waiting is never a stall, however long nothing is sent', () => {
    expect(run([[0, { unsent: 0, sent: 0 }], [5000, { unsent: 0, sent: 0 }], [5100, { unsent: 10, sent: 0 }], [6000, { unsent: 10, sent: 0 }], [6100, { unsent: 10, sent: 0 }]]))
      .toEqual(['keep', 'keep', 'keep', 'keep', 'drop']);
  });

  test('more than maxUnsentBytes waiting: dropped at once', () => {
    expect(stallVerdict(fresh, { unsent: 10_000, sent: 0 }, limits, 0).kind).toBe('keep');
    expect(stallVerdict(fresh, { unsent: 10_001, sent: 5 }, limits, 0)).toEqual({ kind: 'drop', reason: '10001 bytes wait for the client (more than 10000)' });
  });
});

describe('watchStream', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  test('looks on a timer and drops once; stopped, it never drops', () => {
    vi.useFakeTimers();
    let now = 0;
    const sample = { unsent: 100, sent: 0 };
    const drops: string[] = [];
    watchStream(() => sample, limits, (reason) => drops.push(reason), () => now);
    const stopped: string[] = [];
    const stop = watchStream(() => sample, limits, (reason) => stopped.push(reason), () => now);
    stop();
    for (let i = 0; i < 20; i++) {
      now += 250;
      vi.advanceTimersByTime(250);
    }
    expect(drops).toHaveLength(1);
    expect(drops[0]).toMatch(/read nothing for \d+ ms/);
    expect(stopped).toEqual([]);
  });
});
