/**
 * Sets beside each other the JSON files of `bench/shapes.ts` runs: per cell,
 * the median ms and × sort of each run (before; after), and the caller's
 * longest stall less GC, with the part of it the loop was busy (runs that
 * did not record it show –). Prints a Markdown table.
 *
 *   node dist/bench/compare-shapes.js before-1.json,before-2.json after-1.json,after-2.json [--labels node20,node22]
 *
 * `--labels A,B` names the two sides (default before,after): the same
 * commit on two runtimes, say (decision 0022).
 */
import { readFileSync } from 'node:fs';
import type { ShapeRow } from './shapes.js';
import { benchArgs } from './args.js';

interface Run {
  /** The runtime the run was on (runs before this field: not recorded). */
  node?: string;
  load0: number[];
  sorts: Record<string, number>;
  rows: ShapeRow[];
}

const { values, positionals } = benchArgs({ labels: { type: 'string', default: 'before,after' } });
const [nameB, nameA] = values.labels.split(',');
const [beforeArg, afterArg] = positionals;
if (beforeArg === undefined || afterArg === undefined || nameB === undefined || nameA === undefined) {
  console.error('usage: compare-shapes BEFORE.json[,BEFORE2.json] AFTER.json[,AFTER2.json] [--labels BEFORE,AFTER]');
  process.exit(2);
}
const load = (list: string): Run[] => list.split(',').map((f) => JSON.parse(readFileSync(f, 'utf8')) as Run);
const before = load(beforeArg);
const after = load(afterArg);
const key = (r: ShapeRow): string => `${r.shape}|${r.scenario}|${r.path}|${r.call}`;
const cell = (runs: Run[], k: string): ShapeRow[] => runs.flatMap((run) => run.rows.filter((r) => key(r) === k));
const fmt = (rows: ShapeRow[]): string => rows.map((r) => `${r.medianMs.toFixed(0)} (${r.xSort.toFixed(2)})`).join(', ');
const own = (rows: ShapeRow[]): string => (rows[0]?.ownMaxMs === undefined ? ''
  : rows.map((r) => `${r.ownMaxMs!.toFixed(0)}/${r.busyMaxMs === undefined ? '–' : r.busyMaxMs.toFixed(0)}`).join(', '));

for (const [name, runs] of [[nameB, before], [nameA, after]] as const) {
  for (const r of runs) {
    console.log(`${name}${r.node === undefined ? '' : ` (node ${r.node})`}: load at start ${r.load0.map((l) => l.toFixed(2)).join(' ')}; sort ${Object.entries(r.sorts).map(([s, v]) => `${s} ${v.toFixed(0)}`).join(', ')} ms`);
  }
}
console.log(`\n| shape | scenario | path | call | ${nameB} ms (× sort) | ${nameA} ms (× sort) | less GC / busy ms, ${nameB} | less GC / busy ms, ${nameA} |`);
console.log('|---|---|---|---|---|---|---|---|');
for (const r of before[0]!.rows) {
  const k = key(r);
  const b = cell(before, k);
  const a = cell(after, k);
  console.log(`| ${r.shape} | ${r.scenario} | ${r.path} | ${r.call} | ${fmt(b)} | ${fmt(a)} | ${own(b)} | ${own(a)} |`);
}
