#!/usr/bin/env node
/**
 * `npm run bench:peers [-- --quick] [--json FILE] [--scenarios a,b] [--systems a,b] [--prefetch N] [--divide on|off] [--progress awaited|behind]`:
 * one synthetic job run by splitfleet (on a throwaway etcd), BullMQ and
 * hand-rolled Redis `SET NX PX` locks (on a throwaway redis-server), the same
 * items, fleet shape and paced handler for all, every worker its own OS
 * process; a table per scenario and, with --json, the summary
 * `{ scenarios: { <name>: { <system>: figures } }, loadAverage: { start, end } }`.
 * It starts and stops its own etcd and redis-server (both must be on PATH).
 * Decision 0036 says why the shapes and knobs are what they are.
 *
 * Scenarios: skewed, kill, stall, join, tiny by default; `--scenarios giant`
 * adds giant (issue 48): 100 items (σ 1) and one item carrying 40 % of all
 * units, which splitfleet's handler divides (divisibleRange over the item's
 * unit range) and the queues, which cannot divide, run whole. Its bound is
 * total / lanes (not the giant's own length), so the figure says how close
 * to perfectly balanced each system got. Not in the default set: the CI smoke
 * test (test/bench/peers.test.ts) lists the default scenarios and times the run.
 *
 * `--divide off`: splitfleet's handler does not call divisibleRange, so it
 * declines every division ask and runs each item whole (as a handler written
 * before decision 0063 would); default on, in every scenario. Run a scenario
 * once with each to compare (the issue's target: skewed no worse with it on).
 *
 * `--progress behind`: every system's handler goes on while its progress
 * write is in flight (splitfleet's `split.advance`, committed by the lane as
 * often as the awaited handler commits; the queues' write not awaited);
 * default `awaited`, each write waited for. What it buys is what an awaited
 * commit costs the handler; what it risks is the units since the last write
 * that landed, redone after a kill.
 */
import { writeFileSync } from 'node:fs';
import { availableParallelism, loadavg } from 'node:os';
import { startBenchEtcd } from '../etcd.js';
import { peerItems, SYSTEMS, type SystemName } from './items.js';
import { startBenchRedis } from './redis.js';
import { killWorkers, runScenario, type Scenario, type ScenarioResult } from './scenario.js';

type Name = Scenario['name'];
const NAMES: readonly Name[] = ['skewed', 'kill', 'stall', 'join', 'tiny', 'giant'];
/** What runs without --scenarios (giant is asked for by name: see the header). */
const DEFAULT_NAMES: readonly Name[] = ['skewed', 'kill', 'stall', 'join', 'tiny'];

/** Same fleet shape everywhere: 4 workers × 2 lanes, a 2 s lease / lock, progress every 5 units. */
export function scenarios(quick: boolean): Scenario[] {
  const base = { workers: 4, lanes: 2, commitEvery: 5, leaseMs: 2000, unitMs: quick ? 5 : 10, capMs: quick ? 25_000 : 600_000 };
  const skewed = (count: number, seed: number) => ({ count, seed, medianUnits: 4, sigma: 1.5, maxUnits: 2000 });
  return [
    { ...base, name: 'skewed', items: skewed(quick ? 300 : 3000, 1) },
    { ...base, name: 'kill', items: skewed(quick ? 200 : 2000, 2), at: 0.3 },
    { ...base, name: 'stall', items: skewed(quick ? 200 : 2000, 3), at: 0.3, stallMs: 3 * base.leaseMs },
    { ...base, name: 'join', items: skewed(quick ? 200 : 2000, 4), at: 0.5 },
    // Quick: 30 s. A CI run beside a simulation (load 4-6) went past a 15 s cap: splitfleet turns tiny
    // items over at ~200/s idle (a split costs etcd round trips and a decision), and slower with the cores taken.
    { ...base, name: 'tiny', items: { count: quick ? 1000 : 100_000, seed: 5, medianUnits: 1, sigma: 0, maxUnits: 1 }, unitMs: 1, capMs: quick ? 30_000 : 600_000 },
    // Quick: about 6,300 units, a bound of 4 s; the queues take the giant's ~2,500 units × 5 ms whole
    // (~13 s each), so the scenario takes ~40 s. Full: ~28,000 units of 10 ms, a bound of ~35 s.
    {
      ...base, name: 'giant', bound: 'lanes', capMs: quick ? 60_000 : 900_000,
      items: { count: 100, seed: 6, medianUnits: quick ? 18 : 80, sigma: 1, maxUnits: 1_000_000, giantShare: 0.4 },
    },
  ];
}

