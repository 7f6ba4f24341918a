/**
 * The lifecycle emitter (delivery after the emitting step, in order; once and
 * off; a throwing or rejecting listener is logged and skipped) and the pure
 * mapping of a lane's end to its events.
 */
import { describe, expect, it } from 'vitest';
import { laneEndEvents, LifecycleEvents, type LaneEndFacts } from '../../../src/coordinator/events.js';
import type { Logger } from '../../../src/coordinator/log.js';

const tick = () => new Promise<void>((resolve) => setImmediate(resolve));

function recordingLogger(): Logger & { errors: object[] } {
  const errors: object[] = [];
  return { errors, debug() {}, info() {}, warn() {}, error: (obj: object) => void errors.push(obj) };
}

describe('LifecycleEvents', () => {
  it('delivers after the emitting step, in order, with the instance added', async () => {
    const events = new LifecycleEvents('w-1', recordingLogger());
    const got: unknown[] = [];
    events.on('split-claimed', (e) => void got.push(e));
    events.on('split-completed', (e) => void got.push(e));
    events.emit('split-claimed', { id: 'a', epoch: 1, attempts: 0, kind: 'create' });
    events.emit('split-completed', { id: 'a', epoch: 1 });
    expect(got).toEqual([]); // not inside the step that emitted
    await tick();
    expect(got).toEqual([
      { instance: 'w-1', id: 'a', epoch: 1, attempts: 0, kind: 'create' },
      { instance: 'w-1', id: 'a', epoch: 1 },
    ]);
  });

  it('serves a once listener one event, and an off listener none', async () => {
    const events = new LifecycleEvents('w-1', recordingLogger());
    const once: string[] = [];
    const off: string[] = [];
    const offListener = (e: { id: string }) => void off.push(e.id);
    events.once('split-completed', (e) => void once.push(e.id));
    events.on('split-completed', offListener);
    events.emit('split-completed', { id: 'a', epoch: 1 });
    events.emit('split-completed', { id: 'b', epoch: 1 });
    events.off('split-completed', offListener); // before delivery: it gets neither
    await tick();
    expect(once).toEqual(['a']);
    expect(off).toEqual([]);
    expect(events.listenerCount('split-completed')).toBe(0);
  });

  it('logs a listener that throws or rejects, and still serves the others', async () => {
    const log = recordingLogger();
    const events = new LifecycleEvents('w-1', log);
    const got: string[] = [];
    events.on('session-lost', () => {
      throw new Error('listener bug');
    });
    events.on('session-lost', async () => {
      throw new Error('async listener bug');
    });
    events.on('session-lost', (e) => void got.push(e.reason));
    events.emit('session-lost', { reason: 'lease gone' });
    await tick();
    expect(got).toEqual(['lease gone']);
    expect(log.errors.map((e) => (e as { err: string }).err).sort()).toEqual(['async listener bug', 'listener bug']);
  });

  it('refuses a listener that is not a function', () => {
    const events = new LifecycleEvents('w-1', recordingLogger());
    expect(() => events.on('fatal', 'nope' as never)).toThrow(/listener of 'fatal'/);
  });
});

describe('laneEndEvents', () => {
  const facts = (patch: Partial<LaneEndFacts>): LaneEndFacts => ({
    id: 's', epoch: 3, end: 'released', reason: 'release', record: { attempts: 0, status: 'runnable' }, draining: false, drainHandlerState: 'draining', ...patch,
  });
  const names = (f: LaneEndFacts) => laneEndEvents(f).map((e) => e.event);

  it('reports a failure, and a quarantine when the failure reached the cap', () => {
    expect(laneEndEvents(facts({ end: 'failed', record: { attempts: 1, status: 'runnable', reason: 'bad input', notBefore: 9000 } })))
      .toEqual([{ event: 'split-failed', body: { id: 's', epoch: 3, reason: 'bad input', attempts: 1, kind: 'error', permanent: false, retryAt: 9000 } }]);
    // A permanent failure quarantines at once: no retryAt.
    expect(laneEndEvents(facts({ end: 'failed', failureKind: 'permanent', record: { attempts: 1, status: 'quarantined', reason: 'never' } }))[0])
      .toEqual({ event: 'split-failed', body: { id: 's', epoch: 3, reason: 'never', attempts: 1, kind: 'permanent', permanent: true, retryAt: null } });
    expect(names(facts({ end: 'failed', record: { attempts: 3, status: 'quarantined', reason: 'bad input' } }))).toEqual(['split-failed', 'split-quarantined']);
  });

  it('names why a release happened', () => {
    const cause = (f: LaneEndFacts) => (laneEndEvents(f)[0]!.body as { cause: string }).cause;
    expect(cause(facts({}))).toBe('handler');
    expect(cause(facts({ releaseCause: 'store-failure' }))).toBe('store-failure');
    expect(cause(facts({ draining: true }))).toBe('drained');
    expect(cause(facts({ end: 'forced', draining: true }))).toBe('forced');
    expect(cause(facts({ end: 'forced', draining: true, drainHandlerState: 'declined' }))).toBe('declined');
  });

  it('ends a drain after the split event, with its outcome', () => {
    const drain = (f: LaneEndFacts) => laneEndEvents(f).at(-1)!;
    expect(names(facts({ draining: true }))).toEqual(['split-released', 'drain-ended']);
    expect(drain(facts({ draining: true })).body).toMatchObject({ outcome: 'cooperative' });
    expect(drain(facts({ end: 'completed', draining: true })).body).toMatchObject({ outcome: 'cooperative', reason: 'completed' });
    expect(drain(facts({ end: 'forced', draining: true })).body).toMatchObject({ outcome: 'forced', reason: 'drain deadline reached' });
    expect(drain(facts({ end: 'forced', draining: true, drainHandlerState: 'failed' })).body).toMatchObject({ outcome: 'forced' });
    expect(drain(facts({ end: 'forced', draining: true, drainHandlerState: 'declined' })).body).toMatchObject({ outcome: 'declined' });
    expect(drain(facts({ end: 'lost', reason: 'fenced', draining: true })).body).toMatchObject({ outcome: 'lost', reason: 'fenced' });
    expect(names(facts({ end: 'lost', reason: 'fenced' }))).toEqual(['split-lost']);
  });
});
