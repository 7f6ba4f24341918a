/**
 * What the per-split view reads of a packed job (decision 0037), whose
 * splits live in queue pages and have records of their own only while
 * promoted: a split found from its id alone (its bucket's pages, a range
 * read under `bucketPrefix`, and that page's folded record), and a page of
 * splits in page order (the queue's key order, then slot order), with the
 * records of just those ids.
 *
 * Invariants:
 * - Never lists the whole job: one bucket's pages for one split; for a page
 *   of the listing, the queue pages it shows (a few per read, since a page
 *   record may be near a store request's size) and exact keys of its ids.
 * - Everything at the one revision the caller read first.
 * - An unreadable queue page is a problem line naming its key; its splits
 *   are not shown (nothing certain can be said of them).
 *
 * I/O: ranged store reads (range-read.ts). The views are splits.ts's.
 */
import { SplitfleetError } from '../errors.js';
import { bucketPrefix, foldedKey, leaseKey, progressKey, specKey, splitKey } from '../protocol/keys.js';
import { bucketOf, foldedBitsOf } from '../protocol/packed.js';
import { decodeRecord, type QueueRecord } from '../protocol/records.js';
import { inJobScope } from '../protocol/scope.js';
import type { KeyValue, Store } from '../store/store.js';
import { getAt, getManyAt, kindRange } from './range-read.js';

/** Queue pages per read: a page record is at most about a store request's size. */
const PAGES_PER_READ = 2;

/** What the reads need of a packed plan: its fingerprint hash (the bucket function's seed) and bucket count. */
export interface PackedPlan {
  fp: string;
  /** Absent until the job's first splits are seeded (no page exists yet). */
  buckets: number | undefined;
}

/** A split's queue page as read, its slot there, the page's folded record (undefined: none yet) and the split's bit in it. */
export interface FoundPaged {
  page: KeyValue;
  rec: QueueRecord;
  slot: number;
  folded: KeyValue | undefined;
  /** Its folded bit is set (false when the folded record is absent or unreadable: a problem then). */
  isFolded: boolean;
}

function problemLine(key: string, e: unknown): string {
  const code = (e as { code?: string }).code;
  return `${key}: ${code !== undefined ? `${code}: ` : ''}${(e as Error).message}`;
}

/** The job's queue pages in `[start, end)` at `revision`, a few per read, decoded; unreadable ones go to `problems`. */
async function* queuePages(
  store: Store, prefix: string, fp: string, start: string, end: string, revision: number | undefined, problems: string[],
): AsyncGenerator<{ kv: KeyValue; rec: QueueRecord }> {
  let startAfter: string | undefined;
  for (;;) {
    const page = await store.list(prefix, {
      rangeStart: start, rangeEnd: end, limit: PAGES_PER_READ,
      ...(revision !== undefined ? { revision } : {}), ...(startAfter !== undefined ? { startAfter } : {}),
    });
    for (const kv of page.kvs) {
      if (!inJobScope(prefix, kv.key)) continue; // a nested job's key inside the range
      try {
        yield { kv, rec: decodeRecord('queue', kv.key, kv.value, fp) };
      } catch (e) {
        problems.push(problemLine(kv.key, e));
      }
    }
    if (!page.more || page.kvs.length === 0) return;
    startAfter = page.kvs[page.kvs.length - 1]!.key;
  }
}

/**
 * The queue page holding `id`, found from its id alone: its bucket (`bucketOf`) names the only
 * pages that can hold it, read under `bucketPrefix`, at `revision` (undefined: now). Undefined
 * when none does (no such split in the queue, or no page seeded yet).
 */
export async function findPagedSplit(
  store: Store, prefix: string, plan: PackedPlan, id: string, revision: number | undefined, problems: string[] = [],
): Promise<FoundPaged | undefined> {
  if (plan.buckets === undefined) return undefined;
  const start = bucketPrefix(prefix, bucketOf(plan.fp, id, plan.buckets));
  // '/' follows '.': the range holds `queue.{bucket}.*` and no other bucket's pages.
  for await (const { kv, rec } of queuePages(store, prefix, plan.fp, start, `${start.slice(0, -1)}/`, revision, problems)) {
    const slot = rec.ids.indexOf(id);
    if (slot < 0) continue;
    const folded = await getAt(store, prefix, foldedKey(prefix, rec.bucket, rec.page), revision);
    let isFolded = false;
    try {
      isFolded = folded !== undefined && foldedBitsOf(decodeRecord('folded', folded.key, folded.value, plan.fp), rec.generation).has(slot);
    } catch (e) {
      problems.push(problemLine(folded!.key, e));
    }
    return { page: kv, rec, slot, folded, isFolded };
  }
  return undefined;
}

/** A page of a packed job's listing: the ids shown, everything read for them, and where the next page starts. */
export interface PackedIdPage {
  ids: string[];
  kvs: KeyValue[];
  next: string | null;
  problems: string[];
}

/**
 * Up to `limit` splits in page order, starting after split `after` (found from its id, as
 * `findPagedSplit` does), with their pages, the pages' folded records and each id's own records.
 */
export async function readPackedPage(
  store: Store, prefix: string, plan: PackedPlan, limit: number, after: string | undefined, revision: number,
): Promise<PackedIdPage> {
  const problems: string[] = [];
  const range = kindRange(prefix, 'queue');
  let start = range.start;
  let resume: { key: string; from: number } | undefined;
  if (after !== undefined) {
    const found = await findPagedSplit(store, prefix, plan, after, revision, problems);
    if (!found) {
      throw new SplitfleetError('INVALID_INPUT', `after: split ${JSON.stringify(after)} is in no queue page of this packed job `
        + '(its splits are listed page by page: pass the id a previous page printed as "more: --after ID")');
    }
    start = found.page.key;
    resume = { key: found.page.key, from: found.slot + 1 };
  }
  // One more than asked: whether a next page exists, without another read.
  const ids: string[] = [];
  const pages: { kv: KeyValue; rec: QueueRecord }[] = [];
  for await (const { kv, rec } of queuePages(store, prefix, plan.fp, start, range.end, revision, problems)) {
    const from = kv.key === resume?.key ? resume.from : 0;
    const taken = rec.ids.slice(from, from + limit + 1 - ids.length);
    if (taken.length > 0) pages.push({ kv, rec });
    ids.push(...taken);
    if (ids.length > limit) break;
  }
  const next = ids.length > limit ? ids[limit - 1]! : null;
  ids.length = Math.min(ids.length, limit);
  const folded = pages.map(({ rec }) => foldedKey(prefix, rec.bucket, rec.page));
  // A promoted split's own records: exact keys (the page's ids are in seeding order, not key order, so no range holds just them).
  const own = ids.flatMap((id) => [splitKey(prefix, id), specKey(prefix, id), progressKey(prefix, id), leaseKey(prefix, id)]);
  const kvs = [...pages.map((p) => p.kv), ...await getManyAt(store, prefix, [...folded, ...own], revision)];
  return { ids, kvs, next, problems };
}
