/**
 * The WASM engine's bridge: the only file that touches `WebAssembly`. It
 * instantiates build/engine.wasm once per thread (loaded from the package,
 * never compiled at run time), marshals through codec.ts, calls the phases
 * (assembly/index.ts) and returns exactly what reference.ts returns.
 *
 * Errors: bad input is refused with validate.ts's own INVALID_INPUT error;
 * anything the engine cannot do (module missing, memory exhausted, a trap)
 * becomes SplitfleetError('ENGINE_FAILURE'). Nothing is half-returned.
 */
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { SplitfleetError } from '../errors.js';
import {
  ColumnarPool, EngineViews, LAYOUT, marshalInput, orderCollisions, readAssignment, readAssignmentKept, readStats, repeatedAssignment,
  MarshalScratch, type ColumnarDecision, type EngineMemory, type InputMemo, type MemberTable,
} from './codec.js';
import { keptCopy } from './kept-copies.js';
import { taskId, taskMembers, writeObjectTask, type TaskMemo } from './object/thread-task.js';
import type { AssignmentInput, AssignmentResult } from './types.js';
import { validateAssignmentInput } from './validate.js';
import { NO_SLOT, type MembersTask, type ObjectTask, type ThreadReply } from './wire.js';

/** The slice of the WebAssembly JS API used here (this project's lib has no DOM types). */
interface WasmGlobal {
  value: unknown;
}
declare const WebAssembly: {
  Module: new (bytes: Uint8Array) => object;
  Instance: new (module: object, imports: Record<string, unknown>) => { exports: Record<string, unknown> };
  Global: new (descriptor: never, value?: unknown) => WasmGlobal;
};

interface EngineExports {
  memory: { buffer: ArrayBuffer };
  header(): number;
  reserve(rows: number, members: number, handles: number, chars: number): number;
  reserveChars(chars: number): number;
  countDuplicateKeys(): number;
  hashKeys(state: number, from: number): number;
  rankRows(): number;
  sortOutputByRank(): number;
  sortOrder(mask: number): number;
  permuteByOrder(): number;
  decide(): number;
  sortOutput(): number;
}

/** The module's memory as codec.ts sees it: views re-created whenever it has grown. */
class WasmMemory implements EngineMemory {
  private cached: EngineViews | null = null;
  private readonly headerPtr: number;

  constructor(private readonly x: EngineExports) {
    this.headerPtr = x.header();
  }

  views(): EngineViews {
    const buffer = this.x.memory.buffer;
    if (this.cached === null || this.cached.buffer !== buffer) this.cached = new EngineViews(buffer, this.headerPtr);
    return this.cached;
  }

  reserve(rows: number, members: number, handles: number, chars: number): EngineViews {
    check(this.x.reserve(rows, members, handles, chars), 'reserve');
    return this.views();
  }

  reserveChars(chars: number): EngineViews {
    check(this.x.reserveChars(chars), 'reserveChars');
    return this.views();
  }

  hashKeys(state: number, from: number): void {
    this.x.hashKeys(state, from);
    if (forcedKey !== null) forceKeys(this.views(), from, forcedKey);
  }
}

type KeyOf = (id: string, hashed: readonly [lo: number, hi: number]) => readonly [lo: number, hi: number] | undefined;
/** Tests only (`forceEngineKeys`). */
let forcedKey: KeyOf | null = null;

/**
 * @internal (tests) After the engine hashes ids (`hashKeys`), calls
 * `keyOf(id, key)` for each and makes the id's key whatever it returns
 * (undefined: the hash); null turns this off. The seam for key collisions,
 * which no test finds by hashing, and for holding the engine's keys to
 * hash.ts. hash.ts is the seam of the paths that hash in JS (ColumnarPool,
 * the reference).
 */
export function forceEngineKeys(keyOf: KeyOf | null): void {
  forcedKey = keyOf;
}

function forceKeys(v: EngineViews, from: number, keyOf: KeyOf): void {
  const rows = v.word(LAYOUT.H_ROWS);
  const off = v.u32(LAYOUT.H_STR_OFF, rows + 1);
  const str = v.u16(LAYOUT.H_STR, off[rows]!);
  const key = v.u32(LAYOUT.H_KEY, 2 * rows);
  for (let r = from; r < rows; r++) {
    const k = keyOf(String.fromCharCode(...str.subarray(off[r]!, off[r + 1]!)), [key[2 * r]!, key[2 * r + 1]!]);
    if (k !== undefined) [key[2 * r], key[2 * r + 1]] = k;
  }
}

