#!/usr/bin/env node
/**
 * The leader's per-split heap and what a major GC costs it (issue 30, item
 * 2; decision 0043): `--splits` ids held as the leader holds them now (a
 * `ColumnarPool`, ids in its packed arena) against the layout the arena
 * replaced (a `Map` id → row and an array row → id of the same ids, the
 * pool's numeric columns aside), in one process, one after the other. For
 * each: the heap it adds once collected, and the pause of a full GC with it
 * alive (median of `--gcs`), the time a leader's loop stands still each time
 * V8 marks the old generation. Ids are made as a watch makes them (decoded
 * from bytes, flat), `--id-length` units each.
 *
 *   npm run build && node --expose-gc dist/bench/probes/leader-heap.js [--splits 1000000] [--gcs 9] [--id-length 24]
 */
import { loadavg } from 'node:os';
import { ColumnarPool } from '../../src/engine.js';
import { median } from '../stats.js';
import { benchArgs } from '../args.js';

const { values } = benchArgs({
  splits: { type: 'string', default: '1000000' },
  gcs: { type: 'string', default: '9' },
  'id-length': { type: 'string', default: '24' },
});
const N = Number(values.splits), G = Number(values.gcs), L = Number(values['id-length']);
const gc = (globalThis as { gc?: () => void }).gc;
if (!gc) {
  console.error('leader-heap: run with node --expose-gc');
  process.exit(2);
}
const mib = (b: number) => (b / 1048576).toFixed(1);
const load = () => loadavg().map((l) => l.toFixed(2)).join(' ');

/** Split i's id, decoded from bytes as a watch event's key is (a flat string, not a concatenation). */
const bytes = Buffer.alloc(L, 'x');
function idOf(i: number): string {
  const tag = `s3/logs/${i.toString(36)}/`;
  bytes.fill(0x78);
  bytes.write(tag, 0, 'latin1');
  return bytes.toString('latin1');
}

/** Heap added by what `build` returns (collected before and after), and the full-GC pause with it alive. */
function measure(label: string, build: () => unknown): { heap: number; buffers: number; pause: number } {
  gc!();
  gc!();
  const before = process.memoryUsage();
  let held: unknown = build();
  gc!();
  gc!();
  const after = process.memoryUsage();
  // The JS heap V8 marks, and the typed arrays' backing stores it does not (they are never traversed).
  const heap = after.heapUsed - before.heapUsed;
  const buffers = after.arrayBuffers - before.arrayBuffers;
  const pauses: number[] = [];
  for (let k = 0; k < G; k++) {
    const t = performance.now();
    gc!();
    pauses.push(performance.now() - t);
  }
  const pause = median(pauses);
  console.log(
    `${label.padEnd(32)} heap +${mib(heap).padStart(6)} MiB, array buffers +${mib(buffers).padStart(6)} MiB (${((heap + buffers) / N).toFixed(0).padStart(4)} B/split), ` +
      `full GC ${pause.toFixed(1).padStart(6)} ms (median of ${G})`,
  );
  if (held === null) console.log(''); // keeps `held` alive through the pauses
  held = null;
  return { heap, buffers, pause };
}

console.log(`leader heap: ${N} splits, ids of ${L} units; node ${process.version}; load ${load()}`);
const empty = measure('nothing held', () => 0);
const arena = measure('ColumnarPool (packed id arena)', () => {
  const p = new ColumnarPool('bench', { defaultCap: 4 });
  p.reserve(N);
  for (let i = 0; i < N; i++) p.upsertSplit(idOf(i), 1 + (i % 97));
  return p;
});
const strings = measure('Map id → row + array row → id', () => {
  const byId = new Map<string, number>();
  const ids: string[] = [];
  for (let i = 0; i < N; i++) {
    const id = idOf(i);
    byId.set(id, i);
    ids.push(id);
  }
  return { byId, ids };
});
console.log(
  `same run: bytes per split, the Map layout's ids alone / the whole pool with its columns ${((strings.heap + strings.buffers) / Math.max(1, arena.heap + arena.buffers)).toFixed(2)}×; ` +
    `full-GC pause over an empty heap: pool +${(arena.pause - empty.pause).toFixed(1)} ms, Map layout +${(strings.pause - empty.pause).toFixed(1)} ms; load ${load()}`,
);
