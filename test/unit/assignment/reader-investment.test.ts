/**
 * The readers' investment (fields.ts `investing`, issue 30): once named
 * loads won a probe in a read, the blocks the probes gave to `Reflect.get`
 * are read by name on a budget of INVEST_MS, so that objects on deprecated
 * hidden classes are migrated instead of read generically on every call.
 * Only the schedule is tested here (no timing assertions); what it changes
 * is speed, and both readers store the same columns.
 */
import { describe, expect, it } from 'vitest';
import {
  chargeInvestment, fieldsFor, INVEST_MS, investing, readGeneric, readSplits, settleProbe, splitFields,
} from '../../../src/assignment/object/fields.js';

describe('reader investment', () => {
  it('a read invests once named loads won a probe in it, and stops when INVEST_MS is spent', () => {
    const choice = splitFields(1).choice;
    expect(choice.investMs).toBe(INVEST_MS);
    // Reflect.get faster from the start (named loads slow on every block so far): nothing invested.
    settleProbe(choice, 0.5, 0.1);
    expect(investing(choice)).toBe(false);
    // Named loads win a probe, later lose one: Reflect.get's blocks are read by name.
    settleProbe(choice, 0.03, 0.1);
    expect(investing(choice)).toBe(false);
    settleProbe(choice, 0.5, 0.1);
    expect([choice.named, investing(choice)]).toEqual([false, true]);
    // Each invested block counts towards the next probe, and costs what it took over Reflect.get's probe time.
    const until = choice.untilProbe;
    chargeInvestment(choice, 0.1 * 1024 + INVEST_MS / 2, 1024);
    expect(choice.untilProbe).toBe(until - 1);
    expect(choice.investMs).toBeCloseTo(INVEST_MS / 2);
    expect(investing(choice)).toBe(true);
    chargeInvestment(choice, 0.1 * 1024 + INVEST_MS / 2, 1024);
    expect(investing(choice)).toBe(false);
    // A block named loads read faster than Reflect.get would have gives the time back.
    chargeInvestment(choice, 0.05 * 1024, 1024);
    expect(investing(choice)).toBe(true);
  });

  it('each read of a buffer has its own budget, and starts without a won probe', () => {
    const f = splitFields(2048);
    settleProbe(f.choice, 0.03, 0.1);
    settleProbe(f.choice, 0.5, 0.1);
    chargeInvestment(f.choice, 0.1 * 1024 + INVEST_MS * 2, 1024);
    expect([f.choice.namedWon, investing(f.choice)]).toEqual([true, false]);
    const again = fieldsFor(f, 2048);
    expect(again).toBe(f);
    expect([again.choice.namedWon, again.choice.investMs]).toEqual([false, INVEST_MS]);
  });

  it('an invested read stores what Reflect.get stores, reading each field once', () => {
    const reads = new Map<string, number>();
    const n = 5000;
    const make = (counted: boolean): object[] => Array.from({ length: n }, (_, i) => {
      const o = {};
      const fields = { id: `s${i}`, weight: i * 3, leaseOwner: i % 3 === 0 ? 'a' : null, previous: 'b', recordOwner: undefined, status: i % 7 === 0 ? 'completed' : 'runnable' };
      for (const [k, v] of Object.entries(fields)) {
        Object.defineProperty(o, k, { get: () => (counted && reads.set(`${i}.${k}`, (reads.get(`${i}.${k}`) ?? 0) + 1), v), enumerable: true });
      }
      return o;
    });
    const invested = splitFields(n);
    // Every block after the first probe is an invested one: named loads won, then lost, with budget and no probe due.
    settleProbe(invested.choice, 0.03, 0.1);
    settleProbe(invested.choice, 0.5, 0.1);
    invested.choice.untilProbe = Number.MAX_SAFE_INTEGER;
    invested.choice.investMs = Number.MAX_SAFE_INTEGER;
    expect(investing(invested.choice)).toBe(true);
    expect(readSplits(make(true), 0, n, invested)).toBe(-1);
    expect(reads.size).toBe(n * 6);
    expect([...reads.values()].every((c) => c === 1)).toBe(true);
    const generic = splitFields(n);
    expect(readGeneric(make(false), 0, n, generic)).toBe(-1);
    expect([...invested.weight.subarray(0, n)]).toEqual([...generic.weight.subarray(0, n)]);
    expect([...invested.status.subarray(0, n)]).toEqual([...generic.status.subarray(0, n)]);
    expect(invested.pages).toEqual(generic.pages);
  });
});