const COLUMNS: Record<Name, [string, (r: ScenarioResult) => string][]> = {
  skewed: [['makespan/bound', (r) => r.makespanRatio.toFixed(2)], ['first unit after', (r) => ms(r.firstUnitMs)], ['utilisation', (r) => pct(r.utilisation)], ['units/worker max/mean', (r) => r.perWorkerMaxOverMean.toFixed(2)], ['divisions', (r) => String(r.divisions)]],
  kill: [['lost', (r) => String(r.lost)], ['duplicates', (r) => String(r.duplicates)], ['redone', (r) => String(r.redoneUnits)], ['runs elsewhere after', (r) => ms(r.recoveryMs)], ['makespan/bound', (r) => r.makespanRatio.toFixed(2)]],
  stall: [['stale writes', (r) => String(r.staleWrites)], ['refused writes', (r) => String(r.refusedWrites)], ['duplicates', (r) => String(r.duplicates)], ['redone', (r) => String(r.redoneUnits)], ['lost', (r) => String(r.lost)], ['runs elsewhere after', (r) => ms(r.recoveryMs)]],
  join: [['busy after join', (r) => ms(r.joinBusyMs)], ['joiner units', (r) => String(r.joinerUnits)], ['moved share', (r) => pct((r.joinerUnits ?? 0) / r.totalUnits)], ['makespan/bound', (r) => r.makespanRatio.toFixed(2)]],
  tiny: [['items/s', (r) => r.itemsPerSecond.toFixed(0)], ['first unit after', (r) => ms(r.firstUnitMs)], ['makespan', (r) => ms(r.makespanMs)]],
  // makespan/bound here is makespan / (total units × unitMs ÷ lanes): scenario 'giant' sets bound 'lanes', so
  // measure does not raise the bound to the giant's own length (which would flatter whoever runs it whole).
  giant: [
    ['makespan/bound', (r) => r.makespanRatio.toFixed(2)], ['makespan', (r) => ms(r.makespanMs)], ['utilisation', (r) => pct(r.utilisation)],
    ['lost', (r) => String(r.lost)], ['duplicates', (r) => String(r.duplicates)], ['divisions', (r) => String(r.divisions)], ['first unit after', (r) => ms(r.firstUnitMs)],
  ],
};
const pct = (x: number) => `${(100 * x).toFixed(0)} %`;
const ms = (x: number | null) => (x === null ? '–' : `${(x / 1000).toFixed(2)} s`);

function table(name: Name, s: Scenario, rows: [SystemName, ScenarioResult][]): string {
  const cols = COLUMNS[name];
  const head = ['system', ...cols.map((c) => c[0]), 'complete'];
  const body = rows.map(([sys, r]) => [sys, ...cols.map((c) => c[1](r)), r.complete ? 'yes' : 'NO']);
  const widths = head.map((h, i) => Math.max(h.length, ...body.map((b) => b[i]!.length)));
  const line = (cells: string[]) => `| ${cells.map((c, i) => c.padEnd(widths[i]!)).join(' | ')} |`;
  const r0 = rows[0]?.[1];
  const giant = s.items.giantShare === undefined ? '' : ` (the giant: ${peerItems(s.items)[0]!.units})`;
  return [
    `\n${name}: ${r0?.items ?? s.items.count} items, ${r0?.totalUnits ?? '?'} units${giant} of ${s.unitMs} ms, ${s.workers} workers × ${s.lanes} lanes`,
    line(head), line(widths.map((w) => '-'.repeat(w))), ...body.map(line),
  ].join('\n');
}

interface Args {
  quick: boolean;
  json?: string;
  names: Name[];
  systems: SystemName[];
  prefetch?: number;
  /** splitfleet's handler divides (divisibleRange) or runs each item whole. */
  divide: 'on' | 'off';
  /** Every system's handler waits for each progress write, or goes on while it is in flight (worker-shell.ts PROGRESS). */
  progress: 'awaited' | 'behind';
}

