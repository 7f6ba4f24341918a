/**
 * Reads the records the per-split view needs and nothing more: a page of the
 * job's `split.*` range (or one split key), then, at the same revision, the
 * spec, progress and lease records of just those ids (the range from the
 * page's first id to its last, per kind), the plan record (for the
 * fingerprint) and the assignment records of the instances holding their
 * leases (running or draining). Never the job's whole prefix, never a nested
 * job's keys (decision 0027).
 *
 * I/O: ranged, paged store listings. The view itself is splits.ts.
 */
import { assignKey, decodeId, encodeId, isValidId, jobPrefix, planKey, splitKey, type KeyKind } from '../protocol/keys.js';
import { inJobScope, jobKeyRanges } from '../protocol/scope.js';
import { SplitfleetError } from '../errors.js';
import type { KeyValue, Store } from '../store/store.js';
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

/** Keys of `[start, end)` at `revision`, page by page, in the job's scope. */
async function listRange(store: Store, prefix: string, start: string, end: string, revision: number | undefined, limit?: number) {
  const kvs: KeyValue[] = [];
  let startAfter: string | undefined;
  let rev = revision;
  for (;;) {
    const page = await store.list(prefix, {
      rangeStart: start, rangeEnd: end, limit: limit ?? 500,
      ...(startAfter !== undefined ? { startAfter } : {}), ...(rev !== undefined ? { revision: rev } : {}),
    });
    rev ??= page.revision;
    kvs.push(...page.kvs.filter((kv) => inJobScope(prefix, kv.key)));
    // With a caller's limit, one page is the answer (the caller pages); without, read the range out.
    if (limit !== undefined || !page.more || page.kvs.length === 0) return { kvs, revision: rev, more: page.more };
    startAfter = page.kvs[page.kvs.length - 1]!.key;
  }
}

function kindRange(prefix: string, kind: KeyKind): { start: string; end: string } {
  const r = jobKeyRanges(prefix, [kind])[0]!;
  return { start: r.rangeStart, end: r.rangeEnd };
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

/** The exact key `key` at `revision`. */
async function getAt(store: Store, prefix: string, key: string, revision: number): Promise<KeyValue | undefined> {
  return (await store.list(prefix, { rangeStart: key, rangeEnd: `${key}\0`, limit: 1, revision })).kvs[0];
}

/** The plan, the split's other records and its holders' assignments, decoded into views. */
async function finish(
  store: Store, root: string, job: string, prefix: string, ids: string[], splitKvs: KeyValue[], revision: number, next: string | null, now: number,
): Promise<SplitPage> {
  const plan = await getAt(store, prefix, planKey(prefix), revision);
  const around = await readAround(store, prefix, ids, revision);
  // The holders' assignment records tell running from draining; one read per distinct holder.
  const holders = new Set<string>();
  for (const kv of around) {
    if (!kv.key.startsWith(`${prefix}lease.`)) continue;
    try {
      const owner = (JSON.parse(kv.value) as { owner?: unknown }).owner;
      if (typeof owner === 'string' && isValidId(owner)) holders.add(owner);
    } catch {
      // undecodable: splitViews reports it
    }
  }
  const assigns: KeyValue[] = [];
  for (const owner of [...holders].sort()) {
    const kv = await getAt(store, prefix, assignKey(prefix, owner), revision);
    if (kv) assigns.push(kv);
  }
  const all = [...(plan ? [plan] : []), ...splitKvs, ...around, ...assigns];
  const exists = plan !== undefined || splitKvs.length > 0;
  const fp = detectFingerprintHash(prefix, all);
  const base = { root, job, prefix, revision, exists, next };
  if (fp === undefined) return { ...base, splits: [], problems: [] };
  const { views, problems } = splitViews(prefix, fp, ids, all, revision, now);
  return { ...base, splits: views, problems };
}

/** A page of the job's splits in id order, with what `splitfleet inspect --splits` shows of each. */
export async function readSplitPage(options: SplitPageOptions): Promise<SplitPage> {
  const limit = options.limit ?? 50;
  if (!Number.isInteger(limit) || limit < 1 || limit > MAX_SPLIT_PAGE) {
    throw new SplitfleetError('INVALID_INPUT', `limit: must be an integer from 1 to ${MAX_SPLIT_PAGE} (got ${JSON.stringify(options.limit)})`);
  }
  if (options.after !== undefined && !isValidId(options.after)) throw new SplitfleetError('INVALID_INPUT', 'after: must be a split id');
  const prefix = jobPrefix(options.root, options.job);
  const range = kindRange(prefix, 'split');
  // One more than asked: whether a next page exists, without a second listing.
  const start = options.after !== undefined ? `${splitKey(prefix, options.after)}\0` : range.start;
  const { kvs, revision, more } = await listRange(options.store, prefix, start, range.end, undefined, limit + 1);
  const page = kvs.slice(0, limit);
  const ids = page.map((kv) => idOf(prefix, 'split', kv.key));
  const next = (kvs.length > limit || more) && ids.length > 0 ? ids[ids.length - 1]! : null;
  return finish(options.store, options.root, options.job, prefix, ids, page, revision, next, options.now ?? Date.now());
}

/** One split's view (`splitfleet inspect --split ID`); `split` is null when the job has no such split. */
export async function readSplit(
  options: { store: Store; root: string; job: string; id: string; now?: number },
): Promise<{ page: SplitPage; split: SplitView | null }> {
  if (!isValidId(options.id)) throw new SplitfleetError('INVALID_INPUT', 'split: must be a split id');
  const prefix = jobPrefix(options.root, options.job);
  const key = splitKey(prefix, options.id);
  const first = await options.store.list(prefix, { rangeStart: key, rangeEnd: `${key}\0`, limit: 1 });
  const page = await finish(options.store, options.root, options.job, prefix, [options.id], first.kvs, first.revision, null, options.now ?? Date.now());
  // A job whose plan exists but has no record of this split: `exists` from the plan alone.
  return { page, split: page.splits[0] ?? null };
}
