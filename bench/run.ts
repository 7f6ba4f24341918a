/**
 * `npm run bench`: decision time of the reference, the WASM engine in-thread
 * and the WASM engine through AssignmentPool (marshalling included), over
 * pool size × members × scenario × weights, each as a ratio to sorting n
 * doubles (Float64Array.prototype.sort) measured in the same run. Also: moved
 * weight of joined/left, the leader's event-loop delay during a large decision
 * (in-thread vs pool), peak RSS of a large decision (child process), the
 * columnar path, the reference once at the largest size, and (issue 14) the
 * largest cell again with the splits built as spread, class instances, extra
 * fields and reordered properties (column "shape").
 *
 *   npm run build && npm run bench -- [--quick] [--json FILE] [--svg FILE] [--budget SECONDS]
 *
 * "first" = a fresh seed every call (nothing reused by wasm.ts's memo);
 * "repeat" = the same input again (the memo's case: a leader's next tick).
 * Cells that would overrun the budget are skipped and listed as skipped.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { Bench } from 'tinybench';
import { desiredAssignment } from '../src/assignment/engine.js';
import { AssignmentPool } from '../src/assignment/pool.js';
import { churn } from '../src/assignment/quality.js';
import type { AssignmentInput } from '../src/assignment/types.js';
import { columnarAssignment } from '../src/assignment/wasm.js';
import { benchArgs, numberArg } from './args.js';
import { coldInput, coldShaped, columnarFrom, joinedFrom, leftFrom, rng, settledFrom, SHAPES, type Scenario, type Shape, type Weights } from './inputs.js';
import { median } from './stats.js';
import { plot, type Series } from './svg.js';

const { values: args } = benchArgs({ quick: { type: 'boolean' }, json: { type: 'string' }, svg: { type: 'string' }, budget: { type: 'string' } });
const QUICK = args.quick === true;
const JSON_FILE = args.json;
const SVG_FILE = args.svg ?? 'bench-results/decision-time.svg';
const BUDGET_S = numberArg('budget', args.budget, QUICK ? 120 : 600);
const SIZES = QUICK ? [10_000, 100_000] : [10_000, 100_000, 1_000_000];
const MEMBERS = QUICK ? [100, 1_000] : [100, 1_000, 10_000];
const BIG = SIZES[SIZES.length - 1]!;
const BIGM = MEMBERS[MEMBERS.length - 1]!;
const REFERENCE_MAX = 100_000;
const SCENARIOS: Scenario[] = ['cold', 'settled', 'joined', 'left'];
const iterationsFor = (n: number): number => (n <= 10_000 ? (QUICK ? 10 : 20) : n <= 100_000 ? (QUICK ? 3 : 7) : 5);
/** At the largest size only the lognormal fleet at every member count, all weights at the largest member count. */
const weightsFor = (n: number, m: number): Weights[] =>
  QUICK ? ['lognormal'] : n < BIG || m === BIGM ? ['equal', 'lognormal', 'giants'] : ['lognormal'];

type Engine = 'sort' | 'reference' | 'wasm' | 'pool' | 'columnar' | 'columnar-pool';
interface Row {
  n: number;
  m: number;
  scenario: Scenario | '-';
  weights: Weights | '-';
  engine: Engine;
  /** How the split objects were built (bench/inputs.ts `Shape`); literal unless stated. */
  shape?: Shape;
  call: 'first' | 'repeat' | 'once' | '-';
  medianMs: number | null;
  runs: number;
  xSort: number | null;
  movedWeightPct?: number;
  movedCount?: number;
  backstopHit?: boolean;
  note?: string;
}

const started = performance.now();
const elapsedS = (): number => (performance.now() - started) / 1000;
const rows: Row[] = [];
const skipped: string[] = [];
const sortMs = new Map<number, number>();
const log = (s: string): void => void process.stderr.write(`[${elapsedS().toFixed(0).padStart(4)}s] ${s}\n`);

/** The median ms of `iterations` timed runs (tinybench times them; stats.ts takes the median, as every bench does). */
async function timedMedian(name: string, fn: () => unknown, iterations: number, beforeEach?: () => void): Promise<number> {
  const bench = new Bench({ iterations, time: 0, warmup: false, throws: true, retainSamples: true });
  bench.add(name, fn as () => void, beforeEach === undefined ? {} : { beforeEach });
  await bench.run();
  const r = bench.tasks[0]!.result;
  if (r.state !== 'completed') throw new Error(`${name}: ${r.state}`);
  return median(r.latency.samples!);
}

function push(r: Omit<Row, 'xSort'>): void {
  const s = sortMs.get(r.n);
  rows.push({ ...r, xSort: r.medianMs === null || s === undefined ? null : r.medianMs / s });
}

