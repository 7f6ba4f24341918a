/**
 * The object form through a pool thread, as row columns: the caller reads
 * the input in steps of rows, in slices of its event loop (`readTask`, with
 * fields.ts, comparing each step with the last read as it goes); unless the
 * whole read repeats the last one, it builds an `ObjectTask` from the read
 * the same way (`taskColumns`: flags, owners as handles, the ids as UTF-16
 * code units), the thread writes it straight into engine memory
 * (thread-task.ts `writeObjectTask`) without rebuilding any object, and the caller makes
 * the reply's output places back into its own id strings (object-result.ts `rebuild`).
 *
 * Invariants: the rows written mean what marshal.ts writes for the same input
 * (same keys: the engine's `hashKeys` is hash.ts `hashInto` over the code
 * units in engine memory); the caller checks every rule of validate.ts except
 * split-id uniqueness, which the thread checks on the keys. Pure: the only
 * waiting, and the only clock, are the `LoopSlices` the caller passes in.
 */
import { OwnerHandles } from '../handles.js';
import { fieldPage, readSplits, sameRows, sameStrings, type FieldPage, type ReadBuffers, type SplitFields } from './fields.js';
import { LAYOUT as L } from '../layout.js';
import { shapeIsValid } from './marshal.js';
import { PAGE_BITS, PAGE_ROWS, pageCount } from './pages.js';
import type { TaskBuffers } from './task-buffers.js';
import { DEFAULT_CAP, type AssignmentInput } from '../types.js';
import type { ObjectTask } from '../wire.js';

/**
 * How long work shares the caller's event loop: it runs in slices, one per
 * turn of the loop. `due()` is true once the current slice has run long
 * enough; `next()` ends it, yielding to the loop until another turn. The
 * caller owns the clock (pool.ts `slices`); this file only asks.
 */
export interface LoopSlices {
  due(): boolean;
  next(): Promise<void>;
}

/** Rows per step of `inSlices`: 2–6 ms of reading objects that each have a hidden class of their own (spread), under 0.1 ms for literals. */
const STEP_ROWS = 1024;

/**
 * `step(from, to)` over rows [0, n) in steps of at most STEP_ROWS, a new slice
 * once `loop.due()` after a step or `chunk` rows ran in this one; false as
 * soon as a step is.
 */
export async function inSlices(n: number, chunk: number, loop: LoopSlices, step: (from: number, to: number) => boolean): Promise<boolean> {
  const size = Math.min(chunk, STEP_ROWS);
  let ran = 0;
  for (let from = 0; from < n; ) {
    if (ran >= chunk || (ran > 0 && loop.due())) {
      await loop.next();
      ran = 0;
    }
    const to = Math.min(n, from + size, from + chunk - ran);
    if (!step(from, to)) return false;
    ran += to - from;
    from = to;
  }
  return true;
}

/** An ObjectTask as the caller builds it, before transfer. */
export type TaskColumns = ObjectTask;

/**
 * An object input as the caller read it: everything the task's columns are
 * built from. Two equal reads give a thread the same columns, so the same
 * decision: the pool keeps its last read to compare the next one with.
 */
export interface TaskRead {
  seed: string;
  /** Members as given, with effective caps. */
  memberIds: string[];
  memberCaps: Float64Array<ArrayBuffer>;
  reserved: readonly string[] | null;
  n: number;
  /** Rows [0, n): the splits' fields (a buffer of the caller's ReadBuffers). */
  fields: SplitFields;
  /** The code units of the ids of rows [0, n), all told: what a task's id buffer needs. */
  units: number;
}

/**
 * Reads `input` in slices into a buffer of `buffers` (never `last`'s) and
 * compares each step with `last` while they agree: `repeats` is true when
 * the whole input equals `last` field for field. Null when a rule is broken
 * (the caller runs the validator for the exact error). `newMembers` is
 * called before the splits are read when the members, their caps or the
 * seed are not `last`'s.
 */
