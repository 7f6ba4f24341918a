/**
 * `AssignmentPool`: the WASM engine on Piscina threads, so a leader's
 * event loop keeps serving leases while a large decision is computed. The
 * only file that imports piscina.
 *
 * Invariants: inputs go to a thread as row columns (object-task.ts; typed
 * arrays transferred, ids as code units), never object by object, built in
 * slices of the caller's loop of about 8 ms (SLICE_MS); results come back as row
 * indices, and the object form is rebuilt on the caller from its own id
 * strings, so a result equals `desiredAssignment(input)` exactly (`computeMs`
 * aside). The task and reply types live in wire.ts, which thread.ts imports
 * too; the two files never import each other. Latest-wins: at most `threads` decisions run and one
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
import { withThreadExecArgv } from '../thread-argv.js';
import { ColumnarPool, type ColumnarDecision, type ColumnarSnapshot } from './columnar.js';
import { desiredAssignment } from './engine.js';
import { ReadBuffers } from './object/fields.js';
import { pagesInSlices } from './object/pages.js';
import { fromKept, rebuild, type KeptResult } from './object/object-result.js';
import { readTask, taskColumns, type TaskRead, type LoopSlices } from './object/object-task.js';
import { TaskBuffers } from './object/task-buffers.js';
import { KeptSnapshotBuffers } from './snapshot-buffers.js';
import type { AssignmentInput, AssignmentResult } from './types.js';
import { columnarAssignment, columnarDecisionOrNull } from './wasm.js';
import { assignedRowsOf, type AssignedRows, type ObjectTask, type ThreadReply, type ThreadTask } from './wire.js';
import { nextTurn } from '../next-turn.js';

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
  /**
   * At most this many splits read (or result rows rebuilt) per turn of the caller's event loop; a turn
   * also ends once it has run about 8 ms. Default 32768.
   */
  chunk?: number;
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


/** How long the object path runs in one slice (one turn of the caller's loop) before it yields (checked between steps of rows). */
const SLICE_MS = 8;

