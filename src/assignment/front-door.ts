/**
 * The engine's front door: all the coordinator uses of assignment/ (the
 * architecture test holds it to that). `DefaultEngine` readies and decides
 * (`ready`, `decide`); the rest are the shapes a decision's inputs and
 * outputs come in, the columns the leader view keeps its splits in
 * (`ColumnarPool`), and the id arena and growth rule those columns share.
 *
 * The leader's default engine: the WASM engine on the leader view's columns,
 * on the whole pool below OFF_THREAD_SPLITS splits; above, on its slice
 * (decision-slice.ts, decision 0045), the rows the decision can touch, which
 * gives the same decision, read from the queue's head (queue-head.ts,
 * decision 0047) so that the whole pool is never sorted. A slice of
 * OFF_THREAD_SPLITS rows or more goes to an `AssignmentPool` thread
 * (docs/decisions/0006-when-decisions-leave-the-thread.md), started on first
 * need and ended when idle or with the coordinator.
 * It decides only what the engine decides; nothing here touches the store.
 */
import type { ColumnarPool } from './codec.js';
import { AssignmentPool } from './pool.js';
import { columnarAssignment } from './wasm.js';
import { decisionSlice, sliceRows } from './decision-slice.js';
import { assignedRowsOf, type AssignedRows } from './wire.js';
import { nextTurn } from '../next-turn.js';

export { ColumnarPool } from './codec.js';
export type { AssignedRows } from './wire.js';
export type { AssignmentInput, AssignmentResult, AssignmentStats } from './types.js';
export { IdArena } from './id-arena.js';
export { grown } from './grown.js';

/**
 * Above this many splits the default assigner decides on a pool thread. Below
 * it the in-thread WASM decision is faster than the pool's round trip and
 * blocks the loop for about 15 ms per 100k splits on an idle machine (more
 * under load: 117 ms at ~190k in bench:fleet at load 4), so the bound is
 * where that stays inside the leader loop's 20 ms p99 target (decision 0006).
 */
export const OFF_THREAD_SPLITS = 50_000;

/**
 * Small decisions in a row after which an idle pool thread is ended: a thread
 * is started only for a slice of OFF_THREAD_SPLITS rows or more (a fleet of
 * tens of thousands of lanes), and its engine memory stays the size of the
 * largest slice it decided. Counted, not timed: no clock here.
 */
export const IDLE_THREAD_SLICES = 50;

export class DefaultEngine {
  private pool: AssignmentPool | undefined;
  /** Thread decisions in flight, and decisions decided here since the last thread decision. */
  private onThread = 0;
  private slicesSinceThread = 0;

  /** Whether a pool thread is running (tests). */
  get threadOpen(): boolean {
    return this.pool !== undefined;
  }

  /**
   * In-thread below OFF_THREAD_SPLITS (faster, and the loop is blocked for a few ms only); on the pool's
   * slice above, whose rows the queue's head keeps (queue-head.ts): the whole pool is never sorted.
   * As the rows it assigns: what publishing needs, and a reply the size of the lanes, not of the queue.
   */
  async decide(pool: ColumnarPool): Promise<AssignedRows> {
    if (pool.size < OFF_THREAD_SPLITS) {
      const d = columnarAssignment(pool);
      return { members: d.members, ...assignedRowsOf(d.assignee), stats: d.stats };
    }
    // Read before any await: the caller restores the inputs it prepared for this decision then (publish.ts).
    const head = pool.queueHead();
    // A refill under way moves a step per decision.
    head.step();
    let slice = decisionSlice(pool);
    // The head cannot answer yet (not built: `ready` was not awaited; or a pick ran past its bound
    // before a refill started at half its fill could finish): finished here, at once.
    while (slice === null) {
      while (!head.step(Number.MAX_SAFE_INTEGER, Number.MAX_SAFE_INTEGER));
      slice = decisionSlice(pool);
    }
    if (slice.pool.size < OFF_THREAD_SPLITS) {
      const d = columnarAssignment(slice.pool);
      if (++this.slicesSinceThread >= IDLE_THREAD_SLICES && this.onThread === 0 && this.pool) {
        const idle = this.pool;
        this.pool = undefined;
        void idle.close().catch(() => undefined);
      }
      return { members: d.members, ...sliceRows(slice, d) };
    }
    // A slice as large as a large pool (tens of thousands of lanes): decided on the thread, as a large pool was.
    this.pool ??= new AssignmentPool({ threads: 1 });
    this.slicesSinceThread = 0;
    this.onThread++;
    try {
      const d = await this.pool.assignColumnar(slice.pool);
      return { members: d.members, ...sliceRows(slice, d) };
    } finally {
      this.onThread--;
    }
  }

  /**
   * Readies a decision on `pool`: a large pool's queue head is built first,
   * a step of rows per turn of the loop (a whole scan at 10M would hold the
   * loop for 50–100 ms). The leader awaits it before it prepares a decision.
   */
  async ready(pool: ColumnarPool): Promise<void> {
    if (pool.size < OFF_THREAD_SPLITS) return;
    const head = pool.queueHead();
    head.begin();
    while (!head.ready) {
      head.step();
      if (!head.ready) await nextTurn();
    }
  }

  async close(): Promise<void> {
    await this.pool?.close();
  }
}
