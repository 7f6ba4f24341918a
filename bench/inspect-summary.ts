/**
 * `inspect` and `jobs` on a large job, before and after the job summary
 * (decision 0040), in one run: seeds a MemoryStore with N splits (spec and
 * split records, a plan, a leader key and the leader's summary), then times
 * and measures each read. Each read runs in a fresh child process so its RSS
 * is its own. Usage (after `npm run build`):
 *   node dist/bench/inspect-summary.js [splits=200000]
 */
import { fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { readFullReport, readJobReport } from '../src/inspect/summary-read.js';
import { listJobs } from '../src/operator/jobs.js';
import { jobPrefix, leaderKey, planKey, specKey, splitKey, summaryKey, workerKey } from '../src/protocol/keys.js';
import { encodeRecord, fingerprintHash } from '../src/protocol/records.js';
import { summaryRecord } from '../src/protocol/summary.js';
import { MemoryStore } from '../src/store/memory.js';

const P = jobPrefix('splitfleet', 'big');

async function seed(n: number): Promise<MemoryStore> {
  const store = new MemoryStore();
  const fp = fingerprintHash('bench-fingerprint');
  const v = 1 as const;
  await store.put(planKey(P), encodeRecord('plan', { v, fp, generation: 1, final: true, planned: n }));
  await store.put(leaderKey(P), encodeRecord('leader', { v, fp, instance: 'w-0', generation: 1 }));
  for (let i = 0; i < 8; i++) await store.put(workerKey(P, `w-${i}`), encodeRecord('worker', { v, fp, instance: `w-${i}`, maxInFlight: 8, nonce: 'n' }));
  let completed = 0;
  for (let i = 0; i < n; i++) {
    const id = `logs/2026/01/part-${String(i).padStart(7, '0')}.gz`;
    const done = i % 3 === 0;
    if (done) completed++;
    await store.put(specKey(P, id), encodeRecord('spec', { v, fp, id, weight: 1000 + (i % 97), descriptor: { bucket: 'b', key: id }, generation: 1 }));
    await store.put(splitKey(P, id), encodeRecord('split', { v, fp, id, epoch: done ? 1 : 0, status: done ? 'completed' : 'runnable', owner: '', attempts: 0 }));
  }
  const t = (splits: number) => ({ splits, weight: splits * 1048 });
  await store.put(summaryKey(P), encodeRecord('summary', summaryRecord({
    fp, generation: 1, writtenAt: Date.now(), plan: { planned: n, final: true }, seeded: n,
    queued: t(n - completed), backoff: t(0), running: t(0), draining: t(0), completed: t(completed), quarantined: t(0), parked: 0, lanes: Array(8).fill(8),
  })));
  return store;
}

async function child(mode: string, n: number): Promise<void> {
  const store = await seed(n);
  global.gc?.();
  const rssBefore = process.memoryUsage().rss;
  const started = performance.now();
  let source = '';
  if (mode === 'inspect-full') source = (await readFullReport({ store, job: 'big' })).splits.total > 0 ? 'records' : '?';
  else if (mode === 'inspect-summary') source = (await readJobReport({ store, job: 'big' })).source;
  else if (mode === 'jobs-full') {
    await store.delete(summaryKey(P)); // an older build's job: no summary, so every split record is counted
    source = (await listJobs({ store }))[0]!.source?.kind ?? '?';
  } else source = (await listJobs({ store }))[0]!.source?.kind ?? '?';
  const ms = performance.now() - started;
  const rssAfter = process.memoryUsage().rss;
  process.send!({ mode, source, ms, rssGrowthMb: (rssAfter - rssBefore) / 2 ** 20, rssMb: rssAfter / 2 ** 20 });
}

async function main(): Promise<void> {
  const n = Number(process.argv[2] ?? 200_000);
  if (process.argv[3] !== undefined) return child(process.argv[3], n);
  const self = fileURLToPath(import.meta.url);
  // The *-full modes are the paths as they were before the summary (every record read).
  for (const mode of ['inspect-full', 'inspect-summary', 'jobs-full', 'jobs']) {
    const r = await new Promise<Record<string, unknown>>((resolve, reject) => {
      const c = fork(self, [String(n), mode], { execArgv: ['--expose-gc'] });
      c.once('message', (m) => resolve(m as Record<string, unknown>));
      c.once('error', reject);
    });
    console.log(JSON.stringify({ splits: n, ...r }));
  }
}

await main();
