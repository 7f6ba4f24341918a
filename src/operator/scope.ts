/**
 * Reading a job's keys and nothing else (decision 0027): the listings of the
 * operator actions and tools go range by range over `jobKeyRanges`, all at
 * one revision, and keep only keys `inJobScope`, so a job nested under this
 * one's prefix is never read, counted or deleted with it.
 *
 * I/O: paged listings.
 */
import type { KeyKind } from '../protocol/keys.js';
import { inJobScope, jobKeyRanges } from '../protocol/scope.js';
import type { KeyValue, Store } from '../store/store.js';

/** Keys per page of a scope listing. */
const PAGE = 1000;

/**
 * The job's keys of `kinds` (default: all), page by page in key order, each page filtered to the job's
 * scope, `limit` keys a page (default 1,000; a packed job's queue pages, each up to about a store
 * request, are best read a few at a time).
 */
export async function* jobKeyPages(
  store: Store, prefix: string, kinds?: Iterable<KeyKind>, at?: { revision?: number }, limit = PAGE,
): AsyncGenerator<KeyValue[]> {
  for (const range of jobKeyRanges(prefix, kinds)) {
    let startAfter: string | undefined;
    for (;;) {
      const page = await store.list(prefix, {
        limit, rangeStart: range.rangeStart, rangeEnd: range.rangeEnd,
        ...(startAfter !== undefined ? { startAfter } : {}), ...(at?.revision !== undefined ? { revision: at.revision } : {}),
      });
      if (at !== undefined) at.revision ??= page.revision;
      yield page.kvs.filter((kv) => inJobScope(prefix, kv.key));
      if (!page.more || page.kvs.length === 0) break;
      startAfter = page.kvs[page.kvs.length - 1]!.key;
    }
  }
}

/** Every key of the job's `kinds` (default: all), in key order, read at one revision. */
export async function listJobKeys(
  store: Store, prefix: string, kinds?: Iterable<KeyKind>,
): Promise<{ kvs: KeyValue[]; revision: number }> {
  const kvs: KeyValue[] = [];
  const at: { revision?: number } = {};
  for await (const page of jobKeyPages(store, prefix, kinds, at)) kvs.push(...page);
  return { kvs, revision: at.revision ?? (await store.list(prefix, { limit: 1 })).revision };
}
