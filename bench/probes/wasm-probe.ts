/**
 * A quick probe of the WASM engine against the reference: cold and settled
 * decisions at a given size through the object form (`desiredAssignment`)
 * and the columnar path (`ColumnarPool`), next to the yardstick (sorting
 * 1M doubles). Not the bench; medians of a few runs, printed as a table.
 *
 *   node --expose-gc dist/bench/probes/wasm-probe.js [splits=1000000] [members=10000] [runs=5] [--reference]
 *
 * Wall and CPU medians are both printed: CPU time (user + system, every
 * thread) is steadier than wall time on a shared box.
 */
import { ColumnarPool } from '../../src/assignment/codec.js';
import { desiredAssignment } from '../../src/assignment/engine.js';
import type { AssignmentInput } from '../../src/assignment/types.js';
import { columnarAssignment } from '../../src/assignment/wasm.js';
import { prng } from '../../src/prng.js';
import { median } from '../stats.js';
import { benchArgs, numberArg } from '../args.js';

const { values: options, positionals: args } = benchArgs({ reference: { type: 'boolean' } });
const N = numberArg('splits', args[0], 1_000_000);
const M = numberArg('members', args[1], 10_000);
const RUNS = numberArg('runs', args[2], 5);
const withReference = options.reference === true;

/** Median wall time and median CPU time (user + system) of `runs` calls, ms. */
function medians(f: (run: number) => unknown, runs = RUNS): [wall: number, cpu: number] {
  (globalThis as { gc?: () => void }).gc?.();
  const wall: number[] = [];
  const cpu: number[] = [];
  for (let i = 0; i < runs; i++) {
    const c = process.cpuUsage();
    const t = performance.now();
    f(i);
    wall.push(performance.now() - t);
    const d = process.cpuUsage(c);
    cpu.push((d.user + d.system) / 1000);
  }
  return [median(wall), median(cpu)];
}

const r = prng(1);
const lognormal = (): number => {
  const u = r() || 1e-9;
  return Math.round(Math.exp(16 + Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * r())));
};
const cap = Math.max(8, 4 * Math.ceil(N / M));
const members = Array.from({ length: M }, (_, i) => ({ id: `m-${i}`, cap }));
const splits = Array.from({ length: N }, (_, i) => ({ id: `s-${i}`, weight: lognormal() }));
const cold: AssignmentInput = { seed: 'job', members, splits };

const fills = Array.from({ length: RUNS }, () => Float64Array.from({ length: 1_000_000 }, r));
const yard = medians((k) => fills[k]!.sort());

const first = desiredAssignment(cold);
const owner = new Map<string, string>();
for (const [m, ids] of Object.entries(first.assignment)) for (const id of ids) owner.set(id, m);
const settled: AssignmentInput = {
  ...cold,
  splits: splits.map((s) => {
    const o = owner.get(s.id) ?? null;
    return { id: s.id, weight: s.weight, leaseOwner: o, previous: o, recordOwner: o };
  }),
};

const rows: [string, [number, number]][] = [['yardstick: Float64Array sort of 1M', yard]];
// A new seed each run: nothing carries over from the previous call.
rows.push(['wasm object, cold, first call', medians((k) => desiredAssignment({ ...cold, seed: `job-${k}` }))]);
rows.push(['wasm object, cold, same input again', medians(() => desiredAssignment(cold))]);
rows.push(['wasm object, settled, first call', medians((k) => desiredAssignment({ ...settled, seed: `job-${k}` }))]);
rows.push(['wasm object, settled, same splits again', medians(() => desiredAssignment(settled))]);

const pool = new ColumnarPool('job');
pool.setMembers(members);
for (const s of settled.splits) {
  pool.upsertSplit(s.id, s.weight);
  pool.setLeaseOwner(s.id, s.leaseOwner ?? null);
  pool.setPrevious(s.id, s.previous ?? null);
  pool.setRecordOwner(s.id, s.recordOwner ?? null);
}
const coldPool = new ColumnarPool('job');
coldPool.setMembers(members);
for (const s of splits) coldPool.upsertSplit(s.id, s.weight);
rows.push(['columnar, cold (first decision sorts)', medians(() => {
  coldPool.upsertSplit('s-0', splits[0]!.weight + 1); // invalidate the cached order
  columnarAssignment(coldPool);
})]);
columnarAssignment(pool);
rows.push(['columnar, settled (cached order)', medians(() => columnarAssignment(pool))]);
if (withReference) {
  rows.push(['reference, cold', medians(() => desiredAssignment(cold, { engine: 'reference' }), 1)]);
  rows.push(['reference, settled', medians(() => desiredAssignment(settled, { engine: 'reference' }), 1)]);
}
const check = desiredAssignment(settled);
console.log(`${N} splits × ${M} members, cap ${cap}; settled moves ${check.stats.improvingMoves}, imbalance ${check.stats.imbalance.toFixed(4)}`);
console.log(`${''.padEnd(44)} ${'wall ms'.padStart(9)} ${'× yard'.padStart(7)} ${'cpu ms'.padStart(9)} ${'× yard'.padStart(7)}`);
for (const [name, [wall, cpu]] of rows) {
  console.log(`${name.padEnd(44)} ${wall.toFixed(1).padStart(9)} ${(wall / yard[0]).toFixed(2).padStart(7)} ${cpu.toFixed(1).padStart(9)} ${(cpu / yard[1]).toFixed(2).padStart(7)}`);
}
console.log(`peak RSS ${(process.resourceUsage().maxRSS / 1024).toFixed(0)} MiB`);
