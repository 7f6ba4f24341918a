/**
 * quality.ts: the lower bound on the optimal maximum load, the load figures
 * and churn between two assignments.
 */
import { describe, expect, test } from 'vitest';
import { churn, loadFigures, lowerBound } from '../../../src/assignment/quality.js';

describe('lowerBound', () => {
  test('is the ceiling of the average when no split dominates', () => {
    expect(lowerBound([3, 3, 3, 2], 2)).toBe(6); // 11 / 2 → 6
    expect(lowerBound([4, 4, 4, 4], 4)).toBe(4);
  });

  test('is the heaviest split when it exceeds the average', () => {
    expect(lowerBound([100, 1, 1, 1], 3)).toBe(100);
  });

  test('counts a zero weight as 1', () => {
    expect(lowerBound([0, 0, 0], 2)).toBe(2); // effective 1 + 1 + 1 = 3 → ceil(3 / 2)
    expect(lowerBound([0], 5)).toBe(1);
  });

  test('is 0 with no members or no splits', () => {
    expect(lowerBound([5, 6], 0)).toBe(0);
    expect(lowerBound([], 3)).toBe(0);
  });

  test('accepts any iterable', () => {
    expect(lowerBound(new Set([10, 20]).values(), 1)).toBe(30);
  });
});

describe('loadFigures', () => {
  test('max, min, lower bound and imbalance', () => {
    const f = loadFigures(new Float64Array([12, 8, 10]), [5, 5, 2, 4, 4, 6, 4]);
    expect(f).toEqual({ maxLoad: 12, minLoad: 8, lowerBound: 10, imbalance: 1.2 });
  });

  test('a perfect assignment has imbalance 1', () => {
    expect(loadFigures([6, 6], [3, 3, 3, 3]).imbalance).toBe(1);
  });

  test('no members: all zero, imbalance 1', () => {
    expect(loadFigures([], [])).toEqual({ maxLoad: 0, minLoad: 0, lowerBound: 0, imbalance: 1 });
  });

  test('members but nothing assigned: imbalance 1', () => {
    expect(loadFigures([0, 0], [])).toEqual({ maxLoad: 0, minLoad: 0, lowerBound: 0, imbalance: 1 });
  });

  test('stays finite past 2^53 (approximate figures)', () => {
    const max = Number.MAX_SAFE_INTEGER;
    const f = loadFigures([2 * max, max], [max, max, max]);
    expect(f.lowerBound).toBe(Math.ceil((3 * max) / 2));
    expect(Number.isFinite(f.imbalance)).toBe(true);
    expect(f.imbalance).toBeCloseTo(4 / 3, 10);
  });
});

describe('churn', () => {
  const weights: Record<string, number> = { s1: 10, s2: 20, s3: 0, s4: 40, s5: 50 };
  const w = (id: string): number => weights[id]!;

  test('counts splits that changed assignee, by effective weight', () => {
    const prev = { a: ['s1', 's2'], b: ['s3'] };
    const next = { a: ['s1'], b: ['s2'], c: ['s3'] };
    expect(churn(prev, next, w)).toEqual({ movedWeight: 20 + 1, movedCount: 2 });
  });

  test('identical assignments have no churn', () => {
    const a = { a: ['s1', 's2'], b: ['s3', 's4'] };
    expect(churn(a, a, w)).toEqual({ movedWeight: 0, movedCount: 0 });
  });

  test('newly assigned and no-longer-assigned splits are not moves', () => {
    const prev = { a: ['s1'], b: ['s2'] };
    const next = { a: ['s1', 's4'], b: [] };
    expect(churn(prev, next, w)).toEqual({ movedWeight: 0, movedCount: 0 });
  });

  test("a departed member's splits count when someone else takes them", () => {
    const prev = { a: ['s1'], gone: ['s4', 's5'] };
    const next = { a: ['s1', 's4'], b: ['s5'] };
    expect(churn(prev, next, w)).toEqual({ movedWeight: 90, movedCount: 2 });
  });

  test('works with ids such as __proto__', () => {
    const prev = JSON.parse('{"__proto__": ["constructor"], "b": []}') as Record<string, string[]>;
    const next = JSON.parse('{"__proto__": [], "b": ["constructor"]}') as Record<string, string[]>;
    expect(churn(prev, next, () => 7)).toEqual({ movedWeight: 7, movedCount: 1 });
  });
});
