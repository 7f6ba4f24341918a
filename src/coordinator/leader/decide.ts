/**
 * The leader's default engine: the WASM engine on the leader view's columns,
 * on this thread below OFF_THREAD_SPLITS splits and on an `AssignmentPool`
 * thread above (docs/decisions/0006-when-decisions-leave-the-thread.md). The
 * pool thread is started on first need and ended with the coordinator. A
 * large pool with a cached order is decided on its slice (decision-slice.ts),
 * the rows the decision can touch, which gives the same decision.
 * It decides only what the engine decides; nothing here touches the store.
 */
import type { ColumnarPool } from '../../assignment/codec.js';
import { AssignmentPool } from '../../assignment/pool.js';
import { columnarAssignment } from '../../assignment/wasm.js';
import { decisionSlice, sliceRows } from '../../assignment/decision-slice.js';
import { assignedRowsOf, type AssignedRows } from '../../assignment/wire.js';

/**
 * Above this many splits the default assigner decides on a pool thread. Below
 * it the in-thread WASM decision is faster than the pool's round trip and
 * blocks the loop for about 15 ms per 100k splits on an idle machine (more
 * under load: 117 ms at ~190k in bench:fleet at load 4), so the bound is
 * where that stays inside the leader loop's 20 ms p99 target (decision 0006).
 */
export const OFF_THREAD_SPLITS = 50_000;

/**
 * Slice decisions in a row after which an idle pool thread is ended: its engine
 * memory and the kept snapshot buffers are the size of the whole pool (≈ 1.2 GiB
 * of the leader's RSS at 10M splits) and only a pool without a cached order needs
 * them again (the thread is started anew then). Counted, not timed: no clock here.
 */
export const IDLE_THREAD_SLICES = 50;

export class DefaultEngine {
  private pool: AssignmentPool | undefined;
  /** Thread decisions in flight, and slice decisions since the last thread decision. */
  private onThread = 0;
  private slicesSinceThread = 0;

  /** Whether a pool thread is running (tests). */
  get threadOpen(): boolean {
    return this.pool !== undefined;
  }

  /**
   * In-thread below OFF_THREAD_SPLITS (faster, and the loop is blocked for a few ms only); a pool thread above.
   * As the rows it assigns: what publishing needs, and a reply the size of the lanes, not of the queue.
   */
  async decide(pool: ColumnarPool): Promise<AssignedRows> {
    if (pool.size >= OFF_THREAD_SPLITS) {
      // The rows a decision can touch (decision-slice.ts): the fleet's lanes and the owned splits, not
      // the queue; decided here, in a millisecond or two, with no thread round trip.
      const slice = decisionSlice(pool);
      if (slice !== null) {
        const d = columnarAssignment(slice.pool);
        if (++this.slicesSinceThread >= IDLE_THREAD_SLICES && this.onThread === 0 && this.pool) {
          const idle = this.pool;
          this.pool = undefined;
          void idle.close().catch(() => undefined);
        }
        return { members: d.members, ...sliceRows(slice, d) };
      }
    }
    if (pool.size < OFF_THREAD_SPLITS) {
      const d = columnarAssignment(pool);
      return { members: d.members, ...assignedRowsOf(d.assignee), stats: d.stats };
    }
    this.pool ??= new AssignmentPool({ threads: 1 });
    this.slicesSinceThread = 0;
    this.onThread++;
    try {
      return await this.pool.assignColumnarRows(pool);
    } finally {
      this.onThread--;
    }
  }

  async close(): Promise<void> {
    await this.pool?.close();
  }
}
