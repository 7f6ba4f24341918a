/**
 * Revocations (coordinator/worker/revocations.ts) over real lanes on a
 * MemoryStore and a VirtualClock: a revoke begins one drain and reports it
 * once; a drain is forced at drain_deadline, not before, or at once when the
 * handler declined or failed; a lane that ended leaves no timer behind.
 */
import { describe, expect, it } from 'vitest';
import type { Lane } from '../../../../src/coordinator/lanes/lane.js';
import { silentLogger } from '../../../../src/coordinator/log.js';
import { Revocations } from '../../../../src/coordinator/worker/revocations.js';
import { openLane, stored, world, type World } from '../../../support/held-split.js';
import { flush, runUntil } from '../../../support/virtual-time.js';

async function revoking(w: World, ids: string[]) {
  const lanes = new Map<string, Lane>();
  const events: [string, unknown][] = [];
  const unexpected: unknown[] = [];
  let rev: Revocations | undefined;
  for (const id of ids) {
    const { lane } = await openLane(w, id, { onEnd: (l) => { lanes.delete(l.id); rev?.ended(l.id); }, onDecline: () => rev?.serviceRevocations() });
    lanes.set(id, lane);
  }
  rev = new Revocations({
    lanes, clock: w.clock, drainDeadlineMs: w.config.drainDeadlineMs, log: silentLogger,
    emit: () => (event, body) => events.push([event, body]), unexpected: (_where, e) => unexpected.push(e),
  });
  return { rev, lanes: new Map(lanes), events, unexpected };
}

describe('Revocations', () => {
  it('a revoke drains a running lane once, and forces it at drain_deadline, not before', async () => {
    const w = world({ drainDeadlineMs: 1000 });
    const { rev, lanes, events, unexpected } = await revoking(w, ['s']);
    const lane = lanes.get('s')!;
    rev.revoke('s');
    rev.revoke('s'); // draining already: not begun or reported again
    expect(lane.state.kind).toBe('draining');
    expect(events).toEqual([['drain-started', { id: 's', epoch: 1, reason: 'revoked' }]]);
    await runUntil(w.clock, 999);
    expect(lane.ended).toBeUndefined();
    await runUntil(w.clock, 1000);
    expect(lane.ended).toBe('forced');
    expect((await stored(w, 's')).record.owner).toBe('');
    expect(unexpected).toEqual([]);
  });

  it('a timed-out lane is not drained: no drain-started that no drain-ended would follow', async () => {
    const w = world({ heartbeatTimeoutMs: 1000 });
    const { rev, lanes, events } = await revoking(w, ['s']);
    await runUntil(w.clock, 1500);
    expect(lanes.get('s')!.timedOut).toMatch(/^timeout: /);
    rev.revoke('s');
    rev.drainAll('stopping');
    expect(lanes.get('s')!.state.kind).toBe('running');
    expect(events).toEqual([]);
  });

  it('forces at once a drain the handler declined or failed', async () => {
    const w = world();
    const { rev, lanes } = await revoking(w, ['a', 'b']);
    rev.revoke('a');
    rev.revoke('b');
    lanes.get('a')!.handle.decline(); // the lane tells the worker, which services the revocations
    lanes.get('b')!.drainFailed();
    rev.serviceRevocations();
    await flush();
    expect(w.clock.now()).toBe(0);
    expect(lanes.get('a')!.ended).toBe('forced');
    expect(lanes.get('b')!.ended).toBe('forced');
  });

  it('a lane that released cooperatively leaves no deadline timer; drainAll drains every running lane with its reason', async () => {
    const w = world();
    const { rev, lanes, events } = await revoking(w, ['a', 'b']);
    rev.revoke('a');
    expect(w.clock.nextTimerAt()).toBe(w.config.drainDeadlineMs);
    await lanes.get('a')!.handle.release({ at: 1 });
    expect(lanes.get('a')!.ended).toBe('released');
    const LEASES = 3_600_000; // the store's expiry of the lanes' etcd leases: the only timers left
    expect(w.clock.nextTimerAt()).toBe(LEASES);
    rev.drainAll('stopping');
    expect(events.map(([e, b]) => [e, (b as { id: string; reason: string }).id, (b as { reason: string }).reason])).toEqual([
      ['drain-started', 'a', 'revoked'],
      ['drain-started', 'b', 'stopping'],
    ]);
    expect(lanes.get('b')!.state.kind).toBe('draining');
    expect(w.clock.nextTimerAt()).toBe(w.config.drainDeadlineMs);
    rev.clear();
    expect(w.clock.nextTimerAt()).toBe(LEASES);
  });
});
