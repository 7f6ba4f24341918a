/**
 * Lane (coordinator/lanes/lane.ts) on a MemoryStore and a VirtualClock: its
 * state machine (running → draining → ended, the timeout inside running) and
 * its fenced writes: a commit that lands and moves the guards, one refused
 * after the split moved (nothing written, the lane lost), the ending writes,
 * and no write landing after the end.
 */
import { describe, expect, it } from 'vitest';
import { isSplitfleetError } from '../../../../src/errors.js';
import { splitKey } from '../../../../src/protocol/keys.js';
import { encodeRecord } from '../../../../src/protocol/records.js';
import { runUntil } from '../../../support/virtual-time.js';
import { openLane, stored, world } from '../../../support/held-split.js';

describe('Lane writes', () => {
  it('a commit lands on progress.{id} only, and the next one is guarded by its revision', async () => {
    const w = world();
    const { lane } = await openLane(w);
    const before = await stored(w, 's');
    await lane.handle.commit({ at: 1 });
    const first = await stored(w, 's');
    expect(first.progress).toEqual({ at: 1 });
    expect(first.splitRevision).toBe(before.splitRevision); // split.{id} moves only with ownership
    expect(lane.committed).toEqual({ at: 1 });
    // Guarded by the first commit's revision: a stale guard would be fenced out here.
    await lane.handle.commit({ at: 2 });
    expect((await stored(w, 's')).progress).toEqual({ at: 2 });
    expect(lane.state.kind).toBe('running');
  });

  it('a commit after the split moved is refused: nothing is written and the lane ends lost', async () => {
    const w = world();
    const { lane, ends } = await openLane(w);
    // Someone else's write of split.{id} (a takeover, say): our guard is stale now.
    const moved = { ...lane.record, owner: 'w1', epoch: lane.record.epoch + 1 };
    await w.store.put(splitKey(w.prefix, 's'), encodeRecord('split', moved));
    const revision = (await w.store.get(splitKey(w.prefix, 's')))!.modRevision;
    const err = await lane.handle.commit({ at: 1 }).then(() => undefined, (e: unknown) => e);
    expect(isSplitfleetError(err, 'LEASE_LOST')).toBe(true);
    expect((await stored(w, 's')).progress).toBeUndefined();
    expect((await stored(w, 's')).splitRevision).toBe(revision);
    expect(lane.ended).toBe('lost');
    expect(ends.map((e) => [e.as, e.reason])).toEqual([['lost', 'commit lost the fenced swap']]);
    expect(lane.handle.signal.aborted).toBe(true);
  });

  it('finishNormally releases at the last commit; the ended state carries the terminal write', async () => {
    const w = world();
    const { lane, ends } = await openLane(w);
    await lane.handle.commit({ at: 3 });
    await lane.finishNormally();
    const s = await stored(w, 's');
    expect(s.record.owner).toBe('');
    expect(s.lease).toBeUndefined(); // the terminal write deleted the lease key
    expect(s.progress).toEqual({ at: 3 });
    expect(ends).toHaveLength(1);
    const end = ends[0]!;
    expect(end).toMatchObject({ kind: 'ended', as: 'released', reason: 'release', drain: undefined, timedOut: undefined });
    expect(end.write?.revision).toBe(s.splitRevision);
    expect(end.asked.releaseCause).toBeUndefined();
    expect(lane.state).toBe(end);
  });

  it('no write of the handle lands after the lane ended', async () => {
    const w = world();
    const { lane, ends } = await openLane(w);
    await lane.handle.complete({ done: true });
    expect(lane.ended).toBe('completed');
    const after = await w.store.txn({ compares: [], success: [] });
    for (const write of [() => lane.handle.commit({ at: 9 }), () => lane.handle.release({ at: 9 }), () => lane.handle.fail('late')]) {
      const err = await write().then(() => undefined, (e: unknown) => e);
      expect(isSplitfleetError(err, 'LEASE_LOST')).toBe(true);
    }
    lane.lose('too late');
    await lane.finishNormally();
    expect((await w.store.txn({ compares: [], success: [] })).revision).toBe(after.revision);
    expect((await stored(w, 's')).record.status).toBe('completed');
    expect(ends.map((e) => e.as)).toEqual(['completed']); // onEnd once, whatever comes after
  });

  it('a failure report ends the lane failed, with the kind it was asked as', async () => {
    const w = world();
    const { lane, ends } = await openLane(w);
    await lane.handle.fail('bad input', { permanent: true });
    expect((await stored(w, 's')).record.status).toBe('quarantined');
    expect(ends[0]).toMatchObject({ as: 'failed', asked: { failure: 'permanent' } });
    expect(lane.failureKind).toBe('permanent');
  });

  it('lose() ends the lane without a write, and with the worker\'s cause a release says why', async () => {
    const w = world();
    const lost = await openLane(w, 'a');
    const before = await stored(w, 'a');
    lost.lane.lose('session gone');
    expect(lost.ends.map((e) => [e.as, e.reason, e.write])).toEqual([['lost', 'session gone', undefined]]);
    expect(await stored(w, 'a')).toEqual(before);

    const stopping = await openLane(w, 'b');
    await stopping.lane.finishNormally('stopping');
    expect(stopping.ends[0]).toMatchObject({ as: 'released', asked: { releaseCause: 'stopping' } });
  });
});

