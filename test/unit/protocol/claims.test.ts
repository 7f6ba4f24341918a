import { describe, expect, it } from 'vitest';
import { test, fc } from '@fast-check/vitest';
import {
  claimCandidates, claimedRecord, classifyClaim, completedRecord, failedRecord, initialSplitRecord, takeoverCost,
  progressRecord, quarantinedRecord, releasedRecord, type ClaimClass, type Claimable, type ObservedSplit,
} from '../../../src/protocol/claims.js';
import type { SplitRecord } from '../../../src/protocol/records.js';
import { encodeRecord } from '../../../src/protocol/records.js';
import { isSplitfleetError } from '../../../src/errors.js';

const fp = '0123456789abcdef';
const me = 'pod-0';
const claimable = (c: ClaimClass): Claimable => {
  if (c.kind === 'unclaimable') throw new Error(`unclaimable: ${c.reason}`);
  return c;
};
const rec = (patch: Partial<SplitRecord> = {}): SplitRecord => ({ ...initialSplitRecord('s', fp), ...patch });

describe('takeoverCost', () => {
  it('charges a takeover only when the tenancy it ends committed no progress', () => {
    const held = rec({ epoch: 3, owner: 'pod-9', attempts: 1 });
    // No progress at all, or progress of an earlier tenancy: the poison case.
    expect(takeoverCost(held, undefined, 4)).toEqual({ consumesAttempt: true, quarantine: false });
    expect(takeoverCost(held, 2, 4)).toEqual({ consumesAttempt: true, quarantine: false });
    // The ended tenancy (epoch 3) committed: an outage, not the split's fault.
    expect(takeoverCost(held, 3, 4)).toEqual({ consumesAttempt: false, quarantine: false });
  });

  it('quarantines at the cap only for a charged takeover', () => {
    const last = rec({ epoch: 4, owner: 'pod-9', attempts: 3 });
    expect(takeoverCost(last, 3, 4)).toEqual({ consumesAttempt: true, quarantine: true });
    expect(takeoverCost(last, 4, 4)).toEqual({ consumesAttempt: false, quarantine: false });
  });

  test.prop([fc.nat(6), fc.nat(6), fc.option(fc.nat(6), { nil: undefined }), fc.integer({ min: 1, max: 6 })])(
    'any number of takeovers of a split that commits in every tenancy never quarantines it',
    (epoch, attempts, progressEpoch, maxAttempts) => {
      const r = rec({ epoch: epoch + 1, owner: 'pod-9', attempts });
      const c = takeoverCost(r, progressEpoch, maxAttempts);
      if (progressEpoch === epoch + 1) expect(c).toEqual({ consumesAttempt: false, quarantine: false });
      else expect(c).toEqual({ consumesAttempt: true, quarantine: attempts + 1 >= maxAttempts });
    },
  );
});