/** Slices of the caller's loop of about SLICE_MS each, one per turn of the loop (object-task.ts LoopSlices). */
function slices(): LoopSlices {
  let start = performance.now();
  return {
    due: () => performance.now() - start >= SLICE_MS,
    next: async () => {
      await nextTurn();
      start = performance.now();
    },
  };
}

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
  /** The last object input decided, as read, and a private copy of its result (a repeat of that read returns it again). */
  private last: { read: TaskRead; result: KeptResult } | null = null;
  /** The buffers object inputs are read into; one decision at a time uses them (`readsBusy`), others read into their own. */
  private readonly reads = new ReadBuffers();
  /** ...and the task columns they are turned into (shared memory the thread reads while it decides). */
  private readonly taskBuffers = new TaskBuffers();
  /** Where `assignColumnar` copies snapshots (one set of buffers per snapshot not yet decided). */
  private readonly snapshotBuffers = new KeptSnapshotBuffers();
  private readsBusy = false;
  /** Where object results are laid out before their lists are sliced (`rebuild`), and the last one stays (`last`); one decision at a time uses it, as `reads`. */
  private places: string[][] = [];
  /** How many places `places` has room for. */
  private placeRows = 0;

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
        this.piscina = withThreadExecArgv((execArgv) => new Piscina({
          filename: pathToFileURL(file).href, minThreads: threads, maxThreads: threads, idleTimeout: 60_000, execArgv,
        }));
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
    return this.columnar(pool, false);
  }

  /**
   * @internal (the leader's engine, assignment/front-door.ts) The same decision as
   * the rows it assigns (wire.ts `AssignedRows`): the reply is the size of the
   * fleet's lanes, not of the queue.
   */
  assignColumnarRows(pool: ColumnarPool): Promise<AssignedRows> {
    return this.columnar(pool, true);
  }

  private columnar(pool: ColumnarPool, assignedOnly: false): Promise<ColumnarDecision>;
  private columnar(pool: ColumnarPool, assignedOnly: true): Promise<AssignedRows>;
  private columnar(pool: ColumnarPool, assignedOnly: boolean): Promise<ColumnarDecision | AssignedRows> {
    if (this.closed) return Promise.reject(closedError());
    const buffers = this.snapshotBuffers.acquire();
    const snapshot = pool.snapshot(false, buffers);
    const decided = this.submit(() => this.runColumnar(pool, snapshot, assignedOnly));
    // The buffers are the snapshot's until its decision settles (or is superseded): the thread reads it meanwhile.
    const release = (): void => this.snapshotBuffers.release(buffers);
    decided.then(release, release);
    return decided;
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

  /** Room for n output places, paged (pages.ts): the pool's own when `shared` (grown in slices of the loop), else a fresh one. */
  private async placesFor(shared: boolean, n: number, loop: LoopSlices): Promise<string[][]> {
    if (shared && this.placeRows >= n) return this.places;
    const places = await pagesInSlices(n, '', loop);
    if (shared) {
      this.places = places;
      this.placeRows = n;
    }
    return places;
  }

  private async runObject(input: AssignmentInput): Promise<AssignmentResult> {
    const started = performance.now();
    await nextTurn();
    if (this.piscina === null) return desiredAssignment(input);
    // Decisions running at once (threads > 1) must not share a buffer: only one compares with the last read.
    const shared = !this.readsBusy;
    this.readsBusy ||= shared;
    try {
      const last = shared ? this.last : null;
      const loop = slices();
      const got = await readTask(input, this.chunk, loop, shared ? this.reads : new ReadBuffers(), last?.read ?? null, this.prepareMembers);
      // A broken rule: desiredAssignment throws the validator's own error.
      if (got === null) return desiredAssignment(input);
      if (got.repeats && last !== null) {
        // The same input as the last decision's, field for field: the engine would be given the same
        // columns, so its decision is the last one, copied again (a chunk of rows per turn).
        const again = await fromKept(last.result, this.chunk, loop);
        this.last = { read: got.read, result: last.result };
        this.taskBuffers.alsoHolds(last.read.fields, got.read.fields);
        again.stats.computeMs = performance.now() - started;
        return again;
      }
      if (shared) this.last = null;
      // The task buffers leave in place the rows that repeat the last read (which the other read buffer still holds).
      const t: ObjectTask = await taskColumns(got.read, this.chunk, loop, shared ? this.taskBuffers : null, last?.read.fields ?? null);
      // The task buffers (shared) cross without a copy and stay the pool's; fresh ones are moved.
      const transfer = [t.memberCaps, t.idUnits, t.idOff, t.weight, t.flags, t.lease, t.prev, t.rec]
        .map((a) => a.buffer).filter((b): b is ArrayBuffer => b instanceof ArrayBuffer);
      // The read's member caps go to the thread: keep a copy for the next comparison.
      const read: TaskRead = { ...got.read, memberCaps: got.read.memberCaps.slice() };
      // Room for every row's place (a row has at most one), before the thread runs: fresh memory
      // faulted in while the thread allocates and frees its own stalled a turn up to 46 ms (decision 0023).
      const places = await this.placesFor(shared, got.read.n, loop);
      const reply = await this.call(t, transfer);
      // Equal keys: a duplicate id (the validator names it) or, about once in 10^7 jobs of 1M, a true collision.
      if (reply.kind === 'duplicates') return desiredAssignment(input);
      if (reply.kind !== 'object') throw new SplitfleetError('ENGINE_FAILURE', 'AssignmentPool: thread answered the wrong kind');
      await loop.next();
      const keys: string[] | null = shared ? [] : null;
      const result = await rebuild(input, got.read.fields, reply, this.chunk, loop, keys, places);
      if (keys !== null) this.last = { read, result: { keys, places, off: reply.off, stats: { ...reply.stats } } };
      result.stats.computeMs = performance.now() - started;
      return result;
    } finally {
      if (shared) this.readsBusy = false;
    }
  }

  /**
   * Starts a thread on the member table of the task being read (wire.ts
   * MembersTask), so that it is built while this caller reads the splits.
   * A hint: the reply says nothing, and a failure (a pool closing) is dropped.
   */
  private readonly prepareMembers = (seed: string, memberIds: string[], memberCaps: Float64Array<ArrayBuffer>): void => {
    if (this.closed || this.piscina === null) return;
    // A copy of the caps, moved (wire.ts: a task's typed arrays are moved, never cloned): the object task moves the read's own.
    const caps = memberCaps.slice();
    this.piscina.run({ kind: 'members', seed, memberIds, memberCaps: caps } satisfies ThreadTask, { transferList: [caps.buffer] }).catch(() => undefined);
  };

  private async runColumnar(pool: ColumnarPool, snapshot: ColumnarSnapshot, assignedOnly: boolean): Promise<ColumnarDecision | AssignedRows> {
    if (this.piscina === null) {
      await nextTurn();
      let copy = ColumnarPool.fromSnapshot(snapshot);
      let d = columnarDecisionOrNull(copy);
      if (d === null) d = columnarAssignment((copy = ColumnarPool.fromSnapshot(pool.snapshot(true))));
      const sorted = copy.sortedState();
      if (snapshot.order === null && sorted !== null) pool.adoptSorted(snapshot.epoch, sorted);
      return assignedOnly ? { members: d.members, ...assignedRowsOf(d.assignee), stats: d.stats } : d;
    }
    let s = snapshot;
    const task = (snap: ColumnarSnapshot): ThreadTask => (assignedOnly ? { kind: 'columnar', snapshot: snap, assignedOnly } : { kind: 'columnar', snapshot: snap });
    let reply = await this.call(task(s), snapshotBuffers(s));
    if (reply.kind === 'needs-ids') {
      // Colliding keys (rare): the sort needs ids. The pool as it is now, with them.
      s = pool.snapshot(true);
      reply = await this.call(task(s), snapshotBuffers(s));
    }
    if ((reply.kind !== 'columnar' && reply.kind !== 'assigned') || (reply.kind === 'assigned') !== assignedOnly) {
      throw new SplitfleetError('ENGINE_FAILURE', 'AssignmentPool: thread answered the wrong kind');
    }
    if (reply.sorted !== null) pool.adoptSorted(s.epoch, reply.sorted);
    return reply.kind === 'assigned'
      ? { members: reply.members, rows: reply.rows, assignees: reply.assignees, stats: reply.stats }
      : { members: reply.members, assignee: reply.assignee, stats: reply.stats };
  }
}

/** The snapshot's buffers to move to the thread: its fresh ones (kept snapshot buffers are shared: they cross without a copy and stay). */
function snapshotBuffers(s: ColumnarSnapshot): ArrayBuffer[] {
  return [s.order, s.weight, s.lease, s.prev, s.rec, s.flags, s.key, s.idOff, s.idUnits].flatMap((a) => (a !== null && a.buffer instanceof ArrayBuffer ? [a.buffer] : []));
}

function closedError(): SplitfleetError {
  return new SplitfleetError('CLOSED', 'AssignmentPool: used after close()');
}