interface Engine {
  x: EngineExports;
  mem: WasmMemory;
  /** The last valid object-form input, for the next call to reuse (codec.ts InputMemo). */
  memo: InputMemo | null;
  /** The last object task a pool thread decided (object-task.ts TaskMemo). */
  taskMemo: TaskMemo | null;
  /** The member table a pool thread built ahead of its next object task (wire.ts MembersTask). */
  prepared: MemberTable | null;
  /** This engine's marshalling buffers (marshal.ts). */
  scratch: MarshalScratch;
}

let engine: Engine | null = null;

/** build/engine.wasm, from dist/src/assignment/wasm.js or from src/assignment/wasm.ts. */
function modulePath(): string {
  const tried = ['../../../build/engine.wasm', '../../build/engine.wasm'].map((p) => fileURLToPath(new URL(p, import.meta.url)));
  const found = tried.find((p) => existsSync(p));
  if (found === undefined) {
    throw new SplitfleetError('ENGINE_FAILURE', `engine.wasm not found (looked at ${tried.join(', ')}); run "npm run build:wasm"`);
  }
  return found;
}

function load(): Engine {
  if (engine !== null) return engine;
  try {
    const module = new WebAssembly.Module(readFileSync(modulePath()));
    const x = new WebAssembly.Instance(module, {}).exports as unknown as EngineExports;
    const version = (x as unknown as Record<string, WasmGlobal | undefined>).LAYOUT_VERSION?.value;
    if (version !== LAYOUT.LAYOUT_VERSION) {
      throw new Error(`engine.wasm has layout version ${String(version)}, codec expects ${LAYOUT.LAYOUT_VERSION}; rebuild it`);
    }
    engine = { x, mem: new WasmMemory(x), memo: null, taskMemo: null, prepared: null, scratch: new MarshalScratch() };
    return engine;
  } catch (e) {
    throw asEngineFailure(e, 'loading engine.wasm');
  }
}

function check(status: number, phase: string): number {
  if (status === LAYOUT.STATUS_NO_MEMORY) throw new SplitfleetError('ENGINE_FAILURE', `${phase}: the engine could not grow its memory`);
  if (status === LAYOUT.STATUS_BAD_SIZE) throw new SplitfleetError('ENGINE_FAILURE', `${phase}: input too large for the engine (rows, members or id characters)`);
  if (status < 0) throw new SplitfleetError('ENGINE_FAILURE', `${phase}: engine status ${status}`);
  return status;
}

function asEngineFailure(e: unknown, what: string): SplitfleetError {
  if (e instanceof SplitfleetError) return e;
  const message = e instanceof Error ? e.message : String(e);
  return new SplitfleetError('ENGINE_FAILURE', `${what}: ${message}`, { cause: e });
}

/** Runs `f`, converting anything but a SplitfleetError into ENGINE_FAILURE. */
function guarded<T>(what: string, f: () => T): T {
  try {
    return f();
  } catch (e) {
    throw asEngineFailure(e, what);
  }
}

/**
 * The desired assignment computed by the WASM engine: same input rules,
 * same output (key order included) and same stats as `referenceAssignment`;
 * `computeMs` is left at 0 for the caller.
 *
 * A leader calls this every tick with mostly the same splits, so the engine
 * keeps what the last valid input determined (its ids; once they repeat,
 * content keys, id code units, pool order and id order: codec.ts InputMemo)
 * and reuses each part only where the new input is equal row for row.
 */
