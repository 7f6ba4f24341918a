/**
 * `AssignmentPool`: the WASM engine on Piscina threads, so a leader's
 * event loop keeps serving leases while a large decision is computed. The
 * only file that imports piscina.
 *
 * Invariants: inputs go to a thread as numeric typed arrays (transferred)
 * and joined id strings, never object by object; results come back as
 * transferred typed arrays, and the object form is rebuilt on the caller
 * from its own input, so a result equals `desiredAssignment(input)` exactly
 * (`computeMs` aside). Latest-wins: at most `threads` decisions run and one
 * waits; a newer request replaces the waiting one, whose promise rejects
 * with SplitfleetError('SUPERSEDED'). Nothing is thrown across the thread
 * boundary: a thread replies `{ ok: false, code, message }` and this file
 * rebuilds the SplitfleetError. With `threads: 0`, or when the compiled
 * thread file is missing or piscina cannot start, decisions run on the
 * calling thread with the same semantics (`mode: 'in-thread'`).
 */
import { existsSync } from 'node:fs';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { Piscina } from 'piscina';
import { SplitfleetError, type SplitfleetErrorCode } from '../errors.js';
import { ColumnarPool, type ColumnarDecision, type ColumnarSnapshot } from './codec.js';
import { desiredAssignment } from './engine.js';
import type { ObjectTask, ThreadReply, ThreadTask } from './thread.js';
import type { AssignmentInput, AssignmentResult } from './types.js';
import { validateAssignmentInput } from './validate.js';
import { columnarAssignment } from './wasm.js';

export interface AssignmentPoolOptions {
  /** Threads computing decisions (and decisions run at once); 0 computes on the calling thread. Default 1. */
  threads?: number;
  /**
   * The compiled thread entry. Default: thread.js beside the compiled pool.js;
   * when this module runs from source (a .ts runner), dist/src/assignment/thread.js.
   */
  threadFile?: string;
  /** When threads cannot start: true (default) falls back to the calling thread; false throws ENGINE_FAILURE. */
  fallback?: boolean;
  /** Splits marshalled (or result rows rebuilt) per turn of the caller's event loop. Default 32768. */
  chunk?: number;
}

/** @internal (thread.ts) Marks a reply so Piscina transfers `buffers` instead of copying them. */
export function movable<T extends object>(value: T, buffers: ArrayBuffer[]): unknown {
  return Piscina.move({ [Piscina.transferableSymbol]: buffers, [Piscina.valueSymbol]: value } as never);
}

/** The compiled thread entry this module would use by default. */
export function defaultThreadFile(): string {
  const here = import.meta.url;
  const rel = here.endsWith('.ts') ? '../../dist/src/assignment/thread.js' : './thread.js';
  return fileURLToPath(new URL(rel, here));
}

interface Job {
  start: () => Promise<unknown>;
  resolve: (v: never) => void;
  reject: (e: unknown) => void;
}

const turn = (): Promise<void> => new Promise((r) => setImmediate(r));

/**
 * Runs `desiredAssignment` (object form) and `columnarAssignment` (a
 * `ColumnarPool`) off the calling thread. `assign` is an `Assigner`.
 */
export class AssignmentPool {
  /** Where decisions run. */
  readonly mode: 'threads' | 'in-thread';
  /** Why threads are not used, when `mode` is 'in-thread' without `threads: 0`. */
  readonly fallbackReason: string | null = null;
  private readonly piscina: Piscina | null = null;
  private readonly concurrency: number;
  private readonly chunk: number;
  private running = 0;
  private waiting: Job | null = null;
  private closed = false;

  constructor(options: AssignmentPoolOptions = {}) {
    const threads = options.threads ?? 1;
    if (!Number.isSafeInteger(threads) || threads < 0) {
      throw new SplitfleetError('INVALID_CONFIG', `AssignmentPool: threads must be an integer ≥ 0 (got ${String(threads)})`);
    }
    const chunk = options.chunk ?? 32768;
    if (!Number.isSafeInteger(chunk) || chunk < 1) {
      throw new SplitfleetError('INVALID_CONFIG', `AssignmentPool: chunk must be an integer ≥ 1 (got ${String(chunk)})`);
    }
    this.chunk = chunk;
    this.concurrency = Math.max(1, threads);
    if (threads === 0) {
      this.mode = 'in-thread';
      return;
    }
    const file = options.threadFile ?? defaultThreadFile();
    let reason: string;
    if (!existsSync(file)) {
      reason = `thread file ${file} not found (run "npm run build")`;
    } else {
      try {
        this.piscina = new Piscina({ filename: pathToFileURL(file).href, minThreads: threads, maxThreads: threads, idleTimeout: 60_000 });
        this.mode = 'threads';
        return;
      } catch (e) {
        reason = `piscina could not start: ${e instanceof Error ? e.message : String(e)}`;
      }
    }
    if (options.fallback === false) throw new SplitfleetError('ENGINE_FAILURE', `AssignmentPool: ${reason}`);
    this.mode = 'in-thread';
    this.fallbackReason = reason;
  }

