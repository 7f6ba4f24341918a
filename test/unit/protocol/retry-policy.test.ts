/**
 * The failure policy's pure rules (protocol/retry-policy.ts, claims.ts, lanes.ts,
 * publication.ts; decision 0032): the backoff's bounds and growth, its jitter drawn
 * only from the injected draw, notBefore on a failed record, permanent failures,
 * the claim and leader rules that wait it out, and the config's validation.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { resolveConfig, RETRY_BACKOFF_DEFAULTS } from '../../../src/config.js';
import { PermanentFailure } from '../../../src/errors.js';
import { claimCandidates, claimedRecord, classifyClaim, failedRecord, quarantinedRecord, retriedRecord } from '../../../src/protocol/claims.js';
import { handlerFailure, laneWrite } from '../../../src/protocol/lanes.js';
import { decisionInputs } from '../../../src/protocol/publication.js';
import { decodeRecord, encodeRecord, type SplitRecord } from '../../../src/protocol/records.js';
import { dueAt, failureOptionsProblem, retryCeiling, retryDelay, waitingSplits, withDue } from '../../../src/protocol/retry-policy.js';

const fp = '0123456789abcdef';
const me = 'w0';
const rec = (over: Partial<SplitRecord> = {}): SplitRecord => ({ v: 1, fp, id: 's', epoch: 1, status: 'runnable', owner: '', attempts: 0, ...over });
const policy = (over: Partial<typeof RETRY_BACKOFF_DEFAULTS> = {}) => ({ ...RETRY_BACKOFF_DEFAULTS, ...over });

const arbPolicy = fc.record({
  initialMs: fc.integer({ min: 0, max: 10_000 }),
  extra: fc.integer({ min: 0, max: 1_000_000 }),
  factor: fc.double({ min: 1, max: 100, noNaN: true }),
  jitter: fc.double({ min: 0, max: 1, noNaN: true }),
}).map(({ initialMs, extra, factor, jitter }) => ({ initialMs, maxMs: initialMs + extra, factor, jitter }));
const arbDraw = fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true });

describe('retryDelay', () => {
  it('defaults to 1 s doubling to 5 min', () => {
    expect([1, 2, 3, 4, 9, 10, 50].map((n) => retryCeiling(n, RETRY_BACKOFF_DEFAULTS))).toEqual([1000, 2000, 4000, 8000, 256_000, 300_000, 300_000]);
  });

  it('stays within [ceiling · (1 − jitter), ceiling] and never passes maxMs', () => {
    fc.assert(fc.property(arbPolicy, fc.integer({ min: 1, max: 200 }), arbDraw, (p, attempts, draw) => {
      const c = retryCeiling(attempts, p);
      const d = retryDelay(attempts, p, draw);
      expect(c).toBeLessThanOrEqual(p.maxMs);
      expect(d).toBeLessThanOrEqual(c);
      expect(d).toBeGreaterThanOrEqual(Math.floor(c * (1 - p.jitter)) - 1);
      expect(Number.isSafeInteger(d)).toBe(true);
    }));
  });

  it('grows monotonically with the attempts for a fixed draw (notBefore never shrinks as failures accumulate)', () => {
    fc.assert(fc.property(arbPolicy, fc.integer({ min: 1, max: 100 }), arbDraw, (p, attempts, draw) => {
      expect(retryCeiling(attempts + 1, p)).toBeGreaterThanOrEqual(retryCeiling(attempts, p));
      expect(retryDelay(attempts + 1, p, draw)).toBeGreaterThanOrEqual(retryDelay(attempts, p, draw));
    }));
  });

  it('draws its jitter from the injected draw only: full jitter spans [0, ceiling), none is the ceiling', () => {
    const p = policy({ initialMs: 1000, maxMs: 60_000 });
    expect(retryDelay(3, p, 0)).toBe(0);
    expect(retryDelay(3, p, 0.5)).toBe(2000);
    expect(retryDelay(3, p, 0.999999)).toBe(3999);
    expect(retryDelay(3, { ...p, jitter: 0 }, 0.123)).toBe(4000);
    expect(retryDelay(3, { ...p, jitter: 0.25 }, 0)).toBe(3000);
    expect(retryDelay(3, p, 0.5)).toBe(retryDelay(3, p, 0.5));
  });
});

describe('a failure report', () => {
  const lane = (over: object = {}) => ({
    me, record: rec({ epoch: 2, owner: me, attempts: 1 }), progressRecord: undefined, maxAttempts: 4,
    retryBackoff: policy({ jitter: 0 }), now: 50_000, draw: 0.5, ...over,
  });

  it('records notBefore = now + the policy wait for the attempt it reaches', () => {
    const w = laneWrite('fail', lane(), { reason: 'downstream 503' });
    expect(w.record).toMatchObject({ status: 'runnable', owner: '', attempts: 2, reason: 'downstream 503', notBefore: 52_000 });
    // It survives the codec, and a claim of it clears the wait it served.
    const back = decodeRecord('split', 'x/split.s', w.splitValue!, fp);
    expect(back.notBefore).toBe(52_000);
    expect(claimedRecord(back, me, { kind: 'released', consumesAttempt: false, quarantine: false }).notBefore).toBeUndefined();
  });

  it('honours retryInMs exactly, over the policy and its jitter', () => {
    expect(laneWrite('fail', lane({ retryBackoff: policy() }), { reason: 'r', failure: { retryInMs: 7 } }).record).toMatchObject({ notBefore: 50_007 });
  });

  it('permanent quarantines at once with one attempt and the reason, whatever the cap', () => {
    const w = laneWrite('fail', lane({ maxAttempts: 100 }), { reason: 'undecodable', failure: { permanent: true } });
    expect(w.record).toMatchObject({ status: 'quarantined', attempts: 2, reason: 'undecodable' });
    expect(w.record!.notBefore).toBeUndefined();
  });

  it('a thrown PermanentFailure is a permanent failure report, while draining too', () => {
    expect(handlerFailure(new PermanentFailure('bad input'), false)).toEqual({ kind: 'fail', failure: 'permanent' });
    expect(handlerFailure(new PermanentFailure('bad input'), true)).toEqual({ kind: 'fail', failure: 'permanent' });
    expect(handlerFailure(new Error('x'), true)).toEqual({ kind: 'force' });
  });

  it('refuses bad fail() options, naming the field and the rule', () => {
    expect(failureOptionsProblem(undefined)).toBeUndefined();
    expect(failureOptionsProblem({ permanent: true, retryInMs: 0 })).toBeUndefined();
    expect(failureOptionsProblem({ retryInMs: -1 })).toMatch(/retryInMs: must be an integer from 0/);
    expect(failureOptionsProblem({ retryInMs: 1.5 })).toMatch(/retryInMs/);
    expect(failureOptionsProblem({ permanent: 'yes' })).toMatch(/permanent: must be a boolean/);
    expect(failureOptionsProblem({ retryIn: 5 })).toMatch(/unknown field "retryIn"/);
    expect(failureOptionsProblem('soon')).toMatch(/must be an object/);
  });
});

describe('waiting out the backoff', () => {
  const waiting = rec({ epoch: 2, attempts: 1, reason: 'r', notBefore: 10_000 });

  it('a worker does not claim a split before its notBefore, and does at it', () => {
    expect(classifyClaim(waiting, undefined, me, 4, 9_999)).toEqual({ kind: 'unclaimable', reason: 'waiting' });
    expect(classifyClaim(waiting, undefined, me, 4, 10_000)).toMatchObject({ kind: 'released' });
    const input = { me, assigned: ['s'], splits: new Map([['s', { record: waiting, leaseOwner: undefined, specObserved: true }]]), held: [], maxInFlight: 1, maxAttempts: 4 };
    expect(claimCandidates({ ...input, now: 9_999 })).toEqual([]);
    expect(claimCandidates({ ...input, now: 10_000 })).toHaveLength(1);
  });

  it('quarantine and an operator retry clear the wait', () => {
    expect(quarantinedRecord(waiting, 'cap').notBefore).toBeUndefined();
    expect(retriedRecord(failedRecord(rec({ epoch: 2, owner: me }), me, { reason: 'x', permanent: true, notBefore: 5, waitMs: 5 }, 4)).notBefore).toBeUndefined();
  });

  it('an operator retry clears a runnable split\'s backoff too (attempts 0), and refuses one that waits out none', () => {
    const failed = failedRecord(rec({ epoch: 2, owner: me }), me, { reason: 'x', permanent: false, notBefore: 9_000, waitMs: 2_000 }, 4);
    expect(failed).toMatchObject({ status: 'runnable', notBefore: 9_000, waitMs: 2_000, attempts: 1 });
    const retried = retriedRecord(failed);
    expect(retried).toEqual(rec({ epoch: 2, attempts: 0 }));
    expect(() => retriedRecord(rec({ epoch: 2 }))).toThrow('cannot retry split "s": it is runnable and waits out no backoff, not quarantined');
    // A claim clears both halves of the backoff.
    expect(claimedRecord(failed, me, { kind: 'released', consumesAttempt: false, quarantine: false })).not.toHaveProperty('waitMs');
  });

  it('a reader waits at most waitMs from when it first saw the record, whatever the writer\'s clock said', () => {
    const ahead = rec({ attempts: 1, notBefore: 3_600_000 + 12_000, waitMs: 2_000 }); // written an hour fast
    expect(dueAt(ahead, 10_000)).toBe(12_000);
    expect(withDue(ahead, 10_000).notBefore).toBe(12_000);
    const behind = rec({ attempts: 1, notBefore: 11_000, waitMs: 2_000 }); // seen late (a new leader, a restart)
    expect(dueAt(behind, 30_000)).toBe(11_000);
    expect(withDue(behind, 30_000)).toBe(behind);
    // An older build's record has no waitMs: its notBefore as written.
    expect(dueAt(rec({ notBefore: 99_999_999 }), 0)).toBe(99_999_999);
    expect(dueAt(rec(), 0)).toBeUndefined();
  });

  it('decoding bounds a backoff: a notBefore past what a Date holds, or a wait past Node\'s longest timer, is refused naming the field', () => {
    const key = '/sf/job/split.s';
    expect(() => decodeRecord('split', key, JSON.stringify(rec({ notBefore: 9e15 })), fp)).toThrow(/notBefore: must be an integer 0 ≤ x ≤ 8640000000000000 \(got 9000000000000000\)/);
    expect(() => decodeRecord('split', key, JSON.stringify(rec({ notBefore: 5, waitMs: -1 })), fp)).toThrow(/waitMs: must be an integer 0 ≤ x ≤ 2147483647/);
    expect(decodeRecord('split', key, JSON.stringify(rec({ notBefore: 5, waitMs: 5 })), fp)).toMatchObject({ notBefore: 5, waitMs: 5 });
  });

  it('the leader withholds waiting splits and decides again when the earliest falls due', () => {
    const job = {
      members: new Map([['w0', 2]]), assigns: [['w0', ['a', 'b']] as const], leases: new Map(), owners: new Map(),
      statusOf: () => 'runnable' as const, notBefore: new Map([['a', 5_000], ['b', 3_000], ['c', 900]]),
    };
    const hold = { paused: false, evacuated: new Set<string>() };
    const d = decisionInputs(job, 1_000, undefined, 0, hold);
    expect(d.waiting).toEqual(['a', 'b']);
    expect(d.reserved).toEqual([]);
    expect(d.nextChangeAt).toBe(3_000);
    // On another timeline (the leader's monotonic clock) the due time is converted to it.
    expect(decisionInputs(job, 100, undefined, 0, hold, 1_000).nextChangeAt).toBe(2_100);
    expect(decisionInputs(job, 5_000, undefined, 0, hold).waiting).toEqual([]);
  });

  it('waitingSplits: only those after now, sorted, the earliest due', () => {
    fc.assert(fc.property(fc.dictionary(fc.string({ minLength: 1, maxLength: 4 }), fc.integer({ min: 0, max: 100 })), fc.integer({ min: 0, max: 100 }), (m, now) => {
      const w = waitingSplits(Object.entries(m), now);
      const expected = Object.entries(m).filter(([, at]) => at > now);
      expect(w.waiting).toEqual(expected.map(([id]) => id).sort());
      expect(w.nextDueAt).toBe(expected.length === 0 ? undefined : Math.min(...expected.map(([, at]) => at)));
    }));
  });

  it('a record with a notBefore that is not a non-negative integer is unreadable', () => {
    const text = encodeRecord('split', waiting);
    expect(() => decodeRecord('split', 'x/split.s', text.replace('"notBefore":10000', '"notBefore":-1'), fp)).toThrow(/notBefore/);
    expect(() => decodeRecord('split', 'x/split.s', text.replace('"notBefore":10000', '"notBefore":"soon"'), fp)).toThrow(/notBefore/);
  });
});

describe('retryBackoff config', () => {
  const base = { job: 'j', instance: 'i' };
  it('defaults to 1 s doubling to 5 min, full jitter, and fills in factor and jitter', () => {
    expect(resolveConfig(base).retryBackoff).toEqual({ initialMs: 1000, maxMs: 300_000, factor: 2, jitter: 1 });
    expect(resolveConfig({ ...base, retryBackoff: { initialMs: 10, maxMs: 100 } }).retryBackoff).toEqual({ initialMs: 10, maxMs: 100, factor: 2, jitter: 1 });
  });
  it('refuses broken values naming the field and the rule', () => {
    const refuse = (retryBackoff: unknown, rule: RegExp) => expect(() => resolveConfig({ ...base, retryBackoff } as never)).toThrow(rule);
    refuse({ initialMs: 100, maxMs: 10 }, /retryBackoff\.maxMs: must be ≥ initialMs/);
    refuse({ initialMs: -1, maxMs: 10 }, /retryBackoff\.initialMs: must be an integer ≥ 0/);
    refuse({ maxMs: 10 }, /retryBackoff\.initialMs: is required/);
    refuse({ initialMs: 1, maxMs: 10, factor: 0.5 }, /retryBackoff\.factor: must be a number from 1 to 100/);
    refuse({ initialMs: 1, maxMs: 10, jitter: 2 }, /retryBackoff\.jitter: must be a number from 0/);
    refuse({ initialMs: 1, maxMs: 10, base: 3 }, /retryBackoff\.base: unknown field/);
    refuse(5, /retryBackoff: must be an object/);
  });
});
