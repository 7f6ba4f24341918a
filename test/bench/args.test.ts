/**
 * bench/args.ts, the benches' one argument parser (issue 51): strict, so a
 * mistyped option fails with its name instead of being ignored (as the hand
 * parsers did), and a numeric option that is not a number fails the same way.
 */
import { expect, test } from 'vitest';
import { benchArgs, numberArg } from '../../bench/args.js';

const OPTIONS = { runs: { type: 'string' }, quick: { type: 'boolean' } } as const;

test('options read as `--name value` and `--name=value`, positionals kept, an undeclared option refused by name', () => {
  expect(benchArgs(OPTIONS, ['--runs', '3', 'dir', '--quick'])).toMatchObject({ values: { runs: '3', quick: true }, positionals: ['dir'] });
  expect(benchArgs(OPTIONS, ['--runs=4']).values.runs).toBe('4');
  expect(() => benchArgs(OPTIONS, ['--rusn', '3'])).toThrow(/--rusn/);
  expect(() => benchArgs(OPTIONS, ['--runs'])).toThrow(/--runs/);
});

test('a number option takes its default when absent and names itself when not a number', () => {
  expect(numberArg('runs', undefined, 5)).toBe(5);
  expect(numberArg('runs', '7', 5)).toBe(7);
  expect(() => numberArg('runs', 'seven', 5)).toThrow('runs must be a number, got "seven"');
  expect(() => numberArg('runs', '', 5)).toThrow(/runs must be a number/);
});
