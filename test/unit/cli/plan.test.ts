/**
 * `splitfleet plan`, run as users run it: the compiled bin
 * (dist/src/cli/main.js) in a child process. Build first:
 * `npm run build:ts` (or `npx tsc -p tsconfig.json`).
 *
 * Success from a file and from stdin, --output, --pretty, --engine, the
 * manual's example (docs/cli.md); every refusal exits 2 with one line on stderr naming the
 * field and the rule, nothing on stdout and no --output file.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { desiredAssignment } from '../../../src/assignment/engine.js';
import type { AssignmentInput } from '../../../src/assignment/types.js';

const root = fileURLToPath(new URL('../../../', import.meta.url));
const CLI = join(root, 'dist/src/cli/main.js');
const MAX = Number.MAX_SAFE_INTEGER;
let dir = '';

beforeAll(() => {
  if (!existsSync(CLI)) {
    throw new Error(`${CLI} is missing: these tests run the compiled CLI; build it first with \`npm run build:ts\` (or \`npx tsc -p tsconfig.json\`)`);
  }
  for (const [src, out] of [['src/cli/main.ts', 'dist/src/cli/main.js'], ['src/cli/plan.ts', 'dist/src/cli/plan.js'], ['src/index.ts', 'dist/src/index.js']] as const) {
    if (existsSync(join(root, out)) && statSync(join(root, src)).mtimeMs > statSync(join(root, out)).mtimeMs) {
      throw new Error(`${out} is older than ${src}: rebuild with \`npm run build:ts\` before running these tests`);
    }
  }
  dir = mkdtempSync(join(tmpdir(), 'splitfleet-plan-'));
});

afterAll(() => {
  if (dir !== '') rmSync(dir, { recursive: true, force: true });
});

interface Ran {
  code: number | null;
  stdout: string;
  stderr: string;
}

function run(args: string[], stdin = ''): Ran {
  const r = spawnSync(process.execPath, [CLI, ...args], { input: stdin, encoding: 'utf8', cwd: dir, timeout: 30_000 });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

const INPUT: AssignmentInput = {
  seed: 'job-fingerprint',
  defaultCap: 8,
  members: [{ id: 'pod-a', cap: 16 }, { id: 'pod-b' }, { id: 'pod-c', cap: 1 }],
  splits: [
    { id: 's-001', weight: 1048576, status: 'runnable', leaseOwner: 'pod-a', recordOwner: 'pod-a', previous: 'pod-b' },
    { id: 's-002', weight: 4096, leaseOwner: 'pod-gone' },
    { id: 's-003', weight: 0, status: 'completed' },
    { id: 's-004', weight: 2 ** 33, previous: 'pod-c' },
    { id: 's-005', weight: MAX },
    { id: 's-006', weight: 7, status: 'quarantined' },
    { id: 's-007', weight: 7 },
  ],
  reserved: ['s-007'],
};

/** The library's decision for `input`, as the CLI should print it (computeMs aside). */
function expected(input: AssignmentInput): unknown {
  const r = desiredAssignment(input, { engine: 'reference' });
  return { assignment: r.assignment, stats: { ...r.stats, computeMs: 'any' } };
}

/** Parsed stdout with computeMs checked and masked. */
function printed(stdout: string): unknown {
  const out = JSON.parse(stdout) as { assignment: unknown; stats: { computeMs: unknown } };
  expect(typeof out.stats.computeMs).toBe('number');
  return { ...out, stats: { ...out.stats, computeMs: 'any' } };
}

function file(name: string, text: string): string {
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
}

