/**
 * The docs stand on their own (issue 31): no page points outside the
 * repository, every relative Markdown link resolves, and the normative pages
 * the code cites (`substrate.md`, `work-assignment.md`) are in docs/spec/.
 * Where the team's shared spec folder sits beside the checkout, the copies
 * must be word for word the same.
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, test } from 'vitest';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');

function markdownFiles(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir)) {
    if (name === 'node_modules' || name === 'dist' || name.startsWith('.')) continue;
    const p = join(dir, name);
    if (statSync(p).isDirectory()) out.push(...markdownFiles(p));
    else if (name.endsWith('.md')) out.push(p);
  }
  return out;
}

const pages = markdownFiles(root);

describe('the docs', () => {
  test('no page points outside the repository', () => {
    const outside = pages.flatMap((p) => {
      const text = readFileSync(p, 'utf8');
      return /\.\.\/shared\/|shared\/spec/.test(text) ? [relative(root, p)] : [];
    });
    expect(outside).toEqual([]);
  });

  test('every relative link resolves to a file in the repository', () => {
    const broken: string[] = [];
    for (const p of pages) {
      const text = readFileSync(p, 'utf8');
      for (const m of text.matchAll(/\]\(([^)\s#]+)(#[^)]*)?\)/g)) {
        const target = m[1]!;
        if (/^[a-z]+:/i.test(target)) continue; // http:, mailto:
        const file = resolve(dirname(p), target);
        if (!file.startsWith(root) || !existsSync(file)) broken.push(`${relative(root, p)} → ${target}`);
      }
    }
    expect(broken).toEqual([]);
  });

  test('the normative pages are in docs/spec, and the same as the shared spec where it is at hand', () => {
    for (const page of ['substrate.md', 'work-assignment.md']) {
      const ours = readFileSync(join(root, 'docs/spec', page), 'utf8');
      expect(ours.length).toBeGreaterThan(1000);
      const shared = join(root, '..', 'shared', 'spec', page);
      if (existsSync(shared)) expect(ours.slice(ours.indexOf('\n\n') + 2)).toBe(readFileSync(shared, 'utf8'));
    }
  });

  // BENCHMARKS.md holds one current table per area; the log of passes lives
  // in git and the decision records (issue 31), so it must not grow back.
  test('BENCHMARKS.md stays under 300 lines, one current section per area', () => {
    const text = readFileSync(join(root, 'BENCHMARKS.md'), 'utf8');
    expect(text.replace(/\n$/, '').split('\n').length).toBeLessThan(300);
    expect(text).not.toMatch(/^#+ .*\bpass\b/im); // no "Issue 14, fourth pass" log sections
    for (const heading of ['## Engine and pool', '## The full grid', '## Fleet at scale', '## Against the alternatives']) {
      expect(text).toContain(heading);
    }
  });

  // Users read the CHANGELOG to upgrade (issue 31): the version package.json names
  // has its own release entry, stating its breaking changes, under an Unreleased one.
  test('CHANGELOG has a 0.2.0 entry with breaking changes, and package.json is 0.2.0', () => {
    const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { version: string };
    expect(pkg.version).toBe('0.2.0');
    const text = readFileSync(join(root, 'CHANGELOG.md'), 'utf8');
    const releases = [...text.matchAll(/^## \[([^\]]+)\]/gm)].map((m) => m[1]);
    expect(releases.slice(0, 3)).toEqual(['Unreleased', '0.2.0', '0.1.0']);
    const entry = text.slice(text.indexOf('## [0.2.0]'), text.indexOf('## [0.1.0]'));
    expect(entry).toMatch(/^## \[0\.2\.0\] - \d{4}-\d{2}-\d{2}$/m);
    expect(entry).toMatch(/^### Breaking changes$/m);
  });
});
