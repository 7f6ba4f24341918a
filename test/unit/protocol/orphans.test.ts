/** settleOrphan: what a session does with a split the store says it owns but no lane holds. */
import { describe, expect, it } from 'vitest';
import { settleOrphan, type OrphanContext } from '../../../src/protocol/orphans.js';
import type { LeaseRecord, SplitRecord } from '../../../src/protocol/records.js';

const fp = '0123456789abcdef';
const record = (o: Partial<SplitRecord> = {}): SplitRecord => ({ v: 1, fp, id: 's', epoch: 3, status: 'runnable', owner: 'me', attempts: 0, ...o });
const lease = (o: Partial<LeaseRecord> = {}, leaseId = 'L1') => ({ rec: { v: 1 as const, fp, id: 's', owner: 'me', nonce: 'n1', epoch: 3, ...o }, leaseId });
const ctx = (o: Partial<OrphanContext> = {}): OrphanContext => ({ me: 'me', sessionLease: 'L1', nonce: 'n1', assigned: true, laneFree: true, ...o });

describe('settleOrphan', () => {
  it('adopts a landed tenancy of this session that it is assigned and has a lane for', () => {
    expect(settleOrphan({ record: record(), recordRevision: 7, lease: lease() }, ctx())).toEqual({ kind: 'adopt' });
  });
  it('releases one it is not assigned, or has no free lane for', () => {
    expect(settleOrphan({ record: record(), recordRevision: 7, lease: lease() }, ctx({ assigned: false }))).toEqual({ kind: 'release' });
    expect(settleOrphan({ record: record(), recordRevision: 7, lease: lease() }, ctx({ laneFree: false }))).toEqual({ kind: 'release' });
  });
  it('forgets a write that did not land or a split that moved on: no lease key, another session, owner or run', () => {
    expect(settleOrphan({ record: record(), recordRevision: 7, lease: undefined }, ctx())).toEqual({ kind: 'forget' });
    expect(settleOrphan({ record: record(), recordRevision: 7, lease: lease({}, 'L0') }, ctx())).toEqual({ kind: 'forget' });
    expect(settleOrphan({ record: record(), recordRevision: 7, lease: lease({ owner: 'other' }) }, ctx())).toEqual({ kind: 'forget' });
    expect(settleOrphan({ record: record(), recordRevision: 7, lease: lease({ nonce: 'n0' }) }, ctx())).toEqual({ kind: 'forget' });
  });
  it('waits while the record does not name the lease key tenancy yet (one watch lags the other)', () => {
    expect(settleOrphan({ record: undefined, recordRevision: 0, lease: lease() }, ctx())).toEqual({ kind: 'wait' });
    expect(settleOrphan({ recordRevision: 7, record: record({ epoch: 2 }), lease: lease() }, ctx())).toEqual({ kind: 'wait' });
    expect(settleOrphan({ recordRevision: 7, record: record({ owner: '' }), lease: lease() }, ctx())).toEqual({ kind: 'wait' });
  });
  describe('our lease key left over from a record deleted and created again (decision 0071)', () => {
    const ours = (modRevision: number) => ({ ...lease(), modRevision });
    it('is dropped once the record, written after the key, is at a lower epoch (seeded or promoted again: epoch 0)', () => {
      expect(settleOrphan({ record: record({ epoch: 0, owner: '' }), recordRevision: 9, lease: ours(5) }, ctx())).toEqual({ kind: 'drop' });
      expect(settleOrphan({ record: record({ epoch: 0, owner: '' }), recordRevision: 9, lease: ours(5) }, ctx({ assigned: false, laneFree: false }))).toEqual({ kind: 'drop' });
    });
    it('waits on a lagging record (older than the key), a record not there yet, or a lagging key (the record names us higher)', () => {
      expect(settleOrphan({ record: record({ epoch: 2, owner: 'other' }), recordRevision: 4, lease: ours(5) }, ctx())).toEqual({ kind: 'wait' });
      expect(settleOrphan({ record: undefined, recordRevision: 0, lease: ours(5) }, ctx())).toEqual({ kind: 'wait' });
      expect(settleOrphan({ record: record({ epoch: 4 }), recordRevision: 9, lease: ours(5) }, ctx())).toEqual({ kind: 'wait' });
      // The key's revision unknown: no drop.
      expect(settleOrphan({ record: record({ epoch: 0, owner: '' }), recordRevision: 9, lease: lease() }, ctx())).toEqual({ kind: 'wait' });
    });
  });
  describe('a claim of unknown outcome (it may still be in flight)', () => {
    it('is not forgotten while the record stays at the revision the claim compared', () => {
      const free = { record: record({ owner: '' }), recordRevision: 7, lease: undefined };
      expect(settleOrphan(free, ctx({ claimedAt: 7 }))).toEqual({ kind: 'claim-again' });
      expect(settleOrphan(free, ctx({ claimedAt: 7, assigned: false }))).toEqual({ kind: 'wait' });
      // A claim that rode in a completion shares that lane: not sent again while the lane is in use.
      expect(settleOrphan(free, ctx({ claimedAt: 7, laneFree: false }))).toEqual({ kind: 'wait' });
    });
    it('waits, not claims, while another live lease key stands (the claim compares it absent)', () => {
      expect(settleOrphan({ record: record({ owner: 'other' }), recordRevision: 7, lease: lease({ owner: 'other' }, 'L9') }, ctx({ claimedAt: 7 }))).toEqual({ kind: 'wait' });
    });
    it('claims again over a lease key with no etcd lease (the claim\'s compare admits it)', () => {
      expect(settleOrphan({ record: record({ owner: '' }), recordRevision: 7, lease: { rec: lease({ owner: 'ghost' }).rec, leaseId: undefined } }, ctx({ claimedAt: 7 }))).toEqual({ kind: 'claim-again' });
    });
    it('is forgotten once the record moved past it: the claim can never land', () => {
      expect(settleOrphan({ record: record({ owner: 'other', epoch: 4 }), recordRevision: 9, lease: undefined }, ctx({ claimedAt: 7 }))).toEqual({ kind: 'forget' });
      expect(settleOrphan({ record: undefined, recordRevision: 0, lease: undefined }, ctx({ claimedAt: 7 }))).toEqual({ kind: 'forget' });
    });
    it('is adopted or released like any orphan once it shows as landed', () => {
      expect(settleOrphan({ record: record(), recordRevision: 9, lease: lease() }, ctx({ claimedAt: 7 }))).toEqual({ kind: 'adopt' });
    });
  });
});