describe('Lane drains', () => {
  it('running → draining: the drain signal aborts, the start is the clock\'s, and a second beginDrain changes nothing', async () => {
    const w = world();
    const { lane } = await openLane(w);
    await runUntil(w.clock, 250);
    lane.beginDrain();
    expect(lane.state).toMatchObject({ kind: 'draining', drain: { startedAt: 250, handler: 'draining' }, forced: false });
    expect(lane.handle.drainSignal.aborted).toBe(true);
    expect(lane.handle.signal.aborted).toBe(false);
    await runUntil(w.clock, 400);
    lane.beginDrain();
    expect(lane.state).toMatchObject({ drain: { startedAt: 250 } });
  });

  it('a cooperative drain ends released, with its drain', async () => {
    const w = world();
    const { lane, ends } = await openLane(w);
    lane.beginDrain();
    await lane.handle.release({ at: 5 });
    expect(ends[0]).toMatchObject({ as: 'released', drain: { startedAt: 0, handler: 'draining' } });
    expect((await stored(w, 's')).progress).toEqual({ at: 5 });
  });

  it('decline() while draining tells the worker once; forcing aborts the handler and releases at the last commit', async () => {
    const w = world();
    let declines = 0;
    const { lane, ends } = await openLane(w, 's', { onDecline: () => declines++ });
    lane.handle.decline(); // running: nothing to decline
    expect(declines).toBe(0);
    await lane.handle.commit({ at: 1 });
    lane.beginDrain();
    lane.handle.decline();
    lane.handle.decline();
    expect(declines).toBe(1);
    expect(lane.state).toMatchObject({ kind: 'draining', drain: { handler: 'declined' } });
    await lane.force();
    expect(lane.handle.signal.aborted).toBe(true);
    expect(ends[0]).toMatchObject({ as: 'forced', drain: { handler: 'declined' } });
    const s = await stored(w, 's');
    expect(s.record.owner).toBe('');
    expect(s.progress).toEqual({ at: 1 });
  });

  it('drainFailed() marks a draining lane only; force() acts on a draining lane only', async () => {
    const w = world();
    const { lane, ends } = await openLane(w);
    lane.drainFailed();
    await lane.force();
    expect(lane.state).toMatchObject({ kind: 'running', timedOut: undefined });
    expect(ends).toEqual([]);
    lane.beginDrain();
    lane.drainFailed();
    expect(lane.state).toMatchObject({ kind: 'draining', drain: { handler: 'failed' } });
  });

  it('the handler\'s own writes are refused once forcing has begun', async () => {
    const w = world();
    const { lane } = await openLane(w);
    lane.beginDrain();
    const forcing = lane.force();
    const err = await lane.handle.commit({ at: 7 }).then(() => undefined, (e: unknown) => e);
    await forcing;
    expect(isSplitfleetError(err, 'LEASE_LOST')).toBe(true);
    expect((await stored(w, 's')).progress).toBeUndefined();
    expect(lane.ended).toBe('forced');
  });
});

describe('Lane heartbeat timeout', () => {
  it('times a silent running lane out: no drain any more, its writes refused, and its end a timeout failure', async () => {
    const w = world({ heartbeatTimeoutMs: 1000 });
    const { lane, ends } = await openLane(w);
    await runUntil(w.clock, 1500);
    expect(lane.state).toMatchObject({ kind: 'running' });
    expect(lane.timedOut).toMatch(/^timeout: /);
    expect(lane.handle.signal.aborted).toBe(true);
    lane.beginDrain();
    expect(lane.state.kind).toBe('running');
    const err = await lane.handle.commit({ at: 1 }).then(() => undefined, (e: unknown) => e);
    expect(isSplitfleetError(err, 'LEASE_LOST')).toBe(true);
    await lane.finishNormally(); // the handler returned: the failure report it owes, not a release
    expect(ends[0]).toMatchObject({ as: 'failed', timedOut: lane.timedOut });
    expect(lane.failureKind).toBe('timeout');
    expect((await stored(w, 's')).record.attempts).toBe(2); // the claim's attempt, and the failure's one
  });

  it('a draining lane is not timed out', async () => {
    const w = world({ heartbeatTimeoutMs: 1000, drainDeadlineMs: 5000 });
    const { lane } = await openLane(w);
    lane.beginDrain();
    await runUntil(w.clock, 3000);
    expect(lane.timedOut).toBeUndefined();
    expect(lane.handle.signal.aborted).toBe(false);
  });
});
