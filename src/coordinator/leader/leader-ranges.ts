/**
 * The key ranges the leader view lists and follows (substrate.md, "Who
 * observes what"): the job's span (protocol/scope.ts) but `progress.{id}`,
 * so progress commits never reach the leader, and but `result.*` (a packed
 * job's kept results, decision 0069: the leader writes them and never reads
 * them, and at 10M splits they are most of the job's bytes). The watch is two ranges and
 * not one per kind, because the view's `revision` must come from one stream
 * holding assign, control, folded, leader, lease and plan. A nested job
 * sorting inside them is delivered and dropped (`inJobScope`), never applied.
 *
 * Pure: no I/O.
 */
import { kindPrefix } from '../../protocol/keys.js';
import { jobSpan } from '../../protocol/scope.js';
import type { KeyRange } from '../../store/store.js';

/** A packed job's queue pages per read of a listing: each holds up to 1,024 splits (up to a request's size). */
const QUEUE_PAGES_PER_READ = 4;

/** A listed range, with its page size when not the listing's default. */
export type ListedRange = KeyRange & { limit?: number };

/** The span but progress: [first kind, progress.) and (progress/, last kind]. */
function spanButProgress(prefix: string): [KeyRange, KeyRange] {
  const progress = kindPrefix(prefix, 'progress');
  const span = jobSpan(prefix);
  return [{ rangeStart: span.rangeStart, rangeEnd: progress }, { rangeStart: `${progress.slice(0, -1)}/`, rangeEnd: span.rangeEnd }];
}

/** Past `result.*` (which sorts after `queue.*` and before `spec.*`): nothing of the job lies between the two. */
function pastResults(prefix: string): string {
  return `${kindPrefix(prefix, 'result').slice(0, -1)}/`;
}

/**
 * What a term's listing reads, in key order: a packed job's queue pages (which sort
 * between `publish` and `spec`) before any split record, a few per read; never `result.*`.
 */
export function listRanges(prefix: string): ListedRange[] {
  const [first, second] = spanButProgress(prefix);
  const queue = kindPrefix(prefix, 'queue');
  const pastQueue = `${queue.slice(0, -1)}/`;
  return [
    first, { rangeStart: second.rangeStart, rangeEnd: queue }, { rangeStart: queue, rangeEnd: pastQueue, limit: QUEUE_PAGES_PER_READ },
    { rangeStart: pastResults(prefix), rangeEnd: second.rangeEnd },
  ];
}

/**
 * What the view follows: the listing's ranges, the second starting past
 * `queue.*` (immutable pages: listed once, and seeding applies its own),
 * `result.*` (never read) and `publish` (the leader's own fence) before them.
 */
export function watchRanges(prefix: string): [KeyRange, KeyRange] {
  const [first, second] = spanButProgress(prefix);
  return [first, { rangeStart: pastResults(prefix), rangeEnd: second.rangeEnd }];
}
