/**
 * The runtime fact that decision 0022 rests on, checked on whichever Node
 * runs the suite (`.ci/run` runs test/unit on the machine's Node and on Node
 * 22): Node 20's V8 gives every spread-built split a hidden class of its own,
 * and Node 22 and later give spread-built splits one shared class, as they
 * do for the other shapes. If a runtime changes this, the figures in
 * BENCHMARKS.md and the README's advice no longer hold, so this test fails
 * and names the runtime.
 *
 * It runs the compiled bench/probes/hidden-classes.ts in a child process, because
 * `%HaveSameMap` needs `--allow-natives-syntax`. Build first
 * (`npm run build:ts`).
 */
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect, test } from 'vitest';

const root = fileURLToPath(new URL('../../../', import.meta.url));
const BENCH = join(root, 'dist/bench/probes/hidden-classes.js');
const major = Number(process.versions.node.split('.')[0]);

/** Distinct maps among the sample, per shape, from the bench's table. */
function distinctMaps(args: string[]): Record<string, number> {
  if (!existsSync(BENCH)) throw new Error(`${BENCH} is missing: build first with \`npm run build:ts\``);
  const out = spawnSync(process.execPath, [...args, BENCH, '--n', '20000'], { encoding: 'utf8', timeout: 60_000 });
  if (out.status !== 0) throw Object.assign(new Error(`hidden-classes exited ${out.status}: ${out.stderr}`), { status: out.status });
  const maps: Record<string, number> = {};
  for (const line of out.stdout.split('\n')) {
    const m = /^\| (\w+) \| [\d,]+ of [\d,]+ \| (\d+) \|$/.exec(line);
    if (m !== null) maps[m[1]!] = Number(m[2]);
  }
  return maps;
}

test(`on node ${process.version}, spread-built splits have the hidden classes decision 0022 states`, () => {
  const maps = distinctMaps(['--allow-natives-syntax']);
  expect(Object.keys(maps).sort()).toEqual(['class', 'extra', 'literal', 'reordered', 'spread']);
  for (const shape of ['literal', 'class', 'extra', 'reordered']) expect(maps[shape], shape).toBe(1);
  // A sample of 1,000 splits, 20 apart: nearly all distinct on Node 20 (V8 shares the map of the first
  // few objects a site builds, before it optimises), one class from Node 22 on.
  if (major <= 20) expect(maps.spread).toBeGreaterThan(900);
  else expect(maps.spread).toBe(1);
});

test('without --allow-natives-syntax the bench refuses, with the flag it needs', () => {
  let status: unknown = 0;
  try {
    distinctMaps([]);
  } catch (e) {
    status = (e as { status?: unknown }).status;
    expect(String(e)).toContain('--allow-natives-syntax');
  }
  expect(status).toBe(2);
});
