/**
 * The 1M × 10k matrix of issue 14, per input shape: cold, settled, joined and
 * left through `desiredAssignment` (first call and repeat) and through
 * `AssignmentPool.assign` (with the caller's event-loop max delay); joined
 * and left also as a change from the settled input with the same seed (what
 * a leader decides when a member comes or goes: the memo's keys and order
 * are reused, the decision is not); plus
 * `AssignmentPool.assignColumnar` on a `ColumnarPool` with and without a
 * cached order (in a child of its own that keeps only the pool, as a leader
 * does: the object inputs' heap would otherwise stretch every GC pause). Each shape runs in a child process of its own, so that one
 * shape's hidden classes cannot slow another's property loads (V8's inline
 * caches are per process). Ratios are to `Float64Array.prototype.sort` of the
 * n weights, timed in the same child.
 *
 *   npm run build && node dist/bench/shapes.js [--n 1000000] [--m 10000] [--shapes literal,spread] [--runs 5] [--json FILE]
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { monitorEventLoopDelay, PerformanceObserver } from 'node:perf_hooks';
import { ColumnarPool } from '../src/assignment/codec.js';
import { desiredAssignment } from '../src/assignment/engine.js';
import { AssignmentPool } from '../src/assignment/pool.js';
import type { AssignmentInput } from '../src/assignment/types.js';
import { coldInput, coldShaped, columnarFrom, joinedFrom, leftFrom, rng, settledFrom, SHAPES, type Scenario, type Shape } from './inputs.js';
import { benchArgs, numberArg } from './args.js';
import { median } from './stats.js';

const { values: args } = benchArgs({
  n: { type: 'string' }, m: { type: 'string' }, runs: { type: 'string' }, shapes: { type: 'string' }, json: { type: 'string' },
  'no-columnar': { type: 'boolean' }, child: { type: 'string' }, 'columnar-child': { type: 'boolean' },
});
const N = numberArg('n', args.n, 1_000_000);
const M = numberArg('m', args.m, 10_000);
const RUNS = numberArg('runs', args.runs, 5);
const SCENARIOS: Scenario[] = ['cold', 'settled', 'joined', 'left'];
/** Scenarios also timed as a change from the settled input (the same seed): what a leader decides when a member joins or leaves. */
const CHANGES: Scenario[] = ['joined', 'left'];

export interface ShapeRow {
  shape: Shape;
  scenario: Scenario | 'columnar';
  path: 'wasm' | 'pool' | 'columnar-pool';
  /** first: a fresh seed (nothing reused); change: right after the settled input, same seed (a leader's next tick after a join or leave); repeat: the same input again. */
  call: 'first' | 'change' | 'repeat';
  medianMs: number;
  xSort: number;
  /** Largest event-loop delay of the caller over the runs (pool paths only). */
  loopMaxMs?: number;
  /** The largest gap of a 1 ms timer less the GC pauses within it. */
  ownMaxMs?: number;
  /**
   * The largest time the loop was busy within one such gap, less the GC
   * pauses within it: what the library's own steps held the loop. A gap is
   * the loop busy (running code or collecting) or idle but woken late (its
   * thread not scheduled: on 2 cores, while the pool thread and V8's
   * background threads run); `ownMaxMs` counts both.
   */
  busyMaxMs?: number;
}


function sortYardstick(n: number): number {
  const src = Float64Array.from({ length: n }, rng(n));
  const work = new Float64Array(n);
  const xs: number[] = [];
  for (let k = 0; k < 9; k++) {
    work.set(src);
    const t = performance.now();
    work.sort();
    xs.push(performance.now() - t);
  }
  return median(xs);
}

let fresh = 0;
const withFreshSeed = (input: AssignmentInput): AssignmentInput => ({ ...input, seed: `shapes-fresh-${fresh++}` });

/**
 * Median time of `runs` calls of f, the caller's largest event-loop delay
 * (monitorEventLoopDelay), and the largest such stall less the GC pauses
 * inside it (a 1 ms timer's gaps, minus the `gc` performance entries that
 * overlap each), as opposed to the collector's pauses over the caller's
 * whole heap; and of that, the time the loop was busy, not idle
 * (`eventLoopUtilization` read at each tick): what the library's own
 * synchronous steps held the loop, as opposed to a late wake-up.
 */
