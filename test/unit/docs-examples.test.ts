/**
 * The docs' code examples stay true to the package (issue 50, item 6): every ```js block of the
 * README and docs/ parses as an ES module (`node --check`), and every name it imports from an
 * entry point of package.json's `exports` ('splitfleet', 'splitfleet/etcd', …) is exported by that
 * entry point of the build (`dist/`, which `npm run build` makes).
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('../../', import.meta.url));
/** Each entry point of package.json's `exports` (its `default` file), so that a new entry is checked without a change here. */
const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { exports: Record<string, string | { default?: string }> };
const ENTRY: Record<string, string> = Object.fromEntries(
  Object.entries(pkg.exports).flatMap(([key, target]) =>
    typeof target === 'object' && target.default !== undefined ? [[`splitfleet${key.slice(1)}`, target.default.replace(/^\.\//, '')]] : []),
);
const docs = ['README.md', ...readdirSync(join(root, 'docs')).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`)];
const blocks = docs.flatMap((file) => [...readFileSync(join(root, file), 'utf8').matchAll(/```js\n([\s\S]*?)```/g)].map((m, i) => ({ file, i, code: m[1]! })));
const dir = mkdtempSync(join(tmpdir(), 'splitfleet-docs-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('the docs\' code examples', () => {
  it('there are some', () => expect(blocks.length).toBeGreaterThan(5));

  it.each(blocks.map((b) => [`${b.file} #${b.i + 1}`, b] as const))('%s parses as a module', (_name, b) => {
    const path = join(dir, `${b.file.replace(/\W/g, '_')}-${b.i}.mjs`);
    writeFileSync(path, b.code);
    expect(() => execFileSync(process.execPath, ['--check', path], { stdio: 'pipe' })).not.toThrow();
  });

  it.each(blocks.map((b) => [`${b.file} #${b.i + 1}`, b] as const))('%s imports only what the package exports', async (_name, b) => {
    for (const m of b.code.matchAll(/import\s*\{([^}]*)\}\s*from\s*'(splitfleet[^']*)'/g)) {
      const entry = ENTRY[m[2]!];
      expect(entry, `${b.file}: no entry point '${m[2]}'`).toBeDefined();
      const exported = await import(join(root, entry!)) as Record<string, unknown>;
      // A type-only import has no value to find at run time (tsc checks those).
      for (const name of m[1]!.split(',').map((s) => s.trim()).filter((s) => s !== '' && !s.startsWith('type ')).map((s) => s.split(/\s+as\s+/)[0]!)) {
        expect(name in exported, `${b.file}: '${name}' is not exported by '${m[2]}'`).toBe(true);
      }
    }
  });
});
