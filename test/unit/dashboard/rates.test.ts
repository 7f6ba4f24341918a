/**
 * The job list's rate and ETA (src/dashboard/rates.ts): unknown from one
 * read, splits per second over the window after, the ETA from what is left,
 * none for a finished job, and a count that goes down starts over.
 */
import { describe, expect, test } from 'vitest';
import { RateWindow } from '../../../src/dashboard/rates.js';

const job = (completed: number, remaining: number, finished = false) => ({ job: 'j', completed, remaining, finished });

describe('RateWindow', () => {
  test('one read says nothing; two a second or more apart give the rate and the ETA of what is left', () => {
    const w = new RateWindow(60_000, 1_000);
    expect(w.observe(0, [job(0, 100)]).get('j')).toEqual({ perSecond: null, etaMs: null });
    expect(w.observe(500, [job(5, 95)]).get('j')).toEqual({ perSecond: null, etaMs: null });
    // 20 splits in 2 s: 10/s; 80 left: 8 s.
    expect(w.observe(2_000, [job(20, 80)]).get('j')).toEqual({ perSecond: 10, etaMs: 8_000 });
  });

  test('the rate is over the last window only: an early burst stops counting once a newer sample spans the window', () => {
    const w = new RateWindow(10_000, 1_000);
    w.observe(0, [job(0, 1000)]);
    w.observe(1_000, [job(500, 500)]); // a burst
    for (let t = 2_000; t <= 30_000; t += 1_000) w.observe(t, [job(500 + (t - 1_000) / 1_000, 500)]);
    // Now at 1 split/s for far longer than the window: the burst is out of it.
    expect(w.observe(31_000, [job(530, 470)]).get('j')!.perSecond).toBeCloseTo(1, 5);
  });

  test('no ETA for a finished job, a job with nothing left, or no progress', () => {
    const w = new RateWindow(60_000, 1_000);
    w.observe(0, [job(0, 10), { job: 'k', completed: 5, remaining: 5, finished: false }, { job: 'z', completed: 3, remaining: 3, finished: false }]);
    const r = w.observe(2_000, [job(10, 0, true), { job: 'k', completed: 10, remaining: 0, finished: false }, { job: 'z', completed: 3, remaining: 3, finished: false }]);
    expect(r.get('j')).toEqual({ perSecond: 5, etaMs: null });
    expect(r.get('k')).toEqual({ perSecond: 2.5, etaMs: null });
    expect(r.get('z')).toEqual({ perSecond: 0, etaMs: null });
  });

  test('a count that goes down (the job deleted and submitted again) starts over; a job not listed is forgotten', () => {
    const w = new RateWindow(60_000, 1_000);
    w.observe(0, [job(50, 50)]);
    w.observe(2_000, [job(60, 40)]);
    expect(w.observe(3_000, [job(1, 99)]).get('j')).toEqual({ perSecond: null, etaMs: null });
    w.observe(4_000, []);
    // Forgotten: this is its first sample again.
    expect(w.observe(6_000, [job(9, 91)]).get('j')).toEqual({ perSecond: null, etaMs: null });
  });

  test('samples stay bounded', () => {
    const w = new RateWindow(1e12, 1_000, 8);
    for (let t = 0; t < 10_000; t++) w.observe(t * 1_000, [job(t, 10_000 - t)]);
    const kept = (w as unknown as { samples: Map<string, unknown[]> }).samples.get('j')!;
    expect(kept.length).toBeLessThanOrEqual(8);
    expect(w.observe(10_000_000, [job(10_000, 0)]).get('j')!.perSecond).toBeCloseTo(1, 5);
  });
});
