/**
 * Reads the records the per-split view needs and nothing more. First the
 * plan record (the revision every other read is at, and the job's layout).
 * A `keys` job: a page of its `split.*` range (or one split's keys), then
 * the spec, progress and lease records of just those ids (the range from the
 * page's first id to its last, per kind). A packed job (decision 0037): its
 * queue pages in page order, or the one bucket's pages that can hold a split,
 * with their folded records and the ids' own keys (packed-split-read.ts).
 * Either way the assignment records of the instances holding their leases
 * (running or draining). Never the job's whole prefix, never a nested job's
 * keys (decision 0027).
 *
 * I/O: ranged, paged store listings. The view itself is splits.ts.
 */
import { assignKey, decodeId, encodeId, isValidId, jobPrefix, leaseKey, planKey, progressKey, specKey, splitKey } from '../protocol/keys.js';
import { decodeRecord } from '../protocol/records.js';
import { SplitfleetError } from '../errors.js';
import type { KeyValue, Store } from '../store/store.js';
import { findPagedSplit, readPackedPage, type PackedPlan } from './packed-split-read.js';
import { getManyAt, kindRange, listRange } from './range-read.js';
import { detectFingerprintHash } from './report.js';
import { splitViews, type SplitPage, type SplitView } from './splits.js';

/** Largest page of `--splits`. */
export const MAX_SPLIT_PAGE = 1000;

/** What `readSplitPage` reads: which job, how many splits, from where. */
export interface SplitPageOptions {
  store: Store;
  root: string;
  job: string;
  /** Splits per page, 1 to {@link MAX_SPLIT_PAGE}. Default 50. */
  limit?: number;
  /** Start after this split id (the previous page's `next`). */
  after?: string;
  /** Epoch ms, for "retry in …". Default Date.now(). */
  now?: number;
}

/** The other records of `ids` (consecutive in key order), the plan and the holders' assignments, at `revision`. */
async function readAround(store: Store, prefix: string, ids: readonly string[], revision: number): Promise<KeyValue[]> {
  if (ids.length === 0) return [];
  const first = encodeId(ids[0]!);
  const last = encodeId(ids[ids.length - 1]!);
  const wanted = new Set(ids);
  const kvs: KeyValue[] = [];
  for (const kind of ['spec', 'progress', 'lease'] as const) {
    const { kvs: got } = await listRange(store, prefix, `${prefix}${kind}.${first}`, `${prefix}${kind}.${last}\0`, revision);
    kvs.push(...got.filter((kv) => wanted.has(idOf(prefix, kind, kv.key))));
  }
  return kvs;
}

function idOf(prefix: string, kind: string, key: string): string {
  const encoded = key.slice(prefix.length + kind.length + 1);
  return decodeId(encoded) ?? encoded; // an undecodable id stays as stored: its record is reported as a problem
}

/** The plan record as the read starts: the revision every later read is at, and a packed plan's layout. */
async function readPlan(store: Store, prefix: string): Promise<{ kv: KeyValue | undefined; revision: number; packed: PackedPlan | undefined }> {
  const key = planKey(prefix);
  const first = await store.list(prefix, { rangeStart: key, rangeEnd: `${key}\0`, limit: 1 });
  const kv = first.kvs[0];
  const fp = kv ? detectFingerprintHash(prefix, [kv]) : undefined;
  let packed: PackedPlan | undefined;
  try {
    const plan = kv && fp !== undefined ? decodeRecord('plan', kv.key, kv.value, fp) : undefined;
    if (plan?.layout === 'packed') packed = { fp: plan.fp, buckets: plan.buckets };
  } catch {
    // Unreadable: read as a `keys` job; the view names the plan as a problem.
  }
  return { kv, revision: first.revision, packed };
}

interface Where { root: string; job: string; prefix: string; revision: number; next: string | null; now: number; layout: 'keys' | 'packed' }

