/**
 * Schedules: what one simulated run does (the job, the knobs, the fleet, and
 * a sequence of faults), the fast-check arbitrary that generates them, and
 * `runSchedule`, which plays one on a fresh `Fleet` and returns every
 * violation the auditor and the completion check find.
 *
 * A run: start the fleet; for each step, let `gapMs` of virtual time pass and
 * inject the fault; then calm down (resume the paused, end delays, bring a
 * member back if none is left, restart crashed ones if the schedule says so)
 * and give the fleet up to `QUIET_MS` of virtual time to finish. Every live
 * coordinator's `done` must resolve 'complete'; then leases get time to lapse
 * and the final state is checked.
 *
 * `packedScheduleArb` plays the same on a packed job (decision 0037), its plan
 * in waves, in 1 to 8 buckets; `hostileScheduleArb` and
 * `packedHostileScheduleArb` add a hostile writer's records (hostile.ts). What
 * each fault does to the fleet is inject.ts's; the broken coordinators a run
 * may name are mutants.ts's; the operator's actions, during the faults and
 * after, operator.ts's.
 */
import fc from 'fast-check';
import { prng } from '../../src/prng.js';
import type { Violation, AuditStats } from './auditor.js';
import { Fleet, type DrainBehaviour, type FleetSplit, type SimProcess } from './harness.js';
import { HOSTILE_KINDS, HostileWriter, MUTATIONS, PACKED_HOSTILE_KINDS, type HostileKind, type Mutation } from './hostile.js';
import { inject, MAX_FLEET, restartable, type Injector } from './inject.js';
import { DIVIDE_MUTANTS, MUTANTS, PACKED_MUTANTS } from './mutants.js';
import { recoverFromStall, release } from './operator.js';

export { DIVIDE_MUTANTS, MAX_FLEET, MUTANTS, PACKED_MUTANTS };

export type Fault =
  | { kind: 'crash'; target: number }
  | { kind: 'restart'; target: number }
  | { kind: 'pause'; target: number; tenths: number }
  | { kind: 'leaderKill' }
  | { kind: 'leaderPause'; tenths: number }
  | { kind: 'join' }
  | { kind: 'leave'; target: number }
  | { kind: 'expire'; target: number }
  | { kind: 'delay'; target: number; latencyMs: number; durationMs: number }
  | { kind: 'slow'; target: number; latencyMs: number; durationMs: number }
  /** Watch events reach the target late by a share of `latencyMs` fixed per watch: two keys' events out of store order. */
  | { kind: 'skew'; target: number; latencyMs: number; durationMs: number }
  /** An operator action (`splitfleet pause` and so on), made on the store while the fleet runs. */
  | { kind: 'operator'; action: OperatorAction; target: number }
  /**
   * A hostile writer overwrites one record (hostile.ts), and puts it back
   * `repairAfterMs` later (or when the faults end, when absent).
   */
  | { kind: 'hostile'; record: HostileKind; mutation: Mutation; target: number; repairAfterMs?: number };

export type OperatorAction = 'pause' | 'resume' | 'evacuate' | 'resumeInstance' | 'retry';

export interface Schedule {
  seed: number;
  fleet: number;
  splits: number;
  maxUnits: number;
  commitEvery: number;
  unitMs: number;
  leaseSeconds: number;
  rebalanceDelayMs: number;
  drainDeadlineMs: number;
  reconcileIntervalMs: number;
  /** Lane budgets, by instance number (mod length). */
  lanes: number[];
  /**
   * Prefetch depths, by instance number (mod length): a mixed fleet, some members named only
   * their lanes, others beyond (substrate.md, "Prefetch"). Absent (schedules recorded before
   * prefetch): 0 for every member.
   */
  prefetch?: number[];
  /** Drain behaviours, by instance number (mod length). */
  drains: DrainBehaviour[];
  steps: { gapMs: number; fault: Fault }[];
  /** Restart every crashed (or departed) instance id when the faults end. */
  restartAtEnd: boolean;
  /** The job's layout (decision 0037); absent: 'keys'. */
  layout?: 'packed';
  /** An open plan released in `waves` waves `waveMs` apart (absent or 1: one final plan); each appends queue pages. */
  waves?: number;
  waveMs?: number;
  /** How often an open plan is planned again (absent: the library's default). */
  replanIntervalMs?: number;
  /**
   * A packed job's bucket count (the `buckets` option of every coordinator;
   * absent: chosen from the first plan, which gives these few splits one).
   */
  buckets?: number;
  /**
   * Divisible handlers (decision 0063): the leader asks running splits to divide while lanes
   * would idle, down to one unit a part. Absent (schedules recorded before): none divides.
   */
  divide?: boolean;
}
/** Virtual time the fleet gets after the faults to finish the job. */
export const QUIET_MS = 30 * 60_000;
const OP_TIMEOUT_MS = 200;

