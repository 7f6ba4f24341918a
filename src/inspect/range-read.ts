/**
 * The ranged reads the per-split views are built from (split-read.ts,
 * packed-split-read.ts): a key range of the job read out (or one page of
 * it) at one revision, one exact key at a revision, a kind's range. Every
 * listing keeps only the job's own keys (decision 0027): a nested job's keys
 * that sort inside a range are dropped.
 *
 * I/O: ranged, paged store listings only; nothing here decodes.
 */
import { jobKeyRanges, inJobScope } from '../protocol/scope.js';
import type { KeyKind } from '../protocol/keys.js';
import type { KeyValue, Store } from '../store/store.js';

/**
 * Keys of `[start, end)` at `revision` (the first page's when undefined), in the job's scope. With
 * `limit`, one page of that many keys is the answer (the caller pages); without, the range is read out.
 */
export async function listRange(
  store: Store, prefix: string, start: string, end: string, revision: number | undefined, limit?: number,
): Promise<{ kvs: KeyValue[]; revision: number; more: boolean }> {
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
    if (limit !== undefined || !page.more || page.kvs.length === 0) return { kvs, revision: rev, more: page.more };
    startAfter = page.kvs[page.kvs.length - 1]!.key;
  }
}

/** The range `[start, end)` holding every key of `kind`. */
export function kindRange(prefix: string, kind: KeyKind): { start: string; end: string } {
  const r = jobKeyRanges(prefix, [kind])[0]!;
  return { start: r.rangeStart, end: r.rangeEnd };
}

/** The exact key `key` at `revision` (now when undefined; undefined: absent then). */
export async function getAt(store: Store, prefix: string, key: string, revision: number | undefined): Promise<KeyValue | undefined> {
  return (await store.list(prefix, { rangeStart: key, rangeEnd: `${key}\0`, limit: 1, ...(revision !== undefined ? { revision } : {}) })).kvs[0];
}

/** Exact reads of `keys` at `revision`, `parallel` at a time; the ones present, in the order given. */
export async function getManyAt(store: Store, prefix: string, keys: readonly string[], revision: number, parallel = 32): Promise<KeyValue[]> {
  const out: (KeyValue | undefined)[] = [];
  for (let i = 0; i < keys.length; i += parallel) {
    out.push(...await Promise.all(keys.slice(i, i + parallel).map((k) => getAt(store, prefix, k, revision))));
  }
  return out.filter((kv): kv is KeyValue => kv !== undefined);
}
