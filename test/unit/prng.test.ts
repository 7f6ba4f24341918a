/**
 * src/prng.ts: the one seeded PRNG. Its stream is pinned, because chaos and
 * simulation seeds printed by past failures must replay the same runs.
 */
import { describe, expect, test } from 'vitest';
import { prng, shuffled } from '../../src/prng.js';

describe('prng', () => {
  test('mulberry32 stream for seed 42 is pinned (replayed seeds stay valid)', () => {
    const r = prng(42);
    expect([r(), r(), r()]).toEqual([0.6011037519201636, 0.44829055899754167, 0.8524657934904099]);
  });

  test('the same seed gives the same stream; values lie in [0, 1)', () => {
    const a = prng(7);
    const b = prng(7);
    for (let i = 0; i < 1000; i++) {
      const x = a();
      expect(b()).toBe(x);
      expect(x).toBeGreaterThanOrEqual(0);
      expect(x).toBeLessThan(1);
    }
  });

  test('shuffled is a seeded permutation and leaves its input alone', () => {
    const xs = Array.from({ length: 50 }, (_, i) => i);
    const once = shuffled(xs, 3);
    expect(shuffled(xs, 3)).toEqual(once);
    expect([...once].sort((p, q) => p - q)).toEqual(xs);
    expect(once).not.toEqual(xs);
    expect(xs[0]).toBe(0);
  });
});
