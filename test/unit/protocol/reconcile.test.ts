import { describe, expect, it } from 'vitest';
import { test, fc } from '@fast-check/vitest';
import { drainDecision, reconcileAssignment, type ObservedAssignment } from '../../../src/protocol/reconcile.js';
import { initialSplitRecord, type ObservedSplit } from '../../../src/protocol/claims.js';
import type { SplitRecord } from '../../../src/protocol/records.js';

const me = 'pod-0';
const rec = (id: string, patch: Partial<SplitRecord> = {}): SplitRecord =>
  ({ ...initialSplitRecord(id, '0123456789abcdef'), ...patch });
const free = (id: string): ObservedSplit => ({ record: rec(id), leaseOwner: undefined, specObserved: true });
const mine = (id: string): ObservedSplit => ({ record: rec(id, { epoch: 1, owner: me }), leaseOwner: me, specObserved: true });

function observed(patch: Partial<ObservedAssignment>): ObservedAssignment {
  return {
    me, assignment: [], held: [], draining: [], maxInFlight: 8, maxAttempts: 4,
    splits: new Map([['a', mine('a')], ['b', mine('b')], ['c', free('c')], ['d', free('d')]]),
    ...patch,
  };
}

describe('reconcileAssignment', () => {
  it('with no record holds everything and claims nothing', () => {
    expect(reconcileAssignment(observed({ assignment: undefined, held: ['a', 'b'] }))).toEqual([]);
  });

  it('claims what is assigned and not held; held and assigned is left alone', () => {
    expect(reconcileAssignment(observed({ assignment: ['a', 'c', 'd'], held: ['a'] }))).toEqual([
      { kind: 'claim', id: 'c', claim: 'create', consumesAttempt: false },
      { kind: 'claim', id: 'd', claim: 'create', consumesAttempt: false },
    ]);
  });

  it('revokes what is held and no longer assigned, before any claim', () => {
    expect(reconcileAssignment(observed({ assignment: ['c'], held: ['b', 'a'] }))).toEqual([
      { kind: 'revoke', id: 'a' }, { kind: 'revoke', id: 'b' },
      { kind: 'claim', id: 'c', claim: 'create', consumesAttempt: false },
    ]);
    // An empty record is an instruction: give everything up.
    expect(reconcileAssignment(observed({ assignment: [], held: ['a'] }))).toEqual([{ kind: 'revoke', id: 'a' }]);
  });

  it('does not revoke a split twice, nor cancel a drain when it is assigned again', () => {
    expect(reconcileAssignment(observed({ assignment: [], held: ['a', 'b'], draining: ['a'] })))
      .toEqual([{ kind: 'revoke', id: 'b' }]);
    expect(reconcileAssignment(observed({ assignment: ['a'], held: ['a'], draining: ['a'] }))).toEqual([]);
  });

  it('waits for the previous owner\'s lease key to disappear', () => {
    const splits = new Map<string, ObservedSplit>([['c', { ...free('c'), record: rec('c', { epoch: 1, owner: 'pod-9' }), leaseOwner: 'pod-9' }]]);
    expect(reconcileAssignment(observed({ assignment: ['c'], splits }))).toEqual([]);
    splits.set('c', { ...splits.get('c')!, record: rec('c', { epoch: 1 }), leaseOwner: undefined });
    expect(reconcileAssignment(observed({ assignment: ['c'], splits })))
      .toEqual([{ kind: 'claim', id: 'c', claim: 'released', consumesAttempt: false }]);
  });

  it('counts draining lanes against the budget and quarantines at the cap', () => {
    const splits = new Map<string, ObservedSplit>([
      ['c', free('c')], ['d', free('d')],
      ['q', { record: rec('q', { epoch: 4, owner: 'pod-9', attempts: 3 }), leaseOwner: undefined, specObserved: true }],
    ]);
    expect(reconcileAssignment(observed({ assignment: ['c', 'd', 'q'], held: ['a'], draining: ['a'], splits, maxInFlight: 2 })))
      .toEqual([
        // 'a' is draining (no second revoke) and still takes a lane: one lane left, for 'c'; 'd' and 'q' wait.
        { kind: 'claim', id: 'c', claim: 'create', consumesAttempt: false },
      ]);
    // A quarantine is provisional (takeoverCost may make it a claim): it takes a lane like one.
    expect(reconcileAssignment(observed({ assignment: ['c', 'd', 'q'], held: ['a'], draining: ['a'], splits, maxInFlight: 4 })))
      .toEqual([
        { kind: 'claim', id: 'c', claim: 'create', consumesAttempt: false },
        { kind: 'claim', id: 'd', claim: 'create', consumesAttempt: false },
        { kind: 'quarantine', id: 'q', claim: 'expired', attempts: 3 },
      ]);
  });

  const ids = ['a', 'b', 'c', 'd', 'e', 'f'];
  const split = fc.record({
    status: fc.constantFrom('runnable', 'runnable', 'completed', 'quarantined'),
    owner: fc.constantFrom('', me, 'pod-9'), epoch: fc.nat(5), attempts: fc.nat(5),
    leaseOwner: fc.option(fc.constantFrom(me, 'pod-9'), { nil: undefined }), specObserved: fc.boolean(),
  });
  const world = fc.record({
    observed: fc.dictionary(fc.constantFrom(...ids), split),
    assignment: fc.option(fc.subarray(ids), { nil: undefined }),
    held: fc.subarray(ids), draining: fc.subarray(ids), maxInFlight: fc.integer({ min: 1, max: 6 }),
  }).map((w): ObservedAssignment => ({
    me, assignment: w.assignment, held: w.held, draining: w.draining.filter((id) => w.held.includes(id)),
    maxInFlight: w.maxInFlight, maxAttempts: 4,
    splits: new Map(Object.entries(w.observed).map(([id, s]) => [id, {
      record: rec(id, { status: s.status, owner: s.owner, epoch: s.epoch, attempts: s.attempts }),
      leaseOwner: s.leaseOwner, specObserved: s.specObserved,
    }])),
  }));

  test.prop([world])('reconcile with no record never yields a claim or a revoke', (w) => {
    expect(reconcileAssignment({ ...w, assignment: undefined })).toEqual([]);
  });

  test.prop([world, fc.constantFrom(...ids)])('a record that omits a held split yields exactly one revoke of it',
    (w, id) => {
      const held = [...new Set([...w.held, id])];
      const decisions = reconcileAssignment({ ...w, held, draining: [...w.draining].filter((d) => d !== id),
        assignment: (w.assignment ?? []).filter((a) => a !== id) });
      expect(decisions.filter((d) => d.id === id)).toEqual([{ kind: 'revoke', id }]);
    });

  test.prop([world])('decisions respect the table and the lane budget', (w) => {
    const decisions = reconcileAssignment(w);
    const assigned = new Set(w.assignment ?? []);
    const held = new Set(w.held);
    const draining = new Set(w.draining);
    for (const d of decisions) {
      if (d.kind === 'revoke') {
        expect(held.has(d.id) && !assigned.has(d.id) && !draining.has(d.id)).toBe(true);
      } else {
        expect(assigned.has(d.id) && !held.has(d.id)).toBe(true);
      }
    }
    const revoked = decisions.filter((d) => d.kind === 'revoke').map((d) => d.id);
    expect(revoked).toEqual(w.assignment === undefined
      ? [] : [...held].filter((id) => !assigned.has(id) && !draining.has(id)).sort());
    const claims = decisions.filter((d) => d.kind === 'claim').length;
    if (claims > 0) expect(held.size + claims).toBeLessThanOrEqual(w.maxInFlight);
  });
});

describe('drainDecision', () => {
  it('waits until the deadline, then forces at exactly the deadline', () => {
    expect(drainDecision(1_000, 1_000, 10_000, 'draining')).toEqual({ kind: 'wait', forceAt: 11_000 });
    expect(drainDecision(1_000, 10_999, 10_000, 'draining')).toEqual({ kind: 'wait', forceAt: 11_000 });
    expect(drainDecision(1_000, 11_000, 10_000, 'draining')).toEqual({ kind: 'force', reason: 'deadline' });
  });

  it('forces at once when the source declined or its drain failed', () => {
    expect(drainDecision(1_000, 1_000, 10_000, 'declined')).toEqual({ kind: 'force', reason: 'declined' });
    expect(drainDecision(1_000, 1_000, 10_000, 'failed')).toEqual({ kind: 'force', reason: 'failed' });
  });

  test.prop([fc.integer(), fc.nat(), fc.nat()])('forces exactly when the deadline has elapsed', (start, elapsed, deadline) => {
    const d = drainDecision(start, start + elapsed, deadline, 'draining');
    expect(d.kind).toBe(elapsed >= deadline ? 'force' : 'wait');
  });
});
