/**
 * A packed job's queue as the tools hold it (decision 0037): its queue pages
 * and folded bitsets, decoded, and where each paged split lives, so that the
 * report, the dashboard and the demo's observer can tell the state of a split
 * that has no record of its own: completed when its folded bit is set, else
 * queued (runnable, never held).
 *
 * Invariants:
 * - Pages are keyed by their name `{bucket}.{page}`; a split's slot is the
 *   first page seen naming it (ids are unique per job, and seeding never
 *   writes one twice; a second naming is ignored, as the leader ignores it).
 * - Dropping a page forgets exactly the slots that point at it.
 * - A split's own `split.{id}` record always wins over its page
 *   (`splitStatus`), and a `keys` job's pages are nothing of its own
 *   (`usesPages`): the layout is its plan's, fixed at creation.
 *
 * Pure: no I/O, no clock.
 */
import { FoldedBits, foldedRecordApplies } from '../protocol/packed.js';
import type { FoldedRecord, Json, PlanRecord, QueueRecord, SplitRecord } from '../protocol/records.js';

/** A page's folded record as read: its bits and the generation of the page they are for (decision 0091; absent in older builds' records). */
export interface FoldedSlots {
  /** Whether the record's bit of `slot` is set (it marks the page's split there only if `pageGeneration` is the page's). */
  has(slot: number): boolean;
  pageGeneration: number | undefined;
}

/** A packed job's pages, folded bits and slots, by page name `{bucket}.{page}`. */
export interface QueueRecords {
  pages: Map<string, QueueRecord>;
  folded: Map<string, FoldedSlots>;
  /** Paged split id → its page's name and its slot there. */
  slots: Map<string, { page: string; slot: number }>;
}

/** One split as its queue page holds it, with its folded bit. */
export interface PagedSplit {
  id: string;
  bucket: number;
  page: number;
  slot: number;
  weight: number;
  descriptor: Json;
  /** Folded back as completed (its own records are gone). */
  folded: boolean;
}

export function emptyQueueRecords(): QueueRecords {
  return { pages: new Map(), folded: new Map(), slots: new Map() };
}

/** The name a page and its folded record share. */
export function pageName(bucket: number, page: number): string {
  return `${bucket}.${page}`;
}

/** A page read (or read again: pages are immutable, but a watch may replay one). */
export function putPage(q: QueueRecords, rec: QueueRecord): void {
  const name = pageName(rec.bucket, rec.page);
  if (q.pages.has(name)) dropPage(q, name);
  q.pages.set(name, rec);
  rec.ids.forEach((id, slot) => {
    if (!q.slots.has(id)) q.slots.set(id, { page: name, slot });
  });
}

/** A page gone (the job being deleted) or unreadable: its splits are no longer known from it. */
export function dropPage(q: QueueRecords, name: string): void {
  const rec = q.pages.get(name);
  if (!rec) return;
  q.pages.delete(name);
  for (const id of rec.ids) if (q.slots.get(id)?.page === name) q.slots.delete(id);
}

/** A page's folded record read, or gone/unreadable (undefined): no bit is known set. */
export function setFolded(q: QueueRecords, name: string, rec: Pick<FoldedRecord, 'bits' | 'pageGeneration'> | undefined): void {
  if (rec === undefined) q.folded.delete(name);
  else {
    const bits = FoldedBits.decode(rec.bits);
    q.folded.set(name, { has: (slot) => bits.has(slot), pageGeneration: rec.pageGeneration });
  }
}

/** Split `id` as its page holds it, or undefined when no page known names it. */
export function pagedSplit(q: QueueRecords, id: string): PagedSplit | undefined {
  const at = q.slots.get(id);
  if (!at) return undefined;
  const rec = q.pages.get(at.page)!;
  return {
    id, bucket: rec.bucket, page: rec.page, slot: at.slot, weight: rec.weights[at.slot]!, descriptor: rec.descriptors[at.slot] ?? null,
    folded: isFoldedAt(q.folded.get(at.page), rec.generation, at.slot),
  };
}

/** Whether `folded` marks slot `slot` of the page of generation `generation` (a record of an earlier page under its number marks none). */
function isFoldedAt(folded: FoldedSlots | undefined, generation: number, slot: number): boolean {
  return folded !== undefined && foldedRecordApplies(folded.pageGeneration, generation) && folded.has(slot);
}

/**
 * Whether the records' queue pages are the job's splits: its plan is packed, or there is no plan
 * to say otherwise (a job half deleted). A `keys` job's pages are nothing of its own (decision 0037).
 */
export function usesPages(records: { plan: PlanRecord | undefined; queue: QueueRecords }): boolean {
  return records.plan ? records.plan.layout === 'packed' : records.queue.pages.size > 0;
}

/**
 * The split model's status of `id` as the records say: its record's, else (a packed job) its
 * page's: completed when its folded bit is set, runnable when queued. Undefined: no such split.
 */
export function splitStatus(
  records: { plan: PlanRecord | undefined; splits: ReadonlyMap<string, SplitRecord>; queue: QueueRecords }, id: string,
): 'runnable' | 'completed' | 'quarantined' | undefined {
  const rec = records.splits.get(id);
  if (rec) return rec.status;
  const paged = usesPages(records) ? pagedSplit(records.queue, id) : undefined;
  return paged === undefined ? undefined : paged.folded ? 'completed' : 'runnable';
}
