/**
 * What each entry point of package.json's `exports` loads (issue 31): the root
 * (`splitfleet`) loads neither etcd3 (nor gRPC) nor hono nor prom-client, so a
 * `MemoryStore` test or a handler's unit test pays for none of them;
 * `splitfleet/etcd` loads etcd3 and `splitfleet/http` hono (the controls that
 * show the check sees a load). Each import runs in a fresh Node process on the
 * compiled dist/ (build first), through the package's own name (the `exports`
 * map), with a resolve hook logging every module resolved, plus the CommonJS
 * cache. Also: every subpath resolves and exports what its docs name.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');
const dir = mkdtempSync(join(tmpdir(), 'splitfleet-entry-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const HOOKS = `import { appendFileSync } from 'node:fs';
export async function resolve(specifier, context, next) {
  const r = await next(specifier, context);
  appendFileSync(process.env.SPLITFLEET_LOAD_LOG, r.url + '\\n');
  return r;
}`;

/** Imports `specifier` (as a user would, by the package's name) in a fresh process; every package it loaded, and its export names. */
function load(specifier: string): { packages: Set<string>; names: string[] } {
  const log = join(dir, `${specifier.replace(/\W/g, '_')}.log`);
  const script = `
    import { register, createRequire } from 'node:module';
    register('data:text/javascript,' + encodeURIComponent(${JSON.stringify(HOOKS)}));
    const m = await import(${JSON.stringify(specifier)});
    const cache = Object.keys(createRequire(import.meta.url).cache);
    process.stdout.write(JSON.stringify({ names: Object.keys(m).sort(), cache }));
  `;
  // Run from the project root, so `splitfleet` resolves to this package through its own exports (self-reference).
  const r = spawnSync(process.execPath, ['--input-type=module', '-e', script], { cwd: root, env: { ...process.env, SPLITFLEET_LOAD_LOG: log }, encoding: 'utf8' });
  expect(r.status, r.stderr).toBe(0);
  const out = JSON.parse(r.stdout) as { names: string[]; cache: string[] };
  let resolved: string[] = [];
  try {
    resolved = readFileSync(log, 'utf8').split('\n');
  } catch {
    // nothing resolved through the hook
  }
  const packages = new Set<string>();
  for (const at of [...resolved, ...out.cache]) {
    const m = /node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(at);
    if (m) packages.add(m[1]!);
  }
  return { packages, names: out.names };
}

const HEAVY = ['etcd3', '@grpc/grpc-js', 'hono', '@hono/node-server', 'prom-client'];

describe('entry points', () => {
  it('splitfleet loads neither etcd3 (nor gRPC) nor hono nor prom-client', () => {
    const { packages, names } = load('splitfleet');
    expect(HEAVY.filter((p) => packages.has(p))).toEqual([]);
    // BaseStore: what a store backend written elsewhere extends (issue 51), beside MemoryStore.
    expect(names).toEqual(expect.arrayContaining(['startCoordinator', 'MemoryStore', 'BaseStore', 'SplitfleetError', 'Metrics', 'isSplitfleetError']));
    // A backend written elsewhere throws the CompactedError isCompactedError knows; a store is opened by name (decision 0082).
    expect(names).toEqual(expect.arrayContaining(['CompactedError', 'isCompactedError', 'openStore']));
    // Moved to their own entry points, and internals that are not API.
    for (const gone of ['EtcdStore', 'serveMetrics', 'serveDashboard', 'desiredAssignment', 'AssignmentPool', 'ColumnarPool', 'storeContract', 'applyRecord', 'MAX_TIMER_MS']) {
      expect(names, gone).not.toContain(gone);
    }
  }, 30_000);

  it('splitfleet/etcd loads etcd3 (the check sees a load) and not hono', () => {
    const { packages, names } = load('splitfleet/etcd');
    expect(packages.has('etcd3')).toBe(true);
    expect(packages.has('hono')).toBe(false);
    expect(names).toEqual(['EtcdStore', 'sendsPasswordInClear']);
  }, 30_000);

  it('splitfleet/http loads hono and not etcd3', () => {
    const { packages, names } = load('splitfleet/http');
    expect(packages.has('hono')).toBe(true);
    expect(packages.has('etcd3')).toBe(false);
    expect(names).toEqual(['createDashboard', 'mountDashboard', 'serveDashboard', 'serveMetrics']);
  }, 30_000);

  it('splitfleet/engine exports the assignment and loads none of the three', () => {
    const { packages, names } = load('splitfleet/engine');
    expect(HEAVY.filter((p) => packages.has(p))).toEqual([]);
    expect(names).toEqual(expect.arrayContaining(['desiredAssignment', 'AssignmentPool', 'churn', 'loadFigures']));
  }, 30_000);

  it('splitfleet/store-contract exports the contract suite and its fixtures, and loads none of the three', () => {
    const { packages, names } = load('splitfleet/store-contract');
    expect(HEAVY.filter((p) => packages.has(p))).toEqual([]);
    expect(names).toEqual(['expectCode', 'memoryContractFixture', 'storeContract']);
  }, 30_000);

  it('splitfleet/testing exports the handler harness, the synthetic job and the ledger only, and loads none of the three', () => {
    const { packages, names } = load('splitfleet/testing');
    expect(HEAVY.filter((p) => packages.has(p))).toEqual([]);
    // Not the fleet member process, its spawner or the fault facade: internal (decision 0039).
    expect(names).toEqual(['Ledger', 'fakeSplitHandle', 'pacedHandler', 'runHandler', 'syntheticPlanner', 'syntheticSplits']);
  }, 30_000);

  it('openStore from splitfleet loads etcd3 when an etcd store is opened, not before (decision 0082)', () => {
    const script = `
      import { createRequire } from 'node:module';
      import { openStore } from 'splitfleet';
      const loaded = () => Object.keys(createRequire(import.meta.url).cache).some((f) => f.includes('/node_modules/etcd3/'));
      const before = loaded();
      const store = await openStore({ backend: 'etcd', endpoints: ['http://127.0.0.1:1'] }); // connects lazily: never here
      const after = loaded();
      await store.close();
      process.stdout.write(JSON.stringify({ before, after, name: store.constructor.name }));
    `;
    const r = spawnSync(process.execPath, ['--input-type=module', '-e', script], { cwd: root, encoding: 'utf8' });
    expect(r.status, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual({ before: false, after: true, name: 'EtcdStore' });
  }, 30_000);

  it('a coordinator\'s first Metrics loads prom-client\'s registry and metric classes, not its index (the Pushgateway, the cluster aggregator)', () => {
    const script = `
      import { createRequire } from 'node:module';
      import { Metrics } from 'splitfleet';
      new Metrics();
      process.stdout.write(JSON.stringify(Object.keys(createRequire(import.meta.url).cache)));
    `;
    const r = spawnSync(process.execPath, ['--input-type=module', '-e', script], { cwd: root, encoding: 'utf8' });
    expect(r.status, r.stderr).toBe(0);
    const files = (JSON.parse(r.stdout) as string[]).map((f) => /node_modules\/prom-client\/(.*)$/.exec(f)?.[1]).filter((f): f is string => f !== undefined);
    expect(files).toEqual(expect.arrayContaining(['lib/registry.js', 'lib/counter.js', 'lib/gauge.js', 'lib/histogram.js']));
    expect(files.filter((f) => ['index.js', 'lib/pushgateway.js', 'lib/cluster.js', 'lib/defaultMetrics.js'].includes(f))).toEqual([]);
  }, 30_000);
});
