/**
 * What both chaos test files (chaos.test.ts, in `npm test`; etcd-chaos.slow.ts,
 * in `npm run chaos:etcd`) assert of one run, and the one-line figures they
 * print and write to bench-results/. The assertions use vitest's `expect`;
 * the run itself is run-scenario.ts's.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { expect } from 'vitest';
import { repoRoot } from '../support/fleet.js';
import type { Scenario, ScenarioResult } from './scenarios.js';

/** The suite's promises for one run: no violation (auditor and history check), no stall, no loss, no defect. */
export function assertRun(r: ScenarioResult, scenario: Scenario): void {
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
  // The history check saw the members' calls (the store-call log preload was loaded), so its silence means something.
  expect(r.history.acknowledged, `acknowledged writes in the store-call logs${context}`).toBeGreaterThan(0);
}

/** One line of figures per run. */
export function resultRow(r: ScenarioResult): string {
  const f = r.figures;
  const t = f.transitions;
  const h = r.history;
  return `${r.scenario.padEnd(20)} seed ${String(r.seed).padEnd(9)} faults ${String(r.faults).padStart(2)}  units ${f.unitsPlanned}/${f.unitsProcessed}` +
    `  dup ${f.duplicates}/${f.replayBound}  maxReplay ${f.maxReplay}  coop ${t.cooperative} declined ${t.declined} forced ${t.forced} failed ${t.failed} takeover ${t.takeover} reclaim ${t.reclaim}` +
    `  terms ${f.leaderTerms}${f.folded > 0 ? `  folded ${f.folded} (${f.buckets} buckets)` : ''}  attempts ${f.maxAttempts}  start-failures ${r.crashes.length}` +
    `  calls ${h.calls} (writes ${h.writes}: acked ${h.acknowledged}, unknown ${h.unknown} of which landed ${h.unknownLanded}, failed ${h.failed}; reads ${h.reads}; lease deletes ${h.leaseDeletes})` +
    `${r.summary ? `  ${r.summary}` : ''}  ${(r.completeMs / 1000).toFixed(1)}s`;
}

/** Prints the rows and writes the results (less their long descriptions) to bench-results/<file>. */
export function writeResults(results: ScenarioResult[], file: string): void {
  if (results.length === 0) return;
  console.log(`chaos results (commitEvery 5):\n${results.map(resultRow).join('\n')}`);
  const dir = `${repoRoot()}/bench-results`;
  mkdirSync(dir, { recursive: true });
  writeFileSync(`${dir}/${file}`, JSON.stringify(results.map(({ describe: _, ...r }) => r), null, 1));
}