async function yardsticks(): Promise<void> {
  for (const n of SIZES) {
    const r = rng(n);
    const src = Float64Array.from({ length: n }, r);
    const work = new Float64Array(n);
    const ms = await timedMedian(`sort ${n}`, () => work.sort(), n >= 1_000_000 ? 9 : 21, () => work.set(src));
    sortMs.set(n, ms);
    push({ n, m: 0, scenario: '-', weights: '-', engine: 'sort', call: '-', medianMs: ms, runs: n >= 1_000_000 ? 9 : 21 });
  }
}

interface Family {
  n: number;
  m: number;
  weights: Weights;
  inputs: Record<Scenario, AssignmentInput>;
  held: Record<string, string[]>;
  weightOf: (id: string) => number;
}

/** Family `f`'s inputs with the splits built as `shape`, same values (the issue-14 row). */
function reshaped(f: Family, shape: Shape): Record<Scenario, AssignmentInput> {
  const settled = settledFrom(f.inputs.cold, f.held, shape);
  return { cold: coldShaped(f.inputs.cold, shape), settled, joined: joinedFrom(settled), left: leftFrom(settled, shape) };
}

/** Every scenario through desiredAssignment for the other input shapes; their own rows. */
async function shapeRows(f: Family): Promise<void> {
  for (const shape of SHAPES) {
    if (shape === 'literal') continue;
    const inputs = reshaped(f, shape);
    for (const scenario of SCENARIOS) {
      const input = inputs[scenario];
      const it = iterationsFor(f.n);
      const base = { n: f.n, m: f.m, scenario, weights: f.weights, engine: 'wasm' as const, shape, runs: it };
      push({ ...base, call: 'first', medianMs: await timedMedian(`wasm ${shape} first`, () => desiredAssignment(withFreshSeed(input)), it) });
      desiredAssignment(input);
      push({ ...base, call: 'repeat', medianMs: await timedMedian(`wasm ${shape} repeat`, () => desiredAssignment(input), it) });
    }
  }
}

function family(n: number, m: number, weights: Weights): Family {
  const cold = coldInput(n, m, weights);
  const held = desiredAssignment(cold).assignment;
  const settled = settledFrom(cold, held);
  const w = new Map(cold.splits.map((s) => [s.id, s.weight]));
  return { n, m, weights, inputs: { cold, settled, joined: joinedFrom(settled), left: leftFrom(settled) }, held, weightOf: (id) => w.get(id) ?? 0 };
}

let fresh = 0;
const withFreshSeed = (input: AssignmentInput): AssignmentInput => ({ ...input, seed: `bench-fresh-${fresh++}` });

async function cell(f: Family, scenario: Scenario, pool: AssignmentPool): Promise<void> {
  const { n, m, weights } = f;
  const input = f.inputs[scenario];
  const it = iterationsFor(n);
  const base = { n, m, scenario, weights };
  const result = desiredAssignment(input);
  const quality: Partial<Row> = { backstopHit: result.stats.backstopHit };
  if (scenario === 'joined' || scenario === 'left') {
    const c = churn(f.held, result.assignment, f.weightOf);
    let total = 0;
    for (const s of input.splits) total += s.weight;
    quality.movedWeightPct = (100 * c.movedWeight) / total;
    quality.movedCount = c.movedCount;
  }
  if (n <= REFERENCE_MAX) {
    const runs = n <= 10_000 ? it : 2;
    push({ ...base, engine: 'reference', call: 'once', medianMs: await timedMedian('reference', () => desiredAssignment(input, { engine: 'reference' }), runs), runs, ...quality });
  }
  push({ ...base, engine: 'wasm', call: 'first', medianMs: await timedMedian('wasm first', () => desiredAssignment(withFreshSeed(input)), it), runs: it, ...quality });
  desiredAssignment(input);
  push({ ...base, engine: 'wasm', call: 'repeat', medianMs: await timedMedian('wasm repeat', () => desiredAssignment(input), it), runs: it, ...quality });
  push({ ...base, engine: 'pool', call: 'first', medianMs: await timedMedian('pool first', () => pool.assign(withFreshSeed(input)), it), runs: it, ...quality });
  await pool.assign(input);
  push({ ...base, engine: 'pool', call: 'repeat', medianMs: await timedMedian('pool repeat', () => pool.assign(input), it), runs: it, ...quality });
}

async function eventLoop(f: Family, pool: AssignmentPool): Promise<Record<string, { maxMs: number; p99Ms: number }>> {
  const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
  const measure = async (run: () => Promise<unknown>): Promise<{ maxMs: number; p99Ms: number }> => {
    const h = monitorEventLoopDelay({ resolution: 1 });
    await sleep(10);
    h.enable();
    await sleep(10);
    await run();
    await sleep(10);
    h.disable();
    return { maxMs: h.max / 1e6, p99Ms: h.percentile(99) / 1e6 };
  };
  const input = f.inputs.cold;
  const inThread = (): Promise<unknown> => new Promise((r) => setImmediate(() => r(desiredAssignment(withFreshSeed(input)))));
  return {
    'in-thread, first call': await measure(inThread),
    'pool, first call': await measure(() => pool.assign(withFreshSeed(input))),
    'pool, repeat': await (async () => {
      await pool.assign(input);
      return measure(() => pool.assign(input));
    })(),
  };
}

