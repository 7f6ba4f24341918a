/**
 * Issue 28, hostile records (decisions 0026, 0010):
 * - a queued split's record beyond the decode bounds (a 20,000-deep extra
 *   field) parks that split; every process lives and a repaired record runs;
 * - a `plan` record beyond the decode bounds (a 20,000-deep extra field)
 *   stops every process, leader and worker, with INVALID_RECORD in its
 *   `fatal` event, its `done` and its health, instead of a campaign that
 *   retries forever under a fleet that says it is running;
 * - an unreadable `control` record keeps a paused job paused (fail safe),
 *   is reported once with the reason (inspect shows the job paused too), and
 *   `pause`/`resume` overwrite it, saying they did.
 * MemoryStore on a VirtualClock, time driven step by step.
 */
import { describe, expect, it } from 'vitest';
import { VirtualClock } from '../../src/clock.js';
import { CONFIG_DEFAULTS } from '../../src/config.js';
import type { Coordinator } from '../../src/coordinator/coordinator.js';
import { silentLogger, type Logger } from '../../src/coordinator/log.js';
import type { SplitHandle } from '../../src/coordinator/types.js';
import { isSplitfleetError, type SplitfleetError } from '../../src/errors.js';
import { pauseJob, resumeJob } from '../../src/operator/control.js';
import { controlKey, jobPrefix, planKey, splitKey } from '../../src/protocol/keys.js';
import { decodeRecord, fingerprintHash } from '../../src/protocol/records.js';
import { readJobRecords } from '../../src/inspect/report.js';
import { MemoryStore } from '../../src/store/memory.js';
import { useMemoryFleet } from '../support/memory-fleet.js';
import { runUntil, settle, stepUntil as stepTime } from '../support/virtual-time.js';

const LEASE = 3000;

const stepUntil = (clock: VirtualClock, check: () => boolean, ms = 10 * LEASE): Promise<boolean> => stepTime(clock, check, ms, 100);

const coordinators = useMemoryFleet();

interface Fleet { clock: VirtualClock; store: MemoryStore; fleet: Coordinator[]; fatals: Map<string, SplitfleetError>; logged: string[] }

async function startFleet(job: string, instances: string[], handler: (h: SplitHandle) => Promise<void>, splits = 4): Promise<Fleet> {
  const clock = new VirtualClock();
  const store = new MemoryStore({ clock });
  const fatals = new Map<string, SplitfleetError>();
  const logged: string[] = [];
  const logger: Logger = { ...silentLogger, error: (obj) => logged.push(String((obj as { err?: unknown }).err ?? '')) };
  const fleet: Coordinator[] = [];
  for (const instance of instances) {
    const c = await settle(clock, coordinators.start({
      store, clock, job, instance, logger, maxInFlight: 2,
      leaseDurationMs: LEASE, opTimeoutMs: 1000, reconcileIntervalMs: 1000,
      planner: () => ({ splits: Array.from({ length: splits }, (_, k) => ({ id: `s-${k}`, weight: 1 })), final: true }),
      handler,
      on: { fatal: ({ error }) => { fatals.set(instance, error); } },
    }));
    c.done.catch(() => undefined); // asserted through the fatal event and health
    fleet.push(c);
  }
  return { clock, store, fleet, fatals, logged };
}

/** Holds every split until its drain (or abort) signal. */
const untilDrained = async (h: SplitHandle): Promise<void> => {
  await new Promise<void>((resolve) => {
    if (h.drainSignal.aborted || h.signal.aborted) resolve();
    h.drainSignal.addEventListener('abort', () => resolve());
    h.signal.addEventListener('abort', () => resolve());
  });
};

const deep = (depth: number): string => '['.repeat(depth) + ']'.repeat(depth);

