// @ts-check
// A custom planner and handler, coordinated on the in-process MemoryStore.
//
//   npm run build && node examples/minimal.mjs
//
// The job: the sum of i² for i below 3 000 000, cut into 24 ranges of
// different sizes (the splits). Three coordinators share one MemoryStore, as
// three processes would share one etcd: one of them leads and plans, all of
// them process ranges, each range resumes from its last committed progress.
// In your own project, import from 'splitfleet' instead of the relative path.
//
// Typed jobs: the JSDoc below types the descriptor and the progress (in
// TypeScript, `startCoordinator<Range, Progress>({ ... })` or a handler taking
// `SplitHandle<Range, Progress>`), so `split.descriptor.end` and
// `split.progress?.next` need no casts and a commit of the wrong shape does
// not compile. test/unit/coordinator/typed.test.ts type-checks this file.
import { MemoryStore, startCoordinator, silentLogger } from '../dist/src/index.js';

/** @typedef {import('../dist/src/index.js').PlanResult<Range>} Plan */
/** @typedef {import('../dist/src/index.js').SplitHandle<Range, Progress>} Split */
/**
 * A split's descriptor: the half-open range [start, end) of i, as decimal
 * strings (JSON has no BigInt).
 * @typedef {{ start: string, end: string }} Range
 */
/**
 * A split's committed progress: the next i to add, and the sum so far.
 * @typedef {{ next: string, sum: string }} Progress
 */

const N = 3_000_000n;
const RANGES = 24;

// The planner runs only on the leader. It must be deterministic: the same
// work yields the same split ids, so a new leader re-planning changes nothing.
/** @returns {Plan} */
function planner() {
  /** @type {Plan['splits']} */
  const splits = [];
  let start = 0n;
  for (let i = 0; i < RANGES; i++) {
    // Uneven ranges (weight = length), so balancing by weight matters.
    const end = i === RANGES - 1 ? N : start + ((N - start) * BigInt(2 + (i % 3))) / BigInt(4 * (RANGES - i));
    splits.push({
      id: `range-${String(i).padStart(2, '0')}`,
      weight: Number(end - start),
      descriptor: { start: String(start), end: String(end) },
    });
    start = end;
  }
  return { splits, final: true };
}

/** @type {Map<string, bigint>} */
const results = new Map();

// The handler runs once per held split, in a lane. It resumes from
// split.progress, commits every batch (a fenced write: if the split is no
// longer ours it throws and nothing lands), stops at a safe boundary when
// asked to drain, and completes with the result.
/** @param {Split} split */
async function handler(split) {
  const end = BigInt(split.descriptor.end);
  let next = BigInt(split.progress?.next ?? split.descriptor.start);
  let sum = BigInt(split.progress?.sum ?? 0);
  while (next < end) {
    if (split.signal.aborted) return; // lost or forced: stop at once, write nothing
    if (split.drainSignal.aborted) {
      await split.commit({ next: String(next), sum: String(sum) });
      return; // returning after a drain releases the split at that commit
    }
    const stop = next + 50_000n < end ? next + 50_000n : end;
    for (; next < stop; next++) sum += next * next;
    await split.commit({ next: String(next), sum: String(sum) });
    await new Promise((r) => setImmediate(r)); // let the other lanes run
  }
  results.set(split.id, sum); // at-least-once: a replay sets the same value
  await split.complete({ next: String(next), sum: String(sum) });
}

const store = new MemoryStore();
const fleet = [];
for (const instance of ['a', 'b', 'c']) {
  fleet.push(await startCoordinator({
    store,
    job: 'sum-of-squares',
    instance,
    maxInFlight: 4,
    planner,
    handler,
    logger: silentLogger,
  }));
}

// run() resolves once the job has ended for that instance (or Ctrl-C stopped it gracefully).
const verdicts = (await Promise.all(fleet.map((c) => c.run()))).map((r) => r.outcome);
await store.close();

const total = [...results.values()].reduce((a, b) => a + b, 0n);
const expected = ((N - 1n) * N * (2n * N - 1n)) / 6n;
console.log(`verdicts: ${verdicts.join(', ')}`);
console.log(`ranges completed: ${results.size} of ${RANGES}`);
console.log(`sum of i² for i < ${N}: ${total}`);
if (total !== expected || results.size !== RANGES || verdicts.some((v) => v !== 'complete')) {
  console.error(`wrong: expected ${expected}`);
  process.exit(1);
}
console.log('checked against the closed form: correct');
