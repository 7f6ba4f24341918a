/**
 * The health state machine, pure: which state the observations call for (and
 * in which precedence), which changes are allowed (stopped is final, nothing
 * but stopped follows stopping, starting is never re-entered), and when
 * `since` moves.
 */
import { describe, expect, it } from 'vitest';
import { assessHealth, HealthMonitor, nextHealth, stuckReason, type Health, type HealthObservations } from '../../../src/coordinator/health.js';

const base = (patch: Partial<HealthObservations> = {}): HealthObservations => ({ started: true, startStep: 'reading the job', renewalFailures: 0, ...patch });

describe('assessHealth', () => {
  it('is starting, with the step as its reason, until started', () => {
    expect(assessHealth(base({ started: false, startStep: 'joining the fleet' }))).toEqual({ state: 'starting', reason: 'joining the fleet' });
    // A lost session or failing renewals before start-up finished are still start-up.
    expect(assessHealth(base({ started: false, startStep: 'joining the fleet', renewalFailures: 3 })).state).toBe('starting');
  });

  it('is running once started with nothing failing', () => {
    expect(assessHealth(base()).state).toBe('running');
  });

  it('is degraded while the session is lost, naming why and the rejoin failure', () => {
    const h = assessHealth(base({ sessionLost: 'lease 7 no longer exists', rejoinError: 'etcd unreachable' }));
    expect(h.state).toBe('degraded');
    expect(h.reason).toContain('lease 7 no longer exists');
    expect(h.reason).toContain('etcd unreachable');
  });

  it('is degraded from the first failed renewal, and running again once one is confirmed', () => {
    const failing = assessHealth(base({ renewalFailures: 1, lastRenewalError: 'timed out' }));
    expect(failing.state).toBe('degraded');
    expect(failing.reason).toContain('1 lease renewal in a row');
    expect(failing.reason).toContain('timed out');
    expect(assessHealth(base({ renewalFailures: 0 })).state).toBe('running');
  });

  it('is degraded while the view cannot be re-read', () => {
    expect(assessHealth(base({ viewError: 'compacted' }))).toEqual({ state: 'degraded', reason: 'the view could not be re-read: compacted' });
  });

  it('ranks a lost session above failing renewals above the view', () => {
    expect(assessHealth(base({ sessionLost: 'x', renewalFailures: 2, viewError: 'y' })).reason).toMatch(/^session lost: x/);
    expect(assessHealth(base({ renewalFailures: 2, viewError: 'y' })).reason).toMatch(/^store failing: 2 lease renewals/);
  });

  it('ranks stopped above stopping above everything else', () => {
    const troubled = { sessionLost: 'x', renewalFailures: 2, viewError: 'y', started: false };
    expect(assessHealth(base({ ...troubled, stopping: 'stop() called' }))).toEqual({ state: 'stopping', reason: 'stop() called' });
    expect(assessHealth(base({ ...troubled, stopping: 'stop() called', stopped: 'job finished: verdict complete' })))
      .toEqual({ state: 'stopped', reason: 'job finished: verdict complete' });
  });
});

