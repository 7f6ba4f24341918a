/**
 * What a decision slice (decision-slice.ts) reads of a `ColumnarPool`, as
 * the pool hands it over (`sliceSource`): a type of its own, so that the
 * pool and the slice do not import each other.
 *
 * Types only.
 */
import type { QueueHead } from './queue-head.js';

/** What a decision slice reads of a pool (`ColumnarPool.sliceSource`). */
export interface SliceSource {
  seed: string; defaultCap: number | undefined; members: readonly { id: string; cap?: number }[];
  /** The queue's head in pool order (queue-head.ts); null until the pool's first `queueHead()`. */
  head: QueueHead | null;
  flags: Uint8Array; weight: Float64Array; lease: Int32Array; prev: Int32Array; rec: Int32Array;
  handleIds: readonly string[];
  /** Rows with an owner hint (lease, previous or record owner): sparse. */
  hinted: ReadonlySet<number>;
  /** Claimable rows of the pool, kept as flags change. */
  claimable: number;
}

