/**
 * The observation pieces of the scale design on MemoryStore: KeyFollower
 * (never applies an older value; a read racing a delete does not resurrect
 * the key), WorkerView.concern (follows exactly the ids given, drops the
 * others), LeaderView (a split joins the pool only with its spec and its
 * record; status counts; progress keys are never delivered), and the
 * per-decision inputs of publish.ts (prepareDecision's previous assignees and
 * in-transit rule, assignmentOf).
 */
import { describe, expect, it } from 'vitest';
import { systemClock } from '../../../src/clock.js';
import { KeyFollower, type KeyUpdate } from '../../../src/coordinator/views/follow.js';
import { LeaderView } from '../../../src/coordinator/leader/leader-view.js';
import { assignedRowsOf } from '../../../src/assignment/wire.js';
import { assignmentOf, prepareDecision } from '../../../src/coordinator/leader/publish.js';
import { WorkerView } from '../../../src/coordinator/views/worker-view.js';
import type { SplitfleetError } from '../../../src/errors.js';
import { initialSplitRecord } from '../../../src/protocol/claims.js';
import { assignKey, jobPrefix, leaseKey, progressKey, specKey, splitKey, workerKey } from '../../../src/protocol/keys.js';
import { encodeRecord, fingerprintHash, SCHEMA_VERSION, type SplitRecord } from '../../../src/protocol/records.js';
import { MemoryStore } from '../../../src/store/memory.js';
import { waitUntil } from '../../support/wait.js';

const P = jobPrefix('splitfleet', 'views');
const SEED = 'splitfleet-v1:splitfleet/views';
const FP = fingerprintHash(SEED);
const v = SCHEMA_VERSION;
const fatal = (e: SplitfleetError) => {
  throw e;
};

const spec = (id: string, weight = 1) => encodeRecord('spec', { v, fp: FP, id, weight, descriptor: null, generation: 1 });
const split = (id: string, patch: Partial<SplitRecord> = {}) => encodeRecord('split', { ...initialSplitRecord(id, FP), ...patch });
const lease = (id: string, owner: string, epoch = 1) => encodeRecord('lease', { v, fp: FP, id, owner, nonce: 'n', epoch });
const worker = (instance: string, maxInFlight = 4) => encodeRecord('worker', { v, fp: FP, instance, maxInFlight, nonce: 'n' });
const assign = (instance: string, splits: string[]) => encodeRecord('assign', { v, fp: FP, instance, generation: 1, splits });

describe('KeyFollower', () => {
  it('never applies an older value, and a read that saw the key before its deletion does not bring it back', async () => {
    const store = new MemoryStore();
    const key = `${P}split.a`;
    const updates: KeyUpdate[] = [];
    const f = new KeyFollower(store, key, systemClock, (u) => updates.push(u), fatal);
    const r1 = await store.put(key, 'one');
    const stale = await store.get(key); // read at r1
    f.offer(stale, r1);
    f.follow(r1 + 1);
    const r2 = await store.put(key, 'two');
    const r3 = await store.delete(key);
    await waitUntil('the deletion to be followed', () => updates.some((u) => u.revision === r3));
    // A backstop read that raced the deletion (it saw 'one', or 'two') lands afterwards: ignored.
    f.offer(stale, r1);
    f.offer({ key, value: 'two', createRevision: r1, modRevision: r2 }, r2);
    // A read that saw the key missing before r3 is old news too; one at r3 or later changes nothing new.
    f.offer(undefined, r2);
    f.offer(undefined, r3);
    expect(updates.map((u) => [u.kv?.value ?? null, u.revision])).toEqual([['one', r1], ['two', r2], [null, r3]]);
    // A key that never existed: a missing read reports nothing.
    const g: KeyUpdate[] = [];
    const absent = new KeyFollower(store, `${P}split.none`, systemClock, (u) => g.push(u), fatal);
    absent.offer(undefined, r3);
    expect(g).toEqual([]);
    await Promise.all([f.close(), absent.close()]);
    await store.close();
  });
});

