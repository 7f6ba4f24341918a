/**
 * `inspect`, `jobs` and the dashboard's first page on a large job, before
 * and after the job summary (decision 0040), in one run: seeds a store with N
 * splits (spec and split records, a plan, a leader key, members and the
 * leader's summary), then times and measures each read. Each read runs in a
 * fresh child process so its RSS is its own.
 *
 * On a MemoryStore (the default) each child seeds its own copy; with
 * `--etcd` the parent seeds one throwaway etcd (bench/etcd.ts) and every
 * child reads it over the network, as an operator's tool would. The `*-full`
 * modes are the paths as they were before the summary (every record read);
 * `--etcd` leaves them out past 200k splits, where they take minutes.
 * `--packed` seeds a packed job instead (decision 0037: queue pages, a third
 * of them folded back as completed), as a 10M job would be kept.
 * Usage (after `npm run build`):
 *   node dist/bench/inspect-summary.js [splits=200000] [--etcd] [--packed]
 */
import { fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { serveDashboard } from '../src/dashboard/serve.js';
import { readFullReport, readJobReport } from '../src/inspect/summary-read.js';
import { listJobs } from '../src/operator/jobs.js';
import { foldedKey, jobPrefix, leaderKey, planKey, specKey, splitKey, summaryKey, workerKey } from '../src/protocol/keys.js';
import { bucketing, bucketsFor, cutPages, FoldedBits } from '../src/protocol/packed.js';
import { queuePagePut } from '../src/protocol/packed-txns.js';
import { encodeRecord, fingerprintHash, type Json } from '../src/protocol/records.js';
import { summaryRecord } from '../src/protocol/summary.js';
import { EtcdStore } from '../src/store/etcd/etcd.js';
import { MemoryStore } from '../src/store/memory.js';
import type { Op, Store } from '../src/store/store.js';
import { benchArgs, numberArg } from './args.js';
import { startBenchEtcd } from './etcd.js';

const P = jobPrefix('splitfleet', 'big');
/** `--mode` and `--endpoint` are the children's (each child reads one mode, from the parent's etcd when given). */
const OPTIONS = { etcd: { type: 'boolean' }, packed: { type: 'boolean' }, mode: { type: 'string' }, endpoint: { type: 'string' } } as const;
/** Splits per seeding transaction (two puts each: etcd's default --max-txn-ops is 128), and transactions in flight. */
const SPLITS_PER_TXN = 64;
const IN_FLIGHT = 8;

const splitId = (i: number) => `logs/2026/01/part-${String(i).padStart(7, '0')}.gz`;

/** A packed job's queue: its splits' pages, each with the folded record of its completed third. Returns the completed count. */
async function seedPages(store: Store, n: number, fp: string): Promise<number> {
  const buckets = bucketsFor(n);
  const byBucket: number[][] = Array.from({ length: buckets }, () => []);
  const bucketOf = bucketing(fp, buckets);
  for (let i = 0; i < n; i++) byBucket[bucketOf(splitId(i))]!.push(i);
  const pages: { bucket: number; page: number; splits: { id: string; weight: number; descriptor: Json }[]; done: number[] }[] = [];
  let completed = 0;
  byBucket.forEach((members, bucket) => {
    const splits = members.map((i) => ({ id: splitId(i), weight: 1000 + (i % 97), descriptor: { bucket: 'b', key: splitId(i) } }));
    cutPages(splits, 1_500_000).forEach(([start, end], page) => {
      const done = members.slice(start, end).flatMap((i, slot) => (i % 3 === 0 ? [slot] : []));
      completed += done.length;
      pages.push({ bucket, page, splits: splits.slice(start, end), done });
    });
  });
  let next = 0;
  const worker = async (): Promise<void> => {
    for (; next < pages.length;) {
      const p = pages[next++]!;
      const bits = FoldedBits.empty().with(p.done).encode();
      await store.txn({ compares: [], success: [queuePagePut(P, fp, 1, p, 1_500_000), { op: 'put', key: foldedKey(P, p.bucket, p.page), value: encodeRecord('folded', { v: 1, fp, bucket: p.bucket, page: p.page, bits }) }] });
    }
  };
  await Promise.all(Array.from({ length: IN_FLIGHT }, worker));
  await store.put(planKey(P), encodeRecord('plan', { v: 2, fp, generation: 1, final: true, planned: n, layout: 'packed', buckets }));
  return completed;
}

async function seed(store: Store, n: number): Promise<void> {
  const fp = fingerprintHash('bench-fingerprint');
  const v = 1 as const;
  const packed = benchArgs(OPTIONS).values.packed === true;
  if (!packed) await store.put(planKey(P), encodeRecord('plan', { v, fp, generation: 1, final: true, planned: n }));
  await store.put(leaderKey(P), encodeRecord('leader', { v, fp, instance: 'w-0', generation: 1 }));
  for (let i = 0; i < 8; i++) await store.put(workerKey(P, `w-${i}`), encodeRecord('worker', { v, fp, instance: `w-${i}`, maxInFlight: 8, nonce: 'n' }));
  let completed = packed ? await seedPages(store, n, fp) : 0;
  let next = packed ? n : 0;
  const batch = (): Op[] => {
    const ops: Op[] = [];
    for (const end = Math.min(n, next + SPLITS_PER_TXN); next < end; next++) {
      const i = next;
      const id = splitId(i);
      const done = i % 3 === 0;
      if (done) completed++;
      ops.push({ op: 'put', key: specKey(P, id), value: encodeRecord('spec', { v, fp, id, weight: 1000 + (i % 97), descriptor: { bucket: 'b', key: id }, generation: 1 }) });
      ops.push({ op: 'put', key: splitKey(P, id), value: encodeRecord('split', { v, fp, id, epoch: done ? 1 : 0, status: done ? 'completed' : 'runnable', owner: '', attempts: 0 }) });
    }
    return ops;
  };
  const worker = async (): Promise<void> => {
    while (next < n) await store.txn({ compares: [], success: batch() });
  };
  await Promise.all(Array.from({ length: IN_FLIGHT }, worker));
  const t = (splits: number) => ({ splits, weight: splits * 1048 });
  await store.put(summaryKey(P), encodeRecord('summary', summaryRecord({
    fp, generation: 1, writtenAt: Date.now(), plan: { planned: n, final: true }, seeded: n,
    queued: t(n - completed), backoff: t(0), running: t(0), draining: t(0), completed: t(completed), quarantined: t(0), parked: 0, lanes: Array(8).fill(8),
  })));
}

/** Longest the dashboard mode waits for its background snapshot of every record, s; and how long it watches a summary-only dashboard. */
const SNAPSHOT_WAIT_S = 240;
const SUMMARY_ONLY_WATCH_S = 30;

/**
 * The dashboard's first page: the server started on the job, `GET /` and the
 * state it renders (`GET /api/state`) answered; RSS then. Then how long its
 * background snapshot of every record took to replace the summary view, and
 * its RSS at most meanwhile (the dashboard's memory at that scale); or, above
 * its followRecordsUpTo (decision 0042), its RSS at most over 30 s of
 * following the summary alone.
 */
async function dashboardFirstPage(store: Store): Promise<{ source: string; firstPageMs: number; extra: Record<string, number | null> }> {
  const started = performance.now();
  const dashboard = await serveDashboard({ store, job: 'big' });
  const page = await fetch(dashboard.url);
  await page.text();
  const state = async () => (await (await fetch(new URL('api/state', dashboard.url))).json()) as { source?: { kind?: string; followsRecords?: boolean } };
  const first = await state();
  if (page.status !== 200 || first.source?.kind === undefined) throw new Error(`first page: HTTP ${page.status}, state ${JSON.stringify(first).slice(0, 200)}`);
  const firstPageMs = performance.now() - started;
  const firstPageRssMb = process.memoryUsage().rss / 2 ** 20;
  let maxRssMb = firstPageRssMb;
  const summaryOnly = first.source.followsRecords === false;
  let snapshotS: number | null = first.source.kind === 'records' ? 0 : null;
  for (let i = 0; snapshotS === null && i < (summaryOnly ? SUMMARY_ONLY_WATCH_S : SNAPSHOT_WAIT_S); i++) {
    await new Promise((r) => setTimeout(r, 1000));
    maxRssMb = Math.max(maxRssMb, process.memoryUsage().rss / 2 ** 20);
    if ((await state()).source?.kind === 'records') snapshotS = (performance.now() - started) / 1000;
  }
  await dashboard.close();
  const source = `first page from ${first.source.kind}${summaryOnly ? ', summary only' : ''}`;
  return { source, firstPageMs, extra: { firstPageRssMb, snapshotS, [summaryOnly ? 'rssMaxOver30sMb' : 'rssMaxUntilSnapshotMb']: maxRssMb } };
}

async function child(mode: string, n: number, endpoint: string | undefined): Promise<void> {
  let store: Store;
  if (endpoint !== undefined) store = new EtcdStore({ endpoints: endpoint, opTimeoutMs: 60_000 });
  else await seed((store = new MemoryStore()), n);
  global.gc?.();
  const rssBefore = process.memoryUsage().rss;
  const started = performance.now();
  let source = '';
  let extra: Record<string, number | null> = {};
  let firstPageMs: number | undefined;
  if (mode === 'dashboard') ({ source, firstPageMs, extra } = await dashboardFirstPage(store));
  else if (mode === 'inspect-full') source = (await readFullReport({ store, job: 'big' })).splits.total > 0 ? 'records' : '?';
  else if (mode === 'inspect-summary') source = (await readJobReport({ store, job: 'big' })).source;
  else if (mode === 'jobs-full') {
    await store.delete(summaryKey(P)); // an older build's job: no summary, so every split record is counted
    source = (await listJobs({ store }))[0]!.source?.kind ?? '?';
  } else source = (await listJobs({ store }))[0]!.source?.kind ?? '?';
  const ms = firstPageMs ?? performance.now() - started; // the dashboard's wait for its snapshot is not its first page
  const rssAfter = process.memoryUsage().rss;
  process.send!({ mode, source, ms, rssGrowthMb: (rssAfter - rssBefore) / 2 ** 20, rssMb: rssAfter / 2 ** 20, ...extra });
  await store.close();
}

async function main(): Promise<void> {
  const { values: args, positionals } = benchArgs(OPTIONS);
  const n = numberArg('splits', positionals[0], 200_000);
  const { mode, endpoint } = args;
  if (mode !== undefined) return child(mode, n, endpoint);
  const self = fileURLToPath(import.meta.url);
  const onEtcd = args.etcd === true;
  const etcd = onEtcd ? await startBenchEtcd() : undefined;
  try {
    if (etcd) {
      const store = new EtcdStore({ endpoints: etcd.endpoint, opTimeoutMs: 60_000 });
      const started = performance.now();
      await seed(store, n);
      await store.close();
      console.log(JSON.stringify({ splits: n, seeded: 'etcd', seedS: (performance.now() - started) / 1000 }));
    }
    // jobs-full deletes the summary (an older build's job), so it runs last: on etcd the children share one job.
    const modes = ['inspect-full', 'inspect-summary', 'jobs', 'dashboard', 'jobs-full'].filter((m) => !(onEtcd && n > 200_000 && m.endsWith('-full')));
    for (const m of modes) {
      const r = await new Promise<Record<string, unknown>>((resolve, reject) => {
        const c = fork(self, [String(n), `--mode=${m}`, ...(etcd ? [`--endpoint=${etcd.endpoint}`] : []), ...(args.packed === true ? ['--packed'] : [])], { execArgv: ['--expose-gc'] });
        c.once('message', (msg) => resolve(msg as Record<string, unknown>));
        c.once('error', reject);
        c.once('exit', (code) => (code === 0 ? undefined : reject(new Error(`${m}: child exited ${code}`))));
      });
      console.log(JSON.stringify({ splits: n, store: onEtcd ? 'etcd' : 'memory', layout: args.packed === true ? 'packed' : 'keys', ...r }));
    }
  } finally {
    await etcd?.stop();
  }
}

await main();
