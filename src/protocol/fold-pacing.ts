/**
 * When a packed job's leader folds completed splits back into their pages
 * (decision 0076). A fold-back is a read of the splits' final progress and a
 * transaction; sent after every completion, it was one of a tiny split's six
 * transactions (split-cost.mjs, one lane on etcd) and bought nothing: a
 * completed split's records are correct where they are, and folding only
 * bounds the store's size. So the leader waits for a batch worth sending:
 *
 * - a full batch (as many candidates as one fold-back transaction carries);
 * - or a quiet job (no split held or named: the end of a job, or a pause), so a
 *   finished job is folded at once;
 * - or a candidate that has waited FOLD_WAIT_MS, so a slow job's store still
 *   shrinks as it goes.
 *
 * Pure: the caller measures the wait and sets the timer.
 */

/** The longest a completed split waits for its fold-back while the job is busy. */
export const FOLD_WAIT_MS = 1000;

export interface FoldPacing {
  /** Completed splits a fold-back may take now. */
  readonly candidates: number;
  /** How many one fold-back transaction carries. */
  readonly fullBatch: number;
  /** No split of the job is held or named: a lane between two splits does not make a job quiet. */
  readonly quiet: boolean;
  /** How long the oldest candidate has waited (ms). */
  readonly waitedMs: number;
}

/** 0: fold now; a positive number: ask again in that many ms; undefined: nothing to fold. */
export function foldDelay(p: FoldPacing): number | undefined {
  if (p.candidates <= 0) return undefined;
  if (p.candidates >= p.fullBatch || p.quiet || p.waitedMs >= FOLD_WAIT_MS) return 0;
  return FOLD_WAIT_MS - p.waitedMs;
}
