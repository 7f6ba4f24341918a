#!/usr/bin/env node
/**
 * Decision time as the queue grows (issue 30, item 3; decision 0045): the
 * leader's engine (`DefaultEngine`: a decision slice when the pool has a
 * cached order, the pool thread otherwise) against the whole pool on the
 * thread (`AssignmentPool.assignColumnarRows`, the path before slices), at
 * each of `--sizes` with the same fleet (`--members` × 4 lanes), in one run,
 * so the 10M / 1M ratio of each path is measured on one machine at one load.
 * Each decision is followed by what a leader sees between two: a third of
 * the assigned splits become leased (owned) and two splits complete.
 * With `--adding N`, N new splits join the pool between two decisions, as a
 * seeding leader's pages do (they dropped the cached order before decision
 * 0047; the queue's head keeps them). Reports median and p90 of a decision from the third on, the caller's own
 * turn (the leader's loop stands still for it), and the slice's mean rows.
 *
 *   npm run build && node dist/bench/probes/decision-scale.js [--sizes 1000000,10000000] [--members 200] [--decisions 40] [--adding 0]
 */
import { loadavg } from 'node:os';
import { ColumnarPool } from '../../src/assignment/codec.js';
import { decisionSlice } from '../../src/assignment/decision-slice.js';
import { AssignmentPool } from '../../src/assignment/pool.js';
import { DefaultEngine } from '../../src/assignment/front-door.js';
import type { AssignedRows } from '../../src/assignment/wire.js';
import { prng } from '../../src/prng.js';
import { quantile } from '../stats.js';
import { benchArgs } from '../args.js';

const { values } = benchArgs({
  sizes: { type: 'string', default: '1000000,10000000' }, members: { type: 'string', default: '200' }, decisions: { type: 'string', default: '40' },
  // Splits added between two decisions, as a seeding leader adds a page's: each used to drop the cached order.
  adding: { type: 'string', default: '0' },
});
const sizes = values.sizes.split(',').map(Number);
const M = Number(values.members);
const D = Number(values.decisions);
const ADDING = Number(values.adding);
let added = 0;
const load = () => loadavg().map((l) => l.toFixed(2)).join(' ');

/** A pool of `n` lognormal splits (as bench/inputs.ts `coldInput`), members of 4 lanes. */
function poolOf(n: number): ColumnarPool {
  const r = prng(1);
  const cp = new ColumnarPool('bench', { defaultCap: 4 });
  cp.reserve(n);
  cp.setMembers(Array.from({ length: M }, (_, j) => ({ id: `m-${j}`, cap: 4 })));
  for (let i = 0; i < n; i++) {
    const u = r() || 1e-9;
    cp.upsertSplit(`s-${i}`, Math.max(1, Math.round(Math.exp(16 + Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * r())))));
  }
  return cp;
}

interface Figures { median: number; p90: number; turnMedian: number; turnMax: number; sliceRows: number }

/** D decisions by `decide`, each followed by a leader's between-decision changes. */
async function run(cp: ColumnarPool, decide: (p: ColumnarPool) => Promise<AssignedRows>): Promise<Figures> {
  const wall: number[] = [];
  const turn: number[] = [];
  let sliceRows = 0;
  let completed = 0;
  for (let i = 1; i <= D; i++) {
    if (i >= 3) sliceRows += decisionSlice(cp)?.pool.size ?? 0;
    const started = performance.now();
    const pending = decide(cp);
    if (i >= 3) turn.push(performance.now() - started);
    const d = await pending;
    if (i >= 3) wall.push(performance.now() - started);
    for (let j = 0; j < d.rows.length; j += 3) cp.setLeaseOwner(cp.idAt(d.rows[j]!)!, d.members[d.assignees[j]!]!);
    for (let j = 0; j < 2; j++, completed++) {
      const id = cp.idAt(d.rows[(completed * 7) % d.rows.length]!)!;
      cp.upsertSplit(id, cp.weightAt(cp.rowOf(id))!, 'completed');
    }
    for (let j = 0; j < ADDING; j++, added++) cp.upsertSplit(`added-${added}`, 1 + ((added * 7919) % 100_000));
  }
  return { median: quantile(wall, 0.5), p90: quantile(wall, 0.9), turnMedian: quantile(turn, 0.5), turnMax: Math.max(...turn), sliceRows: Math.round(sliceRows / Math.max(1, D - 2)) };
}

console.log(`decision scale: sizes ${sizes.join(', ')} × ${M} members of 4 lanes, ${D} decisions each, ${ADDING} splits added between two; load ${load()}`);
const results: { n: number; leader: Figures; whole: Figures }[] = [];
for (const n of sizes) {
  const threads = new AssignmentPool({ threads: 1 });
  const engine = new DefaultEngine();
  const cp = poolOf(n);
  const whole = await run(cp, (p) => threads.assignColumnarRows(p));
  const leader = await run(cp, (p) => engine.decide(p));
  await threads.close();
  await engine.close();
  results.push({ n, leader, whole });
  const f = (x: Figures) => `median ${x.median.toFixed(2)} ms, p90 ${x.p90.toFixed(2)} ms; caller's turn median ${x.turnMedian.toFixed(2)}, max ${x.turnMax.toFixed(2)} ms`;
  console.log(`${n}: leader's engine ${f(leader)}; slice ${leader.sliceRows} rows`);
  console.log(`${n}: whole pool on the thread ${f(whole)}`);
}
if (results.length >= 2) {
  const [a, b] = [results[0]!, results.at(-1)!];
  console.log(`ratio ${b.n} / ${a.n}: leader's engine ${(b.leader.median / a.leader.median).toFixed(2)}×, whole pool ${(b.whole.median / a.whole.median).toFixed(2)}×; load ${load()}`);
}
