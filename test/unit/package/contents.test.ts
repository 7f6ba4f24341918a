/**
 * What `npm publish` would ship (issue 31), from `npm pack --dry-run --json`
 * on the built tree (build first): the compiled JavaScript and declarations of
 * src/, the WASM engine, README, LICENSE, CHANGELOG; no benchmarks, no test
 * support, no source maps (their sources are not shipped), no TypeScript
 * sources. Every `exports` target and the `bin` are in it. And the manifest a
 * user's npm reads: engines, prom-client a peer, ranges rather than pins (but
 * for the one pin decision 0025 explains), repository, homepage, keywords.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');
type Manifest = {
  version: string; engines: { node: string }; bin: Record<string, string>; exports: Record<string, string | { types: string; default: string }>;
  dependencies: Record<string, string>; peerDependencies: Record<string, string>; repository: { url: string }; homepage: string; keywords: string[];
};
const pkg = JSON.parse(readFileSync(resolve(root, 'package.json'), 'utf8')) as Manifest;

describe('the package', () => {
  it('ships what a user runs, and nothing else', () => {
    // --ignore-scripts: `prepare` would build again.
    const out = execFileSync('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], { cwd: root, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
    const files = (JSON.parse(out) as { files: { path: string }[] }[])[0]!.files.map((f) => f.path).sort();
    expect(files.length).toBeGreaterThan(100);
    const bad = files.filter((f) => !(/^dist\/src\/.+\.(js|d\.ts)$/.test(f) || ['build/engine.wasm', 'README.md', 'LICENSE', 'CHANGELOG.md', 'package.json'].includes(f)));
    expect(bad).toEqual([]);
    expect(files.filter((f) => f.startsWith('dist/bench/') || f.startsWith('dist/test/') || f.endsWith('.map') || f.endsWith('.ts') && !f.endsWith('.d.ts'))).toEqual([]);
    const targets = Object.values(pkg.exports).flatMap((t) => (typeof t === 'string' ? [t] : [t.types, t.default])).map((t) => t.replace(/^\.\//, ''));
    for (const t of [...targets, ...Object.values(pkg.bin), 'build/engine.wasm']) expect(files, t).toContain(t);
    // The threads a pool and a sandbox start are files of their own: shipped too.
    expect(files).toContain('dist/src/assignment/thread.js');
    expect(files).toContain('dist/src/coordinator/sandbox/sandbox-thread.js');
  }, 60_000);

  it("declares what a user's npm reads", () => {
    expect(pkg.engines.node).toBe('>=22');
    expect(pkg.peerDependencies['prom-client']).toMatch(/^\^15\./);
    expect(pkg.dependencies['prom-client']).toBeUndefined();
    // Ranges, but for etcd3, pinned because EtcdStore patches its watch manager's internals (decision 0025).
    for (const [name, range] of Object.entries(pkg.dependencies)) expect(range, name).toMatch(name === 'etcd3' ? /^\d+\.\d+\.\d+$/ : /^\^\d/);
    expect(pkg.repository.url).toMatch(/^git\+https:\/\/github\.com\//);
    expect(pkg.homepage).toMatch(/^https:\/\//);
    expect(pkg.keywords).toEqual(expect.arrayContaining(['etcd']));
    expect(Object.keys(pkg.exports).sort()).toEqual(['.', './engine', './etcd', './http', './package.json', './store-contract', './testing']);
  });
});
