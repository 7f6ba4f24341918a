/**
 * Lifecycle events and health on whole fleets on the MemoryStore: what each
 * coordinator reports is consistent with what happened. A job run to
 * completion (claims before completions, one leader, health from starting to
 * stopped); a poisoned split (failed, failed, failed then quarantined); a
 * revocation when a second worker joins (drain started, released, drain
 * ended, claimed by the newcomer); a session loss (lost, every lane lost,
 * rejoined, health degraded and running again, the splits taken back).
 *
 * Every wait is bounded and names what it waits for; nothing is timed.
 */
import { afterEach, describe, expect, test } from 'vitest';
import { startCoordinator, type Coordinator, type CoordinatorOptions } from '../../src/coordinator/coordinator.js';
import type { CoordinatorEventMap, CoordinatorEventName, CoordinatorListeners } from '../../src/coordinator/events.js';
import { silentLogger } from '../../src/coordinator/log.js';
import type { SplitHandle } from '../../src/coordinator/types.js';
import { jobPrefix, planKey, workerKey } from '../../src/protocol/keys.js';
import { decodeRecord, fingerprintHash } from '../../src/protocol/records.js';
import { MemoryStore } from '../../src/store/memory.js';
import { waitUntil } from '../support/wait.js';

const fast = { leaseDurationMs: 2000, opTimeoutMs: 500, rebalanceDelayMs: 0, drainDeadlineMs: 10_000, reconcileIntervalMs: 1000 };

const NAMES: CoordinatorEventName[] = [
  'leadership-gained', 'leadership-lost', 'split-claimed', 'split-released', 'split-completed', 'split-failed', 'split-quarantined',
  'split-lost', 'drain-started', 'drain-ended', 'session-lost', 'session-rejoined', 'health', 'fatal',
];

type Seen = { [E in CoordinatorEventName]: { event: E; payload: CoordinatorEventMap[E] } }[CoordinatorEventName];

/** One coordinator's events, in delivery order. */
class Recorder {
  readonly seen: Seen[] = [];

  listeners(): CoordinatorListeners {
    return Object.fromEntries(NAMES.map((event) => [event, (payload: never) => void this.seen.push({ event, payload } as Seen)]));
  }

  of<E extends CoordinatorEventName>(event: E): CoordinatorEventMap[E][] {
    return this.seen.filter((s) => s.event === event).map((s) => s.payload as CoordinatorEventMap[E]);
  }

  indexOf(match: (s: Seen) => boolean, from = 0): number {
    const i = this.seen.slice(from).findIndex(match);
    return i < 0 ? -1 : i + from;
  }

  /** Health states as they changed, repeats of one state (another reason) collapsed. */
  states(): string[] {
    const out: string[] = [];
    for (const h of this.of('health')) if (out.at(-1) !== h.state) out.push(h.state);
    return out;
  }

  describe(): string {
    return JSON.stringify(this.seen.filter((s) => s.event !== 'health').map((s) => [s.event, (s.payload as { id?: string }).id]).slice(-30));
  }
}

const splits = (n: number, prefix = 's') => Array.from({ length: n }, (_, i) => ({ id: `${prefix}-${String(i).padStart(3, '0')}`, weight: 100 }));

/** A handler that waits for `open`, then completes; it drains cooperatively (commit, return) when asked, and returns when its lane is lost. */
function gatedHandler(): { handler: (split: SplitHandle) => Promise<void>; open: () => void } {
  let open!: () => void;
  const gate = new Promise<void>((resolve) => (open = resolve));
  const aborted = (signal: AbortSignal) => new Promise<void>((resolve) => (signal.aborted ? resolve() : signal.addEventListener('abort', () => resolve(), { once: true })));
  const handler = async (split: SplitHandle) => {
    const why = await Promise.race([gate.then(() => 'go'), aborted(split.drainSignal).then(() => 'drain'), aborted(split.signal).then(() => 'lost')]);
    if (why === 'lost') return;
    if (why === 'drain') {
      await split.commit(1);
      return;
    }
    await split.complete(2);
  };
  return { handler, open };
}

