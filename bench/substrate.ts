/**
 * Measurements of the coordination substrate on a real, throwaway etcd
 * (loopback, one member). Nothing here asserts; it prints a table.
 *
 *   claims (txn)    8 workers, each with its own connection and etcd lease,
 *                   send the worker's claim transaction over N splits: from a
 *                   shared queue (each split tried once), and as a race (every
 *                   worker tries every split, in its own order): won claims/s,
 *                   and transactions/s including the lost ones.
 *   claims (fleet)  8 coordinators (own connections, maxInFlight 8) on a final
 *                   plan of N splits whose handler completes at once: claims/s
 *                   from the first claim to the last completion.
 *   takeover        2 fleet processes; SIGKILL the owner of a long split and
 *                   time until the split's record shows the next tenancy
 *                   (epoch 2, through a watch), for each lease duration asked.
 *
 * Run: npx tsc -p tsconfig.json && node dist/bench/substrate.js
 *        [--splits 2000] [--workers 8] [--kills 3] [--leases 3000[,30000]] [--only txn,fleet,kill]
 * The takeover rows need the compiled fleet member (dist/src/testing/fleet-process.js).
 */

import { performance } from 'node:perf_hooks';
import { startCoordinator, type Coordinator } from '../src/coordinator/coordinator.js';
import { silentLogger } from '../src/coordinator/log.js';
import { defaultFingerprint } from '../src/config.js';
import { classifyClaim, initialSplitRecord } from '../src/protocol/claims.js';
import { claimTxn } from '../src/protocol/txns.js';
import { jobPrefix } from '../src/protocol/keys.js';
import { seedWrites } from '../src/protocol/leader-txns.js';
import { MAX_RECORD_BYTES } from '../src/protocol/record-bounds.js';
import { decodeRecord, fingerprintHash } from '../src/protocol/records.js';
import { EtcdStore } from '../src/store/etcd/etcd.js';
import { shuffled } from '../src/prng.js';
import { benchArgs, numberArg } from './args.js';
import { startBenchEtcd, type BenchEtcd } from './etcd.js';
import { median } from './stats.js';
import { killAllFleetMembers, spawnFleet } from '../test/support/fleet.js';
import { waitUntil } from '../test/support/wait.js';

interface Row { measure: string; setting: string; result: string }


const ids = (n: number) => Array.from({ length: n }, (_, i) => `s-${String(i).padStart(5, '0')}`);

/**
 * Seeds spec + split records for `n` splits, 60 pairs a transaction, with the leader's own seeding writes
 * (protocol/ seedWrites) but none of its guards: no leader runs here. Returns each record's revision.
 */
async function seed(store: EtcdStore, prefix: string, fp: string, n: number): Promise<Map<string, number>> {
  const all = ids(n);
  for (let i = 0; i < all.length; i += 60) {
    const batch = all.slice(i, i + 60).flatMap((id) => seedWrites(prefix, fp, 0, { id, weight: 1 }, MAX_RECORD_BYTES));
    await store.txn({ compares: [], success: batch });
  }
  const listed = await store.listAll(`${prefix}split.`);
  return new Map(listed.kvs.map((kv) => [kv.key.slice(`${prefix}split.`.length), kv.modRevision]));
}