describe('classifyClaim', () => {
  it('follows the substrate table', () => {
    expect(classifyClaim(undefined, undefined, me, 4)).toEqual({ kind: 'create', consumesAttempt: false, quarantine: false });
    expect(classifyClaim(rec(), undefined, me, 4)).toEqual({ kind: 'create', consumesAttempt: false, quarantine: false });
    expect(classifyClaim(rec({ epoch: 3 }), undefined, me, 4))
      .toEqual({ kind: 'released', consumesAttempt: false, quarantine: false });
    expect(classifyClaim(rec({ epoch: 3, owner: me }), me, me, 4))
      .toEqual({ kind: 'reclaim', consumesAttempt: true, quarantine: false });
    expect(classifyClaim(rec({ epoch: 3, owner: 'pod-9' }), undefined, me, 4))
      .toEqual({ kind: 'expired', consumesAttempt: true, quarantine: false });
    expect(classifyClaim(rec({ epoch: 3, owner: me }), undefined, me, 4))
      .toEqual({ kind: 'expired', consumesAttempt: true, quarantine: false });
  });

  it('refuses a split another owner leases, or a terminal one', () => {
    expect(classifyClaim(rec({ epoch: 1, owner: 'pod-9' }), 'pod-9', me, 4)).toEqual({ kind: 'unclaimable', reason: 'leased' });
    expect(classifyClaim(rec({ epoch: 1 }), 'pod-9', me, 4)).toEqual({ kind: 'unclaimable', reason: 'leased' });
    expect(classifyClaim(rec({ status: 'completed' }), undefined, me, 4)).toEqual({ kind: 'unclaimable', reason: 'completed' });
    expect(classifyClaim(rec({ status: 'quarantined' }), undefined, me, 4))
      .toEqual({ kind: 'unclaimable', reason: 'quarantined' });
  });

  it('our own lease key naming an epoch above the record\'s is a leftover: it blocks like another\'s lease (defect 39)', () => {
    // The record was deleted and created again (epoch 0) under our earlier run's live key (epoch 1).
    expect(classifyClaim(rec(), me, me, 4, undefined, 1)).toEqual({ kind: 'unclaimable', reason: 'leased' });
    expect(classifyClaim(undefined, me, me, 4, undefined, 1)).toEqual({ kind: 'unclaimable', reason: 'leased' });
    // A key naming the record's own tenancy is ours to reclaim, as before.
    expect(classifyClaim(rec({ epoch: 3, owner: me }), me, me, 4, undefined, 3)).toMatchObject({ kind: 'reclaim', consumesAttempt: true });
    const splits = new Map([['a', { record: rec(), leaseOwner: me, leaseEpoch: 1, specObserved: true }]]);
    expect(claimCandidates({ me, assigned: ['a'], splits, held: [], maxInFlight: 1, maxAttempts: 4 })).toEqual([]);
  });

  it('quarantines at the attempt that reaches maxAttempts, and only on attempt-consuming claims', () => {
    expect(classifyClaim(rec({ epoch: 3, owner: 'x', attempts: 2 }), undefined, me, 4))
      .toMatchObject({ kind: 'expired', quarantine: false });
    expect(classifyClaim(rec({ epoch: 4, owner: 'x', attempts: 3 }), undefined, me, 4))
      .toMatchObject({ kind: 'expired', quarantine: true });
    expect(classifyClaim(rec({ epoch: 4, attempts: 3 }), undefined, me, 4))
      .toMatchObject({ kind: 'released', quarantine: false });
    expect(classifyClaim(rec({ epoch: 1, owner: me }), me, me, 1)).toMatchObject({ kind: 'reclaim', quarantine: true });
  });
});

