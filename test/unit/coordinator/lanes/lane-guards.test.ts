/**
 * LaneGuards (coordinator/lanes/lane-guards.ts): the fence starts at the
 * claim's revisions and moves only by `adopt`, and a write whose reply was
 * lost is read back as landed, not landed, or moved on.
 */
import { describe, expect, it } from 'vitest';
import { LaneGuards } from '../../../../src/coordinator/lanes/lane-guards.js';
import { isSplitfleetError } from '../../../../src/errors.js';
import { laneWrite } from '../../../../src/protocol/lanes.js';
import { splitKey } from '../../../../src/protocol/keys.js';
import { encodeRecord, type SplitRecord } from '../../../../src/protocol/records.js';
import { laneTxn } from '../../../../src/protocol/txns.js';
import { claimed, world, type World } from '../../../support/held-split.js';

async function guarded(w: World) {
  const leaseId = await w.store.grantLease(3600);
  const { record, revision } = await claimed(w, 's', leaseId);
  const settled: string[] = [];
  const guards = new LaneGuards(w.store, { prefix: w.prefix, id: 's', leaseId, record, revision, progress: null, progressRevision: 0 }, (r) => settled.push(r));
  return { guards, leaseId, record, revision, settled };
}

const writer = (w: World, record: SplitRecord) => ({
  me: w.config.instance, record, progressRecord: undefined, maxAttempts: w.config.maxAttempts, retryBackoff: w.config.retryBackoff, now: 0, draw: 0,
});

describe('LaneGuards', () => {
  it('starts at the claim\'s revisions and adopts a commit\'s progress revision, leaving the split\'s', async () => {
    const w = world();
    const { guards, leaseId, record, revision } = await guarded(w);
    expect(guards.fence).toEqual({ prefix: w.prefix, id: 's', splitRevision: revision, progressRevision: 0, sessionLease: leaseId });
    const commit = laneWrite('commit', writer(w, record), { progress: { at: 1 } });
    const res = await w.store.txn(laneTxn(guards.fence, commit));
    expect(res.won).toBe(true);
    guards.adopt(commit, res.revision);
    expect(guards.fence).toMatchObject({ splitRevision: revision, progressRevision: res.revision });
    expect(guards.committed).toEqual({ at: 1 });
    // A release moves the split's revision too.
    const release = laneWrite('release', writer(w, guards.record), {});
    const released = await w.store.txn(laneTxn(guards.fence, release));
    expect(released.won).toBe(true);
    guards.adopt(release, released.revision);
    expect(guards.fence.splitRevision).toBe(released.revision);
    expect(guards.record.owner).toBe('');
  });

  it('reads a lost reply back as landed when its bytes are there', async () => {
    const w = world();
    const { guards, record, settled } = await guarded(w);
    const commit = laneWrite('commit', writer(w, record), { progress: { at: 2 } });
    const res = await w.store.txn(laneTxn(guards.fence, commit)); // landed; say its reply was lost
    guards.unknown = commit;
    expect(await guards.readBack()).toEqual({ won: true, revision: res.revision });
    expect(guards.unknown).toBeUndefined();
    expect(settled).toEqual(['landed']);
  });

  it('reads it back as not landed (retryable) when every guard is as it was', async () => {
    const w = world();
    const { guards, record, settled } = await guarded(w);
    guards.unknown = laneWrite('commit', writer(w, record), { progress: { at: 2 } });
    const err = await guards.readBack().then(() => undefined, (e: unknown) => e);
    expect(isSplitfleetError(err, 'TIMEOUT') && err.retryable).toBe(true);
    expect(guards.unknown).toBeUndefined();
    expect(settled).toEqual(['not-landed']);
  });

  it('reads it back as moved (lost) when someone else wrote the split', async () => {
    const w = world();
    const { guards, record, settled } = await guarded(w);
    await w.store.put(splitKey(w.prefix, 's'), encodeRecord('split', { ...record, owner: 'w1', epoch: record.epoch + 1 }));
    guards.unknown = laneWrite('commit', writer(w, record), { progress: { at: 2 } });
    expect((await guards.readBack()).won).toBe(false);
    expect(settled).toEqual(['moved']);
  });
});