async function timed(runs: number, f: () => unknown, before?: () => unknown): Promise<{ ms: number; loopMaxMs: number; ownMaxMs: number; busyMaxMs: number }> {
  const xs: number[] = [];
  let loopMax = 0;
  let ownMax = 0;
  let busyMax = 0;
  for (let k = 0; k < runs; k++) {
    // Untimed and unwatched: what the timed call follows (the settled decision, for 'change').
    if (before !== undefined) await before();
    const gcs: [number, number][] = [];
    const obs = new PerformanceObserver((list) => {
      for (const e of list.getEntries()) gcs.push([e.startTime, e.startTime + e.duration]);
    });
    obs.observe({ entryTypes: ['gc'] });
    // Each gap: its start, end, and the loop's busy time within it.
    const gaps: [number, number, number][] = [];
    let last = performance.now();
    let lastActive = performance.eventLoopUtilization().active;
    const tick = setInterval(() => {
      const now = performance.now();
      const active = performance.eventLoopUtilization().active;
      if (now - last > 2) gaps.push([last, now, active - lastActive]);
      last = now;
      lastActive = active;
    }, 1);
    const h = monitorEventLoopDelay({ resolution: 1 });
    h.enable();
    // The histogram misses a stall that starts before its first tick (a 50 ms block right after enable() read 1.4 ms).
    await new Promise((r) => setTimeout(r, 5));
    const t = performance.now();
    await f();
    xs.push(performance.now() - t);
    await new Promise((r) => setTimeout(r, 5));
    h.disable();
    clearInterval(tick);
    await new Promise((r) => setImmediate(r));
    obs.disconnect();
    loopMax = Math.max(loopMax, h.max / 1e6);
    for (const [a, b, busy] of gaps) {
      let paused = 0;
      for (const [g0, g1] of gcs) paused += Math.max(0, Math.min(b, g1) - Math.max(a, g0));
      ownMax = Math.max(ownMax, b - a - paused);
      busyMax = Math.max(busyMax, busy - paused);
    }
  }
  return { ms: median(xs), loopMaxMs: loopMax, ownMaxMs: ownMax, busyMaxMs: busyMax };
}

async function child(shape: Shape): Promise<{ sortMs: number; rows: ShapeRow[] }> {
  const sortMs = sortYardstick(N);
  const base = coldInput(N, M, 'lognormal');
  const held = desiredAssignment(base).assignment;
  const settled = settledFrom(base, held, shape);
  const inputs: Record<Scenario, AssignmentInput> = {
    cold: coldShaped(base, shape), settled, joined: joinedFrom(settled), left: leftFrom(settled, shape),
  };
  const rows: ShapeRow[] = [];
  const push = (r: Omit<ShapeRow, 'xSort' | 'shape'>): void => void rows.push({ shape, ...r, xSort: r.medianMs / sortMs });
  for (const scenario of SCENARIOS) {
    const input = inputs[scenario];
    push({ scenario, path: 'wasm', call: 'first', medianMs: (await timed(RUNS, () => desiredAssignment(withFreshSeed(input)))).ms });
    if (CHANGES.includes(scenario)) {
      push({ scenario, path: 'wasm', call: 'change', medianMs: (await timed(RUNS, () => desiredAssignment(input), () => desiredAssignment(settled))).ms });
    }
    desiredAssignment(input);
    push({ scenario, path: 'wasm', call: 'repeat', medianMs: (await timed(RUNS, () => desiredAssignment(input))).ms });
  }
  const pool = new AssignmentPool({ threads: 1, fallback: false });
  for (const scenario of SCENARIOS) {
    const input = inputs[scenario];
    const first = await timed(RUNS, () => pool.assign(withFreshSeed(input)));
    push({ scenario, path: 'pool', call: 'first', medianMs: first.ms, loopMaxMs: first.loopMaxMs, ownMaxMs: first.ownMaxMs, busyMaxMs: first.busyMaxMs });
    if (CHANGES.includes(scenario)) {
      const change = await timed(RUNS, () => pool.assign(input), () => pool.assign(settled));
      push({ scenario, path: 'pool', call: 'change', medianMs: change.ms, loopMaxMs: change.loopMaxMs, ownMaxMs: change.ownMaxMs, busyMaxMs: change.busyMaxMs });
    }
    await pool.assign(input);
    const repeat = await timed(RUNS, () => pool.assign(input));
    push({ scenario, path: 'pool', call: 'repeat', medianMs: repeat.ms, loopMaxMs: repeat.loopMaxMs, ownMaxMs: repeat.ownMaxMs, busyMaxMs: repeat.busyMaxMs });
  }
  await pool.close();
  return { sortMs, rows };
}

/** Settled 1M × 10k as a ColumnarPool, the objects it was built from left to the collector (a leader's heap). */
function settledColumnar(): ColumnarPool {
  const base = coldInput(N, M, 'lognormal');
  return columnarFrom(settledFrom(base, desiredAssignment(base).assignment));
}

