/**
 * A/B of one settled 1M × 10k decision between two builds of splitfleet
 * (for example the commit before a change, in a git worktree, and this one):
 * `desiredAssignment` first call and repeat, and `AssignmentPool.assign`
 * repeat, as ratios to a sort timed in the same process. Inputs come from
 * this checkout's bench/inputs.ts, built as `shape`, so both builds decide the
 * very same objects.
 *
 *   node dist/bench/probes/ab.js <root of the build under test> [literal|spread|class|extra|reordered]
 */
import { pathToFileURL } from 'node:url';
import { coldInput, settledFrom, type Shape } from '../inputs.js';
import { benchArgs } from '../args.js';
import { median } from '../stats.js';

interface Engine {
  desiredAssignment: (input: unknown) => { assignment: Record<string, string[]> };
}
interface PoolModule {
  AssignmentPool: new (o: { threads: number; fallback: boolean }) => { assign: (i: unknown) => Promise<unknown>; close: () => Promise<void> };
}

const { positionals } = benchArgs({});
const root = positionals[0] ?? process.cwd();
const shape = (positionals[1] ?? 'literal') as Shape;
const url = (rel: string): string => pathToFileURL(`${root}/dist/src/assignment/${rel}`).href;
const { desiredAssignment } = (await import(url('engine.js'))) as Engine;
const { AssignmentPool } = (await import(url('pool.js'))) as PoolModule;
const cold = coldInput(1_000_000, 10_000, 'lognormal');
const settled = settledFrom(cold, desiredAssignment(cold).assignment, shape);
const time = async (runs: number, f: () => unknown): Promise<number> => {
  const xs: number[] = [];
  for (let i = 0; i < runs; i++) {
    const t = performance.now();
    await f();
    xs.push(performance.now() - t);
  }
  return median(xs);
};
const src = Float64Array.from({ length: 1_000_000 }, Math.random);
const work = new Float64Array(src.length);
const sorts: number[] = [];
for (let i = 0; i < 7; i++) {
  work.set(src);
  const t = performance.now();
  work.sort();
  sorts.push(performance.now() - t);
}
const sort = median(sorts);
let k = 0;
const first = await time(5, () => desiredAssignment({ ...settled, seed: `ab-${k++}` }));
desiredAssignment(settled);
const repeat = await time(7, () => desiredAssignment(settled));
const pool = new AssignmentPool({ threads: 1, fallback: false });
await pool.assign(settled);
const poolRepeat = await time(5, () => pool.assign(settled));
await pool.close();
const x = (ms: number): string => `${ms.toFixed(0)} ms (${(ms / sort).toFixed(2)}×)`;
console.log(`${root} ${shape}: sort ${sort.toFixed(0)} ms; settled first ${x(first)}, repeat ${x(repeat)}; pool repeat ${x(poolRepeat)}`);
