/** Lane rules (protocol/lanes.ts): what each write changes, read-back verdicts, the handler-failure policy. */
import { describe, expect, it } from 'vitest';
import { SplitfleetError } from '../../../src/errors.js';
import { handlerFailure, laneWrite, readBackVerdict } from '../../../src/protocol/lanes.js';
import type { SplitRecord } from '../../../src/protocol/records.js';

const fp = '0123456789abcdef';
const rec: SplitRecord = { v: 1, fp, id: 's', epoch: 3, status: 'runnable', owner: 'me', attempts: 1 };
const retryBackoff = { initialMs: 1000, maxMs: 300_000, factor: 2, jitter: 1 };
const lane = { me: 'me', record: rec, progressRecord: undefined, maxAttempts: 2, retryBackoff, now: 0, draw: 0.5 };

describe('laneWrite', () => {
  it('a commit rewrites progress only and is not terminal', () => {
    const w = laneWrite('commit', lane, { progress: { n: 1 } });
    expect(w).toMatchObject({ record: undefined, terminal: false, endAs: undefined, splitValue: undefined });
    expect(w.committed).toMatchObject({ epoch: 3, progress: { n: 1 } });
  });
  it('complete, release and force clear the owner and end the tenancy', () => {
    expect(laneWrite('complete', lane, { progress: 5 })).toMatchObject({ record: { status: 'completed', owner: '' }, terminal: true, endAs: 'completed' });
    expect(laneWrite('release', lane)).toMatchObject({ record: { owner: '' }, committed: undefined, endAs: 'released' });
    expect(laneWrite('force', lane, { progress: 9 })).toMatchObject({ record: { owner: '' }, committed: undefined, endAs: 'forced' });
  });
  it('a failure costs an attempt and quarantines at maxAttempts', () => {
    expect(laneWrite('fail', lane, { reason: 'bad' })).toMatchObject({ record: { status: 'quarantined', attempts: 2, reason: 'bad' }, endAs: 'failed' });
    expect(laneWrite('fail', { ...lane, maxAttempts: 5 }, { reason: 'bad' }).record).toMatchObject({ status: 'runnable', attempts: 2 });
  });
  it('refuses a write by a lane that does not own its record (a bug, not a race)', () => {
    expect(() => laneWrite('commit', { ...lane, record: { ...rec, owner: 'other' } }, { progress: 1 })).toThrow(/owned by "other"/);
  });
});

describe('readBackVerdict', () => {
  const known = { splitRevision: 5, progressRevision: 6, sessionLease: 'L1' };
  const lease = { value: 'l', modRevision: 5, lease: 'L1' };
  it('landed: our bytes at a newer revision (either key of the transaction tells)', () => {
    expect(readBackVerdict({ splitValue: 'r', progressValue: undefined, terminal: true }, known, { split: { value: 'r', modRevision: 9 }, progress: undefined, lease: undefined }))
      .toEqual({ kind: 'landed', revision: 9 });
    expect(readBackVerdict({ splitValue: undefined, progressValue: 'p', terminal: false }, known, { split: { value: 'x', modRevision: 5 }, progress: { value: 'p', modRevision: 8 }, lease }))
      .toEqual({ kind: 'landed', revision: 8 });
  });
  it('not landed: every guard as the lane knew it', () => {
    expect(readBackVerdict({ splitValue: undefined, progressValue: 'p', terminal: false }, known, { split: { value: 'x', modRevision: 5 }, progress: { value: 'old', modRevision: 6 }, lease }))
      .toEqual({ kind: 'not-landed' });
  });
  it('moved: anything else (another writer, our lease key gone)', () => {
    expect(readBackVerdict({ splitValue: undefined, progressValue: 'p', terminal: false }, known, { split: { value: 'x', modRevision: 7 }, progress: { value: 'old', modRevision: 6 }, lease }))
      .toEqual({ kind: 'moved' });
    expect(readBackVerdict({ splitValue: undefined, progressValue: 'p', terminal: false }, known, { split: { value: 'x', modRevision: 5 }, progress: { value: 'old', modRevision: 6 }, lease: undefined }))
      .toEqual({ kind: 'moved' });
  });
});

describe('handlerFailure', () => {
  it('a failure while draining forces the release', () => {
    expect(handlerFailure(new Error('x'), true)).toEqual({ kind: 'force' });
  });
  it('a retryable store failure the library raised releases (no attempt); anything else fails the split', () => {
    expect(handlerFailure(new SplitfleetError('STORE_UNAVAILABLE', 'down', { retryable: true }), false)).toEqual({ kind: 'release' });
    expect(handlerFailure(new SplitfleetError('INVALID_RECORD', 'bad'), false)).toEqual({ kind: 'fail', failure: 'error' });
    expect(handlerFailure(new Error('user code'), false)).toEqual({ kind: 'fail', failure: 'error' });
    expect(handlerFailure('thrown string', false)).toEqual({ kind: 'fail', failure: 'error' });
  });
});