async function claimTxnBench(endpoint: string, n: number, workers: number, race: boolean): Promise<Row[]> {
  const job = `bench-claims-${race ? 'race' : 'queue'}-${Date.now()}`;
  const prefix = jobPrefix('splitfleet', job);
  const fp = fingerprintHash(defaultFingerprint('splitfleet', job));
  const admin = new EtcdStore({ endpoints: [endpoint] });
  const revisions = await seed(admin, prefix, fp, n);
  const clients = Array.from({ length: workers }, () => new EtcdStore({ endpoints: [endpoint] }));
  const leases = await Promise.all(clients.map((c) => c.grantLease(60)));
  let won = 0;
  let lost = 0;
  const started = performance.now();
  // queue: the workers share one queue, every split is tried once; race: every worker tries every split.
  const queue = shuffled([...revisions.keys()], 99);
  const next = (w: number, i: number): string | undefined => (race ? undefined : queue.shift()) ?? (race ? orders[w]![i] : undefined);
  const orders = race ? clients.map((_, w) => shuffled([...revisions.keys()], w + 1)) : [];
  await Promise.all(clients.map(async (client, w) => {
    const me = `w-${w}`;
    for (let i = 0, id = next(w, i); id !== undefined; id = next(w, ++i)) {
      // The worker's own claim transaction (protocol/txns.ts claimTxn, the progress read included), on the
      // record at the revision its view holds: what the fleet sends, not a lighter copy (issue 51).
      const rec = initialSplitRecord(id, fp);
      const c = classifyClaim(rec, undefined, me, 4);
      if (c.kind === 'unclaimable') continue;
      const writer = { prefix, me, nonce: me, sessionLease: leases[w]!, fp };
      const { txn } = claimTxn(writer, id, { kind: 'claim', claim: c.kind, consumesAttempt: c.consumesAttempt }, { rec, modRevision: revisions.get(id)! }, undefined, 4);
      const res = await client.txn(txn);
      if (res.won) won++;
      else lost++;
    }
  }));
  const seconds = (performance.now() - started) / 1000;
  // Check: every split has exactly one owner at epoch 1.
  const listed = await admin.listAll(`${prefix}split.`);
  const owned = listed.kvs.filter((kv) => {
    const r = decodeRecord('split', kv.key, kv.value, fp);
    return r.epoch === 1 && r.owner !== '';
  }).length;
  await Promise.all(clients.map((c, i) => c.revokeLease(leases[i]!).then(() => c.close())));
  await admin.close();
  return [{
    measure: race ? 'claims (txn, 8-way race)' : 'claims (txn, shared queue)',
    setting: race ? `${workers} workers each try all ${n} splits` : `${workers} workers, ${n} splits, each tried once`,
    result: `${Math.round(won / seconds)} won claims/s, ${Math.round((won + lost) / seconds)} txn/s (${won} won, ${lost} lost; ${owned}/${n} owned exactly once)`,
  }];
}

async function fleetBench(endpoint: string, n: number, workers: number): Promise<Row[]> {
  const job = `bench-fleet-${Date.now()}`;
  const clients = Array.from({ length: workers }, () => new EtcdStore({ endpoints: [endpoint] }));
  let first = 0;
  let last = 0;
  let runs = 0;
  const planner = () => ({ final: true, splits: ids(n).map((id) => ({ id, weight: 1 + (Number(id.slice(2)) % 7) })) });
  const t0 = performance.now();
  const fleet: Coordinator[] = await Promise.all(clients.map((store, i) => startCoordinator({
    store, job, instance: `w-${i}`, maxInFlight: 8, leaseDurationMs: 10_000, opTimeoutMs: 5_000, rebalanceDelayMs: 0,
    logger: silentLogger, planner,
    handler: async (s) => {
      if (runs++ === 0) first = performance.now();
      await s.complete(1);
      last = performance.now();
    },
  })));
  const verdicts = await Promise.all(fleet.map((c) => c.done));
  const end = performance.now();
  await Promise.all(clients.map((c) => c.close()));
  const seconds = (last - first) / 1000;
  return [{
    measure: 'claims (fleet)',
    setting: `${workers} coordinators × maxInFlight 8, ${n} splits, instant handler`,
    result: `${Math.round(n / seconds)} claims/s (${runs} runs; first claim ${((first - t0) / 1000).toFixed(2)} s after start, all ${verdicts[0]} after ${((end - t0) / 1000).toFixed(2)} s)`,
  }];
}