describe('record transitions', () => {
  it('claim → commit → release → claim → complete', () => {
    let r = claimedRecord(rec(), me, claimable(classifyClaim(undefined, undefined, me, 4)));
    expect(r).toMatchObject({ epoch: 1, owner: me, attempts: 0 });
    // A commit writes progress.{id} only: split.{id} (the fence) is untouched.
    const claimed = r;
    const p1 = progressRecord(r, me, { offset: 10 });
    expect(p1).toEqual({ v: 1, fp, id: 's', epoch: 1, progress: { offset: 10 } });
    expect(r).toEqual(claimed);
    expect(() => encodeRecord('progress', p1)).not.toThrow();
    r = releasedRecord(r, me);
    expect(r).toMatchObject({ epoch: 1, owner: '' });
    expect(r).not.toHaveProperty('progress');
    r = claimedRecord(r, 'pod-1', claimable(classifyClaim(r, undefined, 'pod-1', 4)));
    expect(r).toMatchObject({ epoch: 2, owner: 'pod-1', attempts: 0 });
    // The next tenancy's progress carries its own epoch.
    expect(progressRecord(r, 'pod-1', { offset: 12 })).toMatchObject({ epoch: 2, progress: { offset: 12 } });
    r = completedRecord(r, 'pod-1');
    expect(r).toMatchObject({ status: 'completed', owner: '', epoch: 2 });
    expect(() => encodeRecord('split', r)).not.toThrow();
  });

  it('a progress record is refused for a split not yet claimed (epoch 0 has no owner)', () => {
    expect(() => progressRecord(rec(), me, 1)).toThrow(/owned by/);
  });

  it('an expired takeover consumes an attempt', () => {
    const dead = rec({ epoch: 2, owner: 'pod-9', attempts: 1 });
    expect(claimedRecord(dead, me, claimable(classifyClaim(dead, undefined, me, 4)))).toMatchObject({ epoch: 3, owner: me, attempts: 2 });
  });

  it('failure consumes an attempt and quarantines at the cap', () => {
    const held = rec({ epoch: 1, owner: me, attempts: 2 });
    const report = { reason: 'bad file', permanent: false, notBefore: 5000 };
    expect(failedRecord(held, me, report, 4)).toMatchObject({ status: 'runnable', owner: '', attempts: 3, reason: 'bad file', notBefore: 5000 });
    expect(failedRecord(held, me, report, 3)).toMatchObject({ status: 'quarantined', owner: '', attempts: 3 });
    expect(failedRecord(held, me, report, 3).notBefore).toBeUndefined();
  });

  it('quarantine instead of a claim records the attempt that reached the cap', () => {
    const dead = rec({ epoch: 4, owner: 'pod-9', attempts: 3 });
    const c = claimable(classifyClaim(dead, undefined, me, 4));
    expect(() => claimedRecord(dead, me, c)).toThrow(/reaches max_attempts; quarantine it instead/);
    const q = quarantinedRecord(dead, 'expired 4 times');
    expect(q).toMatchObject({ status: 'quarantined', owner: '', attempts: 4, epoch: 4, reason: 'expired 4 times' });
    expect(() => encodeRecord('split', q)).not.toThrow();
  });

  it('refuses transitions from a record this worker does not own', () => {
    const theirs = rec({ epoch: 1, owner: 'pod-9' });
    for (const f of [() => progressRecord(theirs, me, 1), () => releasedRecord(theirs, me),
      () => completedRecord(theirs, me), () => failedRecord(theirs, me, { reason: 'x', permanent: false, notBefore: 0 }, 4)]) {
      try { f(); throw new Error('accepted'); } catch (e) {
        expect(isSplitfleetError(e, 'INVALID_RECORD')).toBe(true);
        expect((e as Error).message).toMatch(/owned by "pod-9", not "pod-0"/);
      }
    }
    expect(() => claimedRecord(rec({ status: 'completed' }), me, { kind: 'create', consumesAttempt: false, quarantine: false }))
      .toThrow(/it is completed/);
    expect(() => quarantinedRecord(rec({ status: 'quarantined' }), 'x')).toThrow(/it is quarantined/);
  });
});