describe('a split record beyond the decode bounds', () => {
  it('parks that split only: every process lives, the rest runs, and the repaired record runs', async () => {
    let open!: () => void;
    const gate = new Promise<void>((resolve) => (open = resolve));
    const { clock, store, fleet, fatals } = await startFleet('hostile-split', ['w0', 'w1'], async (h) => {
      await Promise.race([gate, untilDrained(h)]);
      if (h.drainSignal.aborted || h.signal.aborted) return; // moved by a rebalance: released, runs again elsewhere
      await h.complete(1);
    }, 6);
    // Four lanes for six splits: two are queued.
    expect(await stepUntil(clock, () => fleet.every((c) => c.held.length === 2))).toBe(true);
    const queued = ['s-0', 's-1', 's-2', 's-3', 's-4', 's-5'].find((id) => fleet.every((c) => !c.held.includes(id)))!;
    const key = splitKey(jobPrefix('splitfleet', 'hostile-split'), queued);
    const good = (await store.get(key))!.value;
    await store.put(key, `${good.slice(0, -1)},"extra":${deep(20_000)}}`); // about 40 KB

    const parked = async (): Promise<number> => {
      let n = 0;
      for (const c of fleet) n += (await c.metrics.registry.getSingleMetric('splitfleet_parked_splits')!.get()).values[0]?.value ?? 0;
      return n;
    };
    await runUntil(clock, clock.now() + 3 * LEASE);
    expect(await parked()).toBe(1);
    expect(fatals.size).toBe(0);
    // Part of the job cannot move: the leader says so (issue 49), the other member runs on.
    expect(fleet.map((c) => c.health().state)).toEqual(fleet.map((c) => (c.isLeader ? 'degraded' : 'running')));
    expect(fleet.find((c) => c.isLeader)!.health().reason).toMatch(new RegExp(`^part of the job cannot move: 1 split parked \\(${JSON.stringify(queued)}: `));

    await store.put(key, good); // repaired
    await runUntil(clock, clock.now() + LEASE);
    expect(await parked()).toBe(0);
    open();
    expect(await stepUntil(clock, () => fleet.every((c) => c.health().state === 'stopped'), 20 * LEASE)).toBe(true);
    for (const c of fleet) await expect(c.done).resolves.toBe('complete');
  });
});

describe('a plan record beyond the decode bounds', () => {
  it('stops every process, leader and worker, with INVALID_RECORD in its fatal event and its health', async () => {
    const { clock, store, fleet, fatals } = await startFleet('hostile-plan', ['w0', 'w1'], untilDrained);
    expect(await stepUntil(clock, () => fleet.some((c) => c.isLeader) && fleet.every((c) => c.held.length > 0))).toBe(true);

    const key = planKey(jobPrefix('splitfleet', 'hostile-plan'));
    const plan = (await store.get(key))!;
    await store.put(key, `${plan.value.slice(0, -1)},"extra":${deep(20_000)}}`); // about 40 KB

    const stopped = await stepUntil(clock, () => fleet.every((c) => c.health().state === 'stopped'));
    expect(stopped, JSON.stringify(fleet.map((c) => c.health()))).toBe(true);
    for (const [i, c] of fleet.entries()) {
      const instance = `w${i}`;
      const fatal = fatals.get(instance);
      expect(fatal && isSplitfleetError(fatal, 'INVALID_RECORD'), `${instance}: ${String(fatal)}`).toBe(true);
      expect(fatal!.message).toMatch(/^plan record at splitfleet\/hostile-plan\/plan: field "extra" nests arrays and objects deeper than 128 levels/);
      expect(c.health().reason).toMatch(/^fatal: INVALID_RECORD: plan record at .*field "extra" nests/);
      await expect(c.done).rejects.toMatchObject({ code: 'INVALID_RECORD' });
    }
  });

  it('a process that starts on it stops with the same named error', async () => {
    const { clock, store, fleet } = await startFleet('hostile-plan-late', ['w0'], untilDrained);
    expect(await stepUntil(clock, () => fleet[0]!.held.length > 0)).toBe(true);
    await fleet[0]!.close();
    const key = planKey(jobPrefix('splitfleet', 'hostile-plan-late'));
    const plan = (await store.get(key))!;
    await store.put(key, `${plan.value.slice(0, -1)},"extra":${deep(20_000)}}`);
    let fatal: SplitfleetError | undefined;
    let c: Coordinator | undefined;
    try {
      c = await settle(clock, coordinators.start({
        store, clock, job: 'hostile-plan-late', instance: 'w1',
        leaseDurationMs: LEASE, opTimeoutMs: 1000, reconcileIntervalMs: 1000, drainDeadlineMs: CONFIG_DEFAULTS.drainDeadlineMs,
        planner: () => ({ splits: [], final: true }), handler: untilDrained,
        on: { fatal: ({ error }) => { fatal = error; } },
      }));
      c.done.catch(() => undefined);
      expect(await stepUntil(clock, () => c!.health().state === 'stopped')).toBe(true);
    } catch (e) {
      fatal = e as SplitfleetError; // refused at start: as good, if it names the record and the rule
    }
    expect(fatal && isSplitfleetError(fatal, 'INVALID_RECORD'), String(fatal)).toBe(true);
    expect(fatal!.message).toMatch(/plan record at .*field "extra" nests arrays and objects deeper than 128 levels/);
    if (c) expect(c.health().reason).toMatch(/^fatal: INVALID_RECORD: /);
  });
});

