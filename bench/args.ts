/**
 * The benches' one argument parser (issue 51: each bench had its own
 * `indexOf('--x') + 1`): node:util's `parseArgs`, strict, so an option a
 * bench does not declare, or one missing its value, fails with its name where
 * a hand parser ignored it; `--name value` and `--name=value` both work, and
 * positionals are kept. `numberArg` reads a numeric option with its default.
 */
import { parseArgs } from 'node:util';

type OptionSpec = Readonly<Record<string, { readonly type: 'string' | 'boolean'; readonly default?: string | boolean; readonly short?: string }>>;

/** Parses `args` (default: this process's arguments) against `options`; throws on an undeclared option. */
export function benchArgs<const O extends OptionSpec>(options: O, args: string[] = process.argv.slice(2)) {
  return parseArgs({ args, options, allowPositionals: true, strict: true });
}

/** The number `value` of an option or positional called `name`, `fallback` when absent; throws, naming it, when it is not a number. */
export function numberArg(name: string, value: string | boolean | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  const n = Number(value);
  if (typeof value !== 'string' || value.trim() === '' || !Number.isFinite(n)) throw new Error(`${name} must be a number, got ${JSON.stringify(value)}`);
  return n;
}
