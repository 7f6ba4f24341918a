/**
 * readFinalProgress: the committed progress of every split of a job, a page
 * at a time (issue 50, item 3; decision 0069), from any process, read-only.
 * Once the job has a verdict this is each split's final progress: BullMQ's
 * `getChildrenValues()` for a job of 10M splits.
 *
 * A page is read in two passes, the cursor (final-progress-cursor.ts) saying
 * where the next starts:
 * 1. the splits with a record of their own, in key order: each split record
 *    and its `progress.{id}` (every split of a `keys` job; a packed job's
 *    quarantined, departed or not yet folded splits);
 * 2. a packed job only: the `result.*` records its fold-backs wrote, in fold
 *    order (generation, then seq, numerically: fold-order.ts; their unpadded
 *    keys do not sort so), each entry a folded (completed) split's final
 *    progress with its `fold`.
 *
 * Invariants:
 * - Read-only; bounded: one page holds at most `limit` items, and reads at
 *   most a few records beyond them (a result record partly, a listing page),
 *   never the whole job.
 * - A split is in pass 1 or in pass 2, never both, at any one revision (a
 *   fold-back deletes its keys and writes its result in one transaction).
 *   Pages are read at different revisions, so while a packed job still folds,
 *   a split folded between two pages can be read twice (never missed, if it
 *   was completed when pass 1 passed it); after the verdict nothing moves.
 * - A split folded twice (its folded record lost, it ran again) has an entry
 *   in each fold's record. Within a page only the latest fold of an id is
 *   kept; across pages the earlier can still appear, the later (higher
 *   `fold`) wins. Dropping those needs memory across pages or an index from
 *   a split to its result: a protocol change, not made (simulation.md, Open).
 * - A record that cannot be decoded is reported in `unreadable` (its key and
 *   why), never skipped silently and never fatal to the read.
 * - Splits a packed job has never promoted (queued in their page) have no
 *   progress and are not listed; a finished job has none.
 */
import { SplitfleetError } from '../errors.js';
import { kindPrefix, parseKey, progressKey } from '../protocol/keys.js';
import { decodeRecord, type Json, type SplitStatus } from '../protocol/records.js';
import { inJobScope } from '../protocol/scope.js';
import { isCompactedError, type KeyValue, type Store } from '../store/store.js';
import { decodeCursor, encodeCursor, type FinalProgressCursor, type ResultPosition } from './final-progress-cursor.js';
import { resultsInFoldOrder } from './fold-order.js';
import { findJob, type FoundJob } from './job.js';

/** The most items one page may ask for. */
export const MAX_FINAL_PROGRESS_LIMIT = 10_000;
/** Items a page holds when `limit` is not given. */
const DEFAULT_LIMIT = 1000;
/** Progress keys listed per read (small records). */
const PROGRESS_PER_READ = 500;

/** Which job to read, and which page. */
export interface ReadFinalProgressOptions {
  store: Store;
  job: string;
  /** Key prefix root (default `splitfleet`). */
  root?: string;
  /** The `next` of the page before; absent for the first page. */
  after?: string;
  /** Most items in the page: 1 to 10,000 (default 1,000). */
  limit?: number;
}

/** One split's committed progress. */
export interface FinalProgress {
  id: string;
  /** Its record's status; `completed` for a split folded back into its page. */
  status: SplitStatus;
  /** The progress it last committed (null when it committed none). */
  progress: Json;
  /** Where a divided split's primary part ends (decision 0063), when it was divided. */
  end?: Json;
  /**
   * The fold-back this entry comes from (a packed job's `result.{generation}.{seq}` record): absent
   * for a split read from its own keys. A split whose folded record was lost runs and is folded
   * again, so one id can have several entries: the one with the highest fold (generation, then
   * seq) is its final progress. A page keeps only the latest of an id's folds it holds; one of an
   * earlier page can still appear there again, so a caller that needs one entry per id keeps, per
   * id, the entry with the highest fold.
   */
  fold?: { generation: number; seq: number };
}

/** One page of a job's final progress. */
export interface FinalProgressPage {
  items: FinalProgress[];
  /** Pass as `after` for the next page; absent when this page is the last. */
  next?: string;
  /** Records on the way that could not be decoded (their splits are not in `items`): the key and why. */
  unreadable: { key: string; problem: string }[];
}