export function wasmAssignment(input: AssignmentInput): AssignmentResult {
  const e = load();
  const { x, mem } = e;
  const memo = e.memo;
  e.memo = null;
  const marshalled = marshalInput(input, mem, memo, e.scratch);
  if (!marshalled.sameIds) {
    // Equal keys: two splits may share an id (the validator says so) or a hash.
    if (guarded('countDuplicateKeys', () => check(x.countDuplicateKeys(), 'countDuplicateKeys')) > 0) {
      validateAssignmentInput(input);
    }
  }
  const next = marshalled.memo;
  if (marshalled.unchanged && next.out !== null && next.stats !== null) {
    // The engine would be given the last decision's columns: its result is that decision's.
    const again = repeatedAssignment(next.out, next.stats);
    e.memo = next;
    return again;
  }
  const result = guarded('wasmAssignment', () => {
    if (marshalled.sameOrder && next.order !== null) {
      const v = mem.views();
      v.u32(LAYOUT.H_ORDER, next.order.length).set(next.order);
      v.setWord(LAYOUT.H_ORDER_LEN, next.order.length);
    } else {
      if (check(x.sortOrder(LAYOUT.FLAG_POOL), 'sortOrder') > 0) orderCollisions(mem.views(), marshalled.idOf);
      const v = mem.views();
      if (next.rows !== null) next.order = v.u32(LAYOUT.H_ORDER, v.word(LAYOUT.H_ORDER_LEN)).slice();
    }
    check(x.decide(), 'decide');
    if (marshalled.sameIds && next.rows !== null) {
      // The ids are the last call's: rank them once, then every output is one counting pass.
      if (next.byRank === null) {
        check(x.rankRows(), 'rankRows');
        next.byRank = mem.views().u32(LAYOUT.H_BY_RANK, input.splits.length).slice();
      } else {
        mem.views().u32(LAYOUT.H_BY_RANK, next.byRank.length).set(next.byRank);
      }
      check(x.sortOutputByRank(), 'sortOutputByRank');
    } else {
      check(x.sortOutput(), 'sortOutput');
    }
    // Only ids seen before come back (a one-off input keeps nothing).
    const kept = marshalled.sameIds ? { ids: marshalled.ids, previous: next.out } : null;
    const read = readAssignmentKept(mem.views(), marshalled.members, marshalled.idOf, kept, marshalled.ids);
    next.out = read.memo;
    next.stats = read.memo === null ? null : { ...read.result.stats };
    return read.result;
  });
  e.memo = next;
  return result;
}

/** @internal Drops what the engine keeps between object-form calls (tests that swap the hash). */
export function forgetWasmMemo(): void {
  if (engine !== null) engine.memo = null;
}

/**
 * @internal (thread.ts) Builds the member table of the object task to come
 * (wire.ts MembersTask), from this thread's last table, and keeps it for
 * that task. Never throws: it is only a hint (a table is built again from
 * the task itself when this one does not match it).
 */
export function prepareMembers(t: MembersTask): void {
  const e = load();
  try {
    e.prepared = taskMembers(t, e.prepared ?? e.taskMemo?.members ?? null);
  } catch {
    e.prepared = null;
  }
}

/**
 * @internal (thread.ts) The object form's decision from its row columns, as
 * the reply's numbers: per output key the member's index in `t.memberIds`,
 * and each key's rows (indices into the input's splits) in output order.
 * `duplicates` when two rows share a 64-bit key (a duplicate id, which the
 * caller's validator names, or a true collision, which the caller decides
 * in-thread). Equal to `wasmAssignment` of the same input, row for id.
 */
export function decideObjectTask(t: ObjectTask): ThreadReply {
  const e = load();
  const { x, mem } = e;
  const memo = e.taskMemo;
  e.taskMemo = null;
  return guarded('decideObjectTask', () => {
    const prepared = e.prepared;
    e.prepared = null;
    const w = writeObjectTask(t, mem, memo, prepared);
    if (!w.sameIds && check(x.countDuplicateKeys(), 'countDuplicateKeys') > 0) return { ok: true, kind: 'duplicates' };
    if (!w.sameOrder) {
      if (check(x.sortOrder(LAYOUT.FLAG_POOL), 'sortOrder') > 0) orderCollisions(mem.views(), (r) => taskId(t, r));
      const v = mem.views();
      // Over the last memo's order, which the new memo does not keep.
      w.memo.order = keptCopy(v.u32(LAYOUT.H_ORDER, v.word(LAYOUT.H_ORDER_LEN)), memo?.order ?? null);
    }
    check(x.decide(), 'decide');
    if (w.sameIds) {
      // The ids are the last task's: rank them once, then every output is one counting pass.
      if (w.memo.byRank === null) {
        check(x.rankRows(), 'rankRows');
        w.memo.byRank = mem.views().u32(LAYOUT.H_BY_RANK, t.weight.length).slice();
      } else {
        mem.views().u32(LAYOUT.H_BY_RANK, w.memo.byRank.length).set(w.memo.byRank);
      }
      check(x.sortOutputByRank(), 'sortOutputByRank');
    } else {
      check(x.sortOutput(), 'sortOutput');
    }
    const v = mem.views();
    const m = w.members.ids.length;
    const outOff = v.u32(LAYOUT.H_OUT_OFF, m + 1);
    const outRows = v.u32(LAYOUT.H_OUT_ROWS, outOff[m]!);
    // The task's members are the table's `given` (memberTable reuses a table only for the same list).
    const { byId, givenAt } = w.members;
    const memberOrder = new Int32Array(m);
    const off = new Uint32Array(m + 1);
    // The caller's buffer for the reply's places, when it lends one (shared: no allocation, and no copy in thread.ts).
    const n = t.weight.length;
    const slot = t.slot !== null && t.slot.length >= n ? (t.slot.subarray(0, n) as Uint32Array) : new Uint32Array(n);
    slot.fill(NO_SLOT);
    // A plain loop: a counter captured by a callback is a context slot, written once a row.
    let p = 0;
    for (let k = 0; k < m; k++) {
      const j = byId[k]!;
      memberOrder[k] = givenAt[j]!;
      off[k] = p;
      const end = outOff[j + 1]!;
      for (let q = outOff[j]!; q < end; q++) slot[outRows[q]!] = p++;
    }
    off[m] = p;
    const stats = readStats(v, m);
    e.taskMemo = w.memo;
    return { ok: true, kind: 'object', memberOrder, off, slot, stats };
  });
}

