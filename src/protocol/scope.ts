/**
 * A job's scope (substrate.md, "A job's scope"): its own kinds and singletons
 * under its prefix, never a nested root's keys. Roots may nest: job `x` under
 * root `splitfleet/a` lives at `splitfleet/a/x/`, inside the bare prefix of job
 * `a` under root `splitfleet`. Every reader, watcher and deleter of a job takes
 * its ranges from here (decision 0027).
 *
 * Invariants:
 * - `jobKeyRanges` yields one range per kind, in key order: a singleton is its
 *   exact key `[k, k\0)`; a keyed kind is `[<prefix><kind>., <prefix><kind>/)`,
 *   which holds every `<prefix><kind>.<anything>` ('.' is 0x2e, '/' is 0x2f)
 *   and nothing of a nested job named `<kind>` (`<prefix><kind>/...`).
 * - A nested segment that itself begins with `<kind>.` (root
 *   `splitfleet/a/split.x`) still falls inside a kind's range: `inJobScope`
 *   tells it apart, since an encoded id never contains '/' (keys.ts).
 *
 * Pure: no I/O.
 */
import { KEY_LAYOUT, type KeyKind } from './keys.js';
import { jsStringOrder } from '../js-order.js';

/** One range of a job's keys, `[rangeStart, rangeEnd)` in UTF-8 byte order (a store `KeyRange`). */
export interface ScopeRange {
  /** The kind of key the range holds. */
  kind: KeyKind;
  /** First key of the range (inclusive). */
  rangeStart: string;
  /** End of the range (exclusive). */
  rangeEnd: string;
}

/**
 * The ranges that hold exactly the job's keys of `kinds` (default: every kind),
 * sorted by start. All bounds are ASCII past the prefix, so string order is byte order.
 */
export function jobKeyRanges(prefix: string, kinds?: Iterable<KeyKind>): ScopeRange[] {
  const wanted = kinds === undefined ? undefined : new Set(kinds);
  return KEY_LAYOUT
    .filter((row) => wanted === undefined || wanted.has(row.kind))
    .map((row): ScopeRange => row.idKind === 'none'
      ? { kind: row.kind, rangeStart: `${prefix}${row.kind}`, rangeEnd: `${prefix}${row.kind}\0` }
      : { kind: row.kind, rangeStart: `${prefix}${row.kind}.`, rangeEnd: `${prefix}${row.kind}/` })
    .sort((a, b) => jsStringOrder(a.rangeStart, b.rangeStart));
}

/**
 * The one range from the job's first kind to the end of its last, for a reader
 * that can follow only one range (a snapshot and watch): narrower than the
 * bare prefix, it still holds nested segments sorting between two kinds, so
 * such a reader filters with {@link inJobScope}.
 */
export function jobSpan(prefix: string): { rangeStart: string; rangeEnd: string } {
  const ranges = jobKeyRanges(prefix);
  return { rangeStart: ranges[0]!.rangeStart, rangeEnd: ranges.reduce((end, r) => (r.rangeEnd > end ? r.rangeEnd : end), '') };
}

/**
 * Whether `key` is at the job's own level and inside one of its kinds' ranges:
 * a key of the job, readable or not (an undecodable id of its kinds is its
 * own), and never a nested job's (whose keys have a '/' after the prefix).
 */
export function inJobScope(prefix: string, key: string): boolean {
  if (!key.startsWith(prefix) || key.indexOf('/', prefix.length) >= 0) return false;
  const dot = key.indexOf('.', prefix.length);
  const idKind = ID_KIND.get(key.slice(prefix.length, dot < 0 ? undefined : dot));
  return idKind !== undefined && (idKind === 'none') === (dot < 0);
}

const ID_KIND: ReadonlyMap<string, string> = new Map(KEY_LAYOUT.map((r) => [r.kind, r.idKind]));
