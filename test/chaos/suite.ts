/**
 * One chaos suite's frame, shared by the default suite (chaos.test.ts) and
 * the one against etcd itself (etcd-chaos.slow.ts): a shared etcd, one test
 * per scenario and seed (CHAOS_SEED replays one; CHAOS_SOAK runs three),
 * each run audited by `assertRun`, every member killed and the figures
 * written at the end.
 */
import { afterAll, beforeAll, describe, test } from 'vitest';
import { startEtcd, type EtcdHandle } from '../support/etcd.js';
import { fleetProcessScript, killAllFleetMembers } from '../support/fleet.js';
import { assertRun, writeResults } from './report.js';
import { runScenario } from './run-scenario.js';
import { SOAK, type Scenario, type ScenarioResult } from './scenarios.js';

export interface ChaosSuite {
  readonly title: string;
  readonly scenarios: readonly Scenario[];
  /** The seed of a suite's first run when CHAOS_SEED does not name one. */
  readonly baseSeed: number;
  /** Under bench-results/. */
  readonly resultsFile: string;
  /** The command that replays one run, printed before it. */
  readonly replay: (seed: number, scenario: string) => string;
  /** A run's bound outside a soak. */
  readonly timeoutMs: number;
  /** Checked before anything starts (a missing tool fails loudly). */
  readonly before?: () => void;
}

export function chaosSuite(s: ChaosSuite): void {
  const baseSeed = process.env.CHAOS_SEED ? Number(process.env.CHAOS_SEED) : s.baseSeed;
  const runs = process.env.CHAOS_SEED ? 1 : SOAK ? 3 : 1;
  const results: ScenarioResult[] = [];
  let shared: EtcdHandle;

  beforeAll(async () => {
    if (!process.env.CHAOS_FLEET_SCRIPT) fleetProcessScript(); // loud failure when dist/ is missing
    s.before?.();
    shared = await startEtcd();
  });

  afterAll(async () => {
    await killAllFleetMembers();
    await shared?.stop();
    writeResults(results, s.resultsFile);
  });

  describe.sequential(s.title, () => {
    for (const scenario of s.scenarios) {
      for (let k = 0; k < runs; k++) {
        const seed = process.env.CHAOS_SEED ? baseSeed : baseSeed + k * 7919 + s.scenarios.indexOf(scenario);
        test(`${scenario.name} (seed ${seed})`, async () => {
          console.log(`chaos ${scenario.name}: seed ${seed} (replay: ${s.replay(seed, scenario.name)})`);
          const r = await runScenario(scenario, seed, shared);
          results.push(r);
          assertRun(r, scenario);
        }, SOAK ? 900_000 : s.timeoutMs);
      }
    }
  });
}
