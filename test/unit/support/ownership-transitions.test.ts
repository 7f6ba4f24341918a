/**
 * The shared ownership rulebook (test/support/ownership-transitions.ts) and
 * units ledger checks (test/support/units-ledger.ts), step by step: each
 * legal step passes and is classified as the two auditors need it (a claim's
 * kind, a quarantine by takeover or by its owner, an end), and each rule is
 * shown failing on a step built to break it, so a rule that stopped firing
 * would be caught here before either auditor's runs relied on it.
 */
import { describe, expect, it } from 'vitest';
import { ownershipStep, type OwnershipStep, type SplitRecords } from '../../support/ownership-transitions.js';
import { duplicates, missingUnits, overReplayBound, unitClaimProblem, unitRanges } from '../../support/units-ledger.js';

const split = (epoch: number, owner: string, status = 'runnable', attempts = 0) => ({ epoch, status, owner, attempts });
const lease = (owner: string, epoch: number) => ({ owner, epoch });
const prog = (epoch: number, progress: number) => ({ epoch, progress });

/** A step of split `s`; `put` and `deleted` default to what differs between before and after. */
function step(before: SplitRecords, after: SplitRecords, extra: Partial<OwnershipStep> = {}): OwnershipStep {
  const changed = (k: keyof SplitRecords) => after[k] !== undefined && JSON.stringify(after[k]) !== JSON.stringify(before[k]);
  return {
    id: 's', before, after, packed: false,
    put: { split: changed('split'), lease: changed('lease'), progress: changed('progress') },
    deleted: { split: !!before.split && !after.split, progress: !!before.progress && !after.progress },
    ...extra,
  };
}
const rules = (s: OwnershipStep) => ownershipStep(s).problems.map((p) => p.rule);

