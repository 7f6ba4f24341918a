/**
 * The chaos suite: multi-process fleets on real etcd under seeded fault
 * schedules (worker SIGKILL, SIGSTOP past the lease, leader SIGKILL, etcd
 * SIGKILL and restart on its data dir, connections cut / delayed /
 * partitioned through a loopback proxy, slow / wedged / declining drains, a
 * 3-member cluster losing a member). Each run is audited from the store's
 * full history and the members' ledgers (see checks.ts), and every store call
 * the members and the operator made is held to that history
 * (test/support/history-check.ts); the job must complete with no violation.
 * The faults against etcd itself and the clocks (etcd-scenarios.ts) run in
 * `npm run chaos:etcd` (etcd-chaos.slow.ts), not here.
 *
 * Needs the compiled fleet member: `npx tsc -p tsconfig.json` first (or set
 * CHAOS_FLEET_SCRIPT to another build of it). Bounded for CI (one run per
 * scenario); CHAOS_SOAK=1 runs three seeds per scenario with longer
 * schedules; CHAOS_SEED=<n> replays one seed; figures are printed and written
 * to bench-results/chaos.json.
 */
import { afterAll, beforeAll, describe, test } from 'vitest';
import { startEtcd, type EtcdHandle } from '../support/etcd.js';
import { fleetProcessScript, killAllFleetMembers } from '../support/fleet.js';
import { assertRun, writeResults } from './report.js';
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
  writeResults(results, 'chaos.json');
});

describe.sequential('chaos', () => {
  for (const scenario of SCENARIOS) {
    for (let k = 0; k < RUNS; k++) {
      const seed = process.env.CHAOS_SEED ? BASE_SEED : BASE_SEED + k * 7919 + SCENARIOS.indexOf(scenario);
      test(`${scenario.name} (seed ${seed})`, async () => {
        console.log(`chaos ${scenario.name}: seed ${seed} (replay: CHAOS_SEED=${seed} npx vitest run test/chaos -t ${scenario.name})`);
        const r = await runScenario(scenario, seed, shared);
        results.push(r);
        assertRun(r, scenario);
      }, SOAK ? 900_000 : 180_000);
    }
  }
});