describe('nextHealth', () => {
  const at = (state: Health['state'], reason: string, since = 0): Health => ({ state, reason, since });

  it('reports no change when state and reason are the same', () => {
    expect(nextHealth(at('running', assessHealth(base()).reason), base(), 5)).toBeUndefined();
  });

  it('moves since with the state, and keeps it when only the reason changes', () => {
    const degraded = nextHealth(at('running', assessHealth(base()).reason, 1), base({ renewalFailures: 1 }), 10);
    expect(degraded).toMatchObject({ state: 'degraded', since: 10 });
    const worse = nextHealth(degraded!, base({ renewalFailures: 1, sessionLost: 'gone' }), 20);
    expect(worse).toMatchObject({ state: 'degraded', since: 10 });
    expect(worse!.reason).toContain('gone');
  });

  it('never leaves stopped', () => {
    const stopped = at('stopped', 'stop() called');
    expect(nextHealth(stopped, base(), 9)).toBeUndefined();
    expect(nextHealth(stopped, base({ stopping: 'x' }), 9)).toBeUndefined();
    expect(nextHealth(stopped, base({ stopped: 'another reason' }), 9)).toBeUndefined();
  });

  it('goes from stopping only to stopped (or stopping for another reason)', () => {
    const stopping = at('stopping', 'stop() called');
    expect(nextHealth(stopping, base(), 9)).toBeUndefined();
    expect(nextHealth(stopping, base({ sessionLost: 'x' }), 9)).toBeUndefined();
    expect(nextHealth(stopping, base({ stopping: 'fatal: X: y' }), 9)).toMatchObject({ state: 'stopping', reason: 'fatal: X: y', since: 0 });
    expect(nextHealth(stopping, base({ stopping: 'stop() called', stopped: 'stop() called' }), 9)).toMatchObject({ state: 'stopped', since: 9 });
  });

  it('never returns to starting', () => {
    expect(nextHealth(at('running', 'ok'), base({ started: false }), 9)).toBeUndefined();
    expect(nextHealth(at('degraded', 'x'), base({ started: false }), 9)).toBeUndefined();
  });
});

describe('HealthMonitor', () => {
  it('walks starting → running → degraded → running → stopping → stopped, reporting each change once', () => {
    const m = new HealthMonitor(0);
    expect(m.health).toEqual({ state: 'starting', reason: 'reading the job', since: 0 });
    const seen: string[] = [];
    const feed = (change: Partial<HealthObservations>, now: number) => {
      const h = m.observe(change, now);
      if (h) seen.push(`${h.state}@${h.since}`);
    };
    feed({ startStep: 'joining the fleet' }, 1); // starting, another reason: reported, same since
    feed({ started: true }, 2);
    feed({ renewalFailures: 0 }, 3); // a confirmed renewal: nothing changes
    feed({ sessionLost: 'lease gone' }, 4);
    feed({ sessionLost: undefined }, 5);
    feed({ stopping: 'stop() called' }, 6);
    feed({ stopped: 'stop() called' }, 7);
    feed({ sessionLost: 'late' }, 8); // after the end: ignored
    expect(seen).toEqual(['starting@0', 'running@2', 'degraded@4', 'running@5', 'stopping@6', 'stopped@7']);
    expect(m.health).toEqual({ state: 'stopped', reason: 'stop() called', since: 7 });
  });
});

describe('stuckReason: part of the job cannot move', () => {
  it('says nothing when all of it can; else counts, with the first listed of each as the example', () => {
    expect(stuckReason(new Map(), new Set())).toBeUndefined();
    const parked = new Map([['s-9', new Map([['split', 'bad json']])], ['s-1', new Map([['queue', 'queue page q is gone']])]]);
    expect(stuckReason(parked, new Set(['/p/queue.1.0', '/p/queue.0.3']))).toBe(
      'part of the job cannot move: 2 splits parked ("s-9": bad json); 2 queue pages unreadable (/p/queue.1.0): their splits wait');
    expect(stuckReason(new Map([['a', new Map()]]), new Set())).toBe('part of the job cannot move: 1 split parked ("a": a record cannot be read)');
  });
  it('counts the planned splits no record stands for (a queue page deleted while no leader ran; decision 0072)', () => {
    expect(stuckReason(new Map(), new Set(), undefined, 3)).toBe(
      'part of the job cannot move: 3 planned splits in no queue page or record the leader can find (a queue page or a split\'s records deleted by hand, or restored from an older backup?): no verdict until put back');
    expect(stuckReason(new Map(), new Set(), undefined, 0)).toBeUndefined();
  });
  it('makes a running coordinator degraded, after a leaderless job and before an unexpected error', () => {
    const o = { started: true, startStep: '', renewalFailures: 0 };
    expect(assessHealth({ ...o, stuck: 'part of the job cannot move: x' })).toEqual({ state: 'degraded', reason: 'part of the job cannot move: x' });
    expect(assessHealth({ ...o, stuck: 'x', leaderless: 'no leader' }).reason).toBe('no leader');
    expect(assessHealth({ ...o, stuck: 'x', unexpected: 'boom' }).reason).toBe('x');
  });
});
