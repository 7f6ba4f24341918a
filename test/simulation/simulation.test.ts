/**
 * Deterministic simulation: the real coordinator over MemoryStore and a
 * virtual clock, thousands of fault schedules per run (crash, restart with the
 * same id, pause past the lease, store-side lease expiry, delayed watch
 * delivery, leader kill and pause, join, graceful leave), each checked by the
 * auditor (no loss, monotone progress, one owner per epoch, fenced leader,
 * bounded replay) and for completion; then the same for packed jobs
 * (decision 0037: queue pages, promotion, fold-back), which the auditor also
 * holds to the packed queue's rules. See docs/simulation.md.
 *
 * Replay a failure with the seed and path fast-check prints (-t picks the property):
 *   SIM_SEED=<seed> SIM_PATH=<path> npx vitest run test/simulation/simulation.test.ts -t packed
 * or the schedule itself (the `schedule:` line of the report), with a trace:
 *   SIM_SCHEDULE='<json>' SIM_TRACE=1 npx vitest run test/simulation/simulation.test.ts
 * SIM_RUNS=<n> sets the number of keys schedules, SIM_BUDGET_MS their time budget
 * (the run stops early, passing, when it is spent), SIM_PACKED_RUNS and
 * SIM_PACKED_BUDGET_MS the same for packed ones, SIM_SHRINK=0 skips
 * shrinking, SIM_ENGINE=reference|wasm picks the assignment engine, and
 * SIM_MUTANT=<name> runs a deliberately broken coordinator (schedule.ts, MUTANTS and PACKED_MUTANTS).
 */
import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import type { AuditStats } from './auditor.js';
import { divideScheduleArb, MUTANTS, PACKED_MUTANTS, packedScheduleArb, report, runSchedule, scheduleArb, type Schedule } from './schedule.js';

const env = process.env;
const seed = env.SIM_SEED !== undefined ? Number(env.SIM_SEED) : undefined;
const path = env.SIM_PATH;
const trace = env.SIM_TRACE === '1';
const engine: 'reference' | 'wasm' | undefined = env.SIM_ENGINE === 'reference' || env.SIM_ENGINE === 'wasm' ? env.SIM_ENGINE : undefined;
const mutant = env.SIM_MUTANT !== undefined && (env.SIM_MUTANT in MUTANTS || env.SIM_MUTANT in PACKED_MUTANTS) ? env.SIM_MUTANT : undefined;
const options = { trace, ...(engine ? { engine } : {}), ...(mutant ? { mutant } : {}) };

describe('simulation', () => {
  if (env.SIM_SCHEDULE !== undefined) {
    test('the schedule in SIM_SCHEDULE', async () => {
      const s = JSON.parse(env.SIM_SCHEDULE!) as Schedule;
      const r = await runSchedule(s, options);
      if (r.violations.length > 0) throw new Error(report(s, r));
    }, 600_000);
    return;
  }

  test('fleet schedules keep every property and complete', () => property('simulation', scheduleArb, Number(env.SIM_RUNS ?? 8000), Number(env.SIM_BUDGET_MS ?? 120_000)), 600_000);

  // Packed jobs: fewer schedules than the keys layout's (each costs about as much), within a smaller budget.
  test('packed fleet schedules keep every property and complete', () =>
    property('simulation (packed)', packedScheduleArb, Number(env.SIM_PACKED_RUNS ?? 4000), Number(env.SIM_PACKED_BUDGET_MS ?? 90_000)), 600_000);

  // Divisible handlers (decision 0063), keys and packed jobs: divisions racing takeovers, drains,
  // lease losses, leader changes and pauses; the auditor's divisions.ts holds each to its rules.
  test('dividing fleet schedules keep every property and complete', () =>
    property('simulation (dividing)', divideScheduleArb, Number(env.SIM_DIVIDE_RUNS ?? 2000), Number(env.SIM_DIVIDE_BUDGET_MS ?? 60_000), true), 600_000);
});

/** Runs `numRuns` schedules of `arb` (or fewer, when `budgetMs` is spent), failing on the first with a violation; prints totals. */
async function property(name: string, arb: fc.Arbitrary<Schedule>, numRuns: number, budgetMs: number, dividing = false): Promise<void> {
  const totals: AuditStats & { runs: number; virtualMs: number; faults: number } = {
    runs: 0, virtualMs: 0, faults: 0, revisions: 0, claims: 0, takeovers: 0, releases: 0, forcedReleases: 0, duplicates: 0, leaderTerms: 0, promotions: 0, folds: 0, divisions: 0,
  };
  const started = performance.now();
  await fc.assert(
    fc.asyncProperty(arb, async (s) => {
      const r = await runSchedule(s, options);
      totals.runs++;
      totals.virtualMs += r.virtualMs;
      totals.faults += r.faultsDuringWork;
      for (const k of ['revisions', 'claims', 'takeovers', 'releases', 'forcedReleases', 'duplicates', 'leaderTerms', 'promotions', 'folds', 'divisions'] as const) totals[k] += r.stats[k];
      if (r.violations.length > 0) throw new Error(report(s, r));
    }),
    {
      numRuns,
      ...(seed !== undefined ? { seed } : {}),
      ...(path !== undefined ? { path } : { plugins: [fc.interruptAfterTimeLimit(budgetMs)] }),
      endOnFailure: env.SIM_SHRINK === '0',
    },
  );
  const seconds = ((performance.now() - started) / 1000).toFixed(1);
  console.log(
    `${name}: ${totals.runs} schedules in ${seconds} s (${(totals.virtualMs / 3_600_000).toFixed(1)} virtual hours), ` +
      `${totals.faults} faults injected while work remained; ${totals.revisions} revisions, ${totals.claims} claims, ` +
      `${totals.takeovers} takeovers, ${totals.releases} releases (${totals.forcedReleases} not cooperative), ` +
      `${totals.duplicates} duplicate units, ${totals.leaderTerms} leader terms` +
      (totals.promotions > 0 ? `; ${totals.promotions} promotions, ${totals.folds} fold-backs` : '') +
      (totals.divisions > 0 ? `; ${totals.divisions} divisions` : ''),
  );
  expect(totals.runs).toBeGreaterThan(0);
  // The dividing schedules must divide: an ask or an answer that never happens would pass every check.
  if (dividing) expect(totals.divisions).toBeGreaterThan(0);
}
