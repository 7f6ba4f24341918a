/** The job's end and a process's identity (protocol/completion.ts). */
import { describe, expect, it } from 'vitest';
import { jobOutcome, jobVerdict, presenceVerdict, unaccountedSplits } from '../../../src/protocol/completion.js';
import type { PlanRecord } from '../../../src/protocol/records.js';

const fp = '0123456789abcdef';
const plan = (o: Partial<PlanRecord> = {}): PlanRecord => ({ v: 1, fp, generation: 2, final: true, planned: 3, ...o });
const counts = (runnable: number, completed: number, quarantined: number) => ({ runnable, completed, quarantined });

describe('jobVerdict', () => {
  it('complete once every planned split is completed', () => {
    expect(jobVerdict(plan(), { counts: counts(0, 3, 0), parked: [] })).toBe('complete');
  });
  it('stalled with any quarantined or parked split, once nothing else can run', () => {
    expect(jobVerdict(plan(), { counts: counts(0, 2, 1), parked: [] })).toBe('stalled');
    expect(jobVerdict(plan(), { counts: counts(1, 2, 0), parked: ['runnable'] })).toBe('stalled');
    expect(jobVerdict(plan(), { counts: counts(0, 2, 0), parked: [undefined] })).toBe('stalled');
  });
  it('none while a split can still run, a planned split is unseen, the plan is not final, or a verdict exists', () => {
    expect(jobVerdict(plan(), { counts: counts(1, 2, 0), parked: [] })).toBeUndefined();
    expect(jobVerdict(plan(), { counts: counts(0, 2, 0), parked: [] })).toBeUndefined();
    expect(jobVerdict(plan({ final: false }), { counts: counts(0, 3, 0), parked: [] })).toBeUndefined();
    expect(jobVerdict(plan({ verdict: 'complete' }), { counts: counts(0, 3, 0), parked: [] })).toBeUndefined();
    expect(jobVerdict(undefined, { counts: counts(0, 3, 0), parked: [] })).toBeUndefined();
  });
});

describe('unaccountedSplits', () => {
  it('counts the splits a final plan names that no record, readable or parked, stands for (decision 0072)', () => {
    expect(unaccountedSplits(plan(), { counts: counts(0, 2, 0), parked: [] })).toBe(1);
    expect(unaccountedSplits(plan(), { counts: counts(1, 1, 0), parked: [undefined] })).toBe(0);
    expect(unaccountedSplits(plan(), { counts: counts(1, 2, 1), parked: [] })).toBe(0);
    expect(unaccountedSplits(plan({ final: false }), { counts: counts(0, 0, 0), parked: [] })).toBe(0);
    expect(unaccountedSplits(undefined, { counts: counts(0, 0, 0), parked: [] })).toBe(0);
  });
});

describe('jobOutcome', () => {
  it('a plan seen and then gone is a deleted job; a verdict on a final plan finishes it', () => {
    expect(jobOutcome(undefined, true)).toEqual({ kind: 'deleted' });
    expect(jobOutcome(undefined, false)).toEqual({ kind: 'running' });
    expect(jobOutcome(plan({ verdict: 'stalled' }), true)).toEqual({ kind: 'finished', verdict: 'stalled' });
    expect(jobOutcome(plan({ final: false, verdict: 'complete' }), true)).toEqual({ kind: 'running' });
  });
});

describe('presenceVerdict', () => {
  it('only a key written after ours with another nonce is a duplicate', () => {
    expect(presenceVerdict({ seen: { nonce: 'b', modRevision: 9 }, nonce: 'a', presenceRevision: 5 })).toBe('duplicate');
    expect(presenceVerdict({ seen: { nonce: 'b', modRevision: 4 }, nonce: 'a', presenceRevision: 5 })).toBe('ours');
    expect(presenceVerdict({ seen: { nonce: 'a', modRevision: 9 }, nonce: 'a', presenceRevision: 5 })).toBe('ours');
    expect(presenceVerdict({ seen: undefined, nonce: 'a', presenceRevision: 5 })).toBe('missing');
  });
});