function parse(argv: string[]): Args {
  const out: Args = { quick: false, names: [...DEFAULT_NAMES], systems: [...SYSTEMS], divide: 'on', progress: 'awaited' };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--quick') out.quick = true;
    else if (a === '--json') out.json = argv[++i];
    else if (a === '--scenarios') out.names = (argv[++i] ?? '').split(',') as Name[];
    else if (a === '--systems') out.systems = (argv[++i] ?? '').split(',') as SystemName[];
    else if (a === '--prefetch') {
      // splitfleet's prefetch depth (default: the library's, one per lane), handed to its workers.
      const n = Number(argv[++i]);
      if (!Number.isSafeInteger(n) || n < 0) throw new Error(`bench:peers: --prefetch: must be an integer ≥ 0 (got ${argv[i]})`);
      out.prefetch = n;
    } else if (a === '--divide') {
      const v = argv[++i];
      if (v !== 'on' && v !== 'off') throw new Error(`bench:peers: --divide: must be on or off (got ${v})`);
      out.divide = v;
    } else if (a === '--progress') {
      const v = argv[++i];
      if (v !== 'awaited' && v !== 'behind') throw new Error(`bench:peers: --progress: must be awaited or behind (got ${v})`);
      out.progress = v;
    } else throw new Error(`bench:peers: unknown argument '${a}' (--quick, --json FILE, --scenarios ${NAMES.join(',')}, --systems ${SYSTEMS.join(',')}, --prefetch N, --divide on|off, --progress awaited|behind)`);
  }
  if (out.json === undefined && argv.includes('--json')) throw new Error('bench:peers: --json needs a file name');
  for (const n of out.names) if (!NAMES.includes(n)) throw new Error(`bench:peers: --scenarios: unknown scenario '${n}' (one of ${NAMES.join(', ')})`);
  for (const n of out.systems) if (!SYSTEMS.includes(n)) throw new Error(`bench:peers: --systems: unknown system '${n}' (one of ${SYSTEMS.join(', ')})`);
  return out;
}

async function main(): Promise<void> {
  const args = parse(process.argv.slice(2));
  if (args.prefetch !== undefined) process.env.SPLITFLEET_BENCH_PREFETCH = String(args.prefetch);
  // Handed to the workers through their environment, as the prefetch depth is.
  process.env.SPLITFLEET_BENCH_DIVIDE = args.divide;
  process.env.SPLITFLEET_BENCH_PROGRESS = args.progress;
  const flags = `${args.quick ? ' --quick' : ''}${args.prefetch !== undefined ? ` --prefetch ${args.prefetch}` : ''}${args.divide === 'off' ? ' --divide off' : ''}${args.progress === 'behind' ? ' --progress behind' : ''}`;
  const started = Date.now();
  const load = { start: loadavg(), end: [] as number[] };
  console.log(`bench:peers${flags}: node ${process.version}, ${availableParallelism()} cores, load average ${load.start.map((x) => x.toFixed(2)).join(' ')}`);
  const etcd = await startBenchEtcd({ quotaBackendBytes: 2 * 1024 ** 3 });
  const redis = await startBenchRedis();
  const results: Record<string, Record<string, ScenarioResult>> = {};
  try {
    for (const s of scenarios(args.quick).filter((x) => args.names.includes(x.name))) {
      const rows: [SystemName, ScenarioResult][] = [];
      for (const system of args.systems) {
        const r = await runScenario(system, s, { etcd: etcd.endpoint, redis: redis.url }, `${started}`);
        rows.push([system, r]);
        for (const e of r.errors) console.error(`  ${s.name}/${system}: ${e}`);
      }
      results[s.name] = Object.fromEntries(rows);
      console.log(table(s.name, s, rows));
    }
  } finally {
    await killWorkers();
    await Promise.all([etcd.stop(), redis.stop()]);
  }
  load.end = loadavg();
  console.log(`\nload average at the end ${load.end.map((x) => x.toFixed(2)).join(' ')}; ${((Date.now() - started) / 1000).toFixed(0)} s in all`);
  if (args.json) {
    const summary = { command: `npm run bench:peers --${flags}`, quick: args.quick, divide: args.divide, progress: args.progress, node: process.version, cores: availableParallelism(), loadAverage: load, durationMs: Date.now() - started, scenarios: results };
    writeFileSync(args.json, `${JSON.stringify(summary, null, 2)}\n`);
  }
}

main().catch(async (e: Error) => {
  console.error(e.message);
  await killWorkers();
  process.exit(1);
});
