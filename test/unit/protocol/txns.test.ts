/** Transactions as data (protocol/txns.ts): what each ownership write compares and writes. */
import { describe, expect, it } from 'vitest';
import { decodeRecord, type SplitRecord } from '../../../src/protocol/records.js';
import {
  adoptTxn, batches, claimTxn, joinTxns, laneTxn, orphanDropTxn, orphanReleaseTxn, publicationFence, publishTxn, readBackTxn, rideTxn, type Writer,
} from '../../../src/protocol/txns.js';
import { checkTxn } from '../../../src/store/base.js';
import { cmp, DEFAULT_LIMITS, itemBytes, op, type Op } from '../../../src/store/store.js';

const fp = '0123456789abcdef';
const P = '/sf/job/';
const w: Writer = { prefix: P, me: 'me', nonce: 'n1', sessionLease: 'L1', fp };
const record = (o: Partial<SplitRecord> = {}): SplitRecord => ({ v: 1, fp, id: 's', epoch: 2, status: 'runnable', owner: '', attempts: 1, ...o });
const at = (rec: SplitRecord, modRevision = 7) => ({ rec, modRevision });

describe('claimTxn', () => {
  it('a claim: record at the revision seen ∧ lease key absent → record (epoch + 1, owner me), lease key on the session lease, progress read', () => {
    const c = claimTxn(w, 's', { kind: 'claim', claim: 'released', consumesAttempt: false }, at(record()), undefined, 3);
    expect(c.quarantine).toBe(false);
    expect(c.next).toMatchObject({ epoch: 3, owner: 'me', attempts: 1 });
    expect(c.txn.compares).toEqual([cmp.modRevision(`${P}split.s`, 7), cmp.noLease(`${P}lease.s`)]);
    const [split, lease, progress] = c.txn.success;
    expect(split).toMatchObject({ op: 'put', key: `${P}split.s` });
    expect(lease).toMatchObject({ op: 'put', key: `${P}lease.s`, lease: 'L1' });
    expect(decodeRecord('lease', `${P}lease.s`, (lease as { value: string }).value, fp)).toMatchObject({ owner: 'me', nonce: 'n1', epoch: 3 });
    expect(progress).toEqual(op.get(`${P}progress.s`));
  });
  it('takes the attempt the decision says it costs, and never classifies again', () => {
    const c = claimTxn(w, 's', { kind: 'claim', claim: 'expired', consumesAttempt: true }, at(record({ owner: 'gone', epoch: 4 })), undefined, 9);
    expect(c.next).toMatchObject({ epoch: 5, owner: 'me', attempts: 2 });
  });
  it('a reclaim compares the lease key on the lease it was observed on', () => {
    const c = claimTxn(w, 's', { kind: 'claim', claim: 'reclaim', consumesAttempt: true }, at(record({ owner: 'me' })), { lease: 'L0' }, 9);
    expect(c.txn.compares[1]).toEqual(cmp.lease(`${P}lease.s`, 'L0'));
  });
  it('a quarantine writes the parked record only (a reclaim also deletes our stale lease key)', () => {
    const q = claimTxn(w, 's', { kind: 'quarantine', claim: 'expired', consumesAttempt: true }, at(record({ owner: 'gone' })), undefined, 2);
    expect(q.quarantine).toBe(true);
    expect(q.next).toMatchObject({ status: 'quarantined', owner: '', attempts: 2, reason: 'max_attempts (2) reached on a expired claim' });
    expect(q.txn.success).toHaveLength(1);
    const r = claimTxn(w, 's', { kind: 'quarantine', claim: 'reclaim', consumesAttempt: true }, at(record({ owner: 'me' })), { lease: 'L0' }, 2);
    expect(r.txn.success.map((o) => o.op)).toEqual(['put', 'delete']);
  });
  it('claims ready together join into one transaction', () => {
    const a = claimTxn(w, 'a', { kind: 'claim', claim: 'create', consumesAttempt: false }, at(record({ id: 'a', epoch: 0, attempts: 0 })), undefined, 3);
    const b = claimTxn(w, 'b', { kind: 'claim', claim: 'create', consumesAttempt: false }, at(record({ id: 'b', epoch: 0, attempts: 0 })), undefined, 3);
    const j = joinTxns([a.txn, b.txn]);
    expect(j.compares).toHaveLength(4);
    expect(j.success).toHaveLength(6);
  });
});

