/**
 * `Seen<R>`: a decoded record with the store metadata the protocol needs
 * (its modRevision, its lease). Both sides of a coordinator hold records this
 * way, the worker's view (worker-view.ts) and the leader's (leader-records.ts,
 * leader-view.ts, split-columns.ts), so it lives with neither.
 * A type only: no imports, no code.
 */

/** A decoded record with the store metadata the protocol needs. */
export interface Seen<R> {
  rec: R;
  modRevision: number;
  lease?: string;
  /** When this process first saw this revision (its wall clock, epoch ms): a split record's backoff is bounded from it (retry-policy.ts `dueAt`). */
  seenAt?: number;
}