/** The holders' assignments, then the views of `ids` from everything read for them (`kvs`), at `where.revision`. */
async function finish(
  store: Store, where: Where, ids: string[], kvs: KeyValue[], plan: KeyValue | undefined, readProblems: string[] = [],
): Promise<SplitPage> {
  const { prefix, revision } = where;
  // The holders' assignment records tell running from draining; one read per distinct holder.
  const holders = new Set<string>();
  for (const kv of kvs) {
    if (!kv.key.startsWith(`${prefix}lease.`)) continue;
    try {
      const owner = (JSON.parse(kv.value) as { owner?: unknown }).owner;
      if (typeof owner === 'string' && isValidId(owner)) holders.add(owner);
    } catch {
      // undecodable: splitViews reports it
    }
  }
  const assigns = await getManyAt(store, prefix, [...holders].sort().map((owner) => assignKey(prefix, owner)), revision);
  const all = [...(plan ? [plan] : []), ...kvs, ...assigns];
  const exists = plan !== undefined || kvs.length > 0;
  const fp = detectFingerprintHash(prefix, all);
  const base = { root: where.root, job: where.job, prefix, revision, exists, layout: where.layout, next: where.next };
  if (fp === undefined) return { ...base, splits: [], problems: readProblems };
  const { views, problems } = splitViews(prefix, fp, ids, all, revision, where.now);
  return { ...base, splits: views, problems: [...readProblems, ...problems] };
}

/**
 * A page of the job's splits, with what `splitfleet inspect --splits` shows of each: in id order
 * for a `keys` job; in page order (queue key order, then slot order) for a packed one.
 */
export async function readSplitPage(options: SplitPageOptions): Promise<SplitPage> {
  const limit = options.limit ?? 50;
  if (!Number.isInteger(limit) || limit < 1 || limit > MAX_SPLIT_PAGE) {
    throw new SplitfleetError('INVALID_INPUT', `limit: must be an integer from 1 to ${MAX_SPLIT_PAGE} (got ${JSON.stringify(options.limit)})`);
  }
  if (options.after !== undefined && !isValidId(options.after)) throw new SplitfleetError('INVALID_INPUT', 'after: must be a split id');
  const { store, root, job } = options;
  const prefix = jobPrefix(root, job);
  const now = options.now ?? Date.now();
  const plan = await readPlan(store, prefix);
  const { revision } = plan;
  if (plan.packed) {
    const page = await readPackedPage(store, prefix, plan.packed, limit, options.after, revision);
    return finish(store, { root, job, prefix, revision, next: page.next, now, layout: 'packed' }, page.ids, page.kvs, plan.kv, page.problems);
  }
  const range = kindRange(prefix, 'split');
  // One more than asked: whether a next page exists, without a second listing.
  const start = options.after !== undefined ? `${splitKey(prefix, options.after)}\0` : range.start;
  const { kvs, more } = await listRange(store, prefix, start, range.end, revision, limit + 1);
  const page = kvs.slice(0, limit);
  const ids = page.map((kv) => idOf(prefix, 'split', kv.key));
  const next = (kvs.length > limit || more) && ids.length > 0 ? ids[ids.length - 1]! : null;
  const around = await readAround(store, prefix, ids, revision);
  return finish(store, { root, job, prefix, revision, next, now, layout: 'keys' }, ids, [...page, ...around], plan.kv);
}

/**
 * One split's view (`splitfleet inspect --split ID`); `split` is null when the job has no such
 * split. A packed job's split is found from its id alone (its bucket's pages), never by listing the job.
 */
export async function readSplit(
  options: { store: Store; root: string; job: string; id: string; now?: number },
): Promise<{ page: SplitPage; split: SplitView | null }> {
  if (!isValidId(options.id)) throw new SplitfleetError('INVALID_INPUT', 'split: must be a split id');
  const { store, root, job, id } = options;
  const prefix = jobPrefix(root, job);
  const plan = await readPlan(store, prefix);
  const { revision } = plan;
  const kvs = await getManyAt(store, prefix, [splitKey(prefix, id), specKey(prefix, id), progressKey(prefix, id), leaseKey(prefix, id)], revision);
  const problems: string[] = [];
  if (plan.packed) {
    const found = await findPagedSplit(store, prefix, plan.packed, id, revision, problems);
    if (found) kvs.push(found.page, ...(found.folded ? [found.folded] : []));
  }
  const where = { root, job, prefix, revision, next: null, now: options.now ?? Date.now(), layout: plan.packed ? 'packed' as const : 'keys' as const };
  const page = await finish(store, where, [id], kvs, plan.kv, problems);
  // A job whose plan exists but has no record of this split: `exists` from the plan alone.
  return { page, split: page.splits[0] ?? null };
}
