/**
 * `npm run chaos:etcd`: the chaos scenarios against etcd itself and the
 * members' clocks (etcd-scenarios.ts: a cluster member cut off from its
 * peers with clients pinned to it, fsync stalls longer than the lease, wall
 * clock steps on workers), each audited like the default chaos suite
 * (chaos.test.ts) and held to the history check. Not in `npm test`: about a
 * minute per scenario on two cores (the CI budget); the file name is outside
 * the default include, and vitest.etcd.config.ts includes it.
 *
 * Needs root (a network namespace, ptrace), iproute2, strace and gcc, and the
 * compiled fleet member (`npm run build:ts`); a missing one fails loudly.
 * CHAOS_SEED=<n> replays one seed; CHAOS_SOAK=1 runs three seeds with longer
 * schedules; figures go to bench-results/chaos-etcd.json.
 */
import { afterAll, beforeAll, describe, test } from 'vitest';
import { startEtcd, type EtcdHandle } from '../support/etcd.js';
import { fleetProcessScript, killAllFleetMembers } from '../support/fleet.js';
import { ETCD_SCENARIOS } from './etcd-scenarios.js';
import { requireTool } from './faults.js';
import { assertRun, writeResults } from './report.js';
import { runScenario } from './run-scenario.js';
import { SOAK, type ScenarioResult } from './scenarios.js';

const BASE_SEED = process.env.CHAOS_SEED ? Number(process.env.CHAOS_SEED) : 20261207;
const RUNS = process.env.CHAOS_SEED ? 1 : SOAK ? 3 : 1;
const results: ScenarioResult[] = [];
let shared: EtcdHandle;

beforeAll(async () => {
  if (!process.env.CHAOS_FLEET_SCRIPT) fleetProcessScript(); // loud failure when dist/ is missing
  for (const tool of ['ip', 'strace', 'gcc'] as const) requireTool(tool);
  shared = await startEtcd();
});

afterAll(async () => {
  await killAllFleetMembers();
  await shared?.stop();
  writeResults(results, 'chaos-etcd.json');
});

describe.sequential('chaos against etcd and clocks', () => {
  for (const scenario of ETCD_SCENARIOS) {
    for (let k = 0; k < RUNS; k++) {
      const seed = process.env.CHAOS_SEED ? BASE_SEED : BASE_SEED + k * 7919 + ETCD_SCENARIOS.indexOf(scenario);
      test(`${scenario.name} (seed ${seed})`, async () => {
        console.log(`chaos ${scenario.name}: seed ${seed} (replay: CHAOS_SEED=${seed} npm run chaos:etcd -- -t ${scenario.name})`);
        const r = await runScenario(scenario, seed, shared);
        results.push(r);
        assertRun(r, scenario);
      }, SOAK ? 900_000 : 240_000);
    }
  }
});