function checkLimit(limit: unknown): number {
  if (limit === undefined) return DEFAULT_LIMIT;
  if (typeof limit !== 'number' || !Number.isInteger(limit) || limit < 1 || limit > MAX_FINAL_PROGRESS_LIMIT) {
    throw new SplitfleetError('INVALID_INPUT', `limit: must be an integer 1 ≤ limit ≤ ${MAX_FINAL_PROGRESS_LIMIT} (got ${String(limit)})`);
  }
  return limit;
}

/** Items and unreadable records both count against a page's limit: a run of broken records still ends a page. */
function room(out: FinalProgressPage, limit: number): number {
  return limit - out.items.length - out.unreadable.length;
}

function problemOf(e: unknown): string {
  if (e instanceof SplitfleetError) return `${e.code}: ${e.message}`;
  throw e;
}

/** One page of the committed progress of every split of `job` (see the module's comment for the order). */
export async function readFinalProgress(options: ReadFinalProgressOptions): Promise<FinalProgressPage> {
  const limit = checkLimit(options.limit);
  const cursor: FinalProgressCursor = options.after === undefined ? { pass: 'split', after: '' } : decodeCursor(options.after, 'after');
  const job = await findJob(options);
  const packed = job.plan.layout === 'packed';
  const out: FinalProgressPage = { items: [], unreadable: [] };
  let at: ResultPosition | undefined;
  if (cursor.pass === 'split') {
    const next = await splitPass(options.store, job, cursor.after === '' ? undefined : cursor.after, limit, out);
    if (next !== undefined) return { ...out, next: encodeCursor({ pass: 'split', after: next }) };
    if (!packed) return out;
    // Full, and pass 1 is over: the next page starts pass 2 (it may turn out empty).
    if (room(out, limit) <= 0) return { ...out, next: encodeCursor({ pass: 'result' }) };
  } else {
    at = cursor.at;
  }
  if (!packed) return out;
  const next = await resultPass(options.store, job, at, limit, out);
  out.items = dropEarlierFolds(out.items);
  return next === undefined ? out : { ...out, next: encodeCursor({ pass: 'result', at: next }) };
}

/**
 * Pass 1: split records after `after` (a key under the prefix), with their progress, until `out`
 * holds `limit` items. Returns where the next page starts, or undefined once the pass is over.
 */
async function splitPass(store: Store, job: FoundJob, after: string | undefined, limit: number, out: FinalProgressPage): Promise<string | undefined> {
  const { prefix, fp } = job;
  const start = kindPrefix(prefix, 'split');
  const end = `${start.slice(0, -1)}/`;
  let startAfter = after === undefined ? undefined : `${prefix}${after}`;
  for (;;) {
    const want = room(out, limit);
    if (want <= 0) return startAfter === undefined ? undefined : startAfter.slice(prefix.length);
    const page = await store.list(prefix, { rangeStart: start, rangeEnd: end, limit: want, ...(startAfter !== undefined ? { startAfter } : {}) });
    const splits: { id: string; kv: KeyValue }[] = [];
    for (const kv of page.kvs) {
      const parsed = parseKey(prefix, kv.key);
      if (parsed.kind === 'split' && inJobScope(prefix, kv.key)) splits.push({ id: parsed.id, kv });
    }
    const progress = await progressOf(store, prefix, splits.map((s) => s.id), page.revision);
    for (const { id, kv } of splits) {
      let status: SplitStatus;
      try {
        status = decodeRecord('split', kv.key, kv.value, fp).status;
      } catch (e) {
        out.unreadable.push({ key: kv.key, problem: problemOf(e) });
        continue;
      }
      const p = progress.get(id);
      if (p === undefined) {
        out.items.push({ id, status, progress: null });
        continue;
      }
      try {
        const rec = decodeRecord('progress', p.key, p.value, fp);
        out.items.push(rec.end === undefined ? { id, status, progress: rec.progress } : { id, status, progress: rec.progress, end: rec.end });
      } catch (e) {
        out.unreadable.push({ key: p.key, problem: problemOf(e) });
      }
    }
    if (page.kvs.length === 0 || !page.more) return undefined;
    startAfter = page.kvs[page.kvs.length - 1]!.key;
  }
}

