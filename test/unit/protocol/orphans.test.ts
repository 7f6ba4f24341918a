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
    expect(settleOrphan({ record: record(), lease: lease() }, ctx())).toEqual({ kind: 'adopt' });
  });
  it('releases one it is not assigned, or has no free lane for', () => {
    expect(settleOrphan({ record: record(), lease: lease() }, ctx({ assigned: false }))).toEqual({ kind: 'release' });
    expect(settleOrphan({ record: record(), lease: lease() }, ctx({ laneFree: false }))).toEqual({ kind: 'release' });
  });
  it('forgets a write that did not land or a split that moved on: no lease key, another session, owner or run', () => {
    expect(settleOrphan({ record: record(), lease: undefined }, ctx())).toEqual({ kind: 'forget' });
    expect(settleOrphan({ record: record(), lease: lease({}, 'L0') }, ctx())).toEqual({ kind: 'forget' });
    expect(settleOrphan({ record: record(), lease: lease({ owner: 'other' }) }, ctx())).toEqual({ kind: 'forget' });
    expect(settleOrphan({ record: record(), lease: lease({ nonce: 'n0' }) }, ctx())).toEqual({ kind: 'forget' });
  });
  it('waits while the record does not name the lease key tenancy yet (one watch lags the other)', () => {
    expect(settleOrphan({ record: undefined, lease: lease() }, ctx())).toEqual({ kind: 'wait' });
    expect(settleOrphan({ record: record({ epoch: 2 }), lease: lease() }, ctx())).toEqual({ kind: 'wait' });
    expect(settleOrphan({ record: record({ owner: '' }), lease: lease() }, ctx())).toEqual({ kind: 'wait' });
  });
});
