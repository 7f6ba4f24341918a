/**
 * The step nemesis (step-trap.ts, issue 49): for a short job, in the keys and
 * the packed layout, the leader and then a worker are paused *at* their k-th
 * store call of each kind they make (the call held, unsent, until they
 * resume), for longer than the lease and briefly, while an operator pauses,
 * resumes, evacuates or retries. Every (kind, k) is enumerated, k = 1 to 5
 * and the last, over the kinds a quiet run of the same job makes, so every
 * step of the protocol is hit: campaign (with its generation bump), decide → publish,
 * promote → publish, fold read → fold, verdict decision → verdict, claim, lane
 * writes, release. Each run must keep every property the auditor checks and
 * complete once the faults end (the liveness half).
 *
 * The same with divisible handlers (division asks and writes among the steps).
 * SIM_STEP_K=<n> enumerates k = 1..n and the last (default 5).
 */
import { describe, expect, test } from 'vitest';
import { report, runSchedule, type OperatorAction, type Schedule } from './schedule.js';
import { stepNemesis, type CallCounts, type StepTrap } from './step-trap.js';

const K = Number(process.env.SIM_STEP_K ?? 5);
const OPERATORS: readonly (OperatorAction | undefined)[] = ['pause', 'evacuate', 'retry', undefined, 'resume'];

const keys: Schedule = {
  seed: 1, fleet: 3, splits: 8, maxUnits: 3, commitEvery: 1, unitMs: 100, leaseSeconds: 1, rebalanceDelayMs: 0,
  drainDeadlineMs: 300, reconcileIntervalMs: 500, lanes: [2], prefetch: [1], drains: ['cooperate'], restartAtEnd: false,
  // No fault of its own: the schedule only lasts past the job (about a second quiet), so that the
  // nemesis strikes while faults may, not after the schedule's end has resumed everything.
  steps: [{ gapMs: 6000, fault: { kind: 'delay', target: 0, latencyMs: 0, durationMs: 0 } }],
};
const packed: Schedule = { ...keys, layout: 'packed', buckets: 1, waves: 2, waveMs: 300, replanIntervalMs: 300 };
// Divisible handlers: division asks, the division's fenced write and its residual's first claim among the steps.
const dividing: Schedule = { ...keys, maxUnits: 12, divide: true };

/** The (kind, k) points to strike for one instance's counted calls: k = 1..K and the last. */
function points(calls: Map<string, number>): { kind: string; k: number }[] {
  const out: { kind: string; k: number }[] = [];
  for (const [kind, n] of [...calls].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
    const ks = new Set<number>();
    for (let k = 1; k <= Math.min(K, n); k++) ks.add(k);
    ks.add(n);
    for (const k of ks) out.push({ kind, k });
  }
  return out;
}

describe('the step nemesis: a process paused at each store call of each kind', () => {
  for (const [layout, s] of [['keys', keys], ['packed', packed], ['dividing', dividing]] as const) {
    for (const [role, instance] of [['the leader', 'w0'], ['a worker', 'w1']] as const) {
      test(`${layout}: ${role} (${instance})`, async () => {
        const quiet: CallCounts = new Map();
        const base = await runSchedule(s, { atCall: stepNemesis(quiet) });
        expect(base.violations).toEqual([]);
        const targets = points(quiet.get(instance) ?? new Map());
        // Not vacuous: the steps the issue names are among them.
        const kinds = new Set(targets.map((t) => t.kind));
        expect(kinds).toContain(role === 'the leader' ? 'txn put assign' : 'txn put split');
        const failures: string[] = [];
        let struck = 0;
        let runs = 0;
        for (const [i, t] of targets.entries()) {
          // Each point twice: past the lease (the session is lost at that step) and briefly.
          for (const [j, pauseMs] of [1500, 300].entries()) {
            const operator = OPERATORS[(i + 2 * j) % OPERATORS.length];
            const trap: StepTrap = { instance, ...t, pauseMs, ...(operator ? { operator } : {}) };
            const r = await runSchedule(s, { atCall: stepNemesis(new Map(), trap) });
            runs++;
            if (r.events.some((e) => e.includes('step nemesis: pause'))) struck++;
            if (r.violations.length > 0) failures.push(`trap ${JSON.stringify(trap)}\n${report(s, r)}`);
          }
        }
        console.log(`step nemesis, ${layout}, ${role}: ${targets.length} points over ${kinds.size} kinds of call, ${runs} runs, ${struck} struck (${[...kinds].join('; ')})`);
        expect(failures.slice(0, 1)).toEqual([]);
        expect(struck).toBeGreaterThan(runs / 2);
      }, 600_000);
    }
  }
});