export async function readTask(
  input: AssignmentInput, chunk: number, loop: LoopSlices, buffers: ReadBuffers, last: TaskRead | null,
  newMembers: (seed: string, memberIds: string[], memberCaps: Float64Array<ArrayBuffer>) => void = () => {},
): Promise<{ read: TaskRead; repeats: boolean } | null> {
  if (!shapeIsValid(input)) return null;
  const splits = input.splits;
  const n = splits.length;
  const defaultCap = input.defaultCap ?? DEFAULT_CAP;
  const memberIds = input.members.map((mm) => mm.id);
  const memberCaps = Float64Array.from(input.members, (mm) => mm.cap ?? defaultCap);
  const reserved = input.reserved !== undefined ? input.reserved.slice() : null;
  const sameMembers = last !== null && last.seed === input.seed && sameStrings(last.memberIds, memberIds) && sameBytes(last.memberCaps, memberCaps);
  if (!sameMembers) newMembers(input.seed, memberIds, memberCaps);
  const f = buffers.beside(last?.fields ?? null, n);
  // Pages the read will fill and the buffer lacks (a new buffer's), each allocated in a turn of its
  // own: 2–6 ms a page timed alone with 2M objects alive, 13–17 ms in a traced pool beside four
  // 1M-split inputs, the collector's marking included (decision 0023).
  for (let p = 0; p < pageCount(n); p++) {
    if (f.pages[p] !== null) continue;
    await loop.next();
    fieldPage(f, p);
  }
  let repeats = sameMembers && last.n === n && sameStrings(last.reserved, reserved);
  let units = 0;
  const ok = await inSlices(n, chunk, loop, (from, to) => {
    if (readSplits(splits, from, to, f) >= 0) return false;
    if (repeats) repeats = sameRows(last!.fields, f, from, to);
    // The ids were just read: their lengths are in cache.
    for (let i = from; i < to; ) {
      const p = i >>> PAGE_BITS;
      const base = p << PAGE_BITS;
      const end = Math.min(to, base + PAGE_ROWS);
      const ids = f.pages[p]!.ids;
      for (; i < end; i++) units += ids[i - base]!.length;
    }
    return true;
  });
  return ok ? { read: { seed: input.seed, memberIds, memberCaps, reserved, n, fields: f, units }, repeats } : null;
}

/**
 * The task from a read, in slices: flags, owners as handles, the ids' code
 * units and offsets. In `kept`'s shared buffers when given (the caller then
 * reuses them once the thread has replied), else in fresh ones to transfer.
 * `last` is the read of `kept`'s last task, if the caller still holds it:
 * rows that repeat it are left as `kept` holds them (TaskBuffers).
 */
export async function taskColumns(
  read: TaskRead, chunk: number, loop: LoopSlices, kept: TaskBuffers | null = null, last: SplitFields | null = null,
): Promise<TaskColumns> {
  const n = read.n;
  const arrays = kept !== null ? await kept.columns(n, read.units, () => loop.next()) : {
    idOff: new Uint32Array(n + 1), weight: new Float64Array(n), flags: new Uint8Array(n),
    lease: new Int32Array(n), prev: new Int32Array(n), rec: new Int32Array(n), units: new Uint16Array(Math.max(16, read.units)),
    slot: null,
  };
  const held = kept !== null ? kept.begin(last, n) : null;
  const c: Columns = {
    ...arrays, owners: kept !== null ? kept.owners : new OwnerHandles(), kept,
    reserved: read.reserved !== null && read.reserved.length > 0 ? new Set(read.reserved) : null,
    chars: 0, or: 0, held: held?.fields ?? null, heldRows: held?.n ?? 0, idsHeld: held !== null,
  };
  await inSlices(n, chunk, loop, (from, to) => {
    fillChunk(read.fields, from, to, c);
    return true;
  });
  if (c.idsHeld) {
    // Every id repeats the held read's, row for row: so do their code units (its chars, when it had no more rows).
    if (held!.n === n) {
      c.chars = held!.chars;
      c.or = held!.or;
    } else {
      c.chars = c.idOff[n]!;
      c.or = orOf(c.units, c.chars);
    }
  }
  c.idOff[n] = c.chars;
  kept?.wrote(read.fields, n, c.chars, c.or);
  return {
    kind: 'object', seed: read.seed, memberIds: read.memberIds, memberCaps: read.memberCaps, idUnits: c.units, narrow: c.or < 256,
    idOff: c.idOff, weight: c.weight, flags: c.flags, lease: c.lease, prev: c.prev, rec: c.rec, ownerIds: c.owners.ids, slot: c.slot,
  };
}