function decideColumnar(pool: ColumnarPool, withIds: boolean): { members: MemberTable; views: EngineViews } | null {
  const { x, mem } = load();
  return guarded('columnarAssignment', () => {
    const written = pool.write(mem, withIds);
    if (!written.sorted) {
      const collisions = check(x.sortOrder(LAYOUT.FLAG_LIVE), 'sortOrder');
      // A pool rebuilt from a snapshot without ids cannot order colliding keys: its caller sends the ids.
      if (collisions > 0 && !pool.hasIds()) return null;
      if (collisions > 0) orderCollisions(mem.views(), (r) => pool.idAt(r)!);
      // The columns in that order: decide reads them in sequence, and the pool keeps copies (no gather in JS).
      check(x.permuteByOrder(), 'permuteByOrder');
      const v = mem.views();
      const n = v.word(LAYOUT.H_ORDER_LEN);
      pool.keepOrder(v.u32(LAYOUT.H_ORDER, n), {
        weight: v.f64(LAYOUT.H_WEIGHT, n), lease: v.i32(LAYOUT.H_LEASE, n), prev: v.i32(LAYOUT.H_PREVIOUS, n),
        rec: v.i32(LAYOUT.H_RECORD, n), flags: v.u8(LAYOUT.H_FLAGS, n),
      });
    }
    check(x.decide(), 'decide');
    return { members: written.members, views: mem.views() };
  });
}

/**
 * The desired assignment of a `ColumnarPool`, per row: the leader's path
 * between ticks. Equal to `wasmAssignment(pool.toInput())`, row for split.
 */
export function columnarAssignment(pool: ColumnarPool): ColumnarDecision {
  const d = columnarDecisionOrNull(pool);
  if (d === null) throw new SplitfleetError('ENGINE_FAILURE', 'columnarAssignment: a pool without ids met colliding keys');
  return d;
}

/** @internal (thread.ts) `columnarAssignment`, or null when a pool rebuilt without ids meets colliding keys. */
export function columnarDecisionOrNull(pool: ColumnarPool): ColumnarDecision | null {
  const decided = decideColumnar(pool, false);
  if (decided === null) return null;
  const { members, views } = decided;
  return {
    members: members.ids,
    assignee: views.i32(LAYOUT.H_ASSIGNEE, pool.rowCount).slice(),
    stats: readStats(views, members.ids.length),
  };
}

/** The desired assignment of a `ColumnarPool` in the object form (`AssignmentResult`). */
export function columnarAssignmentResult(pool: ColumnarPool): AssignmentResult {
  const decided = decideColumnar(pool, true);
  if (decided === null) throw new SplitfleetError('ENGINE_FAILURE', 'columnarAssignmentResult: a pool without ids met colliding keys');
  const { members } = decided;
  const { x, mem } = load();
  return guarded('columnarAssignmentResult', () => {
    check(x.sortOutput(), 'sortOutput');
    return readAssignment(mem.views(), members, (r) => pool.idAt(r)!);
  });
}

/** @internal The module's exported layout constants (the layout test compares them with codec.ts). */
export function engineLayout(): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [name, value] of Object.entries(load().x)) {
    if (value instanceof WebAssembly.Global) out[name] = value.value as number;
  }
  return out;
}

/** @internal A header word as the last engine call left it (tests read H_COLLISIONS). */
export function engineWord(slot: number): number {
  return load().mem.views().word(slot);
}
