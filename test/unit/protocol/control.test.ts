/**
 * The operators' record and what it asks of a decision (decision 0011):
 * pause and evacuation by run, the edits the actions make, the record's
 * canonical encoding and its refusals, and the retry transition. The leader
 * applying it is shown on etcd (test/etcd/operator-actions.test.ts).
 */
import { describe, expect, it } from 'vitest';
import {
  isNeutral, NO_CONTROL, operatorHold, staleEvacuations, withEvacuated, withoutEvacuated, withPaused,
} from '../../../src/protocol/control.js';
import { retriedRecord } from '../../../src/protocol/claims.js';
import { decodeRecord, encodeRecord, fingerprintHash, type ControlRecord, type SplitRecord } from '../../../src/protocol/records.js';

const fp = fingerprintHash('test');
const stamp = { v: 1 as const, fp };

describe('operatorHold', () => {
  it('no record holds nothing; paused holds everyone; an evacuation holds only the run it names', () => {
    const live = new Map([['a', 'n1'], ['b', 'n2']]);
    expect(operatorHold(undefined, live)).toEqual({ paused: false, evacuated: new Set() });
    const rec: ControlRecord = { ...stamp, paused: true, evacuated: [{ instance: 'a', nonce: 'n1' }, { instance: 'b', nonce: 'old' }, { instance: 'c', nonce: 'x' }] };
    const hold = operatorHold(rec, live);
    expect(hold.paused).toBe(true);
    // b restarted (another nonce), c is gone: neither is held.
    expect([...hold.evacuated]).toEqual(['a']);
  });
});

describe('the actions\' edits', () => {
  it('evacuating replaces an earlier run\'s entry, keeps entries sorted, and undoing it removes it', () => {
    let s = withEvacuated(NO_CONTROL, 'b', 'n2');
    s = withEvacuated(s, 'a', 'n1');
    s = withEvacuated(s, 'b', 'n3');
    expect(s.evacuated).toEqual([{ instance: 'a', nonce: 'n1' }, { instance: 'b', nonce: 'n3' }]);
    expect(withoutEvacuated(s, 'a').evacuated).toEqual([{ instance: 'b', nonce: 'n3' }]);
    expect(staleEvacuations(s, new Map([['a', 'n1'], ['b', 'n2']]))).toEqual([{ instance: 'b', nonce: 'n3' }]);
    expect(isNeutral(withPaused(NO_CONTROL, true))).toBe(false);
    expect(isNeutral(withPaused(withPaused(NO_CONTROL, true), false))).toBe(true);
    expect(NO_CONTROL.evacuated).toEqual([]); // never edited in place
  });
});

describe('the control record', () => {
  it('encodes canonically (entries sorted, fields in order) and decodes to the same record', () => {
    const a = encodeRecord('control', { ...stamp, paused: false, evacuated: [{ nonce: 'y', instance: 'z' }, { instance: 'a', nonce: 'x' }] });
    expect(a).toBe(`{"v":1,"fp":"${fp}","paused":false,"evacuated":[{"instance":"a","nonce":"x"},{"instance":"z","nonce":"y"}]}`);
    expect(decodeRecord('control', 'splitfleet/j/control', a, fp).evacuated.map((e) => e.instance)).toEqual(['a', 'z']);
  });

  it('refuses a broken record, naming the field and the rule', () => {
    const key = 'splitfleet/j/control';
    expect(() => decodeRecord('control', key, JSON.stringify({ ...stamp, paused: 'yes', evacuated: [] }), fp)).toThrow(/paused: must be a boolean/);
    expect(() => decodeRecord('control', key, JSON.stringify({ ...stamp, paused: false, evacuated: [{ instance: 'b', nonce: 'n' }, { instance: 'a', nonce: 'n' }] }), fp))
      .toThrow(/evacuated: must be sorted by instance/);
    expect(() => decodeRecord('control', key, JSON.stringify({ ...stamp, paused: false, evacuated: [{ instance: 'a\uDC00', nonce: 'n' }] }), fp)).toThrow(/no lone surrogates/);
    expect(() => decodeRecord('control', key, JSON.stringify({ ...stamp, paused: false, evacuated: [{ instance: 'a', nonce: '' }] }), fp)).toThrow(/nonce: must not be empty/);
    expect(() => encodeRecord('control', { ...stamp, paused: false, evacuated: [{ instance: 'a', nonce: 'n' }, { instance: 'a', nonce: 'm' }] })).toThrow(/one entry per instance/);
  });
});

describe('retriedRecord', () => {
  const q: SplitRecord = { ...stamp, id: 's', epoch: 3, status: 'quarantined', owner: '', attempts: 4, reason: 'boom' };
  it('makes a quarantined split runnable with attempts reset and no reason, keeping its epoch', () => {
    expect(retriedRecord(q)).toEqual({ ...stamp, id: 's', epoch: 3, status: 'runnable', owner: '', attempts: 0 });
  });
  it('refuses any other split', () => {
    expect(() => retriedRecord({ ...q, status: 'completed' })).toThrow(/it is completed, not quarantined/);
    expect(() => retriedRecord({ ...q, status: 'runnable', owner: '' })).toThrow(/it is runnable/);
  });
});