/** What `taskColumns` fills, step by step: the task's row columns, and what builds them. */
type Columns = Pick<ObjectTask, 'idOff' | 'weight' | 'flags' | 'lease' | 'prev' | 'rec' | 'slot'> & {
  owners: OwnerHandles;
  reserved: Set<string> | null;
  /** The ids' code units (grown by doubling), how many so far, and their OR (narrow when < 256). */
  units: Uint16Array;
  chars: number;
  or: number;
  /** Where grown units go (null: fresh, transferable buffers). */
  kept: TaskBuffers | null;
  /** The read the columns hold rows [0, heldRows) of (null: none); rows equal to its are left in place. */
  held: SplitFields | null;
  heldRows: number;
  /** Every id so far equals the held read's in the same row (so the code units up to here are in place, uncounted in chars and or). */
  idsHeld: boolean;
};

/** The OR of units[0, chars). */
function orOf(units: Uint16Array, chars: number): number {
  let or = 0;
  for (let i = 0; i < chars; i++) or |= units[i]!;
  return or;
}

/** Rows [from, to) of the read `f` into `c`, page by page (fields.ts). */
function fillChunk(f: SplitFields, from: number, to: number, c: Columns): void {
  for (let i = from; i < to; ) {
    const p = i >>> PAGE_BITS;
    const base = p << PAGE_BITS;
    const end = Math.min(to, base + PAGE_ROWS);
    fillPage(f, f.pages[p]!, c.held?.pages[p] ?? null, base, i, end, c);
    i = end;
  }
}

/** Rows [from, to) of one page of `f` (`fp`; `hp`: the held read's same page, if it has one), row i at i − base of the pages. */
function fillPage(f: SplitFields, fp: FieldPage, hp: FieldPage | null, base: number, from: number, to: number, c: Columns): void {
  const idOff = c.idOff;
  // Rows below `same` can repeat the held read's.
  const same = c.held === null ? from : Math.min(to, c.heldRows);
  if (hp !== null && c.idsHeld) {
    const fid = fp.ids;
    const hid = hp.ids;
    let i = from;
    while (i < same && fid[i - base] === hid[i - base]) i++;
    if (i < to) {
      // Row i's id is new: its code units go where the held ones began, after those of rows [0, i), whose OR is counted now.
      c.idsHeld = false;
      c.chars = idOff[i]!;
      c.or = orOf(c.units, c.chars);
    }
    keepRows(f, fp, hp, base, from, i, c, same);
    from = i;
  } else if (c.idsHeld && from < to) {
    // The held read has no rows here: every id from here on is new.
    c.idsHeld = false;
    c.chars = idOff[from]!;
    c.or = orOf(c.units, c.chars);
  }
  if (from < to) fillRows(f, fp, hp, base, from, to, c, same);
}

