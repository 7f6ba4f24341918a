/**
 * Decoding queue pages the way a leader does by the thousand (promotions, a
 * new term's listing): `parsePageText`, which reads the ids from the text
 * (page-ids.ts, decision 0048), against `JSON.parse` of the same texts, which
 * internalizes every id shorter than 10 characters; and the whole
 * `decodeRecord('queue')` (the parse, then the schema's checks). Each page holds
 * 1,024 ids never seen before, as a leader's pages do; each mode runs in a
 * child of its own holding a 300 MB heap like a 1M leader's. Per page: the
 * main thread's own CPU (process.threadCpuUsage, Node 22.19 and later; the
 * process's before, in 4 ms ticks on some machines), mean / p99 / max,
 * pages over 20 ms, and the total.
 * JSON.parse's long pages with short ids fall where V8's string table doubles
 * (after about 160k, 330k, 670k, 1.4M, 2.8M ids): each growth rehashes every
 * entry in one go, 16 to 224 ms here, and no collection is involved.
 *
 *   npm run build && node dist/bench/probes/page-decode.js [--pages 5000]
 */
import { spawnSync } from 'node:child_process';
import os from 'node:os';
import { fileURLToPath } from 'node:url';
import { PerformanceObserver } from 'node:perf_hooks';
import { jobPrefix, queueKey } from '../../src/protocol/keys.js';
import { parsePageText } from '../../src/protocol/page-ids.js';
import { decodeRecord, encodeRecord, fingerprintHash } from '../../src/protocol/records.js';
import { quantile } from '../stats.js';
import { benchArgs, numberArg } from '../args.js';

// A child is `--child MODE ID_LENGTH`.
const { values: args, positionals } = benchArgs({ pages: { type: 'string' }, child: { type: 'boolean' } });
const PAGES = numberArg('pages', args.pages, 5000);
const MODES = ['JSON.parse', 'parsePageText', 'decodeRecord'] as const;
const ID_LENGTHS = [9, 14];
const WARM_UP = 100;

interface Figures { meanUs: number; p99Ms: number; maxMs: number; over20: number; totalMs: number; majorGcs: number }

type ThreadCpu = (prev?: NodeJS.CpuUsage) => NodeJS.CpuUsage;
const cpuUsage: ThreadCpu = (process as unknown as { threadCpuUsage?: ThreadCpu }).threadCpuUsage?.bind(process) ?? process.cpuUsage.bind(process);

function child(mode: string, idLength: number): void {
  const fp = fingerprintHash('page-decode');
  const key = queueKey(jobPrefix('splitfleet', 'bench'), 0, 0);
  const heap: { a: number; b: string; c: number[] }[] = [];
  for (let i = 0; i < 3_000_000; i++) heap.push({ a: i, b: `x${i}`, c: [i] });
  const pageText = (p: number): string => {
    const ids: string[] = [];
    const weights: number[] = [];
    for (let i = 0; i < 1024; i++) {
      ids.push(`s${p * 1024 + i}`.padStart(idLength, '0'));
      weights.push(1 + (i % 97));
    }
    return encodeRecord('queue', { v: 1, fp, bucket: 0, page: 0, generation: 1, ids, weights, descriptors: ids.map(() => null) });
  };
  const decode = mode === 'JSON.parse' ? (t: string): unknown => JSON.parse(t)
    : mode === 'parsePageText' ? parsePageText
      : (t: string): unknown => decodeRecord('queue', key, t, fp);
  let majorGcs = 0;
  new PerformanceObserver((list) => {
    for (const e of list.getEntries()) if (((e as unknown as { detail?: { kind?: number } }).detail?.kind ?? 0) !== 1) majorGcs++;
  }).observe({ entryTypes: ['gc'] });
  const cpu: number[] = [];
  const recent: unknown[] = [];
  // Unmeasured: the young generation grows to its working size (one scavenge of 45-85 ms here).
  for (let p = 0; p < WARM_UP; p++) decode(pageText(PAGES + p));
  for (let p = 0; p < PAGES; p++) {
    const text = pageText(p); // outside the measure: only the decode is timed
    const before = cpuUsage();
    const rec = decode(text);
    const used = cpuUsage(before);
    cpu.push((used.user + used.system) / 1000);
    recent.push(rec); // a page cache's worth stays alive, as in the leader
    if (recent.length > 64) recent.shift();
  }
  setTimeout(() => {
    const figures: Figures = {
      meanUs: (1000 * cpu.reduce((a, b) => a + b, 0)) / cpu.length, p99Ms: quantile(cpu, 0.99), maxMs: Math.max(...cpu), over20: cpu.filter((c) => c > 20).length,
      totalMs: cpu.reduce((a, b) => a + b, 0), majorGcs,
    };
    process.stdout.write(`${JSON.stringify({ figures, held: heap.length })}\n`);
  }, 100);
}

function main(): void {
  const script = fileURLToPath(import.meta.url);
  process.stdout.write(`page-decode: ${PAGES} pages of 1,024 new ids each; Node ${process.version}; load ${os.loadavg().map((l) => l.toFixed(2)).join(' ')}\n`);
  process.stdout.write('| ids | decode | mean µs | p99 ms | max ms | pages over 20 ms | total CPU ms | major GCs | total vs JSON.parse |\n|---|---|---|---|---|---|---|---|---|\n');
  for (const idLength of ID_LENGTHS) {
    let yardstick = 0;
    for (const mode of MODES) {
      const run = spawnSync(process.execPath, [script, '--child', mode, String(idLength), '--pages', String(PAGES)], { encoding: 'utf8', maxBuffer: 1 << 20 });
      if (run.status !== 0) throw new Error(`child ${mode} ${idLength} failed: ${run.stderr}`);
      const f = (JSON.parse(run.stdout.trim().split('\n').pop()!) as { figures: Figures }).figures;
      if (mode === 'JSON.parse') yardstick = f.totalMs;
      process.stdout.write(`| ${idLength} chars | ${mode} | ${f.meanUs.toFixed(0)} | ${f.p99Ms.toFixed(2)} | ${f.maxMs.toFixed(1)} | ${f.over20} | ${f.totalMs.toFixed(0)} | ${f.majorGcs} | ${(f.totalMs / yardstick).toFixed(2)}× |\n`);
    }
  }
  process.stdout.write(`load after: ${os.loadavg().map((l) => l.toFixed(2)).join(' ')}\n`);
}

if (args.child === true) child(positionals[0]!, Number(positionals[1]));
else main();
