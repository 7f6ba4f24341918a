/**
 * The seeded, stable content hash that every tie-break shares.
 *
 * Tie-breaks are keyed by the job's seed (its fingerprint) and the id being
 * ordered, never by input order or the leader's identity. The hash is 64 bits,
 * returned as two unsigned 32-bit halves so that neither side of the WASM
 * boundary needs BigInt. Two different ids may in principle collide; every
 * comparison that uses this hash falls back to comparing the ids themselves,
 * so two different ids never compare equal.
 *
 * Pure: no I/O, no clock, no randomness.
 */

/** 32-bit state derived from a seed string, the starting point of every key. */
export function seedState(seed: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < seed.length; i++) {
    h = Math.imul(h ^ seed.charCodeAt(i), 0x01000193);
  }
  return h >>> 0;
}

/** Scratch pair, to avoid an allocation per call on hot paths. */
const out = new Uint32Array(2);

/**
 * Hash `id` under a seed state; writes [lo, hi] into `into` at `at`
 * (a Uint32Array laid out as little-endian u64s) and returns nothing.
 * assembly/hash.ts `hashKeys` is the same function over code units in engine
 * memory (a property test in wasm-collisions.test.ts holds them equal).
 */
export function hashInto(state: number, id: string, into: Uint32Array, at: number): void {
  // Two independent multiplicative lanes (cyrb53-style), cross-mixed at the end.
  let h1 = 0xdeadbeef ^ state;
  let h2 = 0x41c6ce57 ^ state;
  for (let i = 0; i < id.length; i++) {
    const ch = id.charCodeAt(i);
    h1 = Math.imul(h1 ^ ch, 2654435761);
    h2 = Math.imul(h2 ^ ch, 1597334677);
  }
  finish(h1, h2, into, at);
}

/** The lanes' final cross-mix, written as [lo, hi] at `at`. */
function finish(h1: number, h2: number, into: Uint32Array, at: number): void {
  h1 = Math.imul(h1 ^ (h1 >>> 16), 2246822507);
  h1 ^= Math.imul(h2 ^ (h2 >>> 13), 3266489909);
  h2 = Math.imul(h2 ^ (h2 >>> 16), 2246822507);
  h2 ^= Math.imul(h1 ^ (h1 >>> 13), 3266489909);
  into[at] = h1 >>> 0;
  into[at + 1] = h2 >>> 0;
}

/** The 64-bit key of `id` under `seed`, as [lo, hi]. */
export function contentKey(seed: string, id: string): [lo: number, hi: number] {
  hashInto(seedState(seed), id, out, 0);
  return [out[0]!, out[1]!];
}

/**
 * Total order on (key, id): compares hi, then lo, then the id strings in JS
 * string order. Returns <0, 0 (only for the same id) or >0.
 */
export function compareKeyed(
  aLo: number, aHi: number, aId: string,
  bLo: number, bHi: number, bId: string,
): number {
  if (aHi !== bHi) return aHi < bHi ? -1 : 1;
  if (aLo !== bLo) return aLo < bLo ? -1 : 1;
  return aId < bId ? -1 : aId > bId ? 1 : 0;
}