describe('claimCandidates', () => {
  const free: ObservedSplit = { record: undefined, leaseOwner: undefined, specObserved: true };
  const splits = new Map<string, ObservedSplit>([
    ['a', free],
    ['b', { ...free, record: rec({ epoch: 2 }) }],
    ['c', { ...free, record: rec({ epoch: 2, owner: 'pod-9' }), leaseOwner: 'pod-9' }], // still draining elsewhere
    ['d', { ...free, specObserved: false }],
    ['e', { ...free, record: rec({ status: 'completed' }) }],
    ['f', { ...free, record: rec({ epoch: 4, owner: 'pod-9', attempts: 3 }) }], // would reach the cap
  ]);
  const base = { me, splits, held: [] as string[], maxInFlight: 8, maxAttempts: 4 };

  it('picks assigned, unheld, runnable, observed splits whose previous lease is gone, sorted', () => {
    const out = claimCandidates({ ...base, assigned: ['f', 'e', 'd', 'c', 'b', 'a', 'zz'] });
    expect(out.map((c) => [c.id, c.claim, c.quarantine])).toEqual([
      ['a', 'create', false], ['b', 'released', false], ['f', 'expired', true],
    ]);
  });

  it('skips held and draining splits and respects the lane budget', () => {
    expect(claimCandidates({ ...base, assigned: ['a', 'b'], held: ['a'] }).map((c) => c.id)).toEqual(['b']);
    expect(claimCandidates({ ...base, assigned: ['a', 'b'], held: ['x'], draining: ['y'], maxInFlight: 3 })
      .map((c) => c.id)).toEqual(['a']);
    // A quarantine is provisional (takeoverCost may make it a claim), so it takes a lane too.
    expect(claimCandidates({ ...base, assigned: ['a', 'b', 'f'], held: ['x', 'y'], maxInFlight: 2 })
      .map((c) => c.id)).toEqual([]);
    expect(claimCandidates({ ...base, assigned: ['a', 'b', 'f'], held: ['x'], maxInFlight: 2 })
      .map((c) => c.id)).toEqual(['a']);
  });

  it('claims its named splits heaviest first by spec weight, then by id; the rest wait (prefetched)', () => {
    const weighted = new Map<string, ObservedSplit>([
      ['a', { ...free, weight: 5 }], ['b', { ...free, weight: 90 }], ['c', { ...free, weight: 5 }], ['d', { ...free, weight: 40 }],
    ]);
    const out = claimCandidates({ ...base, splits: weighted, assigned: ['a', 'b', 'c', 'd'], maxInFlight: 3 });
    expect(out.map((c) => c.id)).toEqual(['b', 'd', 'a']);
    // A lane frees: the heaviest of what is still named and unheld goes next.
    expect(claimCandidates({ ...base, splits: weighted, assigned: ['a', 'c', 'd'], held: ['b', 'a'], maxInFlight: 3 })
      .map((c) => c.id)).toEqual(['d']);
  });

  const ids = ['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h', 'i', 'j'];
  const observed = fc.record({
    record: fc.option(fc.record({
      status: fc.constantFrom('runnable', 'completed', 'quarantined'),
      owner: fc.constantFrom('', me, 'pod-9'), epoch: fc.nat(5), attempts: fc.nat(5),
    }), { nil: undefined }),
    leaseOwner: fc.option(fc.constantFrom(me, 'pod-9'), { nil: undefined }),
    specObserved: fc.boolean(),
    weight: fc.nat(4),
  });
  const world = fc.record({
    observed: fc.dictionary(fc.constantFrom(...ids), observed),
    assigned: fc.subarray(ids), held: fc.subarray(ids), draining: fc.subarray(ids),
    maxInFlight: fc.integer({ min: 1, max: 6 }), maxAttempts: fc.integer({ min: 1, max: 5 }),
  });

  test.prop([world])('claims never exceed maxInFlight and respect every claimability rule', (w) => {
    const map = new Map(Object.entries(w.observed).map(([id, o]) =>
      [id, { ...o, record: o.record === undefined ? undefined : rec({ ...o.record, id }) }]));
    const out = claimCandidates({ me, assigned: w.assigned, splits: map, held: w.held, draining: w.draining,
      maxInFlight: w.maxInFlight, maxAttempts: w.maxAttempts });
    const lanes = new Set([...w.held, ...w.draining]);
    // Claims and quarantines alike: a quarantine may turn into a claim once progress is read.
    const opening = out;
    if (opening.length > 0) expect(lanes.size + opening.length).toBeLessThanOrEqual(w.maxInFlight);
    // Nothing claimable is left behind while a lane is free.
    const claimable = [...new Set(w.assigned)].filter((id) => {
      const o = map.get(id);
      if (lanes.has(id) || o === undefined || !o.specObserved) return false;
      const c = classifyClaim(o.record, o.leaseOwner, me, w.maxAttempts);
      return c.kind !== 'unclaimable';
    });
    expect(opening.length).toBe(Math.min(claimable.length, Math.max(0, w.maxInFlight - lanes.size)));
    // Heaviest first, then by id; and no claimable split left out is heavier than one taken.
    const order = (a: string, b: string) => map.get(b)!.weight - map.get(a)!.weight || (a < b ? -1 : a > b ? 1 : 0);
    expect(out.map((c) => c.id)).toEqual([...new Set(out.map((c) => c.id))].sort(order));
    const taken = new Set(out.map((c) => c.id));
    const lightestTaken = Math.min(...out.map((c) => map.get(c.id)!.weight));
    for (const id of claimable) if (!taken.has(id)) expect(map.get(id)!.weight).toBeLessThanOrEqual(lightestTaken);
    for (const c of out) {
      const o = map.get(c.id)!;
      expect(w.assigned).toContain(c.id);
      expect(lanes.has(c.id)).toBe(false);
      expect(o.specObserved).toBe(true);
      expect(o.record === undefined || o.record.status === 'runnable').toBe(true);
      expect(o.leaseOwner === undefined || o.leaseOwner === me).toBe(true);
    }
  });
});