describe('an unreadable control record', () => {
  const job = 'hostile-control';
  const key = controlKey(jobPrefix('splitfleet', job));
  const fp = fingerprintHash(`splitfleet-v1:splitfleet/${job}`);

  async function pausedFleet(allow: { complete: boolean }): Promise<Fleet> {
    const f = await startFleet(job, ['w0', 'w1'], async (h) => {
      if (allow.complete) return h.complete(1);
      await untilDrained(h);
    });
    expect(await stepUntil(f.clock, () => f.fleet.every((c) => c.held.length > 0))).toBe(true);
    await settle(f.clock, pauseJob({ store: f.store, job }));
    expect(await stepUntil(f.clock, () => f.fleet.every((c) => c.held.length === 0))).toBe(true);
    return f;
  }

  it('keeps a paused job paused, reported once with the reason; resume overwrites it and says so', async () => {
    const allow = { complete: false };
    const { clock, store, fleet, logged } = await pausedFleet(allow);
    await store.put(key, 'paused? who knows');
    await runUntil(clock, clock.now() + 5 * LEASE);
    // Fail safe: still paused (before: read as absent, so the job resumed and lanes filled again).
    expect(fleet.map((c) => c.held.length)).toEqual([0, 0]);
    const said = logged.filter((m) => m.includes('control record at splitfleet/hostile-control/control'));
    expect(said).toHaveLength(1);
    expect(said[0]).toMatch(/not valid JSON .*; the job is held paused until an operator rewrites it \(splitfleet pause or resume\)/);
    expect(fleet.every((c) => c.health().state !== 'stopped')).toBe(true);

    // inspect says what the leader does: paused, and the record is named as unreadable.
    const { records, problems } = readJobRecords(jobPrefix('splitfleet', job), (await store.listAll(jobPrefix('splitfleet', job))).kvs, fp);
    expect(records.control?.paused).toBe(true);
    expect(problems.some((p) => p.startsWith(`${key}: INVALID_RECORD: `))).toBe(true);

    allow.complete = true;
    const r = await settle(clock, resumeJob({ store, job }));
    expect(r).toMatchObject({ changed: true, paused: false, evacuated: [] });
    expect(r.replaced).toMatch(/^control record at splitfleet\/hostile-control\/control: not valid JSON/);
    expect(await store.get(key)).toBeUndefined(); // resumed: the record asks nothing, so it goes
    expect(await stepUntil(clock, () => fleet.every((c) => c.health().state === 'stopped'), 20 * LEASE)).toBe(true);
    for (const c of fleet) await expect(c.done).resolves.toBe('complete');
  });

  it('a record beyond the decode bounds holds the job paused too, and pause writes a readable one over it', async () => {
    const { clock, store, fleet } = await pausedFleet({ complete: false });
    await store.put(key, `{"v":1,"fp":"${fp}","paused":false,"evacuated":[],"extra":${deep(20_000)}}`);
    await runUntil(clock, clock.now() + 5 * LEASE);
    expect(fleet.map((c) => c.held.length)).toEqual([0, 0]);

    const r = await settle(clock, pauseJob({ store, job }));
    expect(r).toMatchObject({ changed: true, paused: true });
    expect(r.replaced).toMatch(/field "extra" nests arrays and objects deeper than 128 levels/);
    const kv = (await store.get(key))!;
    expect(decodeRecord('control', key, kv.value, fp)).toEqual({ v: 1, fp, paused: true, evacuated: [] });
    // Readable now, and said the same: nothing more to replace.
    expect(await settle(clock, pauseJob({ store, job }))).toEqual({ changed: false, paused: true, evacuated: [] });
  });
});
