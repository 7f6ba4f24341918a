/**
 * Peak RSS of one decision, measured in a fresh process (run by bench/run.ts):
 *   node dist/bench/rss-child.js <splits> <members>
 * Prints one JSON line: RSS after building the input, peak RSS after one WASM
 * decision (in-thread), and the decision's wall time.
 */
import { desiredAssignment } from '../src/assignment/engine.js';
import { coldInput } from './inputs.js';
import { benchArgs, numberArg } from './args.js';

const { positionals } = benchArgs({});
const n = numberArg('splits', positionals[0], 1_000_000);
const m = numberArg('members', positionals[1], 10_000);
const input = coldInput(n, m, 'lognormal');
const MiB = 1024 * 1024;
const inputRss = process.memoryUsage().rss / MiB;
const t = performance.now();
const result = desiredAssignment(input);
const ms = performance.now() - t;
console.log(JSON.stringify({ n, m, inputRssMiB: inputRss, peakRssMiB: process.resourceUsage().maxRSS / 1024, decisionMs: ms, assigned: result.stats.assigned }));
