/**
 * Reading the caller's split objects into columns, at a cost that does not
 * depend much on how the caller built them.
 *
 * Why: a named property load (`s.id`) is an inline cache keyed by the
 * object's hidden class. V8 gives every object built as `{ ...s, leaseOwner }`
 * (spread, then any field added) a hidden class of its own: the clone's map
 * is not in a transition tree, so each added field makes a fresh map (seen
 * with `%HaveSameMap`: 1 pair in 1,000 neighbours shares one, with integer
 * weights as with doubles; `{ ...s }` alone shares). At 1M splits named loads
 * see ~1M classes, go megamorphic, miss the stub cache on nearly every object
 * and pay a runtime miss each (six loads over 1M literals 12–20 ms, over 1M
 * spread objects 1,000–1,500 ms). `Reflect.get` is a generic lookup (no
 * inline cache): literal 110–120 ms, spread 270–490 ms, the same on every
 * read. A `for…in` reader was measured too and lost (decision 0002): fast on
 * literals (~65 ms), but on spread objects slower than this (390 ms, with
 * the one lookup per absent field that exactness needs) and 130 MiB of enum
 * caches, and its first read of objects with deprecated maps deopted ~160
 * times (~950 ms per 1M).
 *
 * Invariants: reads each field exactly once (a getter runs once, as in the
 * validator); an owner that is undefined is stored as null. Pure.
 */
import { isId, isOwner, isValidWeight, statusCode } from './validate.js';

/** One read of a split array: row i is `splits[i]`. Reused between calls (grown, never shrunk). */
export interface SplitFields {
  ids: string[];
  weight: Float64Array;
  /** wire.ts STATUS_CODES; an absent status is runnable. */
  status: Uint8Array;
  lease: (string | null)[];
  prev: (string | null)[];
  rec: (string | null)[];
}

export function splitFields(n: number): SplitFields {
  return {
    ids: new Array<string>(n).fill(''), weight: new Float64Array(n), status: new Uint8Array(n),
    lease: new Array<string | null>(n).fill(null), prev: new Array<string | null>(n).fill(null), rec: new Array<string | null>(n).fill(null),
  };
}

/** `f` if it holds n rows, else a larger one (old contents dropped). */
export function fieldsFor(f: SplitFields | null, n: number): SplitFields {
  return f !== null && f.weight.length >= n ? f : splitFields(Math.max(n, f === null ? 0 : 2 * f.weight.length));
}


/**
 * Reads splits[from, to) into `f` and checks each split's own rules (object,
 * non-empty string id, weight an integer 0 … 2^53 − 1, owners strings or
 * null, a known status). Returns −1, or the first row that breaks a rule
 * (the caller runs the validator for the exact error). Uniqueness of ids is
 * not checked here.
 */
export function readSplits(splits: readonly unknown[], from: number, to: number, f: SplitFields): number {
  const { ids, weight, status, lease, prev, rec } = f;
  for (let i = from; i < to; i++) {
    const s = splits[i];
    if (typeof s !== 'object' || s === null) return i;
    const id: unknown = Reflect.get(s, 'id');
    const w: unknown = Reflect.get(s, 'weight');
    const st: unknown = Reflect.get(s, 'status');
    const lo: unknown = Reflect.get(s, 'leaseOwner');
    const pr: unknown = Reflect.get(s, 'previous');
    const ro: unknown = Reflect.get(s, 'recordOwner');
    const code = statusCode(st);
    if (!isId(id) || !isValidWeight(w) || code < 0 || !isOwner(lo) || !isOwner(pr) || !isOwner(ro)) return i;
    ids[i] = id;
    weight[i] = w;
    status[i] = code;
    lease[i] = lo ?? null;
    prev[i] = pr ?? null;
    rec[i] = ro ?? null;
  }
  return -1;
}
