/** The leader's rules around a decision (protocol/publication.ts), on plain maps: no live view. */
import { describe, expect, it } from 'vitest';
import { assignmentBudget, decisionInputs, inTransit, previousAssignees, prunedRecord, publicationPlan, type ObservedJob } from '../../../src/protocol/publication.js';
import type { SplitStatus } from '../../../src/protocol/records.js';

const NO_HOLD = { paused: false, evacuated: new Set<string>() };
const job = (o: Partial<ObservedJob> = {}): ObservedJob => ({
  members: new Map([['w0', 2], ['w1', 3]]),
  assigns: [['w1', ['s1']], ['w0', ['s2']], ['gone', ['s1', 's3']]],
  leases: new Map([['s1', 'w0'], ['s2', 'w0'], ['s3', 'w0']]),
  owners: new Map([['s1', 'w0']]),
  statusOf: (): SplitStatus => 'runnable',
  ...o,
});

describe('previous assignees and the in-transit rule', () => {
  it('a live member\'s record wins over a departed one\'s', () => {
    const prev = previousAssignees(job().assigns, new Set(['w0', 'w1']));
    expect(prev).toEqual(new Map([['s1', 'w1'], ['s2', 'w0'], ['s3', 'gone']]));
  });
  it('a split named for a live member while another live member holds its lease is in transit', () => {
    const live = new Set(['w0', 'w1']);
    const prev = previousAssignees(job().assigns, live);
    expect(inTransit(job().leases, prev, live)).toEqual(new Map([['s1', 'w0']]));
  });
  it('named for a departed member: not in transit (its lease owner stays visible)', () => {
    const live = new Set(['w0']);
    expect(inTransit(new Map([['s3', 'w0']]), new Map([['s3', 'gone']]), live).size).toBe(0);
  });
});

describe('decisionInputs', () => {
  it('members with their budgets, reserved splits of departed members, the in-transit set', () => {
    const d = decisionInputs(job(), 1000, undefined, 5000, NO_HOLD);
    expect(d.members).toEqual([{ id: 'w0', cap: 2 }, { id: 'w1', cap: 3 }]);
    expect(d.hidden).toEqual(new Map([['s1', 'w0']]));
    expect(d.previous.get('s3')).toBe('gone');
    // s3: its only owners besides the live lease holder... w0 holds its lease, so nothing is withheld.
    expect(d.reserved).toEqual([]);
  });
  it('withholds a departed member\'s split nobody live holds, until the window closes', () => {
    const j = job({ leases: new Map(), owners: new Map([['s3', 'gone']]), assigns: [['gone', ['s3']]] });
    const d = decisionInputs(j, 1000, undefined, 5000, NO_HOLD);
    expect(d.reserved).toEqual(['s3']);
    expect(d.nextChangeAt).toBe(6000);
    expect(decisionInputs(j, 6000, d.window, 5000, NO_HOLD).reserved).toEqual([]);
  });
  it('does not withhold a split only named for a departed member (prefetched, never claimed)', () => {
    const j = job({ leases: new Map(), owners: new Map(), assigns: [['gone', ['s3']]] });
    expect(decisionInputs(j, 1000, undefined, 5000, NO_HOLD).reserved).toEqual([]);
  });
  it('a member\'s assignment budget is its lanes plus its advertised prefetch (none when absent)', () => {
    expect(assignmentBudget({ maxInFlight: 4 })).toBe(4);
    expect(assignmentBudget({ maxInFlight: 4, prefetch: 0 })).toBe(4);
    expect(assignmentBudget({ maxInFlight: 4, prefetch: 3 })).toBe(7);
  });
  it('only runnable splits are considered; paused means no members, evacuated ones are left out', () => {
    const j = job({ leases: new Map(), owners: new Map([['s3', 'gone']]), assigns: [['gone', ['s3']]], statusOf: () => 'completed' });
    expect(decisionInputs(j, 1000, undefined, 5000, NO_HOLD).reserved).toEqual([]);
    expect(decisionInputs(job(), 0, undefined, 0, { paused: true, evacuated: new Set() }).members).toEqual([]);
    expect(decisionInputs(job(), 0, undefined, 0, { paused: false, evacuated: new Set(['w1']) }).members).toEqual([{ id: 'w0', cap: 2 }]);
  });
});

describe('publicationPlan and pruning', () => {
  it('writes only changed records; every live member gets one, empty when given nothing', () => {
    const plan = publicationPlan(new Map([['w0', ['a']]]), ['w0', 'w1'], new Map([['w0', ['a']]]), new Set());
    expect(plan.puts).toEqual(new Map([['w1', []]]));
    expect(plan.deletes).toEqual([]);
  });
  it('a departed member\'s record keeps only what is still withheld for it, and goes once nothing is', () => {
    const current = new Map([['gone', ['a', 'b']], ['old', ['c']], ['same', ['d']]]);
    const plan = publicationPlan(new Map(), [], current, new Set(['a', 'd']));
    expect(plan.puts).toEqual(new Map([['gone', ['a']]]));
    expect(plan.deletes).toEqual(['old']);
    expect(prunedRecord(['x'], new Set())).toBeUndefined();
    expect(prunedRecord(['x', 'y'], new Set(['y']))).toEqual(['y']);
  });
});
