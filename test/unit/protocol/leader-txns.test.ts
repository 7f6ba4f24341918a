/** The leader's writes as data (protocol/leader-txns.ts): what each compares and writes. */
import { describe, expect, it } from 'vitest';
import {
  bucketsTxn, bumpedPlanRecord, campaignTxn, leadershipGuard, planUpdateTxn, reseedWrite, resignTxn, seededPlanRecord, seedTxn, seedWrites, verdictTxn,
} from '../../../src/protocol/leader-txns.js';
import { decodeRecord, type PlanRecord } from '../../../src/protocol/records.js';
import { cmp, op } from '../../../src/store/store.js';

const fp = '0123456789abcdef';
const P = '/sf/job/';
const plan = (o: Partial<PlanRecord> = {}): PlanRecord => ({ v: 1, fp, generation: 3, final: false, planned: 10, ...o });
const put = (t: { success: readonly unknown[] }, i = 0) => t.success[i] as { op: 'put'; key: string; value: string; lease?: string };

describe('leadership and election', () => {
  it('the guard is the leader key at the term\'s revision', () => {
    expect(leadershipGuard(P, 41)).toEqual(cmp.modRevision(`${P}leader`, 41));
  });
  it('a campaign creates the leader key where absent, under the session lease, naming the next generation, bumps the plan it saw and reads the fence; the loser reads leader and plan', () => {
    const t = campaignTxn(P, fp, 'w1', { rec: plan({ cursor: { page: 2 } }), modRevision: 30 }, 'L1');
    expect(t.compares).toEqual([cmp.absent(`${P}leader`), cmp.modRevision(`${P}plan`, 30)]);
    expect(put(t)).toMatchObject({ op: 'put', key: `${P}leader`, lease: 'L1' });
    expect(decodeRecord('leader', `${P}leader`, put(t).value, fp)).toMatchObject({ instance: 'w1', generation: 4 });
    // The plan with the new generation, every other field kept, not under the session lease.
    expect(put(t, 1)).toMatchObject({ op: 'put', key: `${P}plan` });
    expect(put(t, 1).lease).toBeUndefined();
    expect(decodeRecord('plan', `${P}plan`, put(t, 1).value, fp)).toEqual(plan({ generation: 4, cursor: { page: 2 } }));
    expect(t.success[2]).toEqual(op.get(`${P}publish`));
    expect(t.failure).toEqual([op.get(`${P}leader`), op.get(`${P}plan`)]);
  });
  it('the first campaign of a job creates its plan record only where absent, at generation 1', () => {
    const t = campaignTxn(P, fp, 'w1', undefined, 'L1');
    expect(t.compares[1]).toEqual(cmp.absent(`${P}plan`));
    expect(decodeRecord('plan', `${P}plan`, put(t, 1).value, fp)).toEqual({ v: 1, fp, generation: 1, final: false, planned: 0 });
    expect(bumpedPlanRecord(undefined, fp, 1)).toEqual({ v: 1, fp, generation: 1, final: false, planned: 0 });
  });
  it('resigning deletes the leader key only at the revision observed', () => {
    expect(resignTxn(P, 41)).toEqual({ compares: [cmp.modRevision(`${P}leader`, 41)], success: [op.delete(`${P}leader`)] });
  });
});

describe('the verdict and the plan record after seeding', () => {
  it('the verdict: leadership ∧ the plan at the revision it was decided on', () => {
    const guard = leadershipGuard(P, 41);
    const t = verdictTxn(P, guard, { rec: plan({ final: true }), modRevision: 50 }, 'stalled');
    expect(t.compares).toEqual([guard, cmp.modRevision(`${P}plan`, 50)]);
    expect(decodeRecord('plan', `${P}plan`, put(t).value, fp)).toEqual(plan({ final: true, verdict: 'stalled' }));
  });
  it('the seeded plan keeps fields it does not know, drops the previous cursor unless a new one came', () => {
    const current = { ...plan({ cursor: 'old' }), extra: 1 } as PlanRecord;
    expect(seededPlanRecord(current, fp, { generation: 4, final: true, planned: 12, cursor: undefined })).toEqual({ v: 1, fp, generation: 4, final: true, planned: 12, extra: 1 });
    expect(seededPlanRecord(current, fp, { generation: 4, final: false, planned: 12, cursor: 'new' }).cursor).toBe('new');
    const guard = leadershipGuard(P, 41);
    const w = planUpdateTxn(P, fp, guard, { rec: plan(), modRevision: 60 }, { generation: 4, final: true, planned: 12, cursor: undefined });
    expect(w.txn.compares).toEqual([guard, cmp.modRevision(`${P}plan`, 60)]);
    expect(decodeRecord('plan', `${P}plan`, put(w.txn).value, fp)).toMatchObject({ generation: 4, final: true, planned: 12 });
    // The record it returns is the one it puts: the seeder keeps it without decoding its own write.
    expect(decodeRecord('plan', `${P}plan`, put(w.txn).value, fp)).toEqual(w.rec);
  });
  it('a packed plan\'s buckets: compared at the plan read, the record returned is the one put', () => {
    const guard = leadershipGuard(P, 41);
    const w = bucketsTxn(P, guard, { rec: plan({ v: 2, layout: 'packed' }), modRevision: 70 }, 4);
    expect(w.txn.compares).toEqual([guard, cmp.modRevision(`${P}plan`, 70)]);
    expect(w.rec.buckets).toBe(4);
    expect(decodeRecord('plan', `${P}plan`, put(w.txn).value, fp)).toEqual(w.rec);
  });
});

describe('seeding', () => {
  it('a planned split is its spec and an initial split record', () => {
    const [spec, split] = seedWrites(P, fp, 4, { id: 's1', weight: 7, descriptor: { f: 'a' } }, 1 << 20) as { key: string; value: string }[];
    expect(decodeRecord('spec', spec!.key, spec!.value, fp)).toMatchObject({ id: 's1', weight: 7, descriptor: { f: 'a' }, generation: 4 });
    expect(decodeRecord('split', split!.key, split!.value, fp)).toMatchObject({ id: 's1', epoch: 0, status: 'runnable', owner: '', attempts: 0 });
    expect(reseedWrite(P, fp, 's1')).toEqual(seedWrites(P, fp, 4, { id: 's1', weight: 7 }, 1 << 20)[1]);
  });
  it('a spec past maxBytes is refused, naming the record', () => {
    expect(() => seedWrites(P, fp, 1, { id: 's1', weight: 1, descriptor: 'x'.repeat(2000) }, 1000)).toThrow(expect.objectContaining({ code: 'RECORD_TOO_LARGE' }));
  });
  it('every seeded key is compared absent, behind leadership: an existing record is never overwritten', () => {
    const guard = leadershipGuard(P, 41);
    const puts = [...seedWrites(P, fp, 1, { id: 'a', weight: 1 }, 1 << 20), reseedWrite(P, fp, 'b')];
    const t = seedTxn(guard, puts);
    expect(t.compares).toEqual([guard, cmp.absent(`${P}spec.a`), cmp.absent(`${P}split.a`), cmp.absent(`${P}split.b`)]);
    expect(t.success).toEqual(puts);
  });
});