const target = fc.nat({ max: 63 });
const fault: fc.Arbitrary<Fault> = fc.oneof(
  { arbitrary: fc.record({ kind: fc.constant('crash' as const), target }), weight: 3 },
  { arbitrary: fc.record({ kind: fc.constant('restart' as const), target }), weight: 2 },
  // tenths of a lease: 1..30 → 0.1 to 3 leases (past the lease from 11 up).
  { arbitrary: fc.record({ kind: fc.constant('pause' as const), target, tenths: fc.integer({ min: 1, max: 30 }) }), weight: 3 },
  { arbitrary: fc.record({ kind: fc.constant('leaderKill' as const) }), weight: 2 },
  { arbitrary: fc.record({ kind: fc.constant('leaderPause' as const), tenths: fc.integer({ min: 5, max: 30 }) }), weight: 1 },
  { arbitrary: fc.record({ kind: fc.constant('join' as const) }), weight: 2 },
  { arbitrary: fc.record({ kind: fc.constant('leave' as const), target }), weight: 2 },
  { arbitrary: fc.record({ kind: fc.constant('expire' as const), target }), weight: 1 },
  {
    arbitrary: fc.record({
      kind: fc.constant('delay' as const), target,
      latencyMs: fc.integer({ min: 1, max: 3000 }), durationMs: fc.integer({ min: 100, max: 8000 }),
    }),
    weight: 2,
  },
  {
    arbitrary: fc.record({
      kind: fc.constant('skew' as const), target,
      latencyMs: fc.integer({ min: 1, max: 1500 }), durationMs: fc.integer({ min: 100, max: 8000 }),
    }),
    weight: 2,
  },
  {
    // Round trips up to 4 × opTimeoutMs: answers time out while their writes land.
    arbitrary: fc.record({
      kind: fc.constant('slow' as const), target,
      latencyMs: fc.integer({ min: 1, max: 4 * OP_TIMEOUT_MS }), durationMs: fc.integer({ min: 100, max: 6000 }),
    }),
    weight: 2,
  },
  {
    arbitrary: fc.record({
      kind: fc.constant('operator' as const),
      action: fc.constantFrom<OperatorAction>('pause', 'resume', 'evacuate', 'resumeInstance', 'retry'),
      target,
    }),
    weight: 3,
  },
);

export const scheduleArb: fc.Arbitrary<Schedule> = fc.record({
  seed: fc.integer({ min: 0, max: 0x7fffffff }),
  fleet: fc.integer({ min: 2, max: MAX_FLEET }),
  splits: fc.integer({ min: 5, max: 60 }),
  maxUnits: fc.integer({ min: 1, max: 8 }),
  commitEvery: fc.integer({ min: 1, max: 3 }),
  unitMs: fc.integer({ min: 50, max: 800 }),
  leaseSeconds: fc.integer({ min: 1, max: 3 }),
  rebalanceDelayMs: fc.oneof(fc.constant(0), fc.integer({ min: 50, max: 5000 })),
  drainDeadlineMs: fc.integer({ min: OP_TIMEOUT_MS, max: 4000 }),
  reconcileIntervalMs: fc.integer({ min: 300, max: 5000 }),
  lanes: fc.array(fc.integer({ min: 1, max: 5 }), { minLength: 1, maxLength: 4 }),
  prefetch: fc.array(fc.integer({ min: 0, max: 3 }), { minLength: 1, maxLength: 3 }),
  drains: fc.array(fc.constantFrom<DrainBehaviour>('cooperate', 'decline', 'slow', 'ignore'), { minLength: 1, maxLength: 4 }),
  steps: fc.array(fc.record({ gapMs: fc.integer({ min: 0, max: 1500 }), fault }), { maxLength: 20 }),
  restartAtEnd: fc.boolean(),
});

