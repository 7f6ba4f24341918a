/**
 * How fast 1M split objects are read into columns, per input shape, by the
 * engine's reader (fields.ts `readSplits`, which picks between named loads
 * and `Reflect.get` by timing both, decision 0020), by each of those two
 * alone, and by the exact `for…in` reader decision 0002 measured and
 * rejected (kept here only as the comparison). Each (reader, shape) runs in a child process of its own, so
 * one shape's hidden classes cannot touch another's; each reads the same
 * settled 1M × 10k objects four times (the first is the objects' first read)
 * and reports the times and the heap they left behind after a full GC.
 *
 * `deprecated` (this bench's own shape): literals built in one loop whose
 * weight field turned from small integers to doubles halfway, so V8 has
 * deprecated the hidden class of the first half; a named load migrates each
 * such object the first time (~1 µs), `Reflect.get` reads it as it is.
 *
 *   npm run build:ts && node --expose-gc dist/bench/probes/readers.js [--shapes literal,spread,class,extra,reordered,deprecated] [--readers adaptive,named,reflect,forin]
 */
import { spawnSync } from 'node:child_process';
import os from 'node:os';
import { fileURLToPath } from 'node:url';
import { desiredAssignment } from '../../src/assignment/engine.js';
import { fieldPage, fieldsFor, readGeneric, readNamed, readSplits, splitFields, type SplitFields } from '../../src/assignment/object/fields.js';
import { PAGE_BITS, PAGE_MASK } from '../../src/assignment/object/pages.js';
import { isId, isOwner, statusCode } from '../../src/assignment/validate.js';
import { isValidWeight } from '../../src/split-model.js';
import type { SplitInput } from '../../src/assignment/types.js';
import { coldInput, settledFrom, SHAPES, type Shape } from '../inputs.js';
import { benchArgs } from '../args.js';

/** The rejected reader: a `for…in` (loads by field index), then one lookup per field it did not see. */
function readSplitsForIn(splits: readonly unknown[], from: number, to: number, f: SplitFields): number {
  const { weight, status } = f;
  for (let i = from; i < to; i++) {
    const { ids, lease, prev, rec } = fieldPage(f, i >>> PAGE_BITS);
    const j = i & PAGE_MASK;
    const s = splits[i];
    if (typeof s !== 'object' || s === null) return i;
    let id: unknown, w: unknown, st: unknown, lo: unknown, pr: unknown, ro: unknown;
    let seen = 0;
    for (const k in s) {
      switch (k) {
        case 'id': id = (s as Record<string, unknown>)[k]; seen |= 1; break;
        case 'weight': w = (s as Record<string, unknown>)[k]; seen |= 2; break;
        case 'leaseOwner': lo = (s as Record<string, unknown>)[k]; seen |= 4; break;
        case 'recordOwner': ro = (s as Record<string, unknown>)[k]; seen |= 8; break;
        case 'previous': pr = (s as Record<string, unknown>)[k]; seen |= 16; break;
        case 'status': st = (s as Record<string, unknown>)[k]; seen |= 32; break;
      }
    }
    if ((seen & 1) === 0) id = Reflect.get(s, 'id');
    if ((seen & 2) === 0) w = Reflect.get(s, 'weight');
    if ((seen & 4) === 0) lo = Reflect.get(s, 'leaseOwner');
    if ((seen & 8) === 0) ro = Reflect.get(s, 'recordOwner');
    if ((seen & 16) === 0) pr = Reflect.get(s, 'previous');
    if ((seen & 32) === 0) st = Reflect.get(s, 'status');
    const code = statusCode(st);
    if (!isId(id) || !isValidWeight(w) || code < 0 || !isOwner(lo) || !isOwner(pr) || !isOwner(ro)) return i;
    ids[j] = id;
    weight[i] = w;
    status[i] = code;
    lease[j] = lo ?? null;
    prev[j] = pr ?? null;
    rec[j] = ro ?? null;
  }
  return -1;
}

const READERS = { adaptive: readSplits, named: readNamed, reflect: readGeneric, forin: readSplitsForIn } as const;
type Reader = keyof typeof READERS;
const { values: args } = benchArgs({ shapes: { type: 'string' }, readers: { type: 'string' }, child: { type: 'string' }, reader: { type: 'string' } });

type ReaderShape = Shape | 'deprecated';

/**
 * `settled` rebuilt in one loop with a property order no other code here
 * uses, weights below 2^30 (small integers) in the first half and 2^31 (a
 * double) at its middle row: V8 then deprecates the first half's hidden class.
 */
function deprecatedFrom(settled: readonly SplitInput[]): SplitInput[] {
  const half = settled.length >> 1;
  return settled.map((s, i) => ({
    weight: i < half ? (s.weight % 2 ** 30) | 0 : i === half ? 2 ** 31 : s.weight,
    id: s.id, leaseOwner: s.leaseOwner ?? null, recordOwner: s.recordOwner ?? null, previous: s.previous ?? null,
  }));
}

function child(reader: Reader, shape: ReaderShape): void {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (gc === undefined) throw new Error('run with node --expose-gc');
  const base = coldInput(1_000_000, 10_000, 'lognormal');
  const settled = settledFrom(base, desiredAssignment(base).assignment, shape === 'deprecated' ? 'literal' : shape).splits;
  const objs = shape === 'deprecated' ? deprecatedFrom(settled) : settled;
  const f = splitFields(objs.length);
  gc();
  const heap0 = process.memoryUsage().heapUsed;
  const ms: number[] = [];
  for (let k = 0; k < 4; k++) {
    const t = performance.now();
    // fieldsFor: each read starts afresh, as the engine's do (the adaptive reader probes first).
    if (READERS[reader](objs, 0, objs.length, fieldsFor(f, objs.length)) >= 0) throw new Error('a split was refused');
    ms.push(performance.now() - t);
  }
  gc();
  console.log(JSON.stringify({ reader, shape, ms, heapMiB: (process.memoryUsage().heapUsed - heap0) / 2 ** 20 }));
}

if (args.child !== undefined) {
  child((args.reader ?? 'adaptive') as Reader, args.child as ReaderShape);
} else {
  const shapes = (args.shapes ?? [...SHAPES, 'deprecated'].join(',')).split(',') as ReaderShape[];
  const self = fileURLToPath(import.meta.url);
  console.log(`readers bench: 1M settled splits, node ${process.version}; load average at start ${os.loadavg().map((l) => l.toFixed(2)).join(' ')}\n`);
  console.log('| shape | reader | first read ms | later reads ms | heap left MiB |');
  console.log('|---|---|---:|---:|---:|');
  for (const shape of shapes) {
    for (const reader of (args.readers ?? Object.keys(READERS).join(',')).split(',') as Reader[]) {
      const out = spawnSync(process.execPath, ['--expose-gc', self, '--child', shape, '--reader', reader], { encoding: 'utf8' });
      if (out.status !== 0) throw new Error(`${reader}/${shape} failed: ${out.stderr}`);
      const r = JSON.parse(out.stdout.trim().split('\n').pop()!) as { ms: number[]; heapMiB: number };
      console.log(`| ${shape} | ${reader} | ${r.ms[0]!.toFixed(0)} | ${r.ms.slice(1).map((x) => x.toFixed(0)).join(', ')} | ${r.heapMiB.toFixed(0)} |`);
    }
  }
  console.log(`\nload average at end ${os.loadavg().map((l) => l.toFixed(2)).join(' ')}`);
}
