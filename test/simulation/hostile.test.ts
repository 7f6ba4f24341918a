/**
 * The hostile writer in the simulation (hostile.ts): records overwritten with
 * garbage, deep nesting, huge strings, control characters, wrong types,
 * duplicate keys, a newer minor's fields, and records for an instance that is
 * not there, among the usual faults. Every property of the auditor holds, no
 * process fails, and once the records are put back the job completes.
 *
 * Replay a failure like the main simulation (simulation.test.ts):
 *   HOSTILE_SEED=<seed> HOSTILE_PATH=<path> npx vitest run test/simulation/hostile.test.ts
 * HOSTILE_RUNS / HOSTILE_BUDGET_MS bound the random part.
 */
import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import { HOSTILE_KINDS, MUTATIONS } from './hostile.js';
import { hostileScheduleArb, report, runSchedule, type Schedule } from './schedule.js';

const env = process.env;
const numRuns = Number(env.HOSTILE_RUNS ?? 2000);
const budgetMs = Number(env.HOSTILE_BUDGET_MS ?? 45_000);
const seed = env.HOSTILE_SEED !== undefined ? Number(env.HOSTILE_SEED) : undefined;
const path = env.HOSTILE_PATH;
/** `HOSTILE_ONLY=progress:garbage,split:deep` limits the sweep to those pairs (its coverage checks then fail). */
const only = env.HOSTILE_ONLY?.split(',');

/** A small fleet that is mid-job at t = 1.5 s, with one hostile step then and its repair later. */
function sweepSchedule(record: (typeof HOSTILE_KINDS)[number], mutation: (typeof MUTATIONS)[number], repairAfterMs: number | undefined): Schedule {
  return {
    seed: 20261203, fleet: 3, splits: 12, maxUnits: 6, commitEvery: 1, unitMs: 300, leaseSeconds: 2,
    rebalanceDelayMs: 0, drainDeadlineMs: 1000, reconcileIntervalMs: 1000, lanes: [2, 3], drains: ['cooperate'],
    steps: [
      // An operator's pause (resumed when the faults end): the control record exists to be overwritten.
      { gapMs: 1000, fault: { kind: 'operator', action: 'pause', target: 0 } },
      { gapMs: 500, fault: { kind: 'hostile', record, mutation, target: 1, ...(repairAfterMs !== undefined ? { repairAfterMs } : {}) } },
      { gapMs: 4000, fault: { kind: 'join' } },
    ],
    restartAtEnd: false,
  };
}

describe('hostile writer', () => {
  // Every kind × every mutation, once repaired while the job runs and once only when the faults end.
  test('every record kind and mutation: no process fails, every property holds, the job completes', async () => {
    let written = 0;
    const kinds = new Set<string>();
    const mutations = new Set<string>();
    const failures: string[] = [];
    for (const record of HOSTILE_KINDS) {
      for (const mutation of MUTATIONS) {
        if (only !== undefined && !only.includes(`${record}:${mutation}`)) continue;
        for (const repairAfterMs of [3000, undefined]) {
          const s = sweepSchedule(record, mutation, repairAfterMs);
          const r = await runSchedule(s);
          if (r.violations.length > 0) failures.push(`${record} × ${mutation}, repaired ${repairAfterMs === undefined ? 'at the end' : `after ${repairAfterMs} ms`}: ${report(s, r)}`);
          if (r.events.some((e) => e.includes('hostile write:'))) {
            written++;
            kinds.add(record);
            mutations.add(mutation);
          }
        }
      }
    }
    if (failures.length > 0) {
      throw new Error(`${failures.length} failing: ${failures.map((f) => f.split(':')[0]).join('; ')}\n\n${failures[0]}`);
    }
    // The sweep reached every kind and every mutation (each applies to some kind).
    expect([...kinds].sort()).toEqual([...HOSTILE_KINDS].sort());
    expect([...mutations].sort()).toEqual([...MUTATIONS].sort());
    expect(written).toBeGreaterThan(40);
  }, 600_000);

  test('random schedules with hostile records keep every property and complete', async () => {
    let runs = 0;
    let writes = 0;
    await fc.assert(
      fc.asyncProperty(hostileScheduleArb, async (s) => {
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
    console.log(`hostile simulation: ${runs} schedules, ${writes} hostile records written`);
    expect(runs).toBeGreaterThan(0);
    expect(writes).toBeGreaterThan(0);
  }, 600_000);
});