describe('ownership transitions', () => {
  it('classifies the legal claims, and charges an attempt only for a takeover of a tenancy that committed nothing', () => {
    const create = ownershipStep(step({ split: split(0, '') }, { split: split(1, 'a'), lease: lease('a', 1) }));
    expect(create).toEqual({ step: { kind: 'claim', from: 'create', previousOwner: '', endedCommitted: false }, problems: [] });
    // a's lease key expired: b takes over a tenancy that committed nothing (one attempt) or something (none).
    expect(ownershipStep(step({ split: split(1, 'a') }, { split: split(2, 'b', 'runnable', 1), lease: lease('b', 2) })).step).toMatchObject({ from: 'takeover' });
    expect(rules(step({ split: split(1, 'a'), progress: prog(1, 3) }, { split: split(2, 'b'), lease: lease('b', 2), progress: prog(1, 3) }))).toEqual([]);
    expect(rules(step({ split: split(1, 'a'), progress: prog(1, 3) }, { split: split(2, 'b', 'runnable', 1), lease: lease('b', 2), progress: prog(1, 3) }))).toEqual(['claim-miscounted']);
    expect(rules(step({ split: split(1, 'a') }, { split: split(2, 'b'), lease: lease('b', 2) }))).toEqual(['claim-miscounted']);
    // A restarted a takes its own live key back; a claim after a release consumes nothing.
    expect(ownershipStep(step({ split: split(1, 'a'), lease: lease('a', 1) }, { split: split(2, 'a', 'runnable', 1), lease: lease('a', 2) })).step).toMatchObject({ from: 'reclaim' });
    expect(ownershipStep(step({ split: split(1, '') }, { split: split(2, 'b'), lease: lease('b', 2) })).step).toMatchObject({ from: 'after-release' });
    expect(rules(step({ split: split(1, '') }, { split: split(2, 'b', 'runnable', 1), lease: lease('b', 2) }))).toEqual(['claim-miscounted']);
  });

  it('a claim writes its own lease key; a seeding is initial; a record is never deleted or rewritten once terminal', () => {
    expect(rules(step({ split: split(0, '') }, { split: split(1, 'a') }))).toEqual(['claim-without-lease']);
    expect(rules(step({ split: split(0, '') }, { split: split(1, 'a'), lease: lease('b', 1) }))).toEqual(['claim-without-lease', 'lease-record-disagree']);
    expect(rules(step({}, { split: split(0, '') }))).toEqual([]);
    expect(rules(step({}, { split: split(1, 'a') }))).toEqual(['bad-seed']);
    expect(rules(step({ split: split(1, '', 'completed'), progress: prog(1, 5) }, {}))).toEqual(['split-deleted', 'progress-deleted']);
    expect(rules(step({ split: split(1, '', 'completed'), progress: prog(1, 5) }, {}, { packed: true }))).toEqual([]);
    expect(rules(step({ split: split(1, '', 'completed') }, { split: split(1, '', 'runnable') }))).toContain('terminal-rewritten');
    expect(rules(step({ split: split(1, 'a'), lease: lease('a', 1) }, { split: { ...split(1, '', 'completed'), progress: 5 } }))).toEqual(['progress-in-split']);
  });

  it("an owner's end is fenced by its live lease key, which it deletes; an ownerless split is written only by a claim", () => {
    const held = { split: split(1, 'a'), lease: lease('a', 1) };
    expect(ownershipStep(step(held, { split: split(1, '', 'completed') })).step).toEqual({ kind: 'end', how: 'completed' });
    expect(ownershipStep(step(held, { split: split(1, '', 'runnable', 1) })).step).toEqual({ kind: 'end', how: 'failed' });
    expect(ownershipStep(step(held, { split: split(1, '') })).step).toEqual({ kind: 'end', how: 'released' });
    expect(rules(step({ split: split(1, 'a') }, { split: split(1, '') }))).toEqual(['unfenced-end', 'lease-kept-after-release']);
    expect(rules(step(held, { split: split(1, ''), lease: lease('a', 1) }))).toEqual(['lease-kept-after-release', 'lease-record-disagree']);
    expect(rules(step(held, { split: { ...split(1, 'a'), note: 1 }, lease: lease('a', 1) }))).toEqual(['rewritten-keeping-owner']);
    expect(rules(step({ split: split(1, '') }, { split: split(1, '', 'completed') }))).toEqual(['write-to-unowned']);
  });

  it('a quarantine takes the one attempt reaching the cap: by its owner, or by a takeover of a tenancy that committed nothing', () => {
    const held = { split: split(1, 'a', 'runnable', 2), lease: lease('a', 1) };
    expect(ownershipStep(step(held, { split: split(1, '', 'quarantined', 3) }))).toEqual({ step: { kind: 'quarantine', takeover: false }, problems: [] });
    expect(ownershipStep(step({ split: split(1, 'a', 'runnable', 2) }, { split: split(1, '', 'quarantined', 3) })).step).toEqual({ kind: 'quarantine', takeover: true });
    expect(rules(step(held, { split: split(1, '', 'quarantined', 2) }))).toEqual(['quarantine-miscounted']);
    expect(rules(step({ ...held, progress: prog(1, 4) }, { split: split(1, '', 'quarantined', 3), progress: prog(1, 4) }))).toEqual([]);
    expect(rules(step({ split: split(1, 'a', 'runnable', 2), progress: prog(1, 4) }, { split: split(1, '', 'quarantined', 3), progress: prog(1, 4) }))).toEqual(['quarantine-burned-committed']);
    expect(rules(step({ split: split(1, '', 'runnable', 2) }, { split: split(1, '', 'quarantined', 3) }))).toEqual(['quarantine-after-release']);
    expect(rules(step(held, { split: split(1, '', 'quarantined', 3), lease: lease('a', 1) }))).toEqual(['quarantined-while-leased', 'lease-record-disagree']);
  });

  it("committed progress is the runnable owner's, at its epoch, under its lease key, and never a claim's", () => {
    const held = { split: split(1, 'a'), lease: lease('a', 1) };
    expect(rules(step(held, { ...held, progress: prog(1, 3) }))).toEqual([]);
    expect(rules(step(held, { ...held, progress: prog(2, 3) }))).toEqual(['progress-wrong-epoch']);
    expect(rules(step({ split: split(1, 'a') }, { split: split(1, 'a'), progress: prog(1, 3) }))).toEqual(['unfenced-progress']);
    expect(rules(step({ split: split(1, '') }, { split: split(1, ''), progress: prog(1, 3) }))).toEqual(['progress-while-unowned']);
    expect(rules(step({ split: split(1, '', 'completed') }, { split: split(1, '', 'completed'), progress: prog(1, 3) }))).toEqual(['progress-after-terminal']);
    expect(rules(step(held, { split: split(2, 'b', 'runnable', 1), lease: lease('b', 2), progress: prog(1, 3) }))).toContain('claim-wrote-progress');
  });
});

describe('units ledger', () => {
  it('finds the units lost, the duplicates over the replay bound, and a unit processed outside its claim', () => {
    const seen = new Set([1, 2, 4, 5, 7]);
    expect(missingUnits((u) => seen.has(u), 1, 8)).toEqual([3, 6, 8]);
    expect(unitRanges([1, 2, 3, 5, 7, 8])).toBe('1-3, 5, 7-8');
    expect(duplicates([1, 3, 2])).toBe(3);
    expect(overReplayBound(3, 2, 1)).toBe(true);
    expect(overReplayBound(3, 2, 1, 1)).toBe(false);
    const u = { instance: 'b', id: 's', unit: 4, epoch: 2 };
    expect(unitClaimProblem(u, ['b'])).toBeUndefined();
    expect(unitClaimProblem(u, ['a'])).toMatchObject({ rule: 'non-owner' });
    expect(unitClaimProblem(u, [])).toMatchObject({ rule: 'unclaimed' });
  });
});
