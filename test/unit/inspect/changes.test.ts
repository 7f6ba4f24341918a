/**
 * ChangeTracker: events diffed from each record's change. A seeded state
 * reports nothing; joins and leaves; leader changes; a move whether the new
 * record is published before or after the old one lets go, and remembered
 * across the old record vanishing; revocations started and ended (handed
 * over, let go, kept); claims by a new holder; quarantines with their
 * reason; the verdict once; and `records` never changed by the tracker.
 */
import { describe, expect, test } from 'vitest';
import { ChangeTracker, describeChange, type ChangeEvent, type RecordChange } from '../../../src/inspect/changes.js';
import { emptyJobRecords, type JobRecords } from '../../../src/inspect/report.js';
import type { AssignRecord, LeaseRecord, SplitRecord, WorkerRecord } from '../../../src/protocol/records.js';

const base = { v: 1, fp: '0123456789abcdef' } as const;
const worker = (instance: string, lanes = 4) => ({ ...base, instance, maxInFlight: lanes, nonce: `n-${instance}` }) as WorkerRecord;
const assign = (instance: string, splits: string[]) => ({ ...base, instance, generation: 1, splits: [...splits].sort() }) as AssignRecord;
const lease = (id: string, owner: string) => ({ ...base, id, owner, nonce: `n-${owner}`, epoch: 1 }) as LeaseRecord;
const split = (id: string, status: SplitRecord['status'], reason?: string) =>
  ({ ...base, id, epoch: 1, status, owner: '', attempts: 4, ...(reason !== undefined ? { reason } : {}) }) as SplitRecord;

/** A job as a test drives it: records changed through the same path the dashboard uses (apply, then diff). */
class Job {
  readonly records: JobRecords = emptyJobRecords();
  readonly tracker = new ChangeTracker();

  worker(instance: string, live: boolean): ChangeEvent[] {
    const before = this.records.workers.get(instance);
    if (live) this.records.workers.set(instance, worker(instance));
    else this.records.workers.delete(instance);
    return this.tracker.change(this.records, { kind: 'worker', id: instance, before, after: this.records.workers.get(instance) });
  }

  assign(instance: string, splits: string[] | undefined): ChangeEvent[] {
    const before = this.records.assigns.get(instance);
    if (splits) this.records.assigns.set(instance, assign(instance, splits));
    else this.records.assigns.delete(instance);
    return this.tracker.change(this.records, { kind: 'assign', id: instance, before, after: this.records.assigns.get(instance) });
  }

  lease(id: string, owner: string | undefined): ChangeEvent[] {
    const before = this.records.leases.get(id);
    if (owner) this.records.leases.set(id, lease(id, owner));
    else this.records.leases.delete(id);
    return this.tracker.change(this.records, { kind: 'lease', id, before, after: this.records.leases.get(id) });
  }

  change(c: RecordChange): ChangeEvent[] {
    return this.tracker.change(this.records, c);
  }
}

/** a and b live; a is assigned and holds s1, b is assigned s2; seeded (nothing reported). */
function twoMembers(): Job {
  const job = new Job();
  job.records.workers.set('a', worker('a'));
  job.records.workers.set('b', worker('b'));
  job.records.assigns.set('a', assign('a', ['s1']));
  job.records.assigns.set('b', assign('b', ['s2']));
  job.records.leases.set('s1', lease('s1', 'a'));
  job.tracker.seed(job.records);
  return job;
}