/**
 * The progress records of `ids` (one listing page of split records, in key order) at `revision`:
 * one ranged read over their progress keys, which sort as their split keys do. Keys in the range
 * that are not of these splits (a nested job's, a stray record) are passed over.
 */
async function progressOf(store: Store, prefix: string, ids: readonly string[], revision: number): Promise<Map<string, KeyValue>> {
  const found = new Map<string, KeyValue>();
  if (ids.length === 0) return found;
  const wanted = new Set(ids);
  const rangeStart = progressKey(prefix, ids[0]!);
  const rangeEnd = `${progressKey(prefix, ids[ids.length - 1]!)}\0`;
  let startAfter: string | undefined;
  let at: number | undefined = revision;
  for (;;) {
    let page;
    try {
      page = await store.list(prefix, { rangeStart, rangeEnd, limit: PROGRESS_PER_READ, ...(startAfter !== undefined ? { startAfter } : {}), ...(at !== undefined ? { revision: at } : {}) });
    } catch (e) {
      // The split records' revision compacted meanwhile: read the progress as it is now (a split
      // still running may show a newer commit than its record's read; a finished one, the same).
      if (!isCompactedError(e) || at === undefined) throw e;
      at = undefined;
      continue;
    }
    for (const kv of page.kvs) {
      const parsed = parseKey(prefix, kv.key);
      if (parsed.kind === 'progress' && wanted.has(parsed.id) && inJobScope(prefix, kv.key)) found.set(parsed.id, kv);
    }
    if (page.kvs.length === 0 || !page.more) return found;
    startAfter = page.kvs[page.kvs.length - 1]!.key;
  }
}

/**
 * Pass 2 (packed jobs): the fold-backs' result records in fold order (fold-order.ts) from `from` on
 * (its entries after `skip`), until `out` holds `limit` items. Returns where the next page starts,
 * or undefined once the pass is over.
 */
async function resultPass(store: Store, job: FoundJob, from: ResultPosition | undefined, limit: number, out: FinalProgressPage): Promise<ResultPosition | undefined> {
  const { prefix, fp } = job;
  // The record the cursor names is read again, from its `skip`-th entry.
  for await (const { fold, kv } of resultsInFoldOrder(store, prefix, from)) {
    // Skip applies only to the record the cursor names (it may be gone: then nothing is skipped).
    const skipHere = from !== undefined && fold.generation === from.generation && fold.seq === from.seq ? from.skip : 0;
    const at = (skip: number): ResultPosition => ({ generation: fold.generation, seq: fold.seq, skip });
    let entries;
    try {
      entries = decodeRecord('result', kv.key, kv.value, fp).splits;
    } catch (e) {
      if (skipHere === 0) out.unreadable.push({ key: kv.key, problem: problemOf(e) });
      if (room(out, limit) <= 0) return at(Number.MAX_SAFE_INTEGER);
      continue;
    }
    for (let i = skipHere; i < entries.length; i++) {
      if (room(out, limit) <= 0) return at(i);
      const e = entries[i]!;
      const item: FinalProgress = { id: e.id, status: 'completed', progress: e.progress, fold: { generation: fold.generation, seq: fold.seq } };
      if (e.end !== undefined) item.end = e.end;
      out.items.push(item);
    }
    if (room(out, limit) <= 0) return at(entries.length);
  }
  return undefined;
}

/**
 * `items` without every folded entry of `items` whose id has a later fold in them (the later in
 * fold order is the split's final progress: a split whose folded record was lost ran and was folded
 * again). Bounded by the page: an entry of an earlier page is not seen.
 */
function dropEarlierFolds(items: FinalProgress[]): FinalProgress[] {
  // Folded entries come in fold order, so an id's last one is its latest.
  const last = new Map<string, number>();
  items.forEach((item, i) => { if (item.fold !== undefined) last.set(item.id, i); });
  if (last.size === items.filter((item) => item.fold !== undefined).length) return items;
  return items.filter((item, i) => item.fold === undefined || last.get(item.id) === i);
}
