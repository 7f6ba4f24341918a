#!/usr/bin/env node
/**
 * Memory over repeated columnar decisions on an `AssignmentPool` thread (issue
 * 30, decision 0041): `--splits` lognormal splits × `--members` members of 4
 * lanes; after each decision a third of the assigned splits become leased and
 * two complete (so the cached order changes, as a leader's does). Prints RSS,
 * heap and array-buffer memory every 50 decisions and the RSS growth per
 * decision over the run. A pool whose replies are not freed grows by its
 * reply size per decision (~31 MB at 1M before decision 0041). Also the time
 * of a decision from the third on (the first two size the engine and the
 * cached order), as the leader measures it (around the whole call: the
 * engines leave `computeMs` to their caller), median and p90, so two sizes on
 * the same fleet compare (issue 30: 10M vs 1M), and the caller's own turn of
 * it (the snapshot, taken synchronously: the leader's loop stands still for
 * it). `--rows` takes each decision
 * as the rows it assigns (`assignColumnarRows`, the leader's form since
 * decision 0041) instead of the dense assignee column.
 *
 *   npm run build && node dist/bench/probes/decision-memory.js [--splits 1000000] [--members 200] [--decisions 300] [--threads 1] [--rows]
 */
import { loadavg } from 'node:os';
import { AssignmentPool, ColumnarPool } from '../../src/engine.js';
import { coldInput } from '../inputs.js';
import { quantile } from '../stats.js';
import { benchArgs } from '../args.js';

const { values } = benchArgs({
  splits: { type: 'string', default: '1000000' },
  members: { type: 'string', default: '200' },
  decisions: { type: 'string', default: '300' },
  threads: { type: 'string', default: '1' },
  rows: { type: 'boolean', default: false },
});
const N = Number(values.splits), M = Number(values.members), D = Number(values.decisions);
const input = coldInput(N, M, 'lognormal');
const cp = new ColumnarPool(input.seed, { defaultCap: 4 });
cp.setMembers(input.members.map((m) => ({ id: m.id, cap: 4 })));
for (const s of input.splits) cp.upsertSplit(s.id, s.weight);
const pool = new AssignmentPool({ threads: Number(values.threads) });
const mib = (b: number) => Math.round(b / 1048576);
const load = () => loadavg().map((l) => l.toFixed(2)).join(' ');
console.log(`decision memory: ${N} splits × ${M} members, ${D} decisions, threads ${values.threads} (${pool.mode}), ${values.rows ? 'rows' : 'dense'} form; load ${load()}`);
const row = (i: number) => {
  const m = process.memoryUsage();
  console.log(`${String(i).padStart(5)} decisions: RSS ${mib(m.rss)} MiB, heap ${mib(m.heapUsed)} MiB, array buffers ${mib(m.arrayBuffers)} MiB`);
  return m.rss;
};
// The first decision sizes everything (engine memory, rooms): growth is measured from there.
let completed = 0;
let rss1 = 0;
const wall: number[] = [];
const turn: number[] = [];
for (let i = 1; i <= D; i++) {
  const started = performance.now();
  if (values.rows) {
    const pending = pool.assignColumnarRows(cp);
    // The caller's own turn: the snapshot (kept shared buffers, patched where the cached order changed).
    if (i >= 3) turn.push(performance.now() - started);
    const d = await pending;
    if (i >= 3) wall.push(performance.now() - started);
    for (let j = 0; j < d.rows.length; j += 3) cp.setLeaseOwner(cp.idAt(d.rows[j]!)!, d.members[d.assignees[j]!]!);
  } else {
    const pending = pool.assignColumnar(cp);
    if (i >= 3) turn.push(performance.now() - started);
    const d = await pending;
    if (i >= 3) wall.push(performance.now() - started);
    let k = 0;
    for (let r = 0; r < d.assignee.length; r++) {
      const a = d.assignee[r]!;
      if (a >= 0 && k++ % 3 === 0) cp.setLeaseOwner(cp.idAt(r)!, d.members[a]!);
    }
  }
  for (let j = 0; j < 2; j++, completed++) cp.upsertSplit(input.splits[completed % N]!.id, input.splits[completed % N]!.weight, 'completed');
  if (i === 1) rss1 = row(i);
  else if (i % 50 === 0 || i === D) {
    const rss = row(i);
    if (i === D) console.log(`RSS growth per decision after the first: ${((rss - rss1) / 1048576 / Math.max(1, D - 1)).toFixed(2)} MiB; load ${load()}`);
  }
}
if (wall.length > 0) {
  console.log(`decision ms (decisions 3-${D}): median ${quantile(wall, 0.5).toFixed(1)}, p90 ${quantile(wall, 0.9).toFixed(1)}`);
  console.log(`caller's turn ms (the snapshot): median ${quantile(turn, 0.5).toFixed(2)}, p90 ${quantile(turn, 0.9).toFixed(2)}, max ${Math.max(...turn).toFixed(2)}`);
}
await pool.close();