async function takeoverBench(endpoint: string, leaseMs: number, trials: number): Promise<Row[]> {
  const samples: number[] = [];
  for (let t = 0; t < trials; t++) {
    const job = `bench-kill-${leaseMs}-${t}-${Date.now()}`;
    const prefix = jobPrefix('splitfleet', job);
    const fp = fingerprintHash(defaultFingerprint('splitfleet', job));
    const watcher = new EtcdStore({ endpoints: [endpoint] });
    let movedAt = 0;
    const h = watcher.watch(`${prefix}split.`, {
      onEvent: (e) => {
        if (e.type === 'put' && movedAt === 0 && decodeRecord('split', e.key, e.value ?? '', fp).epoch === 2) movedAt = performance.now();
      },
    });
    await h.ready;
    const opTimeoutMs = Math.min(10_000, leaseMs / 3);
    const members = spawnFleet({
      endpoint, job, splits: 1, seed: 1, maxInFlight: 1, unitMs: 20, commitEvery: 5, minUnits: 100_000, maxUnits: 100_000,
      config: { leaseDurationMs: leaseMs, opTimeoutMs, rebalanceDelayMs: 0, drainDeadlineMs: opTimeoutMs },
    }, ['k-a', 'k-b']);
    const owner = await waitUntil('a claim', () => members.find((m) => m.has('claimed')), { timeoutMs: 30_000 });
    await owner.waitFor((e) => e.ev === 'unit' && (e.unit as number) >= 20, 30_000);
    const killedAt = performance.now();
    await owner.kill('SIGKILL');
    await waitUntil('the takeover', () => movedAt > 0, { timeoutMs: leaseMs * 2 + 30_000, intervalMs: 5 });
    samples.push(movedAt - killedAt);
    await killAllFleetMembers();
    await h.close();
    await watcher.close();
  }
  const fmt = (ms: number) => `${(ms / 1000).toFixed(2)} s`;
  return [{
    measure: 'SIGKILL → claimed elsewhere',
    setting: `leaseDurationMs ${leaseMs}, rebalanceDelayMs 0, ${trials} kill(s)`,
    result: `min ${fmt(Math.min(...samples))}, median ${fmt(median(samples))}, max ${fmt(Math.max(...samples))}`,
  }];
}

function printTable(rows: Row[]): void {
  const widths = (['measure', 'setting', 'result'] as const).map((k) => Math.max(k.length, ...rows.map((r) => r[k].length)));
  const line = (cells: string[]) => `| ${cells.map((c, i) => c.padEnd(widths[i]!)).join(' | ')} |`;
  console.log(line(['measure', 'setting', 'result']));
  console.log(`|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`);
  for (const r of rows) console.log(line([r.measure, r.setting, r.result]));
}

async function main(): Promise<void> {
  const { values: v } = benchArgs({ splits: { type: 'string' }, workers: { type: 'string' }, kills: { type: 'string' }, leases: { type: 'string' }, only: { type: 'string' } });
  const n = numberArg('splits', v.splits, 2000);
  const workers = numberArg('workers', v.workers, 8);
  const kills = numberArg('kills', v.kills, 3);
  const leases = (v.leases ?? '3000').split(',').map((x) => numberArg('leases', x, NaN));
  const only = new Set((v.only ?? 'txn,fleet,kill').split(','));
  let etcd: BenchEtcd | undefined;
  try {
    etcd = await startBenchEtcd();
    const rows: Row[] = [];
    if (only.has('txn')) {
      rows.push(...(await claimTxnBench(etcd.endpoint, n, workers, false)));
      rows.push(...(await claimTxnBench(etcd.endpoint, n, workers, true)));
    }
    if (only.has('fleet')) rows.push(...(await fleetBench(etcd.endpoint, n, workers)));
    if (only.has('kill')) for (const lease of leases) rows.push(...(await takeoverBench(etcd.endpoint, lease, lease >= 20_000 ? 1 : kills)));
    console.log(`etcd ${etcd.endpoint} (loopback, single member), node ${process.version}`);
    printTable(rows);
  } finally {
    await killAllFleetMembers();
    await etcd?.stop();
  }
}

main().then(
  () => process.exit(0),
  (e) => {
    console.error(e);
    process.exit(1);
  },
);