const running: Coordinator[] = [];
afterEach(async () => {
  await Promise.all(running.splice(0).map((c) => c.close()));
});

async function start(store: MemoryStore, job: string, instance: string, rec: Recorder, rest: Partial<CoordinatorOptions> & Pick<CoordinatorOptions, 'planner' | 'handler'>): Promise<Coordinator> {
  const c = await startCoordinator({ store, job, instance, maxInFlight: 8, logger: silentLogger, on: rec.listeners(), ...fast, ...rest });
  running.push(c);
  return c;
}

describe('lifecycle events on a MemoryStore fleet', () => {
  test('a job run to completion: every completion follows its claim, one leader, health from starting to stopped', async () => {
    const store = new MemoryStore();
    const job = 'events-complete';
    const planner = () => ({ final: true, splits: splits(24) });
    const handler = async (split: SplitHandle) => {
      await split.commit(1);
      await split.complete(2);
    };
    const recs = [new Recorder(), new Recorder(), new Recorder()];
    const fleet: Coordinator[] = [];
    for (let i = 0; i < 3; i++) fleet.push(await start(store, job, `w-${i}`, recs[i]!, { planner, handler, maxInFlight: 4 }));
    const verdicts = await Promise.all(fleet.map((c) => c.done));
    expect(verdicts).toEqual(['complete', 'complete', 'complete']);

    const completedIds: string[] = [];
    recs.forEach((rec, i) => {
      rec.seen.forEach((s, at) => {
        if (s.event !== 'split-completed') return;
        const { id, epoch } = s.payload;
        completedIds.push(id);
        const claimedAt = rec.indexOf((c) => c.event === 'split-claimed' && c.payload.id === id && c.payload.epoch === epoch);
        expect(claimedAt, `w-${i}: split-completed ${id}@${epoch} without a split-claimed before it: ${rec.describe()}`).toBeGreaterThanOrEqual(0);
        expect(claimedAt).toBeLessThan(at);
        expect(s.payload.instance).toBe(`w-${i}`);
      });
    });
    expect(completedIds.sort()).toEqual(splits(24).map((s) => s.id));

    // Exactly one term in the whole fleet, on the instance the plan record names as its generation's leader.
    const gained = recs.map((r) => r.of('leadership-gained'));
    expect(gained.flat()).toHaveLength(1);
    const leaderIndex = gained.findIndex((g) => g.length === 1);
    const plan = (await store.get(planKey(jobPrefix('splitfleet', job))))!;
    const planRec = decodeRecord('plan', plan.key, plan.value, fingerprintHash(fleet[0]!.config.fingerprint));
    expect(gained[leaderIndex]![0]!.generation).toBe(planRec.generation);
    expect(recs[leaderIndex]!.of('leadership-lost')).toEqual([{ instance: `w-${leaderIndex}`, generation: planRec.generation, reason: 'stopping' }]);
    recs.forEach((r, i) => {
      if (i !== leaderIndex) expect(r.of('leadership-lost')).toEqual([]);
    });

    for (const [i, c] of fleet.entries()) {
      expect(recs[i]!.states()).toEqual(['starting', 'running', 'stopping', 'stopped']);
      expect(c.health()).toMatchObject({ state: 'stopped', reason: 'job finished: verdict complete' });
      // Nothing went wrong, so nothing else was reported.
      for (const bad of ['split-failed', 'split-lost', 'session-lost', 'fatal'] as const) expect(recs[i]!.of(bad)).toEqual([]);
    }
    await store.close();
  });

  test('a poisoned split fails at every attempt, then is quarantined', async () => {
    const store = new MemoryStore();
    const planner = () => ({ final: true, splits: [...splits(3), { id: 'poison', weight: 100 }] });
    const handler = async (split: SplitHandle) => {
      if (split.id === 'poison') throw new Error('cannot parse poison');
      await split.complete(1);
    };
    const rec = new Recorder();
    const c = await start(store, 'events-poison', 'w-0', rec, { planner, handler, maxAttempts: 3 });
    expect(await c.done).toBe('stalled');

    const poison = rec.seen.filter((s) => 'id' in s.payload && s.payload.id === 'poison' && s.event.startsWith('split-'));
    expect(poison.map((s) => s.event)).toEqual([
      'split-claimed', 'split-failed', 'split-claimed', 'split-failed', 'split-claimed', 'split-failed', 'split-quarantined',
    ]);
    expect(rec.of('split-failed').map((f) => [f.id, f.attempts, f.reason])).toEqual([
      ['poison', 1, 'cannot parse poison'], ['poison', 2, 'cannot parse poison'], ['poison', 3, 'cannot parse poison'],
    ]);
    expect(rec.of('split-quarantined')).toEqual([{ instance: 'w-0', id: 'poison', reason: 'cannot parse poison', attempts: 3 }]);
    // Each failure ends one tenancy: the next claim is a new epoch, after a release (no attempt consumed by the claim).
    const claims = rec.of('split-claimed').filter((s) => s.id === 'poison');
    expect(claims.map((s) => [s.epoch, s.kind])).toEqual([[1, 'create'], [2, 'released'], [3, 'released']]);
    expect(rec.of('split-completed').map((s) => s.id).sort()).toEqual(splits(3).map((s) => s.id));
    expect(c.health()).toMatchObject({ state: 'stopped', reason: 'job finished: verdict stalled' });
    await store.close();
  });

  test('a worker joining mid-job: the first drains what moves (started, released, ended) and the newcomer claims it', async () => {
    const store = new MemoryStore();
    const job = 'events-join';
    const planner = () => ({ final: true, splits: splits(8) });
    const { handler, open } = gatedHandler();
    const [r0, r1] = [new Recorder(), new Recorder()];
    const w0 = await start(store, job, 'w-0', r0, { planner, handler });
    await waitUntil('w-0 to hold all 8 splits', () => w0.held.length === 8, { describe: () => r0.describe() });
    const w1 = await start(store, job, 'w-1', r1, { planner, handler });
    // Equal weights, equal lane budgets: the leader moves half of them.
    await waitUntil('w-1 to hold 4 splits', () => w1.held.length === 4, { describe: () => `${r0.describe()} / ${r1.describe()}` });
    // Once the gate opens, splits finish at different times and the leader may move more:
    // the revocation under test is the one the join caused, before that.
    const moved = w1.held;
    const started = r0.of('drain-started');
    open();
    expect(await Promise.all([w0.done, w1.done])).toEqual(['complete', 'complete']);

    expect(started.map((d) => d.id).sort()).toEqual(moved);
    for (const d of started) {
      expect(d.reason).toBe('revoked');
      const at = r0.indexOf((s) => s.event === 'drain-started' && s.payload.id === d.id);
      const released = r0.indexOf((s) => s.event === 'split-released' && s.payload.id === d.id && s.payload.epoch === d.epoch, at);
      const ended = r0.indexOf((s) => s.event === 'drain-ended' && s.payload.id === d.id && s.payload.epoch === d.epoch, at);
      expect(released, `split-released of ${d.id} after its drain began: ${r0.describe()}`).toBeGreaterThan(at);
      expect(ended).toBeGreaterThan(released);
      expect(r0.seen[released]!.payload).toMatchObject({ cause: 'drained' });
      expect(r0.seen[ended]!.payload).toMatchObject({ outcome: 'cooperative' });
      // The newcomer's tenancy is the next epoch, taken after a release (no attempt consumed).
      expect(r1.of('split-claimed').find((c) => c.id === d.id)).toMatchObject({ epoch: d.epoch + 1, kind: 'released', attempts: 0 });
    }
    expect(started).toHaveLength(4);
    await store.close();
  });

  test('a session loss: lost, every lane dropped, rejoined, health degraded then running, the splits taken back', async () => {
    const store = new MemoryStore();
    const job = 'events-session';
    const planner = () => ({ final: true, splits: splits(4) });
    const { handler, open } = gatedHandler();
    const rec = new Recorder();
    const c = await start(store, job, 'w-0', rec, { planner, handler, maxInFlight: 4 });
    await waitUntil('w-0 to hold all 4 splits', () => c.held.length === 4, { describe: () => rec.describe() });
    expect(c.health().state).toBe('running');
    const firstClaims = rec.of('split-claimed');

    // As if the process had been paused past its lease: the lease and every key on it vanish.
    const presence = (await store.get(workerKey(jobPrefix('splitfleet', job), 'w-0')))!;
    store.expireLease(presence.lease!);
    await waitUntil('the session to be rejoined', () => rec.of('session-rejoined').length > 0, { describe: () => rec.describe() });
    await waitUntil('health to be running again', () => c.health().state === 'running');
    await waitUntil('the 4 splits to be held again', () => c.held.length === 4, { describe: () => rec.describe() });
    open();
    expect(await c.done).toBe('complete');

    const lostAt = rec.indexOf((s) => s.event === 'session-lost');
    const rejoinedAt = rec.indexOf((s) => s.event === 'session-rejoined');
    expect(lostAt).toBeGreaterThanOrEqual(0);
    expect(rejoinedAt).toBeGreaterThan(lostAt);
    expect(rec.of('session-lost')).toHaveLength(1);
    // Every lane held at the loss ended without a write, before the new session.
    const droppedBefore = rec.seen.slice(0, rejoinedAt).filter((s) => s.event === 'split-lost').map((s) => s.payload.id);
    expect(droppedBefore.sort()).toEqual(splits(4).map((s) => s.id));
    // Taken back by the new session as a takeover of a dead owner's tenancy: next epoch, one attempt consumed.
    for (const first of firstClaims) {
      const again = rec.of('split-claimed').filter((s) => s.id === first.id && s.epoch > first.epoch);
      expect(again[0]).toMatchObject({ epoch: first.epoch + 1, kind: 'expired', attempts: first.attempts + 1 });
    }
    // The term ended with the session; the new session led again, a later generation.
    const gained = rec.of('leadership-gained');
    expect(gained).toHaveLength(2);
    expect(gained[1]!.generation).toBeGreaterThan(gained[0]!.generation);
    expect(rec.of('leadership-lost')[0]!.generation).toBe(gained[0]!.generation);

    expect(rec.states()).toEqual(['starting', 'running', 'degraded', 'running', 'stopping', 'stopped']);
    const degraded = rec.of('health').find((h) => h.state === 'degraded')!;
    expect(degraded.reason).toMatch(/^session lost: /);
    await store.close();
  });

  test('a fatal error: the fatal event carries it, and health ends stopped with it', async () => {
    const store = new MemoryStore();
    // A planner that names one split twice is a bug in the planner: fatal, never retried.
    const planner = () => ({ final: true, splits: [{ id: 'twice', weight: 1 }, { id: 'twice', weight: 1 }] });
    const rec = new Recorder();
    const c = await start(store, 'events-fatal', 'w-0', rec, { planner, handler: (split: SplitHandle) => split.complete() });
    await expect(c.done).rejects.toMatchObject({ code: 'PLANNER_FAILURE' });
    await waitUntil('health to be stopped', () => c.health().state === 'stopped', { describe: () => JSON.stringify(c.health()) });
    expect(rec.of('fatal').map((f) => f.error.code)).toEqual(['PLANNER_FAILURE']);
    expect(c.health().reason).toMatch(/^fatal: PLANNER_FAILURE: /);
    expect(rec.states()).toEqual(['starting', 'running', 'stopping', 'stopped']);
    await store.close();
  });
});