async function columnar(f: Family, pool: AssignmentPool): Promise<void> {
  const input = f.inputs.settled;
  const cp = columnarFrom(input);
  const base = { n: f.n, m: f.m, scenario: 'settled' as const, weights: f.weights };
  const t = performance.now();
  columnarAssignment(cp);
  push({ ...base, engine: 'columnar', call: 'first', medianMs: performance.now() - t, runs: 1, note: 'first decision sorts the pool' });
  // Between ticks a few watch events arrive (owner changes keep the cached order).
  const r = rng(9);
  const tick = (): void => {
    for (let k = 0; k < 10; k++) {
      const s = input.splits[Math.floor(r() * input.splits.length)]!;
      cp.setPrevious(s.id, s.previous ?? null);
    }
  };
  const it = iterationsFor(f.n) * 2;
  push({ ...base, engine: 'columnar', call: 'repeat', medianMs: await timedMedian('columnar', () => columnarAssignment(cp), it, tick), runs: it, note: 'ColumnarPool reused between ticks' });
  push({ ...base, engine: 'columnar-pool', call: 'repeat', medianMs: await timedMedian('columnar pool', () => pool.assignColumnar(cp), it, tick), runs: it, note: 'snapshot + thread' });
}

function peakRss(): Record<string, number> | null {
  const child = fileURLToPath(new URL('./rss-child.js', import.meta.url));
  const out = spawnSync(process.execPath, [child, String(BIG), String(BIGM)], { encoding: 'utf8' });
  if (out.status !== 0) {
    skipped.push(`peak RSS child failed: ${out.stderr.trim().split('\n').pop()}`);
    return null;
  }
  return JSON.parse(out.stdout.trim()) as Record<string, number>;
}

function referenceOnce(f: Family): void {
  for (const scenario of ['cold', 'settled'] as const) {
    const t = performance.now();
    desiredAssignment(f.inputs[scenario], { engine: 'reference' });
    push({ n: f.n, m: f.m, scenario, weights: f.weights, engine: 'reference', call: 'once', medianMs: performance.now() - t, runs: 1, note: 'run once, outside tinybench' });
  }
}

const fmt = (x: number | null | undefined, d = 1): string => (x === null || x === undefined ? '-' : x.toFixed(d));

function table(): string {
  const head = ['splits', 'members', 'scenario', 'weights', 'engine', 'shape', 'call', 'median ms', '× sort', 'moved wt %', 'moved', 'backstop', 'runs'];
  const body = rows.map((r) => [
    r.n.toLocaleString('en'), r.m ? r.m.toLocaleString('en') : '-', r.scenario, r.weights, r.engine, r.shape ?? 'literal', r.call, fmt(r.medianMs, 2), fmt(r.xSort, 2),
    fmt(r.movedWeightPct, 3), r.movedCount === undefined ? '-' : String(r.movedCount), r.backstopHit === undefined ? '-' : r.backstopHit ? 'HIT' : 'no', String(r.runs),
  ]);
  const w = head.map((h, i) => Math.max(h.length, ...body.map((b) => b[i]!.length)));
  const line = (cells: string[]): string => `| ${cells.map((c, i) => (i < 7 ? c.padEnd(w[i]!) : c.padStart(w[i]!))).join(' | ')} |`;
  return [line(head), `|${w.map((x, i) => (i < 7 ? '-'.repeat(x + 2) : `${'-'.repeat(x + 1)}:`)).join('|')}|`, ...body.map(line)].join('\n');
}

function svg(): string {
  const m = MEMBERS.includes(1_000) ? 1_000 : MEMBERS[0]!;
  const panels = (['cold', 'settled'] as const).map((scenario) => {
    const pick = (engine: Engine, call: Row['call']): { x: number; y: number }[] =>
      rows.filter((r) => r.m === m && r.scenario === scenario && r.weights === 'lognormal' && r.engine === engine && r.shape === undefined && r.call === call && r.medianMs !== null)
        .map((r) => ({ x: r.n, y: r.medianMs! }));
    const series: Series[] = [
      { name: 'reference', points: pick('reference', 'once') },
      { name: 'wasm in-thread (repeat)', points: pick('wasm', 'repeat') },
      { name: 'wasm in-thread (first call)', points: pick('wasm', 'first'), dashed: true },
      { name: 'wasm via pool (repeat)', points: pick('pool', 'repeat') },
      { name: 'wasm via pool (first call)', points: pick('pool', 'first'), dashed: true },
      { name: 'Float64Array sort of n', points: rows.filter((r) => r.engine === 'sort').map((r) => ({ x: r.n, y: r.medianMs! })) },
    ];
    return { title: `${scenario}, ${m.toLocaleString('en')} members, lognormal weights`, series };
  });
  return plot(panels, `splitfleet bench ${new Date().toISOString().slice(0, 10)}, ${os.cpus().length} cpus, load ${os.loadavg().map((l) => l.toFixed(1)).join('/')}${QUICK ? ', --quick' : ''}`);
}

