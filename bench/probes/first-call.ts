/**
 * First calls (a fresh seed each, so the engine reuses nothing) of
 * `desiredAssignment` on 1M × 10k cold lognormal splits, in a process that
 * holds only that input, or also `--extra N` settled 1M inputs (a heap like
 * bench/shapes.ts's children): whether the first-call figure is the heap's or
 * the engine's. Medians of 5, with the sort yardstick timed in the same run.
 *
 *   npm run build && node dist/bench/probes/first-call.js [--extra 0]
 */
import os from 'node:os';
import { desiredAssignment } from '../../src/assignment/engine.js';
import type { AssignmentInput } from '../../src/assignment/types.js';
import { coldInput, rng, settledFrom } from '../inputs.js';
import { median } from '../stats.js';
import { benchArgs, numberArg } from '../args.js';

const extra = numberArg('extra', benchArgs({ extra: { type: 'string' } }).values.extra, 0);

const base = coldInput(1_000_000, 10_000, 'lognormal');
const held: AssignmentInput[] = [];
for (let k = 0; k < extra; k++) held.push(settledFrom(base, desiredAssignment({ ...base, seed: `extra-${k}` }).assignment));
const src = Float64Array.from({ length: 1_000_000 }, rng(1));
const sorts: number[] = [];
for (let k = 0; k < 5; k++) {
  const w = src.slice();
  const t = performance.now();
  w.sort();
  sorts.push(performance.now() - t);
}
const firsts: number[] = [];
for (let k = 0; k < 5; k++) {
  const t = performance.now();
  desiredAssignment({ ...base, seed: `fresh-${k}` });
  firsts.push(performance.now() - t);
}
console.log(`load ${os.loadavg().map((l) => l.toFixed(2)).join(' ')}; extra inputs held: ${held.length}`);
console.log(`sort of 1M doubles, median ${median(sorts).toFixed(0)} ms; cold first calls ${firsts.map((x) => x.toFixed(0)).join(', ')} ms`);
console.log(`median of the last four ${median(firsts.slice(1)).toFixed(0)} ms = ${(median(firsts.slice(1)) / median(sorts)).toFixed(2)}× sort (the first call also compiles)`);