describe('lane and orphan transactions', () => {
  const fence = { prefix: P, id: 's', splitRevision: 5, progressRevision: 6, sessionLease: 'L1' };
  it('every lane write compares the three revisions the lane knows; a commit touches progress only', () => {
    const t = laneTxn(fence, { splitValue: undefined, progressValue: 'p', terminal: false });
    expect(t.compares).toEqual([cmp.modRevision(`${P}split.s`, 5), cmp.modRevision(`${P}progress.s`, 6), cmp.lease(`${P}lease.s`, 'L1')]);
    expect(t.success).toEqual([op.put(`${P}progress.s`, 'p')]);
  });
  it('a terminal write rewrites the record and deletes the lease key', () => {
    const t = laneTxn(fence, { splitValue: 'r', progressValue: undefined, terminal: true });
    expect(t.success).toEqual([op.put(`${P}split.s`, 'r'), op.delete(`${P}lease.s`)]);
  });
  it('a read-back reads split, progress and lease in one transaction', () => {
    expect(readBackTxn(P, 's').success).toEqual([op.get(`${P}split.s`), op.get(`${P}progress.s`), op.get(`${P}lease.s`)]);
  });
  it('an orphan release clears the owner and deletes the lease key, guarded by the record and our lease', () => {
    const t = orphanReleaseTxn(w, 's', at(record({ owner: 'me' }), 11));
    expect(t.compares).toEqual([cmp.modRevision(`${P}split.s`, 11), cmp.lease(`${P}lease.s`, 'L1')]);
    expect(decodeRecord('split', `${P}split.s`, (t.success[0] as { value: string }).value, fp)).toMatchObject({ owner: '', epoch: 2 });
    expect(t.success[1]).toEqual(op.delete(`${P}lease.s`));
  });
  it('a leftover lease key is dropped alone, while the record and the key are as observed and the key on our lease', () => {
    const t = orphanDropTxn(w, 's', 11, 5);
    expect(t.compares).toEqual([cmp.modRevision(`${P}split.s`, 11), cmp.modRevision(`${P}lease.s`, 5), cmp.lease(`${P}lease.s`, 'L1')]);
    expect(t.success).toEqual([op.delete(`${P}lease.s`)]);
  });
  it('an adoption reads the progress, guarded by the tenancy observed', () => {
    const t = adoptTxn(w, 's', 11);
    expect(t.compares).toEqual([cmp.modRevision(`${P}split.s`, 11), cmp.lease(`${P}lease.s`, 'L1')]);
    expect(t.success).toEqual([op.get(`${P}progress.s`)]);
  });
});

describe('a publication riding in a promotion (rideTxn, decision 0085)', () => {
  const guard = cmp.modRevision(`${P}leader`, 5);
  const promotion = { compares: [guard, cmp.modRevision(`${P}folded.0.0`, 9), cmp.absent(`${P}split.a`)], success: [op.put(`${P}spec.a`, 's'), op.put(`${P}split.a`, 'r')] };
  const rider = publishTxn([op.put(`${P}assign.w0`, 'x')], guard, publicationFence(P, fp, 2, 30));
  it('keeps both sets of compares (the leadership guard once) and both sets of ops, in order', () => {
    const t = rideTxn(promotion, rider, DEFAULT_LIMITS)!;
    expect(t.compares).toEqual([...promotion.compares, cmp.modRevision(`${P}publish`, 30)]);
    expect(t.success).toEqual([...promotion.success, ...rider.success]);
    expect(t.failure).toBeUndefined();
  });
  it('refuses a joined transaction over the store\'s limits (ops or bytes)', () => {
    expect(rideTxn(promotion, rider, { ...DEFAULT_LIMITS, maxOpsPerTxn: 3 })).toBeUndefined();
    expect(rideTxn(promotion, rider, { ...DEFAULT_LIMITS, maxOpsPerTxn: 4 })).toBeDefined();
    expect(rideTxn(promotion, rider, { ...DEFAULT_LIMITS, maxRequestBytes: 4096 + 300 })).toBeUndefined();
    const t = rideTxn(promotion, rider, DEFAULT_LIMITS)!;
    expect(() => checkTxn(t, DEFAULT_LIMITS)).not.toThrow();
  });
});

describe('publishing', () => {
  it('every publishing transaction carries leadership, the fence compare and the fence put', () => {
    const fence = publicationFence(P, fp, 4, 19);
    const guard = cmp.modRevision(`${P}leader`, 3);
    const t = publishTxn([op.put(`${P}assign.a`, 'x')], guard, fence);
    expect(t.compares).toEqual([guard, cmp.modRevision(`${P}publish`, 19)]);
    expect(t.success.at(-1)).toEqual(op.put(`${P}publish`, fence.value));
    expect(decodeRecord('publish', `${P}publish`, fence.value, fp)).toMatchObject({ generation: 4 });
  });
  it('batches fill by the store\'s own byte estimate, so a non-ASCII batch the batcher passes the store passes too', () => {
    const value = 'é'.repeat(1000); // 1000 UTF-16 units, 2000 bytes
    const writes: Op[][] = Array.from({ length: 40 }, (_, i) => [op.put(`${P}assign.${i}`, value)]);
    const maxBytes = 20_000;
    const out = [...batches(writes, 126, maxBytes, itemBytes)];
    expect(out.length).toBeGreaterThan(4); // counting UTF-16 units would have made 2
    for (const b of out) {
      expect(b.reduce((s, o) => s + itemBytes(o), 0)).toBeLessThanOrEqual(maxBytes);
      expect(() => checkTxn({ compares: [], success: b }, { ...DEFAULT_LIMITS, maxRequestBytes: maxBytes + 64 })).not.toThrow();
    }
    expect(out.flat()).toHaveLength(40);
  });
  it('batches respect the op count, and a write over the limits goes alone', () => {
    const writes: Op[][] = Array.from({ length: 10 }, (_, i) => [op.delete(`k${i}`)]);
    expect([...batches(writes, 4, 1e9, itemBytes)].map((b) => b.length)).toEqual([4, 4, 2]);
    expect([...batches([[op.put('a', 'x'.repeat(100))], [op.put('b', 'y')]], 10, 50, itemBytes)].map((b) => b.length)).toEqual([1, 1]);
  });
});