  /** The desired assignment of `input`, equal to `desiredAssignment(input)`. Do not mutate `input` until it settles. */
  readonly assign = (input: AssignmentInput): Promise<AssignmentResult> =>
    this.submit(() => this.runObject(input));

  /** The decision on `pool` as it is now (a snapshot is taken before this returns); equal to `columnarAssignment(pool)`. */
  assignColumnar(pool: ColumnarPool): Promise<ColumnarDecision> {
    if (this.closed) return Promise.reject(closedError());
    const snapshot = pool.snapshot();
    return this.submit(() => this.runColumnar(pool, snapshot));
  }

  /** Ends the threads; a waiting request rejects with CLOSED, and so do running ones that had not finished. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    const w = this.waiting;
    this.waiting = null;
    w?.reject(closedError());
    await this.piscina?.destroy();
  }

  private submit<T>(start: () => Promise<T>): Promise<T> {
    if (this.closed) return Promise.reject(closedError());
    return new Promise<T>((resolve, reject) => {
      const job: Job = { start, resolve: resolve as (v: never) => void, reject };
      if (this.running < this.concurrency) return void this.run(job);
      const replaced = this.waiting;
      this.waiting = job;
      replaced?.reject(new SplitfleetError('SUPERSEDED', 'AssignmentPool: a newer assignment request replaced this one before it ran'));
    });
  }

  private async run(job: Job): Promise<void> {
    this.running++;
    try {
      const value = await job.start();
      if (this.closed) throw closedError();
      job.resolve(value as never);
    } catch (e) {
      job.reject(this.closed ? closedError() : e);
    } finally {
      this.running--;
      const next = this.waiting;
      this.waiting = null;
      if (next !== null && !this.closed) void this.run(next);
    }
  }

  private async call(task: ThreadTask, transfer: ArrayBuffer[]): Promise<Extract<ThreadReply, { ok: true }>> {
    let reply: ThreadReply;
    if (this.closed) throw closedError();
    try {
      reply = (await this.piscina!.run(task, { transferList: transfer })) as ThreadReply;
    } catch (e) {
      if (this.closed) throw closedError();
      throw new SplitfleetError('ENGINE_FAILURE', `AssignmentPool thread failed: ${e instanceof Error ? e.message : String(e)}`, { cause: e });
    }
    if (!reply.ok) throw new SplitfleetError(reply.code as SplitfleetErrorCode, reply.message);
    return reply;
  }

  private async runObject(input: AssignmentInput): Promise<AssignmentResult> {
    const started = performance.now();
    await turn();
    if (this.piscina === null) return desiredAssignment(input);
    const task = await marshal(input, this.chunk);
    if (task === null) return desiredAssignment(input); // the validator accepted what the wire cannot carry exactly
    const reply = await this.call(task, buffersOf(task));
    if (reply.kind !== 'object') throw new SplitfleetError('ENGINE_FAILURE', 'AssignmentPool: thread answered the wrong kind');
    const result = await rebuild(input, reply, this.chunk);
    result.stats.computeMs = performance.now() - started;
    return result;
  }

  private async runColumnar(pool: ColumnarPool, snapshot: ColumnarSnapshot): Promise<ColumnarDecision> {
    if (this.piscina === null) {
      await turn();
      const copy = ColumnarPool.fromSnapshot(snapshot);
      const d = columnarAssignment(copy);
      const order = copy.cachedOrder();
      if (snapshot.order === null && order !== null) pool.adoptOrder(snapshot.epoch, order);
      return d;
    }
    const s = snapshot;
    const transfer = [s.order, s.weight, s.lease, s.prev, s.rec, s.flags, s.key, s.idOff].flatMap((a) => (a === null ? [] : [a.buffer as ArrayBuffer]));
    const reply = await this.call({ kind: 'columnar', snapshot: s }, transfer);
    if (reply.kind !== 'columnar') throw new SplitfleetError('ENGINE_FAILURE', 'AssignmentPool: thread answered the wrong kind');
    if (reply.order !== null) pool.adoptOrder(s.epoch, reply.order);
    return { members: reply.members, assignee: reply.assignee, stats: reply.stats };
  }
}

function closedError(): SplitfleetError {
  return new SplitfleetError('CLOSED', 'AssignmentPool: used after close()');
}

const STATUS_CODE: Record<string, number> = { runnable: 1, completed: 2, quarantined: 3 };
const isOwner = (v: unknown): boolean => v === undefined || v === null || typeof v === 'string';

/** Joined strings with offsets. */
function joined(ids: readonly string[]): { chars: string; off: Uint32Array } {
  const off = new Uint32Array(ids.length + 1);
  let at = 0;
  ids.forEach((id, i) => {
    off[i] = at;
    at += id.length;
  });
  off[ids.length] = at;
  return { chars: ids.join(''), off };
}

/**
 * The object form as columns, a chunk of splits per event-loop turn. Any
 * value the columns cannot carry exactly goes to the validator here, which
 * throws the error the engine would; null when it accepts anyway.
 */
async function marshal(input: AssignmentInput, chunk: number): Promise<ObjectTask | null> {
  const o = input as unknown as Record<string, unknown>;
  const members = o?.members;
  const splits = o?.splits;
  const reserved = o?.reserved;
  const shapeOk =
    typeof o === 'object' && o !== null && typeof o.seed === 'string' &&
    (o.defaultCap === undefined || typeof o.defaultCap === 'number') &&
    Array.isArray(members) && Array.isArray(splits) &&
    (reserved === undefined || (Array.isArray(reserved) && reserved.every((r) => typeof r === 'string'))) &&
    members.every((mm) => typeof mm === 'object' && mm !== null && typeof mm.id === 'string' && (mm.cap === undefined || typeof mm.cap === 'number'));
  if (!shapeOk) return refuse(input);
  const ms = members as MemberInputLike[];
  const m = joined(ms.map((mm) => mm.id));
  const memberHasCap = Uint8Array.from(ms, (mm) => (mm.cap === undefined ? 0 : 1));
  const memberCap = Float64Array.from(ms, (mm) => mm.cap ?? 0);
  const ss = splits as unknown[];
  const n = ss.length;
  const idOff = new Uint32Array(n + 1);
  const weight = new Float64Array(n);
  const status = new Uint8Array(n);
  const lease = new Int32Array(n);
  const rec = new Int32Array(n);
  const prev = new Int32Array(n);
  const owners = new Map<string, number>();
  const ownerNames: string[] = [];
  const handle = (v: string | null | undefined): number => {
    if (v === null || v === undefined) return -1;
    let h = owners.get(v);
    if (h === undefined) {
      h = ownerNames.length;
      owners.set(v, h);
      ownerNames.push(v);
    }
    return h;
  };
  const parts: string[] = [];
  let at = 0;
  for (let from = 0; from < n; from += chunk) {
    if (from > 0) await turn();
    const to = Math.min(n, from + chunk);
    const ids = new Array<string>(to - from);
    for (let i = from; i < to; i++) {
      const s = ss[i] as Record<string, unknown> | null | undefined;
      if (typeof s !== 'object' || s === null) return refuse(input);
      const { id, weight: w, status: st, leaseOwner, recordOwner, previous } = s;
      if (typeof id !== 'string' || typeof w !== 'number' || !isOwner(leaseOwner) || !isOwner(recordOwner) || !isOwner(previous)) return refuse(input);
      const code = st === undefined ? 0 : typeof st === 'string' && Object.hasOwn(STATUS_CODE, st) ? STATUS_CODE[st]! : -1;
      if (code < 0) return refuse(input);
      idOff[i] = at;
      at += id.length;
      ids[i - from] = id;
      weight[i] = w;
      status[i] = code;
      lease[i] = handle(leaseOwner as string | null | undefined);
      rec[i] = handle(recordOwner as string | null | undefined);
      prev[i] = handle(previous as string | null | undefined);
    }
    parts.push(ids.join(''));
  }
  idOff[n] = at;
  const own = joined(ownerNames);
  const res = reserved === undefined ? null : joined(reserved as string[]);
  return {
    kind: 'object', seed: o.seed as string, defaultCap: o.defaultCap as number | undefined,
    memberChars: m.chars, memberOff: m.off, memberHasCap, memberCap,
    idChars: parts.join(''), idOff, weight, status, lease, rec, prev,
    ownerChars: own.chars, ownerOff: own.off,
    reservedChars: res?.chars ?? null, reservedOff: res?.off ?? null,
  };
}

interface MemberInputLike {
  id: string;
  cap?: number;
}

/** Throws the validator's error for `input`; null when it accepts (the caller computes in-thread). */
function refuse(input: AssignmentInput): null {
  validateAssignmentInput(input);
  return null;
}

function buffersOf(t: ObjectTask): ArrayBuffer[] {
  const arrays = [t.memberOff, t.memberHasCap, t.memberCap, t.idOff, t.weight, t.status, t.lease, t.rec, t.prev, t.ownerOff, t.reservedOff];
  return arrays.flatMap((a) => (a === null ? [] : [a.buffer as ArrayBuffer]));
}

/** The object result from the thread's rows and the caller's own input, a chunk of rows per turn. */
async function rebuild(input: AssignmentInput, reply: Extract<ThreadReply, { kind: 'object' }>, chunk: number): Promise<AssignmentResult> {
  const { memberOrder, off, rows } = reply;
  const assignment: Record<string, string[]> = {};
  let sinceTurn = 0;
  for (let k = 0; k < memberOrder.length; k++) {
    const s = off[k]!;
    const len = off[k + 1]! - s;
    const list = new Array<string>(len);
    for (let i = 0; i < len; i++) list[i] = input.splits[rows[s + i]!]!.id;
    Object.defineProperty(assignment, input.members[memberOrder[k]!]!.id, { value: list, enumerable: true, writable: true, configurable: true });
    sinceTurn += len + 1;
    if (sinceTurn >= chunk) {
      sinceTurn = 0;
      await turn();
    }
  }
  return { assignment, stats: { ...reply.stats } };
}
