/**
 * What a packed job's fold-back keeps of the splits it folds (decision 0069):
 * each one's final committed progress, as an entry of the fold-back's
 * `result.{generation}.{seq}` record, and how many of the candidates one
 * fold-back can take before its request passes the store's size limit.
 *
 * Invariants:
 * - An entry is its progress record's `progress` (null when the split
 *   committed none) and `end` (when it was divided): nothing else of the
 *   record, whose epoch and counters mean nothing once the split is folded.
 * - A batch's estimate bounds the whole fold-back request (its results
 *   record, the split, spec, progress and lease keys, a folded record per
 *   split at most), so a batch that passes here passes the store's check.
 * - A split whose entry cannot fit a fold-back alone is never folded: it
 *   keeps its keys, as a quarantined split does, and readers find it there.
 *
 * Pure: no I/O.
 */
import { utf8ByteLength } from './keys.js';
import type { ProgressRecord, ResultEntry } from './records.js';

/** The entry a split's results keep, from its progress record as read (undefined: it committed none). */
export function resultEntry(id: string, progress: ProgressRecord | undefined): ResultEntry {
  if (progress === undefined) return { id, progress: null };
  return progress.end === undefined ? { id, progress: progress.progress } : { id, progress: progress.progress, end: progress.end };
}

/** Framing of one compare or op (store.ts's estimate) and of the request. */
const ITEM_OVERHEAD = 32;
/** A results record's own fields, a request's framing and the leadership compare, generously. */
const FOLD_BASE_BYTES = 1024;
/** A page's folded record, compared and put: key, ~172 bytes of base64 bits, its stamp. */
const FOLDED_PAGE_BYTES = 2 * (ITEM_OVERHEAD + 400);

/** Everything one folded split adds to a fold-back request, in UTF-8 bytes (an upper bound). */
export function foldSplitBytes(prefix: string, entry: ResultEntry): number {
  // Its split, lease and progress compares and its split, spec and progress deletes: six keys under the
  // prefix, each with an id at most 3 bytes a character once encoded (%XX), and the kind's name.
  const keyBytes = utf8ByteLength(prefix) + 10 + 3 * entry.id.length;
  return 6 * (keyBytes + ITEM_OVERHEAD) + utf8ByteLength(JSON.stringify(entry)) + 1 + FOLDED_PAGE_BYTES;
}

/** What one fold-back takes of its candidates, in order. */
export interface FoldBatchCut {
  /** How many of the candidates (a prefix of them) the fold-back takes. */
  take: number;
  /** Those whose entry alone passes `maxRequestBytes`: never folded (they keep their keys). */
  tooLarge: string[];
}

/**
 * Cuts a fold-back's batch from `entries` (the candidates' entries, in order): the longest prefix
 * whose request stays within `maxRequestBytes`, skipping (and naming) any entry that could not
 * fit even alone. `take` counts the skipped ones too, so the caller drops them with the batch.
 */
export function cutFoldBatch(prefix: string, entries: readonly ResultEntry[], maxRequestBytes: number): FoldBatchCut {
  const tooLarge: string[] = [];
  let bytes = FOLD_BASE_BYTES;
  let take = 0;
  for (const e of entries) {
    const b = foldSplitBytes(prefix, e);
    if (FOLD_BASE_BYTES + b > maxRequestBytes) {
      tooLarge.push(e.id);
      take++;
      continue;
    }
    if (bytes + b > maxRequestBytes) break;
    bytes += b;
    take++;
  }
  return { take, tooLarge };
}
