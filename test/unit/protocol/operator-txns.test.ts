/** The operator actions' writes as data (protocol/operator-txns.ts): what each compares and writes. */
import { describe, expect, it } from 'vitest';
import { isSplitfleetError } from '../../../src/errors.js';
import { NO_CONTROL } from '../../../src/protocol/control.js';
import {
  clearedStalledPlan, clearVerdictTxn, controlTxn, planDeleteTxn, retryTxn, teardownTxn,
} from '../../../src/protocol/operator-txns.js';
import { decodeRecord, encodeRecord, type PlanRecord, type SplitRecord } from '../../../src/protocol/records.js';
import { verdictTxn } from '../../../src/protocol/leader-txns.js';
import { MemoryStore } from '../../../src/store/memory.js';
import { cmp, op } from '../../../src/store/store.js';

const fp = '0123456789abcdef';
const P = '/sf/job/';
const split = (o: Partial<SplitRecord> = {}): SplitRecord => ({ v: 1, fp, id: 's', epoch: 3, status: 'quarantined', owner: '', attempts: 4, reason: 'max_attempts (4) reached', ...o });
const plan = (o: Partial<PlanRecord> = {}): PlanRecord => ({ v: 1, fp, generation: 3, final: true, planned: 10, ...o });
const put = (t: { success: readonly unknown[] }, i = 0) => t.success[i] as { op: 'put'; key: string; value: string };

describe('delete', () => {
  it('the plan goes first, alone, at the revision read', () => {
    expect(planDeleteTxn(P, 12)).toEqual({ compares: [cmp.modRevision(`${P}plan`, 12)], success: [op.delete(`${P}plan`)] });
  });
  it('the teardown deletes the listed keys and compares nothing', () => {
    expect(teardownTxn([`${P}split.a`, `${P}lease.a`])).toEqual({ compares: [], success: [op.delete(`${P}split.a`), op.delete(`${P}lease.a`)] });
  });
});

