/**
 * bench/stats.ts, the benches' one median and quantile (issue 51): the
 * convention every reported figure rests on, pinned on small samples whose
 * answer differs between the conventions the benches used before.
 */
import { expect, test } from 'vitest';
import { median, quantile } from '../../bench/stats.js';

test('the median is the middle value, or the mean of the two middle values, whatever the order', () => {
  expect(median([3, 1, 2])).toBe(2);
  expect(median([4, 1, 3, 2])).toBe(2.5);
  expect(median([])).toBeNaN();
});

test('a quantile is the nearest-rank value: the ⌈q·n⌉-th smallest, never interpolated', () => {
  const hundred = Array.from({ length: 100 }, (_, i) => 100 - i); // 100 … 1
  expect(quantile(hundred, 0.99)).toBe(99);
  expect(quantile(hundred, 1)).toBe(100);
  expect(quantile(hundred, 0)).toBe(1);
  expect(quantile([10, 20, 30, 40], 0.5)).toBe(20);
  expect(quantile([10, 20, 30, 40], 0.9)).toBe(40);
  expect(quantile([], 0.5)).toBeNaN();
});
