/**
 * The one seeded PRNG (mulberry32) that the demo's synthetic job, the chaos
 * and simulation suites and the benches draw from, so a seed means the same
 * stream everywhere and a failing run replays from its seed alone.
 *
 * Internal (not exported from src/index.ts). Pure: no I/O, no clock, no
 * Math.random; the state lives only in the returned closure.
 */

/** mulberry32: floats in [0, 1), a function of `seed` (taken as an unsigned 32-bit integer) alone. */
export function prng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** A copy of `xs` in a seeded order (Fisher–Yates on `prng(seed)`). */
export function shuffled<T>(xs: readonly T[], seed: number): T[] {
  const rnd = prng(seed);
  const out = [...xs];
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(rnd() * (i + 1));
    [out[i], out[j]] = [out[j]!, out[i]!];
  }
  return out;
}
