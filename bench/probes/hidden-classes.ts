/**
 * How many hidden classes (V8 maps) the bench's split shapes get on this
 * runtime: of n settled splits built as each shape (bench/inputs.ts
 * `shaped`), how many neighbours differ in map, and how many distinct maps
 * a sample of 1,000 holds. It is the fact decision 0022 rests on: on Node
 * 20 (V8 11.3) every spread-built object has a map of its own, and on Node
 * 22 and later spread-built objects share one. Run it on each runtime and
 * compare. It needs V8's natives syntax, so the flag is required:
 *
 *   npm run build:ts && node --allow-natives-syntax dist/bench/probes/hidden-classes.js [--n 200000]
 *   PATH="$(scripts/node-runtime.sh 22.23.5):$PATH" node --allow-natives-syntax dist/bench/probes/hidden-classes.js
 */
import { coldInput, settledFrom, SHAPES } from '../inputs.js';
import { benchArgs, numberArg } from '../args.js';

const n = numberArg('n', benchArgs({ n: { type: 'string' } }).values.n, 200_000);

let haveSameMap: (a: unknown, b: unknown) => boolean;
try {
  // V8's natives syntax parses only in source compiled at run time, and only under the flag.
  haveSameMap = new Function('a', 'b', 'return %HaveSameMap(a, b)') as typeof haveSameMap;
} catch {
  console.error('hidden-classes: run node with --allow-natives-syntax');
  process.exit(2);
}

const cold = coldInput(n, Math.max(1, Math.round(n / 100)), 'lognormal');
// Every split held by member m-(i mod m): the owners' values do not change the shapes' maps.
const held: Record<string, string[]> = {};
cold.splits.forEach((s, i) => (held[`m-${i % cold.members.length}`] ??= []).push(s.id));

console.log(`node ${process.version}, V8 ${process.versions.v8}; ${n} settled splits per shape, lognormal weights`);
console.log('| shape | neighbours with different maps | distinct maps among 1,000 |');
console.log('|---|---:|---:|');
for (const shape of SHAPES) {
  const splits = settledFrom(cold, held, shape).splits;
  let changes = 0;
  for (let i = 1; i < splits.length; i++) if (!haveSameMap(splits[i - 1], splits[i])) changes++;
  // Distinct maps among a spread-out sample of 1,000, by pairwise comparison with the ones found so far.
  const reps: unknown[] = [];
  const step = Math.max(1, Math.floor(splits.length / 1000));
  for (let i = 0; i < splits.length && i / step < 1000; i += step) {
    if (!reps.some((r) => haveSameMap(r, splits[i]))) reps.push(splits[i]);
  }
  console.log(`| ${shape} | ${changes.toLocaleString('en')} of ${(splits.length - 1).toLocaleString('en')} | ${reps.length} |`);
}