/** Rows [from, to), whose ids and code units are in place: flags, weights, and owners unless they repeat the held read's. */
function keepRows(f: SplitFields, fp: FieldPage, hp: FieldPage, base: number, from: number, to: number, c: Columns, same: number): void {
  const { weight: fw, status: fs } = f;
  const { ids: fid, lease: flo, prev: fpr, rec: fro } = fp;
  const { weight, flags, reserved } = c;
  const { lease: hlo, prev: hpr, rec: hro } = hp;
  for (let i = from, j = from - base; i < to; i++, j++) {
    weight[i] = fw[i]!;
    flags[i] = fs[i] === 0 && (reserved === null || !reserved.has(fid[j]!)) ? L.FLAG_LIVE | L.FLAG_POOL : L.FLAG_LIVE;
    if (i < same && flo[j] === hlo[j] && fpr[j] === hpr[j] && fro[j] === hro[j]) continue;
    ownersOf(c, i, flo[j]!, fpr[j]!, fro[j]!);
  }
}

/** Row i's owners as handles (owners usually agree, lease = previous = record: one lookup for all three). */
function ownersOf(c: Columns, i: number, lo: string | null, pr: string | null, ro: string | null): void {
  const hl = lo === null ? -1 : c.owners.of(lo);
  const hp = pr === null ? -1 : pr === lo ? hl : c.owners.of(pr);
  c.lease[i] = hl;
  c.prev[i] = hp;
  c.rec[i] = ro === null ? -1 : ro === pr ? hp : ro === lo ? hl : c.owners.of(ro);
}

/** Rows [from, to) in full: code units and offsets, flags, weights, and owners unless they repeat the held read's. */
function fillRows(f: SplitFields, fp: FieldPage, hp: FieldPage | null, base: number, from: number, to: number, c: Columns, same: number): void {
  const { weight: fw, status: fs } = f;
  const { ids: fid, lease: flo, prev: fpr, rec: fro } = fp;
  const { idOff, weight, flags, reserved } = c;
  const hlo = hp?.lease ?? flo;
  const hpr = hp?.prev ?? fpr;
  const hro = hp?.rec ?? fro;
  const kept = hp === null ? from : same;
  let p = c.chars;
  let units = c.units;
  let or = c.or;
  for (let i = from, j = from - base; i < to; i++, j++) {
    const id = fid[j]!;
    idOff[i] = p;
    if (p + id.length > units.length) {
      if (c.kept !== null) {
        units = c.units = c.kept.growUnits(units, p + id.length, p);
      } else {
        const grown = new Uint16Array(Math.max(p + id.length, 2 * units.length));
        grown.set(units.subarray(0, p));
        units = c.units = grown;
      }
    }
    for (let k = 0; k < id.length; k++) {
      const u = id.charCodeAt(k);
      or |= u;
      units[p++] = u;
    }
    weight[i] = fw[i]!;
    flags[i] = fs[i] === 0 && (reserved === null || !reserved.has(id)) ? L.FLAG_LIVE | L.FLAG_POOL : L.FLAG_LIVE;
    const lo = flo[j]!;
    const pr = fpr[j]!;
    const ro = fro[j]!;
    if (i >= kept || lo !== hlo[j] || pr !== hpr[j] || ro !== hro[j]) ownersOf(c, i, lo, pr, ro);
  }
  c.chars = p;
  c.or = or;
}

/** Byte-for-byte equality of two typed arrays, compared as i32 words (one monomorphic loop for every element type). */
export function sameBytes(a: ArrayBufferView, b: ArrayBufferView): boolean {
  if (a.byteLength !== b.byteLength) return false;
  const words = a.byteLength >>> 2;
  const aligned = a.byteOffset % 4 === 0 && b.byteOffset % 4 === 0;
  let from = 0;
  if (aligned) {
    const x = new Int32Array(a.buffer, a.byteOffset, words);
    const y = new Int32Array(b.buffer, b.byteOffset, words);
    for (let i = 0; i < words; i++) if (x[i] !== y[i]) return false;
    from = words * 4;
  }
  const x = new Uint8Array(a.buffer, a.byteOffset, a.byteLength);
  const y = new Uint8Array(b.buffer, b.byteOffset, b.byteLength);
  for (let i = from; i < x.length; i++) if (x[i] !== y[i]) return false;
  return true;
}
