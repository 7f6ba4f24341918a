/**
 * Reading the caller's split objects into columns, at a cost that does not
 * depend on how the caller built them.
 *
 * Why: a named property load (`s.id`) is an inline cache keyed by the
 * object's hidden class. Objects built with spread, `{ ...s, leaseOwner }`,
 * from a source whose `weight` field holds doubles (any weight ≥ 2^30 in the
 * array makes V8 generalise that field) get a fresh hidden class each: V8's
 * clone fast path cannot share a map whose fields are boxed doubles, so at 1M
 * splits the loads see ~500k classes, go megamorphic, miss the global stub
 * cache on nearly every object and pay a runtime IC miss each (measured: the
 * same six loads over 1M literals 8 ms, over 1M spread objects 940–1,600 ms).
 * `Reflect.get` is a generic lookup (TurboFan calls the GetProperty builtin,
 * no feedback): 10–40 ns a field for every shape measured (literal, spread,
 * class instances, extra fields, another order), so this file reads every
 * field through it, once, into typed columns that the rest of the codec reads
 * monomorphically. What remains between shapes is the objects' own layout:
 * a spread object keeps the added fields out of line (a second allocation),
 * so reading 1M of them still costs ~230 ms against ~75 ms for literals.
 *
 * Invariants: reads each field exactly once (a getter runs once, as in the
 * validator); an owner that is undefined is stored as null. Pure.
 */
import { STATUS_CODES } from './wire.js';

/** One read of a split array: row i is `splits[i]`. Reused between calls (grown, never shrunk). */
export interface SplitFields {
  ids: string[];
  weight: Float64Array;
  /** STATUS_CODES; an absent status is runnable. */
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
    if (typeof id !== 'string' || id === '' || typeof w !== 'number' || !Number.isSafeInteger(w) || w < 0) return i;
    let code = 0;
    if (st !== undefined) {
      if (st === 'completed') code = STATUS_CODES.completed;
      else if (st === 'quarantined') code = STATUS_CODES.quarantined;
      else if (st !== 'runnable') return i;
    }
    if (lo !== undefined && lo !== null && typeof lo !== 'string') return i;
    if (pr !== undefined && pr !== null && typeof pr !== 'string') return i;
    if (ro !== undefined && ro !== null && typeof ro !== 'string') return i;
    ids[i] = id;
    weight[i] = w;
    status[i] = code;
    lease[i] = lo === undefined ? null : lo;
    prev[i] = pr === undefined ? null : pr;
    rec[i] = ro === undefined ? null : ro;
  }
  return -1;
}
