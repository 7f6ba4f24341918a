/**
 * The tail's budgets (protocol/tail-budgets.ts, decision 0089): once every split waiting fits in
 * a free lane, a decision names at most each member's lanes, so nothing waits as prefetch behind
 * busy lanes while a lane idles elsewhere.
 */
import { describe, expect, it } from 'vitest';
import { fc, test } from '@fast-check/vitest';
import { inTheTail, tailBudgets, type BudgetMember } from '../../../src/protocol/tail-budgets.js';
import { decisionInputs, type ObservedJob } from '../../../src/protocol/publication.js';
import { referenceAssignment } from '../../../src/assignment/reference.js';
import type { SplitStatus } from '../../../src/protocol/records.js';

const m = (id: string, lanes: number, prefetch: number): BudgetMember => ({ id, lanes, cap: lanes + prefetch });

describe('tailBudgets', () => {
  it('names lanes plus prefetch while the queue is longer than the free lanes', () => {
    const members = [m('a', 2, 2), m('b', 2, 2)];
    expect(tailBudgets(members, new Map([['a', 2], ['b', 1]]), 2)).toEqual([{ id: 'a', cap: 4 }, { id: 'b', cap: 4 }]);
  });
  it('names at most the lanes once the queue fits in the free lanes', () => {
    const members = [m('a', 2, 2), m('b', 2, 2)];
    expect(inTheTail(members, new Map([['a', 2], ['b', 1]]), 1)).toBe(true);
    expect(tailBudgets(members, new Map([['a', 2], ['b', 1]]), 1)).toEqual([{ id: 'a', cap: 2 }, { id: 'b', cap: 2 }]);
  });
  it('a member holding more than its lanes (a drain under way) frees no lane for the count', () => {
    expect(inTheTail([m('a', 2, 1), m('b', 1, 1)], new Map([['a', 3], ['b', 0]]), 2)).toBe(false);
  });
  it('changes nothing without prefetch', () => {
    const members = [m('a', 3, 0), m('b', 1, 0)];
    expect(tailBudgets(members, new Map(), 0)).toEqual([{ id: 'a', cap: 3 }, { id: 'b', cap: 1 }]);
  });
});

const job = (o: Partial<ObservedJob>): ObservedJob => ({
  members: new Map([['a', 4], ['b', 4]]),
  assigns: [],
  leases: new Map(),
  owners: new Map(),
  statusOf: (): SplitStatus => 'runnable',
  ...o,
});
const NO_HOLD = { paused: false, evacuated: new Set<string>() };

describe('decisionInputs in the tail', () => {
  it('counts held splits from the live leases and gives lanes as budgets', () => {
    const tail = { lanes: new Map([['a', 2], ['b', 2]]), queued: 1 };
    const d = decisionInputs(job({ leases: new Map([['p1', 'a'], ['p2', 'a'], ['p3', 'b']]), tail }), 0, undefined, 0, NO_HOLD);
    expect(d.members).toEqual([{ id: 'a', cap: 2 }, { id: 'b', cap: 2 }]);
  });
  it('keeps the assignment budgets while the queue outgrows the free lanes', () => {
    const tail = { lanes: new Map([['a', 2], ['b', 2]]), queued: 2 };
    const d = decisionInputs(job({ leases: new Map([['p1', 'a'], ['p2', 'a'], ['p3', 'b']]), tail }), 0, undefined, 0, NO_HOLD);
    expect(d.members).toEqual([{ id: 'a', cap: 4 }, { id: 'b', cap: 4 }]);
  });
  it('a lease of a split that is no longer runnable takes no lane', () => {
    const tail = { lanes: new Map([['a', 2], ['b', 2]]), queued: 2 };
    const statusOf = (id: string): SplitStatus => (id === 'p3' ? 'completed' : 'runnable');
    const d = decisionInputs(job({ leases: new Map([['p1', 'a'], ['p2', 'a'], ['p3', 'b']]), statusOf, tail }), 0, undefined, 0, NO_HOLD);
    expect(d.members.map((x) => x.cap)).toEqual([2, 2]);
  });
});

/**
 * The reason for the rule, on the reference engine: a residual weighs less than what a member's
 * busy lanes still hold, so by weight alone it goes, as prefetch, to a member whose lanes are all
 * taken. With the tail's budgets every queued split is named for a member with a free lane.
 */
describe('the engine under the tail budgets', () => {
  it('the example: by weight the residual waits behind busy lanes, in the tail it goes to the idle lane', () => {
    const splits = [
      { id: 'p1', weight: 10, leaseOwner: 'a', previous: 'a' }, { id: 'p2', weight: 10, leaseOwner: 'a', previous: 'a' },
      { id: 'p3', weight: 100, leaseOwner: 'b', previous: 'b' }, { id: 'r1', weight: 30 },
    ];
    const byWeight = referenceAssignment({ seed: 'j', members: [{ id: 'a', cap: 4 }, { id: 'b', cap: 4 }], splits });
    expect(byWeight.assignment.a).toContain('r1');
    const caps = tailBudgets([m('a', 2, 2), m('b', 2, 2)], new Map([['a', 2], ['b', 1]]), 1);
    const tail = referenceAssignment({ seed: 'j', members: caps, splits });
    expect(tail.assignment.b).toContain('r1');
  });

  test.prop([
    fc.array(fc.record({ lanes: fc.integer({ min: 1, max: 4 }), prefetch: fc.integer({ min: 0, max: 3 }), held: fc.integer({ min: 0, max: 4 }) }), { minLength: 1, maxLength: 5 }),
    fc.array(fc.integer({ min: 0, max: 1000 }), { maxLength: 12 }),
    fc.array(fc.integer({ min: 0, max: 1000 }), { maxLength: 20 }),
  ])('in the tail every queued split is named, and only within a member\'s lanes', (ms, queuedWeights, heldWeights) => {
    const members = ms.map((x, i) => m(`m${i}`, x.lanes, x.prefetch));
    const held = new Map<string, number>();
    const splits: { id: string; weight: number; leaseOwner?: string; previous?: string }[] = [];
    ms.forEach((x, i) => {
      const n = Math.min(x.held, x.lanes);
      held.set(`m${i}`, n);
      for (let k = 0; k < n; k++) splits.push({ id: `h${i}-${k}`, weight: heldWeights[(i * 4 + k) % Math.max(1, heldWeights.length)] ?? 1, leaseOwner: `m${i}`, previous: `m${i}` });
    });
    queuedWeights.forEach((w, k) => splits.push({ id: `q${k}`, weight: w }));
    if (!inTheTail(members, held, queuedWeights.length)) return;
    const out = referenceAssignment({ seed: 'j', members: tailBudgets(members, held, queuedWeights.length), splits });
    expect(out.stats.queued).toBe(0);
    for (const mm of members) expect(out.assignment[mm.id]!.length).toBeLessThanOrEqual(mm.lanes);
  });
});
