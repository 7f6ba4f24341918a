/**
 * The hostile writer in the simulation (hostile.ts): records overwritten with
 * garbage, deep nesting, huge strings, control characters, wrong types,
 * duplicate keys, a newer minor's fields, records for an instance that is not
 * there, records deleted, and live presence and lease keys written again with
 * no etcd lease (issue 49), among the usual faults. Every property of the auditor holds, no
 * process fails, and once the records are put back the job completes. Then
 * the same on packed jobs (decision 0037), whose queue pages and folded
 * records are overwritten and deleted too (PACKED_HOSTILE_KINDS), in jobs of
 * several buckets, with a leader killed while the record is bad or just
 * before it goes bad (its successor lists the job then); and deletions after
 * a packed job's plan is final, of pages, folded records and a running
 * split's own records.
 *
 * Replay a failure like the main simulation (simulation.test.ts):
 *   HOSTILE_SEED=<seed> HOSTILE_PATH=<path> npx vitest run test/simulation/hostile.test.ts -t <keys|packed>
 * HOSTILE_RUNS / HOSTILE_BUDGET_MS bound the random keys schedules,
 * HOSTILE_PACKED_RUNS / HOSTILE_PACKED_BUDGET_MS the packed ones.
 */
import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import { HOSTILE_KINDS, MUTATIONS, PACKED_HOSTILE_KINDS, type HostileKind, type Mutation } from './hostile.js';
import { hostileScheduleArb, packedHostileScheduleArb, report, runSchedule, type Fault, type Schedule } from './schedule.js';

const env = process.env;
const seed = env.HOSTILE_SEED !== undefined ? Number(env.HOSTILE_SEED) : undefined;
const path = env.HOSTILE_PATH;
/** `HOSTILE_ONLY=progress:garbage,split:deep` limits the sweeps to those pairs (their coverage checks then fail). */
const only = env.HOSTILE_ONLY?.split(',');

/**
 * When the hostile record is put back (`repairAfterMs` after it was written, or when the faults end), and
 * whether the leader is killed 500 ms after it (`leaderKill`: its successor lists the job while the record
 * is bad) or just before it (`killFirst`: no leader sees the write happen, so none remembers what a deleted
 * record said).
 */
type Variant = { repairAfterMs: number | undefined; leaderKill: boolean; killFirst?: boolean };

/** A small fleet that is mid-job at t = 1.5 s, with one hostile step then and its repair later. */
function sweepSchedule(record: HostileKind, mutation: Mutation, { repairAfterMs, leaderKill, killFirst }: Variant): Schedule {
  const hostile: Fault = { kind: 'hostile', record, mutation, target: 1, ...(repairAfterMs !== undefined ? { repairAfterMs } : {}) };
  return {
    seed: 20261203, fleet: 3, splits: 12, maxUnits: 6, commitEvery: 1, unitMs: 300, leaseSeconds: 2,
    rebalanceDelayMs: 0, drainDeadlineMs: 1000, reconcileIntervalMs: 1000, lanes: [2, 3], drains: ['cooperate'],
    steps: [
      // An operator's pause (resumed when the faults end): the control record exists to be overwritten.
      { gapMs: 1000, fault: { kind: 'operator', action: 'pause', target: 0 } },
      ...(killFirst ? [{ gapMs: 500, fault: { kind: 'leaderKill' } } as const] : []),
      { gapMs: killFirst ? 0 : 500, fault: hostile },
      // A new leader lists the job while the record is still the hostile one (repaired 3 s after it was written, or at the end).
      ...(leaderKill ? [{ gapMs: 500, fault: { kind: 'leaderKill' } } as const] : []),
      { gapMs: 4000, fault: { kind: 'join' } },
    ],
    restartAtEnd: false,
  };
}

/**
 * The same on a packed job of 4 buckets whose plan comes in two waves (the second planned while the
 * record is bad), and no pause: the fleet promotes and folds back while the record is bad. By t = 1.5 s
 * every bucket holds a page and some splits are folded back, so folded records exist to be overwritten.
 */
function packedSweepSchedule(record: HostileKind, mutation: Mutation, variant: Variant, atMs = 1500): Schedule {
  const s = sweepSchedule(record, mutation, variant);
  const [, first, ...rest] = s.steps;
  return {
    ...s, splits: 24, maxUnits: 3, unitMs: 200, layout: 'packed', buckets: 4, waves: 2, waveMs: 2500, replanIntervalMs: 500,
    steps: [{ ...first!, gapMs: atMs }, ...rest],
  };
}

/**
 * The same at t = 3 s, after the final plan (t = 2.5 s), while the second wave's splits are promoted and
 * running: a split's own records exist to be deleted, and a page deleted now is not seeded again (the plan
 * is final); a leader that lists the job without it finds it once it is put back (decision 0072).
 */
const packedLateSchedule = (record: HostileKind, mutation: Mutation, variant: Variant): Schedule => packedSweepSchedule(record, mutation, variant, 3000);

