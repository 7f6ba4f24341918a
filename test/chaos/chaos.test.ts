/**
 * The chaos suite: multi-process fleets on real etcd under seeded fault
 * schedules (worker SIGKILL, SIGSTOP past the lease, leader SIGKILL, etcd
 * SIGKILL and restart on its data dir, connections cut / delayed /
 * partitioned through a loopback proxy, slow / wedged / declining drains, a
 * 3-member cluster losing a member). Each run is audited from the store's
 * full history and the members' ledgers (see checks.ts); the job must
 * complete with no violation.
 *
 * Needs the compiled fleet member: `npx tsc -p tsconfig.json` first (or set
 * CHAOS_FLEET_SCRIPT to another build of it). Bounded for CI (one run per
 * scenario); CHAOS_SOAK=1 runs three seeds per scenario with longer
 * schedules; CHAOS_SEED=<n> replays one seed; figures are printed and written
 * to bench-results/chaos.json.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { startEtcd, type EtcdHandle } from '../support/etcd.js';
import { fleetProcessScript, killAllFleetMembers, repoRoot } from '../support/fleet.js';
import { runScenario } from './run-scenario.js';
import { SCENARIOS, SOAK, type ScenarioResult } from './scenarios.js';

const BASE_SEED = process.env.CHAOS_SEED ? Number(process.env.CHAOS_SEED) : 20261130;
const RUNS = process.env.CHAOS_SEED ? 1 : SOAK ? 3 : 1;
const results: ScenarioResult[] = [];
let shared: EtcdHandle;

beforeAll(async () => {
  if (!process.env.CHAOS_FLEET_SCRIPT) fleetProcessScript(); // loud failure when dist/ is missing
  shared = await startEtcd();
});

afterAll(async () => {
  await killAllFleetMembers();
  await shared?.stop();
  if (results.length === 0) return;
  const rows = results.map((r) => {
    const f = r.figures;
    const t = f.transitions;
    return `${r.scenario.padEnd(20)} seed ${String(r.seed).padEnd(9)} faults ${String(r.faults).padStart(2)}  units ${f.unitsPlanned}/${f.unitsProcessed}` +
      `  dup ${f.duplicates}/${f.replayBound}  maxReplay ${f.maxReplay}  coop ${t.cooperative} declined ${t.declined} forced ${t.forced} failed ${t.failed} takeover ${t.takeover} reclaim ${t.reclaim}` +
      `  terms ${f.leaderTerms}${f.folded > 0 ? `  folded ${f.folded} (${f.buckets} buckets)` : ''}  attempts ${f.maxAttempts}  start-failures ${r.crashes.length}  ${(r.completeMs / 1000).toFixed(1)}s`;
  });
  console.log(`chaos results (commitEvery 5):\n${rows.join('\n')}`);
  const dir = `${repoRoot()}/bench-results`;
  mkdirSync(dir, { recursive: true });
  writeFileSync(`${dir}/chaos.json`, JSON.stringify(results.map(({ describe: _, ...r }) => r), null, 1));
});

describe.sequential('chaos', () => {
  for (const scenario of SCENARIOS) {
    for (let k = 0; k < RUNS; k++) {
      const seed = process.env.CHAOS_SEED ? BASE_SEED : BASE_SEED + k * 7919 + SCENARIOS.indexOf(scenario);
      test(`${scenario.name} (seed ${seed})`, async () => {
        console.log(`chaos ${scenario.name}: seed ${seed} (replay: CHAOS_SEED=${seed} npx vitest run test/chaos -t ${scenario.name})`);
        const r = await runScenario(scenario, seed, shared);
        results.push(r);
        const context = `\nscenario ${r.scenario}, seed ${r.seed}, job ${r.job}\n${r.describe}`;
        // The violations in the message too: a JSON report carries the message but not the diff.
        expect(r.violations, `auditor violations ${JSON.stringify(r.violations.slice(0, 10))}${context}`).toEqual([]);
        expect(r.verdicts.stalled ?? 0, `stalled verdicts${context}`).toBe(0);
        expect(r.figures.unitsProcessed, 'every planned unit at least once').toBeGreaterThanOrEqual(r.figures.unitsPlanned);
        // A member may refuse to start while etcd is unreachable (a retryable fatal before 'started'; the
        // supervisor starts it again). Anything else (giving up while running, a silent exit) is a defect.
        const defects = r.crashes.filter((c) => c.started || !/^(STORE_UNAVAILABLE|TIMEOUT):/.test(c.fatal ?? ''));
        expect(defects, `members that gave up or exited without a verdict${context}`).toEqual([]);
        expect(r.expectation, `scenario expectation${context}`).toBeUndefined();
        if (!scenario.faultFree) expect(r.faults, 'the schedule injected faults').toBeGreaterThan(0);
      }, SOAK ? 900_000 : 180_000);
    }
  }
});
