/**
 * Runs one chaos scenario (scenarios.ts): sets up etcd (shared, private, or a
 * 3-member cluster) and the proxies, starts the fleet, runs the script, heals
 * whatever it broke, waits for the job to finish, and audits the whole
 * history. Every run is reproducible from (scenario, seed) up to OS
 * scheduling; the seed is printed, and CHAOS_SEED replays one.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { resumeInstance, resumeJob } from '../../src/operator/control.js';
import { controlKey, jobPrefix } from '../../src/protocol/keys.js';
import { EtcdStore } from '../../src/store/etcd/etcd.js';
import { startEtcd, type EtcdHandle } from '../support/etcd.js';
import { checkHistory, parseStoreLog } from '../support/history-check.js';
import { Auditor } from './auditor.js';
import { EtcdCluster } from './cluster.js';
import { PeerIsolation } from './faults.js';
import { TcpProxy } from './proxy.js';
import { ChaosRun } from './runner.js';
import { instrument } from './store-log.mjs';
import { NAMES, SOAK, type Scenario, type ScenarioContext, type ScenarioResult } from './scenarios.js';

/** Runs one scenario with one seed against `shared` (for topology 'shared' and 'proxied'). */
export async function runScenario(s: Scenario, seed: number, shared: EtcdHandle): Promise<ScenarioResult> {
  const job = `chaos-${s.name}-${seed}-${Date.now() % 1_000_000}`;
  const proxies = new Map<string, TcpProxy>();
  let etcd: EtcdHandle | undefined;
  let cluster: EtcdCluster | undefined;
  let auditor: Auditor | undefined;
  let run: ChaosRun | undefined;
  let operator: EtcdStore | undefined;
  let isolation: PeerIsolation | undefined;
  const storeLogDir = mkdtempSync(join(tmpdir(), 'splitfleet-chaos-calls-'));
  let keepLogs = false;
  try {
    if (s.topology === 'private') etcd = await startEtcd();
    if (s.isolate) isolation = PeerIsolation.create();
    if (s.topology === 'cluster') cluster = await EtcdCluster.start(3, { ...(isolation ? { isolation } : {}), ...(s.preVote ? { preVote: true } : {}) });
    // The auditor and the operator talk to members that are never cut off, so they never go blind.
    const direct = cluster ? cluster.stableEndpoints : [(etcd ?? shared).endpoint];
    if (s.topology === 'proxied') {
      for (const name of NAMES) proxies.set(name, await TcpProxy.start(direct[0]!));
    }
    auditor = await Auditor.start(direct, job);
    const settings = s.settings(seed);
    const members = cluster ? cluster.endpoints : direct;
    run = new ChaosRun(job, settings, auditor, (instance) => s.endpointsFor?.(instance, { cluster, direct }) ?? (proxies.has(instance) ? [proxies.get(instance)!.url] : members), seed, storeLogDir);
    operator = new EtcdStore({ endpoints: direct });
    instrument(operator, join(storeLogDir, 'operator.jsonl'), 'operator');
    const ctx: ScenarioContext = { run, etcd, cluster, proxies, operator, ...(isolation ? { isolation } : {}) };
    if (s.start) await s.start(ctx);
    else for (const name of NAMES) run.spawn(name);
    await run.until('the plan to be seeded', () => auditor!.planned !== undefined, 30_000);
    await s.chaos(ctx);
    // Heal: nothing stays broken once the script is over.
    for (const p of proxies.values()) {
      p.setLatency(0);
      p.heal('deliver');
    }
    for (const name of run.live) run.resume(name);
    await releaseOperatorHolds(operator, job);
    if (isolation?.isCut) isolation.heal();
    if (cluster) for (let i = 0; i < 3; i++) if (!cluster.isRunning(i)) await cluster.restart(i);
    run.note('chaos over');
    const completeMs = await run.waitComplete(SOAK ? 300_000 : 60_000);
    const report = auditor.audit(run.ledger(), { commitEvery: settings.commitEvery });
    for (const detail of await auditor.missedEvents()) report.violations.push({ check: 'recorder-missed-event', detail });
    // The history check: every store call the members and the operator logged, held to etcd's recorded history.
    const history = checkHistory(auditor.history, parseStoreLog(run.storeLogLines()), { prefix: auditor.prefix, slackMs: 25 });
    for (const x of history.violations) report.violations.push({ check: `history-${x.check}`, revisions: x.revisions, detail: x.detail });
    // Kept on a violation (or with CHAOS_KEEP_CALLS=1), with the recorded history beside them, to check again by hand.
    keepLogs = history.violations.length > 0 || process.env.CHAOS_KEEP_CALLS === '1';
    if (keepLogs) writeFileSync(join(storeLogDir, 'history.json'), JSON.stringify({ prefix: auditor.prefix, events: auditor.history }));
    if (history.violations.length > 0) report.violations.push({ check: 'history-logs', detail: `store-call logs and history kept in ${storeLogDir}` });
    else if (keepLogs) console.log(`chaos ${s.name}: store-call logs and history kept in ${storeLogDir}`);
    return {
      scenario: s.name, seed, job, figures: report.figures, violations: report.violations, faults: run.faults,
      crashes: run.crashes, verdicts: run.verdicts(), completeMs, expectation: s.expect?.(report.figures) ?? s.expectRun?.(ctx), describe: run.describe(), history: history.figures,
      ...(s.summary ? { summary: s.summary(ctx) } : {}),
    };
  } catch (e) {
    if (run) (e as Error).message += `\n${run.describe()}`;
    throw e;
  } finally {
    await run?.finish();
    await auditor?.close().catch(() => undefined);
    await operator?.close().catch(() => undefined);
    for (const p of proxies.values()) await p.close();
    await etcd?.stop();
    await cluster?.stop();
    isolation?.destroy();
    if (!keepLogs) rmSync(storeLogDir, { recursive: true, force: true });
  }
}

/** Heal: no operator hold outlives the script (resume the job and every evacuated instance). */
async function releaseOperatorHolds(store: EtcdStore, job: string): Promise<void> {
  const kv = await store.get(controlKey(jobPrefix('splitfleet', job)));
  if (!kv) return;
  await resumeJob({ store, job }).catch(() => undefined);
  for (const e of (JSON.parse(kv.value) as { evacuated: { instance: string }[] }).evacuated) {
    await resumeInstance({ store, job, instance: e.instance }).catch(() => undefined);
  }
}
