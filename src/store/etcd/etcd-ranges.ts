/**
 * Key ranges in etcd's terms: a prefix (optionally narrowed by the contract's
 * `rangeStart`/`rangeEnd`, or resumed after `startAfter`) as the byte keys
 * `key` and `range_end` of a range or watch request. Pure; no etcd3.
 *
 * Invariant: a range never reaches outside its prefix, whatever the narrowing
 * asks for.
 */
import { compareKeys, type KeyRange, type ListOptions } from '../store.js';

/** The first key a prefix range starts at (etcd refuses an empty key; "\0" means "from the start"). */
export function prefixStart(prefix: string): Buffer {
  return prefix === '' ? Buffer.from([0]) : Buffer.from(prefix);
}

/** The first key after every key that starts with `prefix` (etcd's range_end for a prefix; "\0" means "to the end"). */
export function prefixEnd(prefix: string): Buffer {
  const bytes = Buffer.from(prefix);
  for (let i = bytes.length - 1; i >= 0; i--) {
    if (bytes[i]! < 0xff) {
      const end = Buffer.from(bytes.subarray(0, i + 1));
      end[i]!++;
      return end;
    }
  }
  return Buffer.from([0]);
}

/** The start of `prefix` narrowed by `range.rangeStart`, whichever comes last. */
export function rangeStartOf(prefix: string, range: KeyRange): Buffer {
  return range.rangeStart !== undefined && compareKeys(range.rangeStart, prefix) > 0 ? Buffer.from(range.rangeStart) : prefixStart(prefix);
}

/** The end of `prefix` narrowed by `range.rangeEnd`, whichever comes first. */
export function rangeEndOf(prefix: string, range: KeyRange): Buffer {
  const end = prefixEnd(prefix);
  if (range.rangeEnd === undefined) return end;
  const narrowed = Buffer.from(range.rangeEnd);
  return end.length === 1 && end[0] === 0 ? narrowed : Buffer.compare(narrowed, end) < 0 ? narrowed : end;
}

/** Where a listing page starts: the narrowed start, or just after `startAfter` when that is later. */
export function listStartOf(prefix: string, options: ListOptions): Buffer {
  const { startAfter } = options;
  if (startAfter !== undefined && compareKeys(startAfter, prefix) >= 0 && (options.rangeStart === undefined || compareKeys(startAfter, options.rangeStart) >= 0)) {
    return Buffer.concat([Buffer.from(startAfter), Buffer.from([0])]);
  }
  return rangeStartOf(prefix, options);
}
