/**
 * `ColumnarPool.snapshot` at 1M × 10k (settled, lognormal): into fresh
 * buffers (what `assignColumnar` did before snapshot-buffers.ts) and into a
 * kept `SnapshotBuffers`, with and without a cached order. Each snapshot is
 * dropped before the next, as a pool's thread drops it after deciding.
 * Medians and ranges of 9, in ms; the whole time is the caller's turn.
 *
 *   npm run build && node dist/bench/probes/snapshot.js [--n 1000000]
 */
import os from 'node:os';
import { desiredAssignment } from '../../src/assignment/engine.js';
import { SnapshotBuffers } from '../../src/assignment/snapshot-buffers.js';
import { columnarAssignment } from '../../src/assignment/wasm.js';
import { coldInput, columnarFrom, settledFrom } from '../inputs.js';
import { median } from '../stats.js';
import { benchArgs, numberArg } from '../args.js';

const N = numberArg('n', benchArgs({ n: { type: 'string' } }).values.n, 1_000_000);
const base = coldInput(N, 10_000, 'lognormal');
const settled = settledFrom(base, desiredAssignment(base).assignment);
const cp = columnarFrom(settled);

let kept: unknown = null;
function times(room: SnapshotBuffers | null): string {
  const xs: number[] = [];
  for (let k = 0; k < 9; k++) {
    const t = performance.now();
    kept = cp.snapshot(false, room);
    xs.push(performance.now() - t);
  }
  return `median ${median(xs).toFixed(1)} (${Math.min(...xs).toFixed(1)}–${Math.max(...xs).toFixed(1)})`;
}

console.log(`snapshot of ${N} splits; load ${os.loadavg().map((l) => l.toFixed(2)).join(' ')}`);
console.log(`no cached order, fresh buffers: ${times(null)}`);
console.log(`no cached order, kept room:     ${times(new SnapshotBuffers())}`);
columnarAssignment(cp);
console.log(`cached order, fresh buffers:    ${times(null)}`);
console.log(`cached order, kept room:        ${times(new SnapshotBuffers())}`);
void kept;