/** Every kind × every mutation (of `mutations`) × every variant: no failure, and each kind and mutation written at least once. */
async function sweep(kinds: readonly HostileKind[], variants: readonly Variant[], scheduleFor: typeof sweepSchedule, mutations: readonly Mutation[] = MUTATIONS): Promise<number> {
  let written = 0;
  const seenKinds = new Set<string>();
  const seenMutations = new Set<string>();
  const failures: string[] = [];
  for (const record of kinds) {
    for (const mutation of mutations) {
      if (only !== undefined && !only.includes(`${record}:${mutation}`)) continue;
      for (const variant of variants) {
        const s = scheduleFor(record, mutation, variant);
        const r = await runSchedule(s);
        const when = `repaired ${variant.repairAfterMs === undefined ? 'at the end' : `after ${variant.repairAfterMs} ms`}${variant.leaderKill ? ', leader killed' : ''}${variant.killFirst ? ', leader killed first' : ''}`;
        if (r.violations.length > 0) failures.push(`${record} × ${mutation}, ${when}: ${report(s, r)}`);
        if (r.events.some((e) => e.includes('hostile write:'))) {
          written++;
          seenKinds.add(record);
          seenMutations.add(mutation);
        }
      }
    }
  }
  if (failures.length > 0) {
    throw new Error(`${failures.length} failing: ${failures.map((f) => f.split(':')[0]).join('; ')}\n\n${failures[0]}`);
  }
  // The sweep reached every kind, and every mutation that applies to one of them.
  expect([...seenKinds].sort()).toEqual([...kinds].sort());
  return [...seenMutations].length;
}

/** Random schedules of `arb`, as many as `numRuns` or the budget allows; prints how many records were written. */
async function randomSchedules(name: string, arb: fc.Arbitrary<Schedule>, numRuns: number, budgetMs: number): Promise<void> {
  let runs = 0;
  let writes = 0;
  await fc.assert(
    fc.asyncProperty(arb, async (s) => {
      const r = await runSchedule(s);
      runs++;
      writes += r.events.filter((e) => e.includes('hostile write:')).length;
      if (r.violations.length > 0) throw new Error(report(s, r));
    }),
    {
      numRuns,
      ...(seed !== undefined ? { seed } : {}),
      ...(path !== undefined ? { path } : { plugins: [fc.interruptAfterTimeLimit(budgetMs)] }),
      endOnFailure: env.HOSTILE_SHRINK === '0',
    },
  );
  console.log(`${name}: ${runs} schedules, ${writes} hostile records written`);
  expect(runs).toBeGreaterThan(0);
  expect(writes).toBeGreaterThan(0);
}

const REPAIRED: readonly Variant[] = [{ repairAfterMs: 3000, leaderKill: false }, { repairAfterMs: undefined, leaderKill: false }];
/** REPAIRED, with the leader killed after the write, and killed just before it. */
const LEADER_KILLED: readonly Variant[] = [...REPAIRED, ...REPAIRED.map((v) => ({ ...v, leaderKill: true })), ...REPAIRED.map((v) => ({ ...v, killFirst: true }))];

describe('hostile writer', () => {
  // Every kind × every mutation, once repaired while the job runs and once only when the faults end.
  test('keys jobs, every record kind and mutation: no process fails, every property holds, the job completes', async () => {
    expect(await sweep(HOSTILE_KINDS, REPAIRED, sweepSchedule)).toBe(MUTATIONS.length);
  }, 600_000);

  test('keys jobs, random schedules with hostile records keep every property and complete', () =>
    randomSchedules('hostile simulation', hostileScheduleArb, Number(env.HOSTILE_RUNS ?? 2000), Number(env.HOSTILE_BUDGET_MS ?? 45_000)), 600_000);

  // Queue pages and folded records, with and without a leader listing the job while one is bad.
  test('packed jobs, queue pages and folded records, every mutation: every property holds, the job completes', async () => {
    // 'dead-instance' writes only records of an instance, 'leaseless' only presence and lease keys.
    expect(await sweep(PACKED_HOSTILE_KINDS, LEADER_KILLED, packedSweepSchedule)).toBe(MUTATIONS.length - 2);
  }, 600_000);

  // Deletions after the final plan: a page its next leader does not list, a running split's own records
  // (a deleted split record is promoted again while its owner's lease key stands, decision 0071).
  test('packed jobs, a page, a folded record or a split\'s own record deleted after the final plan: every property holds, the job completes', async () => {
    expect(await sweep([...PACKED_HOSTILE_KINDS, 'split', 'spec', 'progress'], LEADER_KILLED, packedLateSchedule, ['delete'])).toBe(1);
  }, 600_000);

  test('packed jobs, random schedules with hostile records of every kind keep every property and complete', () =>
    randomSchedules('hostile simulation (packed)', packedHostileScheduleArb, Number(env.HOSTILE_PACKED_RUNS ?? 1000), Number(env.HOSTILE_PACKED_BUDGET_MS ?? 30_000)), 600_000);
});
