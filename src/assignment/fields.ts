/**
 * Reading the caller's split objects into columns, at a cost that does not
 * depend on how the caller built them.
 *
 * Why: a named property load (`s.id`) is an inline cache keyed by the
 * object's hidden class. V8 gives every object built as `{ ...s, leaseOwner }`
 * (spread, then any added field) a hidden class of its own: the clone's map
 * is not in a transition tree, so each added field makes a fresh map (seen
 * with `%HaveSameMap`: 1 pair in 1,000 neighbours shares one, with integer
 * weights as with doubles; `{ ...s }` alone shares). At 1M splits named loads
 * see ~1M classes, go megamorphic, miss the stub cache on nearly every object
 * and pay a runtime miss each (six loads over 1M literals 12–20 ms, over 1M
 * spread objects 1,000–1,500 ms). `Reflect.get` (no inline cache) costs the
 * same for every shape but is slow for all of them (literal 110–120 ms,
 * spread 330–490 ms). A `for…in` over the object is fast whatever its map:
 * V8 enumerates from the map's enum cache and turns `s[k]` on the loop's key
 * into a load by field index, no lookup (literal, class, reordered 30–36 ms,
 * two extra fields 39 ms, spread 80–100 ms once its enum caches exist).
 * Measured with node 20.20 (V8 11.3) on 1M settled splits; BENCHMARKS.md.
 * The price is paid once per object, on its first read: an object whose map
 * was deprecated (its shape's `weight` field changed representation when a
 * weight ≥ 2^30 followed small ones, so about half of a mixed-weight input)
 * takes for…in's slow path, which V8 deopts on until the object is migrated
 * (first read of such a 1M input ~950 ms, later reads ~90–190 ms; `Reflect.get`
 * ~190 ms every time, migrating nothing), and a spread object builds its
 * map's enum cache (650–950 ms per 1M on first read). Decision 0002.
 *
 * Exactness: `for…in` sees enumerable string keys, own or inherited, and
 * `s[k]` is the same [[Get]] as `s.id`. A field it does not see may still be
 * there, non-enumerable (a class getter, `defineProperty`): each field not
 * seen is read once more with `Reflect.get`, so the values are exactly the
 * reference's `s.id`, `s.weight`, … (an absent field costs that one lookup).
 * Extra fields cost one pass of the loop each.
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
    const o = s as Record<string, unknown>;
    let id: unknown, w: unknown, st: unknown, lo: unknown, pr: unknown, ro: unknown;
    let seen = 0;
    // Interned literals: each case is a pointer compare; `s[k]` stays on the
    // loop's own object and key (V8's by-index for-in load). Written exactly
    // so: through an alias of `s`, or with a `continue` or an early exit, the
    // optimised loop deopted again and again ("insufficient type feedback").
    for (const k in s) {
      switch (k) {
        case 'id': id = (s as Record<string, unknown>)[k]; seen |= 1; break;
        case 'weight': w = (s as Record<string, unknown>)[k]; seen |= 2; break;
        case 'leaseOwner': lo = (s as Record<string, unknown>)[k]; seen |= 4; break;
        case 'recordOwner': ro = (s as Record<string, unknown>)[k]; seen |= 8; break;
        case 'previous': pr = (s as Record<string, unknown>)[k]; seen |= 16; break;
        case 'status': st = (s as Record<string, unknown>)[k]; seen |= 32; break;
      }
    }
    if (seen !== 63) {
      if ((seen & 1) === 0) id = Reflect.get(o, 'id');
      if ((seen & 2) === 0) w = Reflect.get(o, 'weight');
      if ((seen & 4) === 0) lo = Reflect.get(o, 'leaseOwner');
      if ((seen & 8) === 0) ro = Reflect.get(o, 'recordOwner');
      if ((seen & 16) === 0) pr = Reflect.get(o, 'previous');
      if ((seen & 32) === 0) st = Reflect.get(o, 'status');
    }
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