/** The leader's path: a ColumnarPool with no cached order (a split was added), then with it. */
async function columnarChild(): Promise<{ sortMs: number; rows: ShapeRow[] }> {
  const sortMs = sortYardstick(N);
  const cp = settledColumnar();
  const pool = new AssignmentPool({ threads: 1, fallback: false });
  const rows: ShapeRow[] = [];
  const push = (r: Omit<ShapeRow, 'xSort' | 'shape'>): void => void rows.push({ shape: 'literal', ...r, xSort: r.medianMs / sortMs });
  const r = rng(7);
  await pool.assignColumnar(cp);
  const noOrder = await timed(RUNS, async () => {
    cp.upsertSplit(`shapes-new-${fresh++}`, 1 + Math.floor(r() * 1e6));
    await pool.assignColumnar(cp);
  });
  push({ scenario: 'columnar', path: 'columnar-pool', call: 'first', medianMs: noOrder.ms, loopMaxMs: noOrder.loopMaxMs, ownMaxMs: noOrder.ownMaxMs, busyMaxMs: noOrder.busyMaxMs });
  await pool.assignColumnar(cp);
  const kept = await timed(RUNS, () => pool.assignColumnar(cp));
  push({ scenario: 'columnar', path: 'columnar-pool', call: 'repeat', medianMs: kept.ms, loopMaxMs: kept.loopMaxMs, ownMaxMs: kept.ownMaxMs, busyMaxMs: kept.busyMaxMs });
  await pool.close();
  return { sortMs, rows };
}

async function main(): Promise<void> {
  if (args['columnar-child'] === true) {
    console.log(JSON.stringify(await columnarChild()));
    return;
  }
  const childShape = (args.child ?? null) as Shape | null;
  if (childShape !== null) {
    console.log(JSON.stringify(await child(childShape)));
    return;
  }
  const shapes = (args.shapes ?? SHAPES.join(',')).split(',') as Shape[];
  const load0 = os.loadavg();
  const self = fileURLToPath(import.meta.url);
  const all: ShapeRow[] = [];
  const sorts: Record<string, number> = {};
  const runs: [string, string[]][] = shapes.map((shape) => [shape, ['--child', shape]]);
  if (args['no-columnar'] !== true) runs.push(['columnar', ['--columnar-child']]);
  for (const [shape, childArgs] of runs) {
    process.stderr.write(`shape ${shape}\n`);
    const out = spawnSync(process.execPath, [self, ...childArgs, '--n', String(N), '--m', String(M), '--runs', String(RUNS)], { encoding: 'utf8', maxBuffer: 1 << 24 });
    if (out.status !== 0) throw new Error(`shape ${shape} failed: ${out.stderr}`);
    const res = JSON.parse(out.stdout.trim().split('\n').pop()!) as { sortMs: number; rows: ShapeRow[] };
    sorts[shape] = res.sortMs;
    all.push(...res.rows);
    // Each shape as it finishes, so that a long run's partial figures are not lost.
    process.stderr.write(`${JSON.stringify(res)}\n`);
  }
  console.log(`shapes bench ${N}×${M} lognormal, ${RUNS} runs per cell; ${os.cpus().length} cpus, node ${process.version}`);
  console.log(`load average at start ${load0.map((l) => l.toFixed(2)).join(' ')}, at end ${os.loadavg().map((l) => l.toFixed(2)).join(' ')}`);
  console.log(`sort of ${N} doubles per child (ms): ${Object.entries(sorts).map(([k, v]) => `${k} ${v.toFixed(1)}`).join(', ')}\n`);
  console.log('| shape | scenario | path | call | median ms | × sort | loop max ms | less GC ms | busy less GC ms |');
  console.log('|---|---|---|---|---:|---:|---:|---:|---:|');
  const ms = (x: number | undefined): string => (x === undefined ? '' : x.toFixed(1));
  for (const r of all) {
    console.log(`| ${r.shape} | ${r.scenario} | ${r.path} | ${r.call} | ${r.medianMs.toFixed(1)} | ${r.xSort.toFixed(2)} | ${ms(r.loopMaxMs)} | ${ms(r.ownMaxMs)} | ${ms(r.busyMaxMs)} |`);
  }
  const file = args.json;
  if (file !== undefined) {
    mkdirSync(dirname(file), { recursive: true });
    writeFileSync(file, JSON.stringify({ n: N, m: M, runs: RUNS, node: process.version, load0, load1: os.loadavg(), sorts, rows: all }, null, 2));
  }
}

await main();
