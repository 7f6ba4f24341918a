import { describe, expect, it } from 'vitest';
import { test, fc } from '@fast-check/vitest';
import { reservedSplits, type ReservedWindowState, type SplitOwnership } from '../../../src/protocol/reserved.js';
import { isSplitfleetError } from '../../../src/errors.js';

const DELAY = 20_000;
const splits: SplitOwnership[] = [
  { id: 'a1', leaseOwner: 'A', recordOwner: 'A', previous: 'A' },
  { id: 'a2', recordOwner: 'A' }, // lease already expired, record still names A
  { id: 'a3', previous: 'A' }, // named for A, never claimed (prefetched): not withheld
  { id: 'b1', leaseOwner: 'B', recordOwner: 'B', previous: 'B' },
  { id: 'c1', recordOwner: 'C', previous: 'C' },
];

/** One leader step with the fixture's splits. */
function step(previous: ReservedWindowState | undefined, now: number, live: string[], delay = DELAY) {
  return reservedSplits({ previous, now, live, splits, rebalanceDelayMs: delay });
}

describe('reservedSplits', () => {
  it('reserves nothing while everyone is live', () => {
    const r = step(undefined, 0, ['A', 'B', 'C']);
    expect(r.reserved).toEqual([]);
    expect(r.nextChangeAt).toBeUndefined();
    expect(r.state).toEqual({ live: ['A', 'B', 'C'], windows: [] });
  });

  it('withholds a departed instance\'s splits until departedAt + delay', () => {
    const s0 = step(undefined, 0, ['A', 'B', 'C']).state;
    const r = step(s0, 1_000, ['B', 'C']);
    expect(r.reserved).toEqual(['a1', 'a2']);
    expect(r.nextChangeAt).toBe(21_000);
    expect(r.windows).toEqual([{ instance: 'A', departedAt: 1_000, until: 21_000 }]);
    const later = step(r.state, 20_999, ['B', 'C']);
    expect(later.reserved).toEqual(['a1', 'a2']);
    expect(later.nextChangeAt).toBe(21_000);
  });

  it('expires at exactly the boundary and never reopens by itself', () => {
    const s0 = step(undefined, 0, ['A', 'B', 'C']).state;
    const s1 = step(s0, 1_000, ['B', 'C']).state;
    const atBoundary = step(s1, 21_000, ['B', 'C']);
    expect(atBoundary.reserved).toEqual([]);
    expect(atBoundary.nextChangeAt).toBeUndefined();
    expect(atBoundary.state?.windows).toEqual([]);
    expect(step(atBoundary.state, 500_000, ['B', 'C']).reserved).toEqual([]);
  });

  it('cancels the window the moment the instance reappears', () => {
    const s0 = step(undefined, 0, ['A', 'B', 'C']).state;
    const s1 = step(s0, 1_000, ['B', 'C']).state;
    const back = step(s1, 5_000, ['A', 'B', 'C']);
    expect(back.reserved).toEqual([]);
    expect(back.nextChangeAt).toBeUndefined();
    expect(back.state).toEqual({ live: ['A', 'B', 'C'], windows: [] });
  });

  it('opens a fresh window for a second departure of the same instance', () => {
    let s = step(undefined, 0, ['A', 'B', 'C']).state;
    s = step(s, 1_000, ['B', 'C']).state; // leaves
    s = step(s, 2_000, ['A', 'B', 'C']).state; // back: cancelled
    const again = step(s, 10_000, ['B', 'C']); // leaves again
    expect(again.windows).toEqual([{ instance: 'A', departedAt: 10_000, until: 30_000 }]);
    expect(step(again.state, 29_999, ['B', 'C']).reserved).toEqual(['a1', 'a2']);
    expect(step(again.state, 30_000, ['B', 'C']).reserved).toEqual([]);
  });

  it('keeps separate windows for two departed instances', () => {
    let r = step(undefined, 0, ['A', 'B', 'C']);
    r = step(r.state, 1_000, ['B', 'C']);
    r = step(r.state, 6_000, ['C']);
    expect(r.reserved).toEqual(['a1', 'a2', 'b1']);
    expect(r.nextChangeAt).toBe(21_000);
    r = step(r.state, 21_000, ['C']);
    expect(r.reserved).toEqual(['b1']);
    expect(r.nextChangeAt).toBe(26_000);
    r = step(r.state, 26_000, ['C']);
    expect(r.reserved).toEqual([]);
    expect(r.nextChangeAt).toBeUndefined();
  });

  it('withholds only what a departed instance held: a split merely named for it is reassigned at once', () => {
    // substrate.md, "Prefetch": moving an unclaimed split costs no drain, and a returning pod
    // has nothing of it to resume.
    const named: SplitOwnership[] = [
      { id: 'held', leaseOwner: 'A', recordOwner: 'A', previous: 'A' },
      { id: 'named', previous: 'A' },
      { id: 'released', previous: 'A', recordOwner: null },
    ];
    const s0 = reservedSplits({ previous: undefined, now: 0, live: ['A', 'B'], splits: named, rebalanceDelayMs: DELAY });
    const r = reservedSplits({ previous: s0.state, now: 1, live: ['B'], splits: named, rebalanceDelayMs: DELAY });
    expect(r.reserved).toEqual(['held']);
    // A leader's first step opens no window for an instance that only had splits named for it.
    const first = reservedSplits({ previous: undefined, now: 0, live: ['B'], splits: named.slice(1), rebalanceDelayMs: DELAY });
    expect(first.reserved).toEqual([]);
    expect(first.windows).toEqual([]);
  });

  it('never reserves a split a live instance holds or was assigned', () => {
    const moving: SplitOwnership[] = [
      { id: 'x', recordOwner: 'A', previous: 'B' }, // A was draining it for B
      { id: 'y', leaseOwner: 'B', previous: 'A' }, // B already holds it
    ];
    const s0 = reservedSplits({ previous: undefined, now: 0, live: ['A', 'B'], splits: moving, rebalanceDelayMs: DELAY });
    const r = reservedSplits({ previous: s0.state, now: 1, live: ['B'], splits: moving, rebalanceDelayMs: DELAY });
    expect(r.reserved).toEqual([]);
    expect(r.windows).toHaveLength(1);
  });

  it('on a leader\'s first step grants every absent owner one window from now', () => {
    const r = step(undefined, 50_000, ['B']);
    expect(r.reserved).toEqual(['a1', 'a2', 'c1']);
    expect(r.nextChangeAt).toBe(70_000);
    expect(step(r.state, 70_000, ['B']).reserved).toEqual([]);
  });

  it('refuses a negative or fractional delay', () => {
    for (const delay of [-1, 0.5, Number.NaN]) {
      try {
        step(undefined, 0, [], delay);
        throw new Error('accepted');
      } catch (e) {
        expect(isSplitfleetError(e, 'INVALID_INPUT')).toBe(true);
      }
    }
  });

  const instances = fc.constantFrom('A', 'B', 'C', 'D');
  const owner = fc.option(instances, { nil: undefined });
  const ownership = fc.array(fc.record({
    id: fc.string({ minLength: 1, maxLength: 3 }), leaseOwner: owner, recordOwner: owner, previous: owner,
  }), { maxLength: 12 });
  const history = fc.array(fc.record({
    advance: fc.nat(30_000), live: fc.subarray(['A', 'B', 'C', 'D']),
  }), { minLength: 1, maxLength: 12 });
  const windowState = fc.option(fc.record({
    live: fc.subarray(['A', 'B', 'C', 'D']),
    windows: fc.uniqueArray(fc.record({ instance: instances, departedAt: fc.integer() }),
      { selector: (w) => w.instance }),
  }), { nil: undefined });

  test.prop([windowState, fc.integer(), fc.subarray(['A', 'B', 'C', 'D']), ownership, history])(
    'a_zero_rebalance_delay_reassigns_immediately',
    (previous, now, live, owned, steps) => {
      // Whatever window state is passed in, a zero delay withholds nothing and keeps no window.
      const r = reservedSplits({ previous, now, live, splits: owned, rebalanceDelayMs: 0 });
      expect(r).toEqual({ reserved: [], state: undefined, nextChangeAt: undefined, windows: [] });
      // Nor across a whole history of departures and returns.
      let state: ReservedWindowState | undefined;
      let t = now;
      for (const s of steps) {
        t += s.advance;
        const out = reservedSplits({ previous: state, now: t, live: s.live, splits: owned, rebalanceDelayMs: 0 });
        expect(out.reserved).toEqual([]);
        expect(out.nextChangeAt).toBeUndefined();
        state = out.state;
      }
      // The same departure under a positive delay does withhold (the property is not vacuous).
      const departed = ['A', 'B', 'C', 'D'].filter((i) => !live.includes(i));
      const withheld = owned.filter((sp) => {
        const os = [sp.leaseOwner, sp.recordOwner, sp.previous].filter((o) => o !== undefined);
        const holders = [sp.leaseOwner, sp.recordOwner].filter((o) => o !== undefined);
        return holders.length > 0 && os.every((o) => departed.includes(o));
      });
      const delayed = reservedSplits({ previous: undefined, now, live, splits: owned, rebalanceDelayMs: 1 });
      expect(delayed.reserved.length > 0).toBe(withheld.length > 0);
    },
  );

  test.prop([ownership, history, fc.integer({ min: 1, max: 60_000 })])(
    'windows close by departedAt + delay, and nextChangeAt is the earliest of them',
    (owned, steps, delay) => {
      let state: ReservedWindowState | undefined;
      let t = 0;
      for (const s of steps) {
        t += s.advance;
        const r = reservedSplits({ previous: state, now: t, live: s.live, splits: owned, rebalanceDelayMs: delay });
        for (const w of r.windows) {
          expect(s.live).not.toContain(w.instance);
          expect(w.until).toBeGreaterThan(t);
          expect(w.until - w.departedAt).toBe(delay);
        }
        expect(r.nextChangeAt).toBe(r.windows.length === 0 ? undefined : Math.min(...r.windows.map((w) => w.until)));
        for (const id of r.reserved) {
          const sp = owned.filter((o) => o.id === id);
          expect(sp.some((o) => [o.leaseOwner, o.recordOwner, o.previous].some(
            (x) => x !== undefined && r.windows.some((w) => w.instance === x)))).toBe(true);
        }
        state = r.state;
      }
      // Once everything has had time to expire, nothing stays reserved.
      const last = steps[steps.length - 1]!;
      const end = reservedSplits({ previous: state, now: t + delay, live: last.live, splits: owned, rebalanceDelayMs: delay });
      expect(end.reserved).toEqual([]);
    },
  );
});