describe('WorkerView.concern', () => {
  it('follows exactly the ids given: new ones are read and watched, dropped ones are let go', async () => {
    const store = new MemoryStore();
    for (const id of ['a', 'b', 'c']) await store.txn({ compares: [], success: [{ op: 'put', key: specKey(P, id), value: spec(id) }, { op: 'put', key: splitKey(P, id), value: split(id) }] });
    const view = new WorkerView(store, P, FP, 'w0', fatal, systemClock);
    await view.start();
    await view.concern(new Set(['a', 'b']));
    expect([...view.followed].sort()).toEqual(['a', 'b']);
    expect(view.split('a')).toMatchObject({ loaded: true, record: { rec: { id: 'a', epoch: 0 } }, spec: { id: 'a' } });
    expect(view.split('c')).toBeUndefined();
    await view.concern(new Set(['b', 'c']));
    expect([...view.followed].sort()).toEqual(['b', 'c']);
    expect(view.split('a')).toBeUndefined();
    // A followed split's changes arrive; a dropped one's do not; progress commits of any split never do.
    const updates = view.updates;
    // Lease and presence keys live on an etcd lease (one with none is not live: protocol/ephemeral.ts).
    await store.put(leaseKey(P, 'c'), lease('c', 'w1'), { lease: await store.grantLease(30) });
    await store.put(splitKey(P, 'a'), split('a', { epoch: 1, owner: 'w1' }));
    await store.put(progressKey(P, 'b'), encodeRecord('progress', { v, fp: FP, id: 'b', epoch: 1, progress: 5 }));
    const last = await store.put(splitKey(P, 'c'), split('c', { epoch: 1, owner: 'w1' }));
    await waitUntil('c to be seen claimed', () => view.split('c')?.record?.modRevision === last);
    expect(view.split('c')?.lease?.rec.owner).toBe('w1');
    expect(view.updates - updates).toBe(2); // lease.c and split.c only
    expect(view.split('a')).toBeUndefined();
    await view.close();
    await store.close();
  });
});

describe('LeaderView', () => {
  it('a split joins the pool only with its spec and its record; status counts follow; progress keys are never delivered', async () => {
    const store = new MemoryStore();
    const view = new LeaderView(store, P, FP, SEED, fatal, systemClock);
    const kinds: string[] = [];
    view.onChange((c) => kinds.push(...c.kinds));
    await store.put(specKey(P, 'a'), spec('a', 3));
    await store.put(splitKey(P, 'a'), split('a'));
    await store.put(specKey(P, 'b'), spec('b')); // no record yet
    await store.put(splitKey(P, 'c'), split('c', { status: 'completed', epoch: 1 })); // no spec yet
    await store.put(progressKey(P, 'a'), encodeRecord('progress', { v, fp: FP, id: 'a', epoch: 1, progress: 1 }));
    await view.start();
    expect(view.pool.rowOf('a')).toBeGreaterThanOrEqual(0);
    expect(view.pool.rowOf('b')).toBe(-1);
    expect(view.pool.rowOf('c')).toBe(-1);
    expect(view.hasSpec('b')).toBe(true);
    expect(view.statusOf('c')).toBe('completed');
    expect(view.statusCounts).toEqual({ runnable: 1, completed: 1, quarantined: 0 });
    expect(view.splitCount).toBe(2);
    // The missing halves arrive: both join; a status change moves the counts.
    await store.put(splitKey(P, 'b'), split('b'));
    await store.put(specKey(P, 'c'), spec('c'));
    const last = await store.put(splitKey(P, 'a'), split('a', { status: 'quarantined', epoch: 1 }));
    await waitUntil('the view to see a quarantined', () => view.statusOf('a') === 'quarantined');
    expect(view.pool.rowOf('b')).toBeGreaterThanOrEqual(0);
    expect(view.pool.rowOf('c')).toBeGreaterThanOrEqual(0);
    expect(view.statusCounts).toEqual({ runnable: 1, completed: 1, quarantined: 1 });
    expect(view.splitCount).toBe(3);
    expect(last).toBeGreaterThan(0);
    // Progress commits reach neither its listing nor its watches.
    kinds.length = 0;
    await store.put(progressKey(P, 'b'), encodeRecord('progress', { v, fp: FP, id: 'b', epoch: 1, progress: 2 }));
    const marker = await store.put(workerKey(P, 'w0'), worker('w0'), { lease: await store.grantLease(30) });
    await waitUntil('the view to see w0', () => view.workers.has('w0'));
    expect(marker).toBeGreaterThan(last);
    expect(kinds).not.toContain('progress');
    expect(kinds).toEqual(['worker']);
    await view.close();
    await store.close();
  });
});