/**
 * Packed jobs (decision 0037): the same fleets and faults, the splits in
 * queue pages, promoted before they are assigned and folded back once
 * completed. The plan comes in 1 to 4 waves (an open plan until the last),
 * so a bucket holds several pages and a fold-back may span them; the job has
 * 1, 2, 4 or 8 buckets (`buckets`, given to every coordinator), so promotions
 * and fold-backs span buckets too, and most buckets hold few splits.
 */
export const packedScheduleArb: fc.Arbitrary<Schedule> = scheduleArb.chain((s) =>
  fc.record({
    waves: fc.integer({ min: 1, max: 4 }), waveMs: fc.integer({ min: 200, max: 4000 }), replanIntervalMs: fc.integer({ min: 300, max: 3000 }),
    buckets: fc.constantFrom(1, 2, 4, 8),
  }).map((w) => ({ ...s, layout: 'packed' as const, ...w })));

/**
 * Divisible handlers (decision 0063): the same fleets and faults, fewer and larger splits so
 * that lanes idle while some still run and the leader asks them to divide; keys and packed jobs.
 */
export const divideScheduleArb: fc.Arbitrary<Schedule> = scheduleArb.chain((s) =>
  fc.record({ splits: fc.integer({ min: 1, max: 6 }), maxUnits: fc.integer({ min: 20, max: 120 }), packed: fc.boolean() })
    .map(({ splits, maxUnits, packed }) => ({ ...s, splits, maxUnits, divide: true, ...(packed ? { layout: 'packed' as const } : {}) })));

const hostileFaultOf = (kinds: readonly HostileKind[]): fc.Arbitrary<Fault> => fc.record(
  {
    kind: fc.constant('hostile' as const),
    record: fc.constantFrom(...kinds),
    mutation: fc.constantFrom(...MUTATIONS),
    target,
    repairAfterMs: fc.integer({ min: 0, max: 20_000 }),
  },
  { requiredKeys: ['kind', 'record', 'mutation', 'target'] },
);
const hostileFault = hostileFaultOf(HOSTILE_KINDS);

/**
 * Schedules with a hostile writer among the faults: about half the steps
 * overwrite a record (every kind the fleet reads, every mutation), the rest are
 * the usual faults. Each hostile record is put back after its delay or when
 * the faults end; the fleet must then finish the job with every property held.
 */
export const hostileScheduleArb: fc.Arbitrary<Schedule> = scheduleArb.chain((s) =>
  fc.array(fc.record({ gapMs: fc.integer({ min: 0, max: 1500 }), fault: fc.oneof(fault, hostileFault, hostileFault) }), { minLength: 4, maxLength: 24 })
    .map((steps) => ({ ...s, steps })));

/**
 * The same on packed jobs (packedScheduleArb's jobs): about half the steps
 * overwrite a record, of every kind the fleet reads, and half of those a queue
 * page or a folded record (hostile.ts, PACKED_HOSTILE_KINDS), deletions included.
 */
export const packedHostileScheduleArb: fc.Arbitrary<Schedule> = packedScheduleArb.chain((s) =>
  fc.array(fc.record({ gapMs: fc.integer({ min: 0, max: 1500 }), fault: fc.oneof(fault, hostileFault, hostileFaultOf(PACKED_HOSTILE_KINDS)) }), { minLength: 4, maxLength: 24 })
    .map((steps) => ({ ...s, steps })));


export interface RunResult {
  violations: Violation[];
  /** Faults that hit something while splits were still runnable. */
  faultsDuringWork: number;
  stats: AuditStats;
  virtualMs: number;
  events: string[];
  procs: string[];
}

function splitsOf(s: Schedule): FleetSplit[] {
  const rnd = prng(s.seed);
  const width = String(s.splits - 1).length;
  return Array.from({ length: s.splits }, (_, i) => ({ id: `s-${String(i).padStart(width, '0')}`, units: 1 + Math.floor(rnd() * s.maxUnits) }));
}

const num = (instance: string) => Number(instance.slice(1));