async function main(): Promise<void> {
  const load0 = os.loadavg();
  const pool = new AssignmentPool({ threads: 1, fallback: false });
  log(`yardsticks (${SIZES.join(', ')})`);
  await yardsticks();
  const specials: Record<string, unknown> = {};
  // The target cell first, then the large-size extras, then the grid from small to large.
  const grid: [number, number, Weights][] = [];
  for (const n of SIZES) for (const m of MEMBERS) for (const w of weightsFor(n, m)) grid.push([n, m, w]);
  const target = grid.findIndex(([n, m, w]) => n === BIG && m === BIGM && w === 'lognormal');
  const order = [grid[target]!, ...grid.filter((_, i) => i !== target)];
  let first = true;
  for (const [n, m, w] of order) {
    if (!first && elapsedS() > BUDGET_S * (n >= BIG ? 0.75 : 0.9)) {
      skipped.push(`${n}×${m} ${w}: all scenarios and engines (run budget ${BUDGET_S}s)`);
      continue;
    }
    log(`family ${n}×${m} ${w}`);
    const f = family(n, m, w);
    for (const s of SCENARIOS) await cell(f, s, pool);
    if (first) {
      first = false;
      log('input shapes (spread, class, extra fields, reordered)');
      await shapeRows(f);
      log('columnar path');
      await columnar(f, pool);
      log('event-loop delay');
      specials.eventLoop = await eventLoop(f, pool);
      log('peak RSS (child)');
      specials.peakRss = peakRss();
      if (!QUICK && BIG > REFERENCE_MAX) {
        log('reference once at the largest size');
        referenceOnce(f);
      }
    }
  }
  await pool.close();
  rows.sort((a, b) => a.n - b.n || a.m - b.m || a.weights.localeCompare(b.weights) || a.scenario.localeCompare(b.scenario));
  const machine = {
    cpus: os.cpus().length, model: os.cpus()[0]?.model, node: process.version, platform: `${os.platform()} ${os.release()}`,
    memGiB: os.totalmem() / 2 ** 30, loadAtStart: load0, loadAtEnd: os.loadavg(), totalSeconds: elapsedS(),
  };
  console.log(`splitfleet bench${QUICK ? ' (--quick)' : ''}: ${machine.cpus} cpus (${machine.model}), node ${machine.node}`);
  console.log(`load average at start ${load0.map((l) => l.toFixed(2)).join(' ')}, at end ${machine.loadAtEnd.map((l) => l.toFixed(2)).join(' ')}; ${elapsedS().toFixed(0)} s`);
  console.log('reference only up to 100k splits in the loop (at the largest size: run once). "first" = fresh seed each call; "repeat" = same input again.\n');
  console.log(table());
  console.log('\nevent-loop delay of the calling thread during a cold decision at the largest size (ms):');
  for (const [k, v] of Object.entries((specials.eventLoop ?? {}) as Record<string, { maxMs: number; p99Ms: number }>)) {
    console.log(`  ${k.padEnd(24)} max ${fmt(v.maxMs)}  p99 ${fmt(v.p99Ms)}`);
  }
  const rss = specials.peakRss as Record<string, number> | null;
  if (rss) console.log(`peak RSS of one ${rss.n}×${rss.m} decision (child process): ${fmt(rss.peakRssMiB, 0)} MiB (input alone ${fmt(rss.inputRssMiB, 0)} MiB; decision ${fmt(rss.decisionMs, 0)} ms)`);
  if (skipped.length > 0) console.log(`\nskipped:\n${skipped.map((s) => `  ${s}`).join('\n')}`);
  if (JSON_FILE !== undefined) {
    mkdirSync(dirname(JSON_FILE), { recursive: true });
    writeFileSync(JSON_FILE, JSON.stringify({ machine, quick: QUICK, budgetSeconds: BUDGET_S, rows, specials, skipped }, null, 2));
  }
  mkdirSync(dirname(SVG_FILE), { recursive: true });
  writeFileSync(SVG_FILE, svg());
  console.log(`\nplot: ${SVG_FILE}${JSON_FILE ? `; json: ${JSON_FILE}` : ''}`);
}

await main();
