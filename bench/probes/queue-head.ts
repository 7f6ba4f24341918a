/**
 * The queue head's first build (queue-head.ts) as a seeding leader runs it:
 * a pool whose rows were added in random weight order (a plan seeded by
 * bucket), scanned a step per turn of the loop, each build in a process of
 * its own (a leader builds its head once a term: the build runs as code not
 * yet optimized). Per step, wall time (the main thread's CPU time comes in 4
 * ms ticks here; take figures on an idle machine): the longest two, the
 * median, the step count and the total, for steps bounded by rows only
 * (`offers` unbounded, as before STEP_OFFERS) and by rows and offers (the
 * default). The longest steps are a build's first ones, where most rows beat
 * the heap's worst and each costs a sift.
 *
 *   npm run build && node dist/bench/probes/queue-head.js [--rows 2000000] [--runs 3]
 */
import { spawnSync } from 'node:child_process';
import os from 'node:os';
import { fileURLToPath } from 'node:url';
import { LAYOUT } from '../../src/assignment/layout.js';
import { QueueHead, STEP_OFFERS, STEP_ROWS, type QueueRows } from '../../src/assignment/queue-head.js';
import { prng } from '../../src/prng.js';
import { median } from '../stats.js';
import { benchArgs, numberArg } from '../args.js';

const { values: args } = benchArgs({ rows: { type: 'string' }, runs: { type: 'string' }, child: { type: 'boolean' }, offers: { type: 'string' } });
const ROWS = numberArg('rows', args.rows, 2_000_000);
const RUNS = numberArg('runs', args.runs, 3);


const r = prng(7);
// The columns a pool keeps (columnar.ts), every row claimable: weights log-uniform 1–64 MiB as the fleet
// bench's planner's, hash keys at random (a pool's are its ids' hashes).
const rows: QueueRows = {
  weight: Float64Array.from({ length: ROWS }, () => Math.round(2 ** (20 + 6 * r()))),
  key: Uint32Array.from({ length: 2 * ROWS }, () => Math.floor(r() * 2 ** 32)),
  flags: new Uint8Array(ROWS).fill(LAYOUT.FLAG_POOL),
  rowCount: ROWS,
  idAt: (row) => `s-${row}`,
};
if (args.child === true) {
  const offers = numberArg('offers', args.offers, NaN);
  const head = new QueueHead(rows);
  head.begin();
  const steps: number[] = [];
  for (let done = false; !done;) {
    const t = performance.now();
    done = head.step(STEP_ROWS, offers);
    steps.push(performance.now() - t);
  }
  process.stdout.write(JSON.stringify(steps));
} else {
  console.log(`load ${os.loadavg().map((l) => l.toFixed(2)).join(' ')}; ${ROWS.toLocaleString('en')} rows, steps of ${STEP_ROWS} rows; Node ${process.version}`);
  console.log('| offers a step | steps | step max ms | 2nd longest | median | total ms |');
  console.log('|---|---|---|---|---|---|');
  for (let run = 0; run < RUNS; run++) {
    for (const offers of [Number.MAX_SAFE_INTEGER, STEP_OFFERS]) {
      // A process per build: a leader builds its head once a term, so the build runs as code not yet optimized.
      const out = spawnSync(process.execPath, [fileURLToPath(import.meta.url), '--child', '--rows', String(ROWS), '--offers', String(offers)], { encoding: 'utf8' });
      if (out.status !== 0) throw new Error(`child failed: ${out.stderr}`);
      const steps = JSON.parse(out.stdout) as number[];
      const sorted = [...steps].sort((a, b) => b - a);
      const label = offers === STEP_OFFERS ? `${STEP_OFFERS} (STEP_OFFERS)` : 'unbounded';
      console.log(`| ${label} | ${steps.length} | ${sorted[0]!.toFixed(1)} | ${sorted[1]!.toFixed(1)} | ${median(steps).toFixed(1)} | ${steps.reduce((a, b) => a + b, 0).toFixed(0)} |`);
    }
  }
}