/** A failed run, for the test's error: its violations, processes, last events (long ones cut) and the schedule to replay. */
export function report(s: Schedule, r: RunResult): string {
  return [
    `${r.violations.length} violation(s) after ${r.virtualMs} virtual ms${s.layout === 'packed' ? ` (a packed job: ${s.buckets ?? 'default'} bucket(s), ${s.waves ?? 1} wave(s))` : ''}:`,
    ...r.violations.slice(0, 20).map((v) =>
      `  [${v.property}]${v.revision !== undefined ? ` rev ${v.revision}` : ''} ${v.message}${v.context ? ` ${JSON.stringify(v.context)}` : ''}`),
    'processes:', ...r.procs.map((p) => `  ${p}`),
    'events:', ...r.events.slice(-60).map((e) => `  ${e.length > 400 ? `${e.slice(0, 400)}…` : e}`),
    `schedule: ${JSON.stringify(s)}`,
    `replay: SIM_SCHEDULE='${JSON.stringify(s)}' SIM_TRACE=1 npx vitest run test/simulation/simulation.test.ts`,
  ].join('\n');
}

/** What a run may add: a trace, an engine, a look at the fleet before it closes, a broken coordinator (mutants.ts). */
export type RunOptions = {
  trace?: boolean; engine?: 'reference' | 'wasm'; inspect?: (fleet: Fleet) => void; mutant?: string;
  /** Given the fleet, what to do at each store call of a process (step-trap.ts): true pauses it at that call. */
  atCall?: (fleet: Fleet) => (p: SimProcess, what: string) => boolean;
};

/** Plays one schedule on a fresh fleet. */
export async function runSchedule(s: Schedule, options: RunOptions = {}): Promise<RunResult> {
  // Strict unhandled rejections (issue 28): the processes share this one, so a background promise
  // nobody handled is this schedule's violation (vitest would report it too, but not which schedule).
  const rejections: string[] = [];
  const onRejection = (reason: unknown) => rejections.push(reason instanceof Error ? `${reason.name}: ${reason.message}` : String(reason));
  process.on('unhandledRejection', onRejection);
  try {
    const r = await playSchedule(s, options);
    // Let a last rejection surface (node reports them after the microtask queue drains).
    await new Promise((resolve) => setImmediate(resolve));
    for (const m of rejections) r.violations.push({ property: 'process-exit', message: `unhandled rejection (with --unhandled-rejections=strict the process would exit): ${m}` });
    return r;
  } finally {
    process.off('unhandledRejection', onRejection);
  }
}

/** The fleet a schedule runs: its job (layout, buckets, waves), knobs, lane budgets and handlers. */
function fleetFor(s: Schedule, splits: FleetSplit[], options: RunOptions): Fleet {
  return new Fleet({
    job: 'sim',
    splits,
    knobs: {
      leaseDurationMs: s.leaseSeconds * 1000,
      opTimeoutMs: OP_TIMEOUT_MS,
      rebalanceDelayMs: s.rebalanceDelayMs,
      drainDeadlineMs: s.drainDeadlineMs,
      reconcileIntervalMs: s.reconcileIntervalMs,
      // The library's default cap (4): a takeover consumes an attempt only when the tenancy it ends
      // committed nothing, and the auditor checks every attempt; a split that still reaches the cap
      // (killed four times before its first commit) is retried by the operator once the faults end.
      maxAttempts: 4,
      ...(s.replanIntervalMs !== undefined ? { replanIntervalMs: s.replanIntervalMs } : {}),
      // A unit weighs 1000: every part keeps at least one unit, so tails divide as far as they can.
      ...(s.divide ? { divideMinWeight: 1000 } : {}),
    },
    ...(s.layout ? { layout: s.layout } : {}),
    ...(s.buckets !== undefined ? { buckets: s.buckets } : {}),
    ...(s.waves !== undefined && s.waves > 1 ? { waves: { count: s.waves, everyMs: s.waveMs ?? 1000 } } : {}),
    maxInFlight: (instance) => s.lanes[num(instance) % s.lanes.length]!,
    prefetch: (instance) => (s.prefetch ? s.prefetch[num(instance) % s.prefetch.length]! : 0),
    handler: (instance) => ({
      unitMs: s.unitMs,
      commitEvery: s.commitEvery,
      drain: s.drains[num(instance) % s.drains.length]!,
      slowDrainMs: Math.floor(s.drainDeadlineMs * 0.75),
      ...(s.divide ? { divide: true } : {}),
    }),
    ...(options.engine ? { engine: options.engine } : {}),
    ...(options.trace ? { trace: true } : {}),
    ...(options.mutant ? { mutate: (MUTANTS[options.mutant] ?? PACKED_MUTANTS[options.mutant] ?? DIVIDE_MUTANTS[options.mutant])! } : {}),
  });
}

