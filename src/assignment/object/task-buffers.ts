/**
 * A pool's kept task buffers (decision 0021): the shared columns an object
 * task is written into, reused from one decision to the next, and what
 * they were last written from, so that `taskColumns` (object-task.ts)
 * leaves in place the rows that repeat.
 *
 * Invariants: one decision at a time uses them; trust in the held
 * columns is dropped before a task is written (`begin`) and given back
 * only when every row is (`wrote`), or when new buffers are allocated.
 */
import type { SplitFields } from './fields.js';
import { OwnerHandles } from '../handles.js';
import type { ObjectTask } from '../wire.js';

/** Owner handles a TaskBuffers keeps, per row of the task, before it starts a new table (so owners that come and go do not grow it without bound). */
const MAX_OWNERS_PER_ROW = 4;

/** A task's row columns as `TaskBuffers` lends them: views of exactly n rows (idOff n + 1), and room for the ids' code units. */
export type TaskBufferColumns = Pick<ObjectTask, 'idOff' | 'weight' | 'flags' | 'lease' | 'prev' | 'rec'> & { units: Uint16Array; slot: Uint32Array };

/**
 * The task columns a pool reuses from one decision to the next, in shared
 * memory, so that a decision allocates none. Why: a fresh set is ~57 MB at
 * 1M rows, and once glibc has raised its mmap threshold (it does after the
 * first large free) such buffers come from the heap, which it clears in the
 * caller's turn: 40–60 ms in about half of the pool's first calls at 1M,
 * gone with the threshold pinned (MALLOC_MMAP_THRESHOLD_) and gone with this
 * kept buffers (BENCHMARKS.md, issue 14, fourth pass). One decision at a time uses
 * them; the thread reads the columns only while it decides and copies
 * what it keeps (thread-task.ts `writeObjectTask`). They also lend the thread
 * the reply's `slot` (wire.ts), which the thread writes and the caller reads
 * before its next task. Cost: the buffers stay allocated, ~45
 * bytes a row plus two bytes a code unit of room for ids (the units the
 * reads counted, and an eighth more).
 *
 * They also remember which read their columns were written from, with
 * owner handles that outlive a task, so that the next task leaves in place
 * the rows that repeat (`taskColumns`): a row's owners map to the same
 * handles, and ids equal row for row from the first have the same code
 * units at the same offsets. Why: looking up 1M owners in a Map (~40 ms)
 * and copying 1M ids' code units (~25 ms) were most of building a settled
 * task, and a pool's next input usually repeats most rows of its last.
 */
export class TaskBuffers {
  private rows = -1;
  private buffers: { idOff: Uint32Array; weight: Float64Array; flags: Uint8Array; lease: Int32Array; prev: Int32Array; rec: Int32Array; slot: Uint32Array } | null = null;
  private units: Uint16Array | null = null;
  /** Handles of the owners named in these buffers' tasks, kept from one task to the next (until `MAX_OWNERS_PER_ROW` a row). */
  owners = new OwnerHandles();
  /** The read the columns hold in full (its rows, code units and their OR), or null (none, or a task being written). */
  private held: { fields: SplitFields; n: number; chars: number; or: number } | null = null;

  /**
   * What the columns hold, if they were written from `fields` (the pool's
   * last read, which no new read overwrites), for a task of n rows; and
   * from now on nothing, until `wrote`. Resets the owner handles when they
   * have grown past MAX_OWNERS_PER_ROW a row (owners that come and go).
   */
  begin(fields: SplitFields | null, n: number): { fields: SplitFields; n: number; chars: number; or: number } | null {
    const held = this.held !== null && this.held.fields === fields ? this.held : null;
    this.held = null;
    if (this.owners.ids.length > MAX_OWNERS_PER_ROW * n + 1024) {
      this.owners = new OwnerHandles();
      return null;
    }
    return held;
  }

  /** The columns now hold `fields`'s first n rows in full. */
  wrote(fields: SplitFields, n: number, chars: number, or: number): void {
    this.held = { fields, n, chars, or };
  }

  /** A read equal to the held one, field for field, in another buffer: the columns hold it too. */
  alsoHolds(was: SplitFields, now: SplitFields): void {
    if (this.held !== null && this.held.fields === was) this.held = { ...this.held, fields: now };
  }

  /**
   * Columns for n rows (views of exactly n, idOff n + 1), new shared buffers
   * only when n outgrows them, one buffer per `next()` slice: the buffers' first
   * allocation at 1M is ~57 MB, which glibc may clear in the turn that asks.
   */
  async columns(n: number, units: number, next: () => Promise<void>): Promise<TaskBufferColumns> {
    if (this.buffers === null || n > this.rows) {
      this.held = null;
      const sab = (bytes: number): SharedArrayBuffer => new SharedArrayBuffer(Math.max(8, bytes));
      const idOff = new Uint32Array(sab(4 * (n + 1)));
      await next();
      const weight = new Float64Array(sab(8 * n));
      await next();
      const flags = new Uint8Array(sab(n));
      const lease = new Int32Array(sab(4 * n));
      await next();
      const prev = new Int32Array(sab(4 * n));
      await next();
      const rec = new Int32Array(sab(4 * n));
      await next();
      const slot = new Uint32Array(sab(4 * n));
      this.buffers = { idOff, weight, flags, lease, prev, rec, slot };
      this.rows = n;
    }
    if (this.units === null || this.units.length < units) {
      this.held = null;
      await next();
      // An eighth more than this task needs, so that ids a little longer next time fit too.
      this.units = new Uint16Array(new SharedArrayBuffer(2 * Math.max(16, units + (units >>> 3))));
    }
    const b = this.buffers;
    return {
      idOff: b.idOff.subarray(0, n + 1), weight: b.weight.subarray(0, n), flags: b.flags.subarray(0, n),
      lease: b.lease.subarray(0, n), prev: b.prev.subarray(0, n), rec: b.rec.subarray(0, n), units: this.units,
      slot: b.slot.subarray(0, n),
    };
  }

  /** Room for at least `need` code units, the first `keep` of `units` kept. */
  growUnits(units: Uint16Array, need: number, keep: number): Uint16Array {
    const grown = new Uint16Array(new SharedArrayBuffer(2 * Math.max(need, 2 * units.length)));
    grown.set(units.subarray(0, keep));
    this.units = grown;
    return grown;
  }
}