describe('splitfleet plan: success', () => {
  test('reads --input FILE and prints { assignment, stats } on one line', () => {
    const r = run(['plan', '--engine', 'reference', '--input', file('in.json', JSON.stringify(INPUT))]);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout.endsWith('}\n')).toBe(true);
    expect(r.stdout.trimEnd()).not.toContain('\n');
    expect(printed(r.stdout)).toEqual(expected(INPUT));
  });

  test('reads stdin when --input is absent or "-"', () => {
    for (const args of [['plan', '--engine', 'reference'], ['plan', '--engine', 'reference', '--input', '-']]) {
      const r = run(args, JSON.stringify(INPUT));
      expect(r.code, r.stderr).toBe(0);
      expect(printed(r.stdout)).toEqual(expected(INPUT));
    }
  });

  test('--output FILE writes the file and nothing to stdout', () => {
    const out = join(dir, 'out.json');
    const r = run(['plan', '--engine', 'reference', '-o', out], JSON.stringify(INPUT));
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toBe('');
    expect(printed(readFileSync(out, 'utf8'))).toEqual(expected(INPUT));
    expect(readdirSync(dir).filter((f) => f.endsWith('.tmp'))).toEqual([]);
  });

  test('--pretty indents the same result', () => {
    const r = run(['plan', '--engine', 'reference', '--pretty'], JSON.stringify(INPUT));
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain('\n  "assignment": {\n');
    expect(printed(r.stdout)).toEqual(expected(INPUT));
  });

  test('the default engine prints what the reference engine prints', () => {
    const r = run(['plan'], JSON.stringify(INPUT));
    expect(r.code, r.stderr).toBe(0);
    expect(printed(r.stdout)).toEqual(expected(INPUT));
  });

  test('ids such as __proto__ and constructor survive the round trip', () => {
    const input = '{"seed":"s","members":[{"id":"__proto__"},{"id":"constructor"}],"splits":[{"id":"__proto__","weight":5,"leaseOwner":"__proto__"},{"id":"toString","weight":5}]}';
    const r = run(['plan', '--engine', 'reference'], input);
    expect(r.code, r.stderr).toBe(0);
    const out = JSON.parse(r.stdout) as { assignment: Record<string, string[]> };
    expect(Object.keys(out.assignment)).toEqual(['__proto__', 'constructor']);
    expect(Object.getOwnPropertyDescriptor(out.assignment, '__proto__')?.value).toEqual(['__proto__']);
    expect(out.assignment['constructor']).toEqual(['toString']);
  });

  test("the manual's example input prints the manual's example output (docs/cli.md)", () => {
    const manual = readFileSync(join(root, 'docs/cli.md'), 'utf8');
    const block = (marker: string): string => {
      const m = new RegExp(`<!-- ${marker} -->\\s*\`\`\`(?:json|sh|console)?\\n([\\s\\S]*?)\`\`\``).exec(manual);
      if (m === null) throw new Error(`docs/cli.md has no block marked <!-- ${marker} -->`);
      return m[1]!;
    };
    const input = block('plan-example-input');
    const shown = block('plan-example-output');
    const r = run(['plan', '--pretty'], input);
    expect(r.code, r.stderr).toBe(0);
    expect(printed(r.stdout)).toEqual(printed(shown));
    // Byte for byte, but for the wall time.
    const mask = (s: string): string => s.replace(/"computeMs": [0-9.e+-]+/, '"computeMs": 0');
    expect(mask(r.stdout)).toBe(mask(shown));
  });
});

/** [case, stdin (JSON text), stderr pattern after "splitfleet plan: "] */
const bad = (patch: (o: Record<string, any>) => void): string => {
  const o = structuredClone(INPUT) as Record<string, any>;
  patch(o);
  return JSON.stringify(o);
};
const WEIGHT = `splits\\[3\\]\\.weight: must be an integer 0 ≤ weight ≤ ${MAX}`;
const INPUT_REFUSALS: [string, string, RegExp][] = [
  ['a negative weight', bad((o) => (o.splits[3].weight = -1)), new RegExp(`^${WEIGHT} \\(got -1\\)$`)],
  ['a fractional weight', bad((o) => (o.splits[3].weight = 2.5)), new RegExp(`^${WEIGHT} \\(got 2\\.5\\)$`)],
  ['a weight that is a string', bad((o) => (o.splits[3].weight = '7')), new RegExp(`^${WEIGHT} \\(got "7"\\)$`)],
  ['a weight that is null', bad((o) => (o.splits[3].weight = null)), new RegExp(`^${WEIGHT}`)],
  ['a missing weight', bad((o) => delete o.splits[3].weight), new RegExp(`^${WEIGHT}$`)],
  ['a weight past 2^53 (9007199254740993)', JSON.stringify(INPUT).replace('"weight":8589934592', '"weight":9007199254740993'), new RegExp(`^${WEIGHT} \\(got 9007199254740992\\)$`)],
  ['a weight JSON reads as Infinity (1e400)', JSON.stringify(INPUT).replace('"weight":8589934592', '"weight":1e400'), new RegExp(`^${WEIGHT}`)],
  ['a duplicate split id', bad((o) => (o.splits[3].id = 's-001')), /^splits\[3\]\.id: must be unique; "s-001" appears twice$/],
  ['a duplicate member id', bad((o) => (o.members[2].id = 'pod-a')), /^members\[2\]\.id: must be unique; "pod-a" appears twice$/],
  ['a cap of 0', bad((o) => (o.members[1].cap = 0)), /^members\[1\]\.cap: must be an integer ≥ 1 \(got 0\)$/],
  ['a fractional cap', bad((o) => (o.members[1].cap = 1.5)), /^members\[1\]\.cap: must be an integer ≥ 1 \(got 1\.5\)$/],
  ['a cap that is a string', bad((o) => (o.members[1].cap = '4')), /^members\[1\]\.cap: must be an integer ≥ 1 \(got "4"\)$/],
  ['a defaultCap of 0', bad((o) => (o.defaultCap = 0)), /^defaultCap: must be an integer ≥ 1 \(got 0\)$/],
  ['an unknown status', bad((o) => (o.splits[3].status = 'done')), /^splits\[3\]\.status: must be one of runnable, completed, quarantined \(got "done"\)$/],
  ['missing members', bad((o) => delete o.members), /^members: is required and must be an array$/],
  ['missing splits', bad((o) => delete o.splits), /^splits: is required and must be an array$/],
  ['a missing seed', bad((o) => delete o.seed), /^seed: must be a string \(the job fingerprint\)$/],
  ['an owner that is not a string', bad((o) => (o.splits[0].leaseOwner = 3)), /^splits\[0\]\.leaseOwner: must be a member id string or null \(got 3\)$/],
  ['JSON that is an array', '[]', /^input: must be a JSON object with "members" and "splits"$/],
  ['no input at all', '', /^input: must be JSON \(an object with "members" and "splits"\); got nothing$/],
  ['not JSON, with the position JSON.parse names', '{"seed": "x",\n  "members": [] "splits": []}', /^input: must be valid JSON at line 2, column 17: .*position 30$/],
  ['not JSON, where JSON.parse names no position', '{"seed": "x", "members": }', /^input: must be valid JSON: Unexpected token/],
  ['not JSON at all', 'members: []', /^input: must be valid JSON/],
];

