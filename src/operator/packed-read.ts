/**
 * What the operator actions read of a packed job's queue (decision 0037):
 * its splits counted by status, for `splitfleet jobs` when the leader's
 * summary cannot answer, and one split's page state, for `retry`'s refusal.
 * Every split is in one queue page; one with a `split.{id}` record has that
 * record's status; one without is completed when its page's folded bit is
 * set, else runnable (queued). (`inspect` finds a split the same way, by
 * the same protocol rule, `bucketOf`; its reader is its own, since operator/
 * and inspect/ share a layer and import neither from the other.)
 *
 * Invariants:
 * - Everything at one revision, the job's scope only (decision 0027).
 * - Memory follows the folded bitsets and the promoted splits' records, never
 *   the split count: pages are read a few at a time and dropped.
 * - An unreadable queue page is a problem, never a silent zero: its splits
 *   cannot be counted, and the caller says so.
 *
 * I/O: paged listings (scope.ts).
 */
import { bucketPrefix, foldedKey, parseKey } from '../protocol/keys.js';
import { bucketOf, foldedBitsOf } from '../protocol/packed.js';
import type { FoldedRecord, PlanRecord } from '../protocol/records.js';
import { decodeRecord } from '../protocol/records.js';
import type { Store } from '../store/store.js';
import { recordField } from './job.js';
import { jobKeyPages } from './scope.js';

/** Queue pages per listing: a page record may be near a store request's size. */
const QUEUE_PAGES_PER_READ = 4;

export interface PackedCounts {
  runnable: number;
  completed: number;
  quarantined: number;
  total: number;
  /** Records that could not be read, one line each naming the key. */
  problems: string[];
}

function problemOf(key: string, e: unknown): string {
  const code = (e as { code?: string }).code;
  return `${key}: ${code !== undefined ? `${code}: ` : ''}${(e as Error).message}`;
}

/** Counts a packed job's splits by status (see the file's rules). */
export async function countPackedSplits(store: Store, prefix: string, fp: string): Promise<PackedCounts> {
  const out: PackedCounts = { runnable: 0, completed: 0, quarantined: 0, total: 0, problems: [] };
  const at: { revision?: number } = {};
  const folded = new Map<string, FoldedRecord>();
  for await (const page of jobKeyPages(store, prefix, ['folded'], at)) {
    for (const kv of page) {
      try {
        const rec = decodeRecord('folded', kv.key, kv.value, fp);
        folded.set(`${rec.bucket}.${rec.page}`, rec);
      } catch (e) {
        out.problems.push(problemOf(kv.key, e)); // its page's splits count as queued: no bit is known set
      }
    }
  }
  // The promoted splits' records (sparse): status by id; an unreadable one's status is unknown.
  const keyed = new Map<string, unknown>();
  for await (const page of jobKeyPages(store, prefix, ['split'], at)) {
    for (const kv of page) {
      const key = parseKey(prefix, kv.key);
      keyed.set(key.kind === 'split' ? key.id : kv.key, recordField(kv.value, 'status'));
    }
  }
  const count = (status: unknown) => {
    out.total++;
    if (status === 'runnable' || status === 'completed' || status === 'quarantined') out[status]++;
  };
  for await (const page of jobKeyPages(store, prefix, ['queue'], at, QUEUE_PAGES_PER_READ)) {
    for (const kv of page) {
      try {
        const rec = decodeRecord('queue', kv.key, kv.value, fp);
        const f = folded.get(`${rec.bucket}.${rec.page}`);
        const bits = f && foldedBitsOf(f, rec.generation); // a record of an earlier page under this number sets none
        rec.ids.forEach((id, slot) => {
          if (keyed.has(id)) {
            count(keyed.get(id));
            keyed.delete(id);
          } else {
            count(bits?.has(slot) ? 'completed' : 'runnable');
          }
        });
      } catch (e) {
        out.problems.push(problemOf(kv.key, e));
      }
    }
  }
  // Records of splits in no page (written by hand, or a page unreadable): counted as what they say.
  for (const status of keyed.values()) count(status);
  return out;
}

/**
 * Where split `id` of a packed job stands in its queue page, found from its id alone (its bucket's
 * pages, `bucketPrefix`): 'folded' (completed, folded back), 'queued', or undefined when no page
 * holds it. Unreadable pages and folded records are skipped: they can say nothing certain.
 */
export async function pagedState(store: Store, prefix: string, plan: PlanRecord, id: string): Promise<'queued' | 'folded' | undefined> {
  if (plan.layout !== 'packed' || plan.buckets === undefined) return undefined;
  const start = bucketPrefix(prefix, bucketOf(plan.fp, id, plan.buckets));
  let startAfter: string | undefined;
  for (;;) {
    // '/' follows '.': the range holds this bucket's pages and no other's.
    const page = await store.list(prefix, { rangeStart: start, rangeEnd: `${start.slice(0, -1)}/`, limit: QUEUE_PAGES_PER_READ, ...(startAfter !== undefined ? { startAfter } : {}) });
    for (const kv of page.kvs) {
      let slot = -1;
      let rec;
      try {
        rec = decodeRecord('queue', kv.key, kv.value, plan.fp);
        slot = rec.ids.indexOf(id);
      } catch {
        continue;
      }
      if (slot < 0) continue;
      const folded = await store.get(foldedKey(prefix, rec.bucket, rec.page));
      try {
        if (folded && foldedBitsOf(decodeRecord('folded', folded.key, folded.value, plan.fp), rec.generation).has(slot)) return 'folded';
      } catch {
        // unreadable: no bit is known set
      }
      return 'queued';
    }
    if (!page.more || page.kvs.length === 0) return undefined;
    startAfter = page.kvs[page.kvs.length - 1]!.key;
  }
}