async function playSchedule(s: Schedule, options: RunOptions): Promise<RunResult> {
  const splits = splitsOf(s);
  const leaseMs = s.leaseSeconds * 1000;
  const fleet = fleetFor(s, splits, options);
  if (options.atCall) fleet.atCall = options.atCall(fleet);
  const hostile = new HostileWriter(fleet.store, fleet.prefix, (rev) => fleet.auditor.external(rev));
  let nextId = 0;
  const newInstance = () => `w${nextId++}`;
  const injector: Injector = { fleet, hostile, hostileRandom: prng(s.seed ^ 0x5eed), leaseMs, newInstance };
  for (let i = 0; i < s.fleet; i++) fleet.start(newInstance());
  await fleet.advance(0);

  let faultsDuringWork = 0;
  for (const { gapMs, fault: f } of s.steps) {
    await fleet.advance(gapMs);
    const before = fleet.events.length;
    await inject(injector, f);
    if (fleet.events.length > before && fleet.live.some((p) => p.verdict === undefined)) faultsDuringWork++;
    await fleet.advance(0);
  }

  // Faults stop; so do the operators' holds (the fleet must be able to finish),
  // and every hostile record still there is put back.
  await fleet.calm();
  await hostile.repairAll();
  if (hostile.log.length > 0) fleet.note(`hostile writer: ${hostile.log.join('; ')}`);
  await recoverFromStall(fleet);
  await release(fleet);
  if (s.restartAtEnd) for (const id of restartable(fleet)) if (fleet.live.length < MAX_FLEET) fleet.start(id);
  if (fleet.live.length === 0) fleet.start(restartable(fleet)[0] ?? newInstance());
  await fleet.advance(0);

  const violations: Violation[] = [];
  const settled = () =>
    fleet.pendingRestarts === 0 && fleet.procs.every((p) => p.state !== 'starting' && p.state !== 'running' && p.state !== 'stopping');
  let finished = await fleet.advance(QUIET_MS, settled);
  // A takeover still pending when the faults ended may quarantine a split meanwhile: the operator retries it once more.
  for (let round = 0; round < 3 && finished && await recoverFromStall(fleet); round++) finished = await fleet.advance(QUIET_MS, settled);
  if (!finished) {
    violations.push({ property: 'completion', message: `the fleet did not finish within ${QUIET_MS} ms of quiet virtual time`, context: fleet.describe() });
  }
  for (const p of fleet.procs) {
    if (p.state === 'failed') violations.push({ property: 'completion', message: `${p.id} failed: ${(p.error as Error)?.message ?? String(p.error)}` });
    if (p.state === 'done' && p.verdict !== 'complete') violations.push({ property: 'completion', message: `${p.id} finished '${p.verdict}'` });
  }
  const sizes = new Map(splits.map((x) => [x.id, x.units]));
  if (finished) {
    // Let crashed processes' leases lapse, then nothing ephemeral may remain.
    await fleet.advance(2 * leaseMs + 1000);
    violations.push(...fleet.auditor.finalState(sizes));
  }
  for (const l of fleet.livelocks) violations.push({ property: 'liveness', message: `hot loop: ${l}` });
  for (const d of fleet.falseDepositions) violations.push({ property: 'leadership', message: d });
  const virtualMs = fleet.clock.now();
  await flushAll(fleet);
  options.inspect?.(fleet);
  const audit = fleet.auditor.audit(sizes, s.commitEvery);
  violations.push(...audit.violations);
  await fleet.auditor.close();
  await fleet.store.close();
  return { violations, faultsDuringWork, stats: audit.stats, virtualMs, events: fleet.events, procs: fleet.describe() };
}

async function flushAll(fleet: Fleet): Promise<void> {
  await fleet.advance(0);
}