describe('ChangeTracker', () => {
  test('seeding reports nothing; re-applying what is already there reports nothing', () => {
    const job = twoMembers();
    expect(job.assign('a', ['s1'])).toEqual([]);
    expect(job.lease('s1', 'a')).toEqual([]);
    expect(job.tracker.inFlight.size).toBe(0);
  });

  test('a seeded snapshot mid-revocation knows the revocation in flight', () => {
    const job = new Job();
    job.records.workers.set('a', worker('a'));
    job.records.assigns.set('a', assign('a', []));
    job.records.leases.set('s1', lease('s1', 'a'));
    job.tracker.seed(job.records);
    expect([...job.tracker.inFlight]).toEqual([['s1', 'a']]);
    expect(job.lease('s1', undefined)).toEqual([{ kind: 'revocation-end', split: 's1', holder: 'a', outcome: 'released', next: null }]);
  });

  test('joins, leaves, and a new leader', () => {
    const job = twoMembers();
    expect(job.worker('c', true)).toEqual([{ kind: 'join', instance: 'c', lanes: 4 }]);
    expect(job.worker('a', false)).toEqual([{ kind: 'leave', instance: 'a' }]);
    const l1 = { ...base, instance: 'a', generation: 1 };
    const l2 = { ...base, instance: 'c', generation: 2 };
    expect(job.change({ kind: 'leader', before: l1, after: l1 })).toEqual([]);
    expect(job.change({ kind: 'leader', before: undefined, after: l2 })).toEqual([{ kind: 'leader', instance: 'c', generation: 2, previous: null }]);
    expect(job.change({ kind: 'leader', before: l1, after: l2 })).toEqual([{ kind: 'leader', instance: 'c', generation: 2, previous: 'a' }]);
    expect(job.change({ kind: 'leader', before: l2, after: undefined })).toEqual([]);
  });

  test('a cooperative handoff: move, revocation started, handed over, claimed', () => {
    const job = twoMembers();
    // The leader publishes b's record first, then a's.
    expect(job.assign('b', ['s1', 's2'])).toEqual([{ kind: 'move', split: 's1', from: 'a', to: 'b', fromLive: true }]);
    expect(job.assign('a', [])).toEqual([{ kind: 'revocation-start', split: 's1', holder: 'a', to: 'b' }]);
    expect(job.lease('s1', undefined)).toEqual([{ kind: 'revocation-end', split: 's1', holder: 'a', outcome: 'released', next: null }]);
    expect(job.lease('s1', 'b')).toEqual([{ kind: 'claim', split: 's1', holder: 'b', previous: 'a' }]);
  });

  test('the old record letting go first: revocation to nobody yet, then the move', () => {
    const job = twoMembers();
    expect(job.assign('a', [])).toEqual([{ kind: 'revocation-start', split: 's1', holder: 'a', to: null }]);
    expect(job.assign('b', ['s1', 's2'])).toEqual([{ kind: 'move', split: 's1', from: 'a', to: 'b', fromLive: true }]);
    // The lease key changing hands in one write (a forced takeover) ends the revocation as a handover.
    expect(job.lease('s1', 'b')).toEqual([
      { kind: 'revocation-end', split: 's1', holder: 'a', outcome: 'handed-over', next: 'b' },
      { kind: 'claim', split: 's1', holder: 'b', previous: 'a' },
    ]);
  });

  test('a dead member: its record deleted revokes nothing, and the move is remembered until the split is named again', () => {
    const job = twoMembers();
    job.worker('a', false);
    expect(job.lease('s1', undefined)).toEqual([]);
    expect(job.assign('a', undefined)).toEqual([]);
    expect(job.assign('b', ['s1', 's2'])).toEqual([{ kind: 'move', split: 's1', from: 'a', to: 'b', fromLive: false }]);
    expect(describeChange({ kind: 'move', split: 's1', from: 'a', to: 'b', fromLive: false })).toBe('s1 moved a (gone) → b');
  });

  test('a revocation undone by assigning the split back is kept', () => {
    const job = twoMembers();
    job.assign('a', []);
    expect(job.assign('a', ['s1'])).toEqual([{ kind: 'revocation-end', split: 's1', holder: 'a', outcome: 'kept', next: 'a' }]);
    expect(job.tracker.inFlight.size).toBe(0);
  });

  test('a split dropped from a record while not held is no revocation', () => {
    const job = twoMembers();
    expect(job.assign('b', [])).toEqual([]);
  });

  test('a quarantine with its reason, once; the verdict, once', () => {
    const job = twoMembers();
    const runnable = split('s9', 'runnable');
    const quarantined = split('s9', 'quarantined', 'poisoned: fails every attempt');
    expect(job.change({ kind: 'split', id: 's9', before: runnable, after: quarantined }))
      .toEqual([{ kind: 'quarantine', split: 's9', attempts: 4, reason: 'poisoned: fails every attempt' }]);
    expect(job.change({ kind: 'split', id: 's9', before: quarantined, after: quarantined })).toEqual([]);
    const plan = { ...base, generation: 1, final: true, planned: 2 };
    expect(job.change({ kind: 'plan', before: undefined, after: plan })).toEqual([]);
    expect(job.change({ kind: 'plan', before: plan, after: { ...plan, verdict: 'stalled' } })).toEqual([{ kind: 'verdict', verdict: 'stalled' }]);
    expect(job.change({ kind: 'plan', before: { ...plan, verdict: 'stalled' }, after: { ...plan, verdict: 'stalled' } })).toEqual([]);
  });

  test('a residual appearing is a division of its parent (decision 0063), said once', () => {
    const job = twoMembers();
    expect(job.change({ kind: 'split', id: 'big÷2', before: undefined, after: split('big÷2', 'runnable') }))
      .toEqual([{ kind: 'divided', residual: 'big÷2', parent: 'big' }]);
    expect(job.change({ kind: 'split', id: 'big÷2', before: split('big÷2', 'runnable'), after: split('big÷2', 'runnable') })).toEqual([]);
    expect(job.change({ kind: 'split', id: 'plain', before: undefined, after: split('plain', 'runnable') })).toEqual([]);
    expect(describeChange({ kind: 'divided', residual: 'big÷2', parent: 'big' })).toBe('big divided: big÷2 takes the rest');
  });

  test('it reads records and never changes them', () => {
    const job = twoMembers();
    const before = JSON.stringify([...job.records.assigns, ...job.records.leases, ...job.records.workers]);
    job.tracker.change(job.records, { kind: 'assign', id: 'a', before: assign('a', ['s1']), after: assign('a', []) });
    job.tracker.change(job.records, { kind: 'lease', id: 's1', before: lease('s1', 'a'), after: undefined });
    expect(JSON.stringify([...job.records.assigns, ...job.records.leases, ...job.records.workers])).toBe(before);
  });

  test('every event has a line naming its split or instance', () => {
    const events: ChangeEvent[] = [
      { kind: 'join', instance: 'w1', lanes: 2 }, { kind: 'leave', instance: 'w1' },
      { kind: 'leader', instance: 'w1', generation: 3, previous: 'w0' },
      { kind: 'move', split: 'x1', from: 'w1', to: 'w2', fromLive: true },
      { kind: 'revocation-start', split: 'x1', holder: 'w1', to: 'w2' },
      { kind: 'revocation-end', split: 'x1', holder: 'w1', outcome: 'handed-over', next: 'w2' },
      { kind: 'claim', split: 'x1', holder: 'w2', previous: 'w1' },
      { kind: 'quarantine', split: 'x1', attempts: 4, reason: null },
    ];
    for (const e of events) expect(describeChange(e)).toContain('split' in e ? e.split : e.instance);
    expect(describeChange({ kind: 'revocation-end', split: 'x1', holder: 'w1', outcome: 'handed-over', next: 'w2' })).toContain('handed over to w2');
    expect(describeChange({ kind: 'verdict', verdict: 'complete' })).toBe('verdict: complete');
  });
});