function expectRefused(r: Ran, pattern: RegExp, prefix = 'splitfleet plan: '): void {
  expect(r.code, r.stderr).toBe(2);
  expect(r.stdout).toBe('');
  expect(r.stderr.endsWith('\n')).toBe(true);
  expect(r.stderr.slice(0, -1)).not.toContain('\n');
  expect(r.stderr.startsWith(prefix), r.stderr).toBe(true);
  expect(r.stderr.slice(prefix.length, -1)).toMatch(pattern);
}

describe('splitfleet plan: refusals exit 2 with one line on stderr and nothing on stdout', () => {
  test.each(INPUT_REFUSALS)('refuses %s', (_name, stdin, pattern) => {
    expectRefused(run(['plan', '--engine', 'reference'], stdin), pattern);
  });

  test.each(INPUT_REFUSALS.slice(0, 3))('refuses %s with the default engine too', (_name, stdin, pattern) => {
    expectRefused(run(['plan'], stdin), pattern);
  });

  test('refuses from --input FILE as from stdin', () => {
    const path = file('bad.json', INPUT_REFUSALS[0]![1]);
    expectRefused(run(['plan', '--engine', 'reference', '--input', path]), INPUT_REFUSALS[0]![2]);
  });

  test('a refused input creates no --output file and leaves an existing one alone', () => {
    const fresh = join(dir, 'never.json');
    expectRefused(run(['plan', '--engine', 'reference', '--output', fresh], INPUT_REFUSALS[0]![1]), INPUT_REFUSALS[0]![2]);
    expect(existsSync(fresh)).toBe(false);
    const existing = file('existing.json', 'keep me');
    expectRefused(run(['plan', '--engine', 'reference', '--output', existing], '{'), /^input: must be valid JSON/);
    expect(readFileSync(existing, 'utf8')).toBe('keep me');
    expect(readdirSync(dir).filter((f) => f.endsWith('.tmp'))).toEqual([]);
  });

  test('an unreadable --input file', () => {
    expectRefused(run(['plan', '--input', join(dir, 'missing.json')]), /^--input: cannot read ".*missing\.json": ENOENT/);
    expectRefused(run(['plan', '--input', dir]), /^--input: cannot read ".*": EISDIR/);
  });

  test('unknown options, bad option values, extra arguments', () => {
    expectRefused(run(['plan', '--bogus'], '{}'), /^unknown option '--bogus'$/);
    expectRefused(run(['plan', '--inptu', 'x'], '{}'), /^unknown option '--inptu' \(Did you mean --input\?\)$/);
    expectRefused(run(['plan', '--engine', 'fast'], '{}'), /^option '--engine <name>' argument 'fast' is invalid\. Allowed choices are reference, wasm\.$/);
    expectRefused(run(['plan', '--input'], '{}'), /^option '-i, --input <file>' argument missing$/);
    expectRefused(run(['plan', 'extra'], '{}'), /^too many arguments for 'plan'/);
  });

  test('an unknown command', () => {
    expectRefused(run(['bogus']), /^unknown command 'bogus'$/, 'splitfleet: ');
  });
});

describe('splitfleet plan: other failures exit 1', () => {
  test('an --output path that cannot be written', () => {
    const target = join(dir, 'no-such-dir', 'out.json');
    const r = run(['plan', '--engine', 'reference', '--output', target], JSON.stringify(INPUT));
    expect(r.code).toBe(1);
    expect(r.stdout).toBe('');
    expect(r.stderr).toMatch(/^splitfleet plan: --output: cannot write ".*out\.json": ENOENT\n$/);
    expect(existsSync(target)).toBe(false);
  });

  test('--help and --version exit 0', () => {
    const help = run(['plan', '--help']);
    expect(help.code).toBe(0);
    expect(help.stdout).toContain('Usage: splitfleet plan [options]');
    const version = run(['--version']);
    expect(version.code).toBe(0);
    expect(version.stdout.trim()).toBe((JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { version: string }).version);
  });
});
