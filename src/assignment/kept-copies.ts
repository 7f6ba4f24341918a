/**
 * Copies that a memo keeps from one decision to the next, written over the
 * memory of the copy they replace. Why: at 1M rows a thread's memo keeps
 * ~40 MB of copies (keys, id code units and offsets, the pool order), and
 * fresh ones cost a first decision their allocation, the page faults of
 * first touch and the collections the external memory triggers (BENCHMARKS.md,
 * issue 14, seventh pass). Pure.
 *
 * Invariant: `spare` belongs to a memo that is being replaced; nothing else
 * may still read it, because the copy overwrites it.
 */

type Column = Uint8Array | Uint16Array | Uint32Array | Int32Array | Float64Array;

/** Room the copies keep beyond what they hold, so that a slightly longer next input fits: an eighth. */
const HEADROOM_SHIFT = 3;

/**
 * A copy of `a` in `spare`'s memory when that is a private buffer (not
 * shared) from its start with room for it, else in a new buffer with an
 * eighth more room. The copy is a view of exactly `a.length` elements.
 */
export function keptCopy<A extends Column>(a: A, spare: A | null): A {
  const Make = a.constructor as new (buffer: ArrayBuffer, byteOffset: number, length: number) => A;
  const roomy = spare !== null && spare.byteOffset === 0 && spare.buffer instanceof ArrayBuffer && spare.buffer.byteLength >= a.byteLength;
  const buffer = roomy ? (spare.buffer as ArrayBuffer) : new ArrayBuffer(a.byteLength + (a.byteLength >>> HEADROOM_SHIFT));
  const copy = new Make(buffer, 0, a.length);
  copy.set(a as never);
  return copy;
}

/** `a` itself when this thread owns it (it was moved here), else a kept copy (it is in memory the caller writes again). */
export function owned<A extends Column>(a: A, spare: A | null): A {
  return a.buffer instanceof SharedArrayBuffer ? keptCopy(a, spare) : a;
}