describe('retry', () => {
  it('every split compared at the revision read → runnable, attempts 0, reason gone, epoch kept', () => {
    const t = retryTxn(P, [{ rec: split({ id: 'a' }), modRevision: 5 }, { rec: split({ id: 'b', epoch: 7 }), modRevision: 9 }], { rec: plan(), modRevision: 3 });
    expect(t.compares).toEqual([cmp.modRevision(`${P}split.a`, 5), cmp.modRevision(`${P}split.b`, 9), cmp.modRevision(`${P}plan`, 3)]);
    // The summary goes in the same transaction: a finished job's summary must not outlive a retried record.
    expect(t.success.map((o) => `${o.op} ${o.key}`)).toEqual([`put ${P}split.a`, `put ${P}split.b`, `delete ${P}summary`, `put ${P}plan`]);
    expect(decodeRecord('split', `${P}split.b`, put(t, 1).value, fp)).toEqual({ v: 1, fp, id: 'b', epoch: 7, status: 'runnable', owner: '', attempts: 0 });
    // A plan without a verdict is written back as read: only its revision moves.
    expect(decodeRecord('plan', `${P}plan`, put(t, 3).value, fp)).toEqual(plan());
  });
  it('a stalled verdict is cleared in the retry\'s own transaction', () => {
    const t = retryTxn(P, [{ rec: split({ id: 'a' }), modRevision: 5 }], { rec: plan({ verdict: 'stalled', cursor: 'c' }), modRevision: 20 });
    expect(decodeRecord('plan', `${P}plan`, put(t, 2).value, fp)).toEqual(plan({ cursor: 'c' }));
  });
  it('a verdict decided before a retry cannot land after it (the retry moves the plan it compares)', async () => {
    const store = new MemoryStore();
    const planKv = async () => (await store.get(`${P}plan`))!;
    await store.txn({ compares: [], success: [op.put(`${P}plan`, encodeRecord('plan', plan())), op.put(`${P}split.a`, encodeRecord('split', split({ id: 'a' })))] });
    // The leader decides `stalled` on the plan at this revision (every split quarantined)...
    const decidedOn = { rec: plan(), modRevision: (await planKv()).modRevision };
    const verdict = verdictTxn(P, cmp.modRevision(`${P}plan`, decidedOn.modRevision), decidedOn, 'stalled');
    // ...an operator retries meanwhile...
    const a = (await store.get(`${P}split.a`))!;
    const retry = await store.txn(retryTxn(P, [{ rec: split({ id: 'a' }), modRevision: a.modRevision }], { rec: plan(), modRevision: (await planKv()).modRevision }));
    expect(retry.won).toBe(true);
    // ...and the verdict, sent late, loses: the plan does not say stalled over a runnable split.
    expect((await store.txn(verdict)).won).toBe(false);
    expect(decodeRecord('plan', `${P}plan`, (await planKv()).value, fp).verdict).toBeUndefined();
    expect(decodeRecord('split', `${P}split.a`, (await store.get(`${P}split.a`))!.value, fp).status).toBe('runnable');
    await store.close();
  });
  it('refuses a record that is not quarantined: INVALID_RECORD naming the rule, and builds nothing', () => {
    let caught: unknown;
    try {
      retryTxn(P, [{ rec: split({ id: 'a' }), modRevision: 5 }, { rec: split({ id: 'b', status: 'completed' }), modRevision: 6 }], { rec: plan(), modRevision: 3 });
    } catch (e) {
      caught = e;
    }
    expect(isSplitfleetError(caught, 'INVALID_RECORD')).toBe(true);
    expect((caught as Error).message).toBe('cannot retry split "b": it is completed, not quarantined');
  });
  it('clears only a stalled verdict, at the plan\'s revision, keeping the rest', () => {
    const t = clearVerdictTxn(P, { rec: plan({ verdict: 'stalled', cursor: 'c' }), modRevision: 20 });
    expect(t.compares).toEqual([cmp.modRevision(`${P}plan`, 20)]);
    expect(decodeRecord('plan', `${P}plan`, put(t).value, fp)).toEqual(plan({ cursor: 'c' }));
    expect(() => clearedStalledPlan(plan({ verdict: 'complete' }))).toThrow(expect.objectContaining({ code: 'INVALID_RECORD', message: expect.stringMatching(/it is complete, not stalled; only a stalled verdict is cleared/) }));
    expect(() => clearedStalledPlan(plan())).toThrow(/without a verdict, not stalled/);
  });
});

describe('control', () => {
  const paused = { paused: true, evacuated: [] };
  it('no record and nothing asked: nothing to write', () => {
    expect(controlTxn(P, fp, { kv: undefined, record: undefined }, NO_CONTROL)).toBeUndefined();
  });
  it('no record: created only where absent', () => {
    const t = controlTxn(P, fp, { kv: undefined, record: undefined }, paused)!;
    expect(t.compares).toEqual([cmp.absent(`${P}control`)]);
    expect(decodeRecord('control', `${P}control`, put(t).value, fp)).toEqual({ v: 1, fp, paused: true, evacuated: [] });
  });
  it('a record that asks nothing any more is deleted at the revision read; one already as asked is not rewritten', () => {
    const value = encodeRecord('control', { v: 1, fp, paused: true, evacuated: [] });
    const record = decodeRecord('control', `${P}control`, value, fp);
    expect(controlTxn(P, fp, { kv: { value, modRevision: 8 }, record }, NO_CONTROL)).toEqual({ compares: [cmp.modRevision(`${P}control`, 8)], success: [op.delete(`${P}control`)] });
    expect(controlTxn(P, fp, { kv: { value, modRevision: 8 }, record }, paused)).toBeUndefined();
  });
  it('an unreadable record is overwritten at its revision', () => {
    const t = controlTxn(P, fp, { kv: { value: 'garbage', modRevision: 8 }, record: undefined }, { paused: false, evacuated: [{ instance: 'w1', nonce: 'n' }] })!;
    expect(t.compares).toEqual([cmp.modRevision(`${P}control`, 8)]);
    expect(decodeRecord('control', `${P}control`, put(t).value, fp)).toMatchObject({ paused: false, evacuated: [{ instance: 'w1', nonce: 'n' }] });
  });
});