describe('prepareDecision and assignmentOf', () => {
  it('previous assignees come from the records, a live member\'s winning; a split in transit to a live member hides its lease owner', async () => {
    const store = new MemoryStore();
    const w0 = await store.grantLease(30);
    for (const id of ['s1', 's2', 's3']) {
      await store.txn({ compares: [], success: [{ op: 'put', key: specKey(P, id), value: spec(id) }, { op: 'put', key: splitKey(P, id), value: split(id, { epoch: 1, owner: 'w0' }) }] });
      await store.put(leaseKey(P, id), lease(id, 'w0'), { lease: w0 });
    }
    await store.put(workerKey(P, 'w0'), worker('w0'), { lease: w0 });
    await store.put(workerKey(P, 'w1'), worker('w1'), { lease: await store.grantLease(30) });
    // s1 moves w0 → w1 (in transit: w1's record names it, w0 still holds the lease); gone's stale
    // record names s1 too, but w1 is live and wins; s2 stays with w0; s3 is named by nobody live.
    await store.put(assignKey(P, 'gone'), assign('gone', ['s1', 's3']));
    await store.put(assignKey(P, 'w0'), assign('w0', ['s2']));
    await store.put(assignKey(P, 'w1'), assign('w1', ['s1']));
    const view = new LeaderView(store, P, FP, SEED, fatal, systemClock);
    await view.start();
    const previousIds = new Set<string>();
    const prepared = prepareDecision(view, Date.now(), undefined, 0, previousIds);
    const input = view.pool.toInput();
    const row = (id: string) => input.splits.find((s) => s.id === id)!;
    expect(row('s1')).toMatchObject({ previous: 'w1', leaseOwner: null, recordOwner: 'w0' }); // in transit: no lease owner
    expect(row('s2')).toMatchObject({ previous: 'w0', leaseOwner: 'w0' });
    expect(row('s3')).toMatchObject({ previous: 'gone', leaseOwner: 'w0' });
    expect([...previousIds].sort()).toEqual(['s1', 's2', 's3']);
    expect(input.members.map((m) => m.id).sort()).toEqual(['w0', 'w1']);
    prepared.restore();
    expect(view.pool.toInput().splits.find((s) => s.id === 's1')).toMatchObject({ leaseOwner: 'w0' });
    // assignmentOf: every live member, its ids sorted, rows with no assignee left out.
    const rows = ['s3', 's1', 's2'].map((id) => view.pool.rowOf(id));
    const assignee = new Int32Array(Math.max(...rows) + 1).fill(-1);
    assignee[view.pool.rowOf('s3')] = 1;
    assignee[view.pool.rowOf('s1')] = 1;
    const decision = { members: ['w0', 'w1'], ...assignedRowsOf(assignee) } as unknown as Parameters<typeof assignmentOf>[1];
    expect(assignmentOf(view.pool, decision)).toEqual(new Map([['w0', []], ['w1', ['s1', 's3']]]));
    await view.close();
    await store.close();
  });
});
