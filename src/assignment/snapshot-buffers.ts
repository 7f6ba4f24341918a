/**
 * Shared buffers a pool copies `ColumnarPool` snapshots into, reused from
 * one decision to the next (`KeptSnapshotBuffers`), so that taking a snapshot
 * allocates nothing. Why: a snapshot is ~21–29 MB at 1M rows, taken
 * synchronously in the caller's turn; fresh buffers each time cost that
 * turn their allocation (glibc clears large blocks once its mmap threshold
 * has risen) and, as they were freed, the collector's reaction to that much
 * external memory: 5–100 ms per snapshot at 1M, against a copy into a kept
 * buffer (BENCHMARKS.md, issue 14, fourth pass).
 *
 * A set of buffers belongs to one snapshot from `acquire` until `release`: the thread
 * reads it only while it decides, and keeps nothing of it (thread.ts). A set
 * that already holds the pool's cached order is only patched where the order's
 * columns changed since (`mirror`, sorted-order.ts `copyInto`): at 10M rows a
 * full copy is ~250 MB in the caller's turn.
 * Pure: no I/O, no clock.
 */

type Column = Float64Array | Int32Array | Uint32Array | Uint8Array;
type ColumnOf<C extends Column> = C extends Float64Array ? Float64Array
  : C extends Int32Array ? Int32Array : C extends Uint32Array ? Uint32Array : Uint8Array;

/** One snapshot's columns: a shared buffer per name, grown (never shrunk) as snapshots grow. */
export class SnapshotBuffers {
  private readonly buffers = new Map<string, SharedArrayBuffer>();
  /**
   * The cached order this set's buffers hold a copy of (the order array
   * itself, by identity) and the change-log version they are current to
   * (sorted-order.ts `copyInto`); null when they hold anything else.
   */
  mirror: { order: Uint32Array; version: number } | null = null;

  /**
   * A copy of `src` in this set's buffer `name` (same element type and length). A new
   * buffer has room for `room` elements (the pool's reserved rows): a pool growing while it
   * is seeded would otherwise get a fresh buffer, and fault its pages in, at every snapshot
   * (50–96 ms of the leader's loop at 1M).
   */
  copy<C extends Column>(name: string, src: C, room = 0): ColumnOf<C> {
    const bytes = src.byteLength;
    let b = this.buffers.get(name);
    if (b === undefined || b.byteLength < bytes) {
      // Room for growth: a pool that gains splits should not reallocate at every snapshot.
      b = new SharedArrayBuffer(Math.max(64, bytes + (bytes >>> 3), room * src.BYTES_PER_ELEMENT));
      this.buffers.set(name, b);
    }
    const Make = src.constructor as new (buffer: SharedArrayBuffer, offset: number, length: number) => Column;
    const out = new Make(b, 0, src.length);
    out.set(src as never);
    return out as ColumnOf<C>;
  }

  /**
   * This set's buffer `name` as its last `copy` of a column like `src` left
   * it, brought up to date at the positions `log[from…]` only: O(changes),
   * where a copy is O(rows). Null when the buffer cannot hold `src`.
   */
  patch<C extends Column>(name: string, src: C, log: readonly number[], from: number): ColumnOf<C> | null {
    const b = this.buffers.get(name);
    if (b === undefined || b.byteLength < src.byteLength) return null;
    const Make = src.constructor as new (buffer: SharedArrayBuffer, offset: number, length: number) => Column;
    const out = new Make(b, 0, src.length);
    for (let i = from; i < log.length; i++) {
      const k = log[i]!;
      out[k] = src[k]!;
    }
    return out as ColumnOf<C>;
  }
}

/** The snapshot buffers one pool keeps: a free set per snapshot, another when all are in use (a decision running, another waiting). */
export class KeptSnapshotBuffers {
  private readonly free: SnapshotBuffers[] = [];

  acquire(): SnapshotBuffers {
    return this.free.pop() ?? new SnapshotBuffers();
  }

  release(buffers: SnapshotBuffers): void {
    this.free.push(buffers);
  }
}
