/**
 * The import graph of src/ (STYLE rules 1 and 3, docs/architecture.md): no
 * import cycle between files, no import from a lower layer to a higher one or
 * between two modules of one layer, every module of src/ placed in a layer,
 * and etcd3, piscina and the WebAssembly global used only where rule 3 says.
 *
 * Imports are read with the TypeScript compiler's `preProcessFile`, which
 * sees `import`, `export … from`, `import type`, `import('…')` calls and
 * `import('…')` types, and not comments or strings. A "module" is a folder
 * directly under src/ (`store/`) or a file there (`config.ts`). The checker is
 * a plain function of a graph, so the test also shows it failing, on graphs
 * written here and on a fixture tree written to a temporary directory.
 */
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

/**
 * The layers, lowest first: a module may import modules of a lower rank only,
 * never one of its own rank or above (inside a module, files import each
 * other freely, cycles aside). The same table is in docs/architecture.md.
 */
export const LAYERS: readonly { rank: number; modules: readonly string[]; job: string }[] = [
  { rank: 0, modules: ['errors.ts', 'clock.ts', 'hash.ts', 'prng.ts', 'loopback-host.ts', 'version.ts', 'thread-argv.ts', 'split-model.ts', 'js-order.ts', 'next-turn.ts', 'config-validation.ts'], job: 'leaves: the error type, the injected clock, the seeded hash and PRNG, the loopback Host rule of both HTTP servers, the package version, the flags a worker thread starts with, the split model\'s shared facts (statuses and their numbering, the weight rule), the one string order of records and decisions, the yield to a later turn of the loop, the checks of a user\'s options (given their defaults)' },
  { rank: 1, modules: ['config.ts', 'timeout.ts', 'store/store.ts'], job: 'options, their defaults and the resolved config; the one op deadline; the store contract (types, cmp/op builders, limits), which protocol/ builds transactions with' },
  { rank: 2, modules: ['protocol/', 'assignment/', 'store/'], job: 'the pure core (protocol, assignment); the store backends (base, memory, etcd, instrumented)' },
  { rank: 3, modules: ['coordinator/', 'operator/', 'inspect/'], job: 'what drives the core: the coordinator (one process of a fleet), operator actions, the inspector and dashboard' },
  { rank: 4, modules: ['metrics-server.ts', 'divisible-range.ts', 'dashboard/', 'text.ts'], job: 'the opt-in metrics and health endpoint over a coordinator; the handler\'s helper for dividing a range of units; the dashboard (job list, job pages, actions) over the inspector and the operator actions; the command line\'s text renderers (not an entry point)' },
  { rank: 5, modules: ['index.ts', 'etcd.ts', 'http.ts', 'engine.ts', 'testing/', 'store-contract.ts'], job: 'the public surface: the entry points splitfleet, splitfleet/etcd, splitfleet/http, splitfleet/engine, splitfleet/testing, splitfleet/store-contract' },
  { rank: 6, modules: ['demo/'], job: 'the demo: a tool over the public surface and the internals it drives' },
  { rank: 7, modules: ['cli/'], job: 'the command line' },
];

/** Modules that may import only these, whatever their rank allows (STYLE rule 14: the CLI uses what a user could import, the package's entry points; the demo is a tool it runs). */
export const ONLY_IMPORTS: Readonly<Record<string, readonly string[]>> = {
  'cli/': ['index.ts', 'etcd.ts', 'http.ts', 'engine.ts', 'text.ts', 'demo/'],
};

/**
 * Packages that only these files may import, and the `WebAssembly` global that only wasm.ts may
 * touch (STYLE rule 3; piscina in sandbox.ts: decision 0014). hono and prom-client stay in their
 * homes so that the root entry point loads neither (test/unit/package/entry-points.test.ts checks
 * the loading itself): hono only behind splitfleet/http, prom-client loaded when a `Metrics` is made.
 */
export const PACKAGE_HOMES: Readonly<Record<string, readonly string[]>> = {
  etcd3: ['store/etcd/etcd.ts'],
  hono: ['metrics-server.ts', 'dashboard/app.ts', 'dashboard/mount.ts', 'dashboard/view-stream.ts'],
  '@hono/node-server': ['metrics-server.ts', 'dashboard/app.ts', 'dashboard/mount.ts', 'dashboard/view-stream.ts'],
  'prom-client': ['coordinator/load-prom-client.ts'],
  // The store contract suite, exported as splitfleet/store-contract (vitest: an optional peer of that entry).
  vitest: ['store/contract.ts', 'store/contract-fixture.ts'],
  // thread.ts: piscina's `move`, so a reply's buffers are moved to the caller, not shared (decision 0041).
  piscina: ['assignment/pool.ts', 'assignment/thread.ts', 'coordinator/sandbox/sandbox.ts'],
  WebAssembly: ['assignment/wasm.ts'],
};

/** Globals recorded beside the packages, as if imported (a token of code, never a comment or string). */
const WATCHED_GLOBALS = new Set(['WebAssembly']);

/**
 * Imports found breaking a rule and reported to the owner of the file, not
 * fixed here (the fix is theirs). The check runs on the graph without them,
 * so anything else still fails it; an entry goes with its fix. An edge rather
 * than a message: the cycle it closes may change shape while the cause stays
 * the same.
 */
export const KNOWN_EDGES: readonly { from: string; to: string; why: string }[] = [
  // None. The last one, assignment/wire.ts → columnar.ts (a type-only cycle through columnar, members,
  // reference and validate), went with 0ae4e8f.
];

/** File → the files of the tree it imports (paths relative to the tree's root, `/`-separated), and the packages. */
export type ImportGraph = Map<string, { files: Set<string>; packages: Set<string>; outside: Set<string> }>;

/** Reads every .ts file under `root` and resolves its relative imports to files of the tree. */
export function readImportGraph(root: string): ImportGraph {
  return readImportGraphUnder(root, ['']);
}

/** The same for the files under `dirs` of `root` only (test/, bench/), their imports still resolved against the whole tree. */
export function readImportGraphUnder(root: string, dirs: readonly string[]): ImportGraph {
  const graph: ImportGraph = new Map();
  const walk = (dir: string): void => {
    for (const name of readdirSync(dir).sort()) {
      const path = join(dir, name);
      if (statSync(path).isDirectory()) walk(path);
      else if (name.endsWith('.ts')) graph.set(toKey(root, path), parseImports(root, path));
    }
  };
  for (const dir of dirs) if (existsSync(join(root, dir))) walk(join(root, dir));
  return graph;
}

function toKey(root: string, path: string): string {
  return relative(root, path).split(sep).join('/');
}

function parseImports(root: string, path: string): { files: Set<string>; packages: Set<string>; outside: Set<string> } {
  const out = { files: new Set<string>(), packages: new Set<string>(), outside: new Set<string>() };
  const text = readFileSync(path, 'utf8');
  const scanner = ts.createScanner(ts.ScriptTarget.Latest, true, ts.LanguageVariant.Standard, text);
  for (let t = scanner.scan(); t !== ts.SyntaxKind.EndOfFileToken; t = scanner.scan()) {
    if (t === ts.SyntaxKind.Identifier && WATCHED_GLOBALS.has(scanner.getTokenText())) out.packages.add(scanner.getTokenText());
  }
  for (const { fileName } of ts.preProcessFile(text, true, true).importedFiles) {
    if (fileName.startsWith('node:')) continue;
    if (!fileName.startsWith('.')) {
      // 'hono/streaming' belongs to hono, '@hono/node-server' to itself.
      const parts = fileName.split('/');
      out.packages.add(fileName.startsWith('@') ? parts.slice(0, 2).join('/') : parts[0]!);
      continue;
    }
    const target = resolveSource(resolve(dirname(path), fileName));
    const key = toKey(root, target);
    if (key.startsWith('..')) out.outside.add(fileName);
    else out.files.add(key);
  }
  return out;
}

/** `./x.js` is the source `./x.ts` (NodeNext spelling); a folder is its index.ts. */
function resolveSource(target: string): string {
  for (const candidate of [target.replace(/\.js$/, '.ts'), `${target}.ts`, join(target, 'index.ts')]) {
    if (existsSync(candidate) && statSync(candidate).isFile()) return candidate;
  }
  return target;
}

/** `store/etcd.ts` → `store/`; `config.ts` → `config.ts`; a file the table places by itself (`store/store.ts`) is its own module. */
export function moduleOf(file: string, layers = LAYERS): string {
  if (layers.some((l) => l.modules.includes(file))) return file;
  const slash = file.indexOf('/');
  return slash < 0 ? file : file.slice(0, slash + 1);
}

/** Every set of files that import each other in a circle: the strongly connected components with a cycle. */
export function findCycles(graph: ImportGraph): string[][] {
  // Tarjan's algorithm, iterative so a deep tree cannot overflow the stack.
  let index = 0;
  const indices = new Map<string, number>();
  const low = new Map<string, number>();
  const onStack = new Set<string>();
  const stack: string[] = [];
  const cycles: string[][] = [];
  const next = (file: string) => [...(graph.get(file)?.files ?? [])].filter((f) => graph.has(f)).sort();
  for (const start of [...graph.keys()].sort()) {
    if (indices.has(start)) continue;
    const work: { file: string; edges: string[]; i: number }[] = [];
    const open = (file: string) => {
      indices.set(file, index);
      low.set(file, index++);
      stack.push(file);
      onStack.add(file);
      work.push({ file, edges: next(file), i: 0 });
    };
    open(start);
    while (work.length > 0) {
      const top = work[work.length - 1]!;
      if (top.i < top.edges.length) {
        const to = top.edges[top.i++]!;
        if (!indices.has(to)) open(to);
        else if (onStack.has(to)) low.set(top.file, Math.min(low.get(top.file)!, indices.get(to)!));
        continue;
      }
      work.pop();
      const parent = work[work.length - 1];
      if (parent) low.set(parent.file, Math.min(low.get(parent.file)!, low.get(top.file)!));
      if (low.get(top.file) !== indices.get(top.file)) continue;
      const component: string[] = [];
      let f: string;
      do {
        f = stack.pop()!;
        onStack.delete(f);
        component.push(f);
      } while (f !== top.file);
      if (component.length > 1 || graph.get(top.file)!.files.has(top.file)) cycles.push(component);
    }
  }
  return cycles;
}

/** The shortest cycle through the component's first file (by name), as a path a → b → … (back to a implied). */
function orderCycle(graph: ImportGraph, component: string[]): string[] {
  const members = new Set(component);
  const first = [...component].sort()[0]!;
  // Breadth-first from `first` inside the component, until an edge leads back to it.
  const parent = new Map<string, string>();
  const queue = [first];
  for (let i = 0; i < queue.length; i++) {
    const at = queue[i]!;
    for (const to of [...graph.get(at)!.files].sort()) {
      if (to === first) {
        const path = [at];
        while (path[0] !== first) path.unshift(parent.get(path[0]!)!);
        return path;
      }
      if (members.has(to) && !parent.has(to)) {
        parent.set(to, at);
        queue.push(to);
      }
    }
  }
  return [...component].sort(); // unreachable: a strongly connected component has such a path
}

/** Every breach of the rules in `graph`, one line each; empty when the graph is clean. */
export function checkImportGraph(
  graph: ImportGraph,
  layers = LAYERS,
  onlyImports = ONLY_IMPORTS,
  packageHomes = PACKAGE_HOMES,
): string[] {
  const rank = new Map<string, number>();
  for (const layer of layers) for (const m of layer.modules) rank.set(m, layer.rank);
  const problems: string[] = [];
  for (const component of findCycles(graph)) {
    const cycle = orderCycle(graph, component);
    const more = component.length > cycle.length ? ` (one of the cycles among ${component.length} files: ${[...component].sort().join(', ')})` : '';
    problems.push(`import cycle: ${[...cycle, cycle[0]].join(' → ')}${more}`);
  }
  for (const [file, { files, packages, outside }] of [...graph].sort(([a], [b]) => (a < b ? -1 : 1))) {
    const from = moduleOf(file, layers);
    const fromRank = rank.get(from);
    if (fromRank === undefined) {
      problems.push(`${file}: module ${from} is in no layer (add it to LAYERS and docs/architecture.md)`);
      continue;
    }
    for (const spec of outside) problems.push(`${file} imports ${spec}, outside the tree`);
    for (const target of [...files].sort()) {
      const to = moduleOf(target, layers);
      if (to === from) continue;
      const toRank = rank.get(to);
      if (toRank === undefined) continue; // reported once, from the file itself
      const allowed = onlyImports[from];
      if (allowed !== undefined && !allowed.includes(to)) {
        problems.push(`${file} imports ${target}: ${from} may import only ${allowed.join(', ')}`);
      } else if (toRank > fromRank) {
        problems.push(`${file} imports ${target}: a lower layer (${from}, rank ${fromRank}) imports a higher one (${to}, rank ${toRank})`);
      } else if (toRank === fromRank) {
        problems.push(`${file} imports ${target}: ${from} and ${to} share rank ${fromRank} and must not import each other`);
      }
    }
    for (const pkg of packages) {
      const homes = packageHomes[pkg];
      if (homes !== undefined && !homes.includes(file)) problems.push(`${file} imports ${pkg}: only ${homes.join(', ')} may`);
    }
  }
  return problems;
}

const srcRoot = resolve(dirname(fileURLToPath(import.meta.url)), '../../src');

/**
 * Where a guarded transaction may be built (issue 32, decision 0038): every
 * ownership write is a `Txn` value built in protocol/ (store/ holds the
 * builders and the backends); the shells only send it. A file elsewhere that
 * imports or uses the compare builders (`cmp`, under any alias), writes a
 * compare by hand (`target: 'modRevision'`) or passes `compares:` anything
 * but `[]` builds one.
 * A plain read (`compares: []`, get ops only) is no ownership write and stays.
 */
export const TXN_HOMES: readonly string[] = ['protocol/', 'store/'];
const COMPARE_TARGETS = new Set(['absent', 'modRevision', 'value', 'lease']);

/** Each place in `text` (the source of `file`) that builds a guarded transaction, one line each; read from the syntax tree, so comments and strings never count. */
export function guardedTxnsIn(file: string, text: string): string[] {
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, false, ts.ScriptKind.TS);
  const problems: string[] = [];
  const report = (node: ts.Node, what: string) => {
    const line = source.getLineAndCharacterOfPosition(node.getStart(source)).line + 1;
    problems.push(`${file}:${line}: builds a guarded transaction (${what}) outside ${TXN_HOMES.join(', ')}: build it in protocol/ and send what it returns`);
  };
  const nameOf = (n: ts.PropertyName): string | undefined => (ts.isIdentifier(n) || ts.isStringLiteral(n) ? n.text : undefined);
  const visit = (node: ts.Node): void => {
    if (ts.isImportSpecifier(node) && (node.propertyName ?? node.name).text === 'cmp') {
      report(node, 'imports cmp');
    } else if (ts.isPropertyAccessExpression(node) && ts.isIdentifier(node.expression) && node.expression.text === 'cmp') {
      report(node, `cmp.${node.name.text}`);
    } else if (ts.isPropertyAssignment(node) && nameOf(node.name) === 'compares') {
      const init = node.initializer;
      if (!(ts.isArrayLiteralExpression(init) && init.elements.length === 0)) report(node, 'compares: other than []');
    } else if (ts.isShorthandPropertyAssignment(node) && node.name.text === 'compares') {
      report(node, 'compares: a list built beforehand');
    } else if (ts.isPropertyAssignment(node) && nameOf(node.name) === 'target' && ts.isStringLiteral(node.initializer) && COMPARE_TARGETS.has(node.initializer.text)) {
      report(node, `a compare written by hand, target '${node.initializer.text}'`);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return problems;
}

/** Every guarded transaction built by a file of the tree at `root` outside TXN_HOMES. */
export function checkGuardedTxns(root: string, homes = TXN_HOMES): string[] {
  const problems: string[] = [];
  const walk = (dir: string): void => {
    for (const name of readdirSync(dir).sort()) {
      const path = join(dir, name);
      const key = toKey(root, path);
      if (statSync(path).isDirectory()) {
        if (!homes.includes(`${key}/`)) walk(path);
      } else if (name.endsWith('.ts')) problems.push(...guardedTxnsIn(key, readFileSync(path, 'utf8')));
    }
  };
  walk(root);
  return problems;
}

describe('guarded transactions are built in protocol/ only', () => {
  it('no file of src/ outside protocol/ and store/ builds one', () => {
    expect(checkGuardedTxns(srcRoot)).toEqual([]);
  });

  it('reports the compare builders imported (under any alias) or used, a non-empty or prebuilt compares list and a hand-written compare, and nothing in the homes, a re-export, comments or strings', () => {
    const dir = mkdtempSync(join(tmpdir(), 'splitfleet-arch-txn-'));
    try {
      for (const d of ['coordinator', 'operator', 'protocol', 'store']) mkdirSync(join(dir, d));
      writeFileSync(join(dir, 'coordinator', 'leader.ts'), [
        "import { cmp, op } from '../store/store.js';",
        'export const resign = (key: string, rev: number) => ({ compares: [cmp.modRevision(key, rev)], success: [op.delete(key)] });',
      ].join('\n'));
      writeFileSync(join(dir, 'operator', 'retry.ts'), [
        '// cmp.absent(key) in a comment is no use',
        "const note = 'compares: [cmp.absent(k)]';",
        'export const read = (key: string) => ({ compares: [], success: [{ op: \'get\', key }] });',
        'export const batch = (guards: unknown[]) => { const compares = guards; return { compares, success: [] }; };',
        "export const byHand = (key: string) => ({ compares: [{ target: 'absent', key }], success: [] });",
        'export const passed = (guards: unknown[]) => ({ compares: guards, success: [] });',
        "import { cmp as c } from '../store/store.js';",
      ].join('\n'));
      writeFileSync(join(dir, 'protocol', 'txns.ts'), "import { cmp } from '../store/store.js';\nexport const t = (k: string) => ({ compares: [cmp.absent(k)], success: [] });\n");
      writeFileSync(join(dir, 'store', 'base.ts'), "export const c = (key: string) => ({ compares: [{ target: 'absent', key }], success: [] });\n");
      writeFileSync(join(dir, 'index.ts'), "export { cmp, op } from './store/store.js';\n");
      const where = 'outside protocol/, store/: build it in protocol/ and send what it returns';
      expect(checkGuardedTxns(dir)).toEqual([
        `coordinator/leader.ts:1: builds a guarded transaction (imports cmp) ${where}`,
        `coordinator/leader.ts:2: builds a guarded transaction (compares: other than []) ${where}`,
        `coordinator/leader.ts:2: builds a guarded transaction (cmp.modRevision) ${where}`,
        `operator/retry.ts:4: builds a guarded transaction (compares: a list built beforehand) ${where}`,
        `operator/retry.ts:5: builds a guarded transaction (compares: other than []) ${where}`,
        `operator/retry.ts:5: builds a guarded transaction (a compare written by hand, target 'absent') ${where}`,
        `operator/retry.ts:6: builds a guarded transaction (compares: other than []) ${where}`,
        `operator/retry.ts:7: builds a guarded transaction (imports cmp) ${where}`,
      ]);
      // The same check with no homes reports protocol/ and store/ too: the exemption is the homes, not the file names.
      expect(checkGuardedTxns(dir, []).filter((p) => p.startsWith('protocol/') || p.startsWith('store/'))).toHaveLength(5);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

/**
 * The benches send what the fleet sends (issue 51: bench/substrate.ts's hand copy of the claim lacked the
 * real one's progress read, so its claims/s measured a lighter transaction). A bench file builds no
 * transaction: its compares and its ops come from protocol/'s builders, never from the store's `cmp` or
 * `op` or a literal. `compares: []` around protocol/'s ops (seeding with no leader) stays, as in src/.
 * BENCH_FIXTURE_WRITERS may write records by hand: state no protocol transaction writes in one go.
 */
export const BENCH_FIXTURE_WRITERS: readonly { file: string; why: string }[] = [
  { file: 'bench/inspect-summary.ts', why: 'seeds a half-finished job (completed split records, folded bits) for the operator tools to read' },
];
const OP_KINDS = new Set(['put', 'delete', 'get']);

/** Each place in `text` that writes a transaction's compares or ops by hand, one line each (comments and strings never count). */
export function handWrittenTxnsIn(file: string, text: string): string[] {
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, false, ts.ScriptKind.TS);
  const problems = guardedTxnsIn(file, text).map((p) => p.replace(/ outside .*$/, ': take it from protocol/'));
  const report = (node: ts.Node, what: string) => {
    const line = source.getLineAndCharacterOfPosition(node.getStart(source)).line + 1;
    problems.push(`${file}:${line}: writes a transaction's ops by hand (${what}): take them from protocol/`);
  };
  const visit = (node: ts.Node): void => {
    if (ts.isImportSpecifier(node) && (node.propertyName ?? node.name).text === 'op') {
      report(node, 'imports op');
    } else if (ts.isPropertyAccessExpression(node) && ts.isIdentifier(node.expression) && node.expression.text === 'op') {
      report(node, `op.${node.name.text}`);
    } else if (ts.isPropertyAssignment(node) && (ts.isIdentifier(node.name) || ts.isStringLiteral(node.name)) && node.name.text === 'op' && ts.isStringLiteral(node.initializer) && OP_KINDS.has(node.initializer.text)) {
      report(node, `an op written by hand, op '${node.initializer.text}'`);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return problems.sort((a, b) => Number(a.split(':')[1]) - Number(b.split(':')[1]));
}

/** Every hand-written transaction in the files under `dir` of `root` (recursively), but the `allowed` files. */
export function checkHandWrittenTxns(root: string, dir: string, allowed: readonly string[]): string[] {
  const problems: string[] = [];
  const walk = (path: string): void => {
    for (const name of readdirSync(path).sort()) {
      const child = join(path, name);
      const key = toKey(root, child);
      if (statSync(child).isDirectory()) walk(child);
      else if (name.endsWith('.ts') && !allowed.includes(key)) problems.push(...handWrittenTxnsIn(key, readFileSync(child, 'utf8')));
    }
  };
  walk(join(root, dir));
  return problems;
}

describe('the benches build their transactions with protocol/', () => {
  it('no file of bench/ but the fixture writers writes a compare or an op by hand', () => {
    const root = resolve(srcRoot, '..');
    expect(checkHandWrittenTxns(root, 'bench', BENCH_FIXTURE_WRITERS.map((w) => w.file))).toEqual([]);
    // An allowance names a file that exists, or it goes.
    for (const w of BENCH_FIXTURE_WRITERS) expect(existsSync(join(root, w.file)), w.file).toBe(true);
  });

  it('reports the op and cmp builders, op and compare literals and a guarded compares list, and nothing in an allowed file, a comment or a string', () => {
    const dir = mkdtempSync(join(tmpdir(), 'splitfleet-arch-bench-txn-'));
    try {
      mkdirSync(join(dir, 'bench', 'probes'), { recursive: true });
      writeFileSync(join(dir, 'bench', 'substrate.ts'), [
        "import { cmp, op as o } from '../src/store/store.js';",
        'export const claim = (k: string, rev: number) => ({ compares: [cmp.modRevision(k, rev)], success: [o.put(k, \'v\')] });',
        "export const seed = (k: string) => ({ compares: [], success: [op.put(k, 'v')] });",
      ].join('\n'));
      writeFileSync(join(dir, 'bench', 'probes', 'fixture.ts'), [
        '// op.put(k) in a comment is no use',
        "const note = \"{ op: 'put' }\";",
        "export const seed = (key: string) => ({ compares: [], success: [{ op: 'delete', key }] });",
        "export const sent = (t: unknown) => ({ compares: [], success: [t], note });",
      ].join('\n'));
      writeFileSync(join(dir, 'bench', 'allowed.ts'), "export const s = (key: string) => ({ compares: [], success: [{ op: 'put', key, value: '' }] });\n");
      const take = (what: string) => `take ${what} from protocol/`;
      expect(checkHandWrittenTxns(dir, 'bench', ['bench/allowed.ts'])).toEqual([
        `bench/probes/fixture.ts:3: writes a transaction's ops by hand (an op written by hand, op 'delete'): ${take('them')}`,
        `bench/substrate.ts:1: builds a guarded transaction (imports cmp): ${take('it')}`,
        `bench/substrate.ts:1: writes a transaction's ops by hand (imports op): ${take('them')}`,
        `bench/substrate.ts:2: builds a guarded transaction (compares: other than []): ${take('it')}`,
        `bench/substrate.ts:2: builds a guarded transaction (cmp.modRevision): ${take('it')}`,
        `bench/substrate.ts:3: writes a transaction's ops by hand (op.put): ${take('them')}`,
      ]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('the import graph of src/', () => {
  it('has no cycle, no upward or sideways import, and every dependency in its home', () => {
    const graph = readImportGraph(srcRoot);
    expect(graph.size).toBeGreaterThan(50);
    // An entry whose import is gone is stale and should go with the fix; it is not failed on, because
    // the owner's fix and the removal of the entry land in separate commits.
    for (const { from, to } of KNOWN_EDGES) graph.get(from)?.files.delete(to);
    expect(checkImportGraph(graph)).toEqual([]);
  });

  it('places each module in one layer only', () => {
    const all = LAYERS.flatMap((l) => l.modules);
    expect(new Set(all).size).toBe(all.length);
  });
});

/**
 * The rooms inside a module (issue 32, docs/architecture.md "Rooms"): a role's folder imports its
 * module's shared files (the files at the module's root) and the rooms listed for it, never another
 * role's room, so the leader and the worker can be read, and changed, apart. The module's root
 * (coordinator.ts composes every room) may import any room.
 */
export const ROOMS: Readonly<Record<string, readonly string[]>> = {
  'coordinator/views/': [], // what one instance observes: its own view, the key follower, the batcher, `Seen`
  'coordinator/leader/': ['coordinator/views/'], // the leader's view, seeding, deciding, publishing, the summary
  'coordinator/worker/': ['coordinator/views/', 'coordinator/lanes/'], // reconciling, claiming, revoking, orphans
  'coordinator/lanes/': [], // one held split: its handle's fenced writes, its heartbeat timer
  'coordinator/sandbox/': [], // a handler module on Piscina threads
  'assignment/object/': [], // the object-input path: reading split objects into columns, object tasks, results
  'store/etcd/': [], // the etcd backend: EtcdStore, its options, error rules, ranges and watch delivery (decision 0082)
};

/** The room of `file` (a key of `rooms`), or undefined for a file at a module's root. */
function roomOf(file: string, rooms: Readonly<Record<string, readonly string[]>>): string | undefined {
  return Object.keys(rooms).find((r) => file.startsWith(r));
}

/** Every import of `graph` from one room into another that `rooms` does not allow, one line each. */
export function checkRooms(graph: ImportGraph, rooms = ROOMS): string[] {
  const problems: string[] = [];
  for (const [file, { files }] of [...graph].sort(([a], [b]) => (a < b ? -1 : 1))) {
    const from = roomOf(file, rooms);
    if (from === undefined) continue;
    for (const target of [...files].sort()) {
      const to = roomOf(target, rooms);
      if (to === undefined || to === from || rooms[from]!.includes(to)) continue;
      problems.push(`${file} imports ${target}: room ${from} may import only its module's root${rooms[from]!.length > 0 ? ` and ${rooms[from]!.join(', ')}` : ''}`);
    }
  }
  return problems;
}

describe('the rooms of src/', () => {
  it('every room of the table exists, and no room imports another it may not', () => {
    for (const room of Object.keys(ROOMS)) expect(existsSync(join(srcRoot, room)), room).toBe(true);
    expect(checkRooms(readImportGraph(srcRoot))).toEqual([]);
  });

  it('reports the leader importing the worker, a lane importing a view, and not the root importing a room or a room its own files', () => {
    const graph: ImportGraph = new Map(
      Object.entries({
        'coordinator/leader/leader.ts': ['coordinator/worker/worker.ts', 'coordinator/views/seen.ts', 'coordinator/events.ts', 'coordinator/leader/publish.ts'],
        'coordinator/lanes/lane.ts': ['coordinator/views/seen.ts', 'coordinator/types.ts'],
        'coordinator/worker/worker.ts': ['coordinator/lanes/lane.ts'],
        'coordinator/coordinator.ts': ['coordinator/leader/leader.ts', 'coordinator/worker/worker.ts'],
      }).map(([file, files]) => [file, { files: new Set(files), packages: new Set<string>(), outside: new Set<string>() }]),
    );
    expect(checkRooms(graph)).toEqual([
      'coordinator/lanes/lane.ts imports coordinator/views/seen.ts: room coordinator/lanes/ may import only its module\'s root',
      'coordinator/leader/leader.ts imports coordinator/worker/worker.ts: room coordinator/leader/ may import only its module\'s root and coordinator/views/',
    ]);
  });
});

/**
 * A backend is reached through the store factory (issue 51, decision 0082): outside its room a
 * backend's class is named only by the factory that opens it and by the entry point that exports
 * it, and the room is entered only through those doors; its files stay inside it. So the CLI, the
 * demo and the fleet member process open a store with `openStore({ backend, … })`, and a second
 * backend is wired in `store/open.ts` alone. Names are read as code tokens: a comment or a string
 * naming the class does not count.
 */
export const BACKEND_ROOMS: readonly { room: string; classes: readonly string[]; files: RegExp; doors: readonly string[] }[] = [
  { room: 'store/etcd/', classes: ['EtcdStore'], files: /^store\/.*\betcd[^/]*\.ts$/, doors: ['store/open.ts', 'etcd.ts'] },
];

/** The identifiers of `names` that `text` uses as code (never in a comment or a string). */
function identifiersIn(text: string, names: ReadonlySet<string>): Set<string> {
  const found = new Set<string>();
  const scanner = ts.createScanner(ts.ScriptTarget.Latest, true, ts.LanguageVariant.Standard, text);
  for (let t = scanner.scan(); t !== ts.SyntaxKind.EndOfFileToken; t = scanner.scan()) {
    if (t === ts.SyntaxKind.Identifier && names.has(scanner.getTokenText())) found.add(scanner.getTokenText());
  }
  return found;
}

/** Every file of `root` (src/) that names a backend's class, imports its room or sits outside it, past what `rooms` allows; one line each. */
export function checkBackendRooms(root: string, rooms = BACKEND_ROOMS): string[] {
  const graph = readImportGraph(root);
  const problems: string[] = [];
  for (const { room, classes, files, doors } of rooms) {
    const names = new Set(classes);
    for (const [file, { files: imported }] of [...graph].sort(([a], [b]) => (a < b ? -1 : 1))) {
      if (file.startsWith(room)) continue;
      if (files.test(file)) problems.push(`${file}: a file of the ${room} room outside it (move it into ${room})`);
      if (doors.includes(file)) continue;
      for (const name of [...identifiersIn(readFileSync(join(root, file), 'utf8'), names)].sort()) {
        problems.push(`${file} names ${name}: only ${room} and ${doors.join(', ')} may (open a store with openStore, store/open.ts)`);
      }
      for (const target of [...imported].sort()) {
        if (target.startsWith(room)) problems.push(`${file} imports ${target}: only ${doors.join(', ')} may import the ${room} room`);
      }
    }
  }
  return problems;
}

describe('a backend is reached through the store factory', () => {
  it('no file of src/ outside store/etcd/ names EtcdStore or imports the room, but the factory and splitfleet/etcd; no etcd file outside the room', () => {
    for (const { room, doors } of BACKEND_ROOMS) {
      expect(existsSync(join(srcRoot, room)), room).toBe(true);
      for (const door of doors) expect(existsSync(join(srcRoot, door)), door).toBe(true);
    }
    expect(checkBackendRooms(srcRoot)).toEqual([]);
  });

  it('reports a command naming the class, a file importing the room past its doors and an etcd file left outside, and nothing in a comment, a string or a door', () => {
    const dir = mkdtempSync(join(tmpdir(), 'splitfleet-arch-backend-'));
    try {
      for (const d of ['store/etcd', 'cli', 'demo']) mkdirSync(join(dir, d), { recursive: true });
      writeFileSync(join(dir, 'store', 'etcd', 'etcd.ts'), 'export class EtcdStore {}\n');
      writeFileSync(join(dir, 'store', 'etcd-watch.ts'), 'export const w = 1;\n');
      writeFileSync(join(dir, 'store', 'open.ts'), "export const open = async () => new (await import('./etcd/etcd.js')).EtcdStore();\n");
      writeFileSync(join(dir, 'etcd.ts'), "export { EtcdStore } from './store/etcd/etcd.js';\n");
      writeFileSync(join(dir, 'cli', 'connect.ts'), "import { EtcdStore } from '../etcd.js';\nexport const s = () => new EtcdStore();\n");
      writeFileSync(join(dir, 'demo', 'fleet.ts'), "import type { w } from '../store/etcd-watch.js';\nimport { EtcdStore as E } from '../store/etcd/etcd.js';\n// new EtcdStore() in a comment\nexport const n = 'EtcdStore';\n");
      writeFileSync(join(dir, 'index.ts'), "/** EtcdStore: splitfleet/etcd */\nexport const x = 1;\n");
      expect(checkBackendRooms(dir)).toEqual([
        'cli/connect.ts names EtcdStore: only store/etcd/ and store/open.ts, etcd.ts may (open a store with openStore, store/open.ts)',
        'demo/fleet.ts names EtcdStore: only store/etcd/ and store/open.ts, etcd.ts may (open a store with openStore, store/open.ts)',
        'demo/fleet.ts imports store/etcd/etcd.ts: only store/open.ts, etcd.ts may import the store/etcd/ room',
        'store/etcd-watch.ts: a file of the store/etcd/ room outside it (move it into store/etcd/)',
      ]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

/**
 * Front doors (issue 51): a module that another reaches through one file only. The coordinator
 * uses the engine through assignment/front-door.ts (`DefaultEngine`'s `ready` and `decide`, and the
 * shapes they take), so a change inside assignment/ behind that file touches no coordinator file.
 */
export const FRONT_DOORS: readonly { from: string; to: string; door: string }[] = [
  { from: 'coordinator/', to: 'assignment/', door: 'assignment/front-door.ts' },
];

/** Every import from a `from` module into its `to` module other than through the door; one line each. */
export function checkFrontDoors(graph: ImportGraph, doors = FRONT_DOORS): string[] {
  const problems: string[] = [];
  for (const { from, to, door } of doors) {
    for (const [file, { files }] of [...graph].sort(([a], [b]) => (a < b ? -1 : 1))) {
      if (!file.startsWith(from)) continue;
      for (const target of [...files].sort()) {
        if (target.startsWith(to) && target !== door) problems.push(`${file} imports ${target}: ${from} reaches ${to} through ${door} only`);
      }
    }
  }
  return problems;
}

describe('the engine has a front door', () => {
  it('coordinator/ imports assignment/ through assignment/front-door.ts only', () => {
    expect(existsSync(join(srcRoot, 'assignment/front-door.ts'))).toBe(true);
    expect(checkFrontDoors(readImportGraph(srcRoot))).toEqual([]);
  });
  it('reports an import past the door, and not the door itself or another module', () => {
    const graph: ImportGraph = new Map([
      ['coordinator/leader/a.ts', { files: new Set(['assignment/front-door.ts', 'assignment/wasm.ts']), packages: new Set<string>(), outside: new Set<string>() }],
      ['operator/b.ts', { files: new Set(['assignment/wasm.ts']), packages: new Set<string>(), outside: new Set<string>() }],
    ]);
    expect(checkFrontDoors(graph)).toEqual(['coordinator/leader/a.ts imports assignment/wasm.ts: coordinator/ reaches assignment/ through assignment/front-door.ts only']);
  });
});

describe('the checker fails when it should', () => {
  const graphOf = (edges: Record<string, string[]>, packages: Record<string, string[]> = {}): ImportGraph =>
    new Map(Object.entries(edges).map(([file, files]) => [file, { files: new Set(files), packages: new Set(packages[file] ?? []), outside: new Set<string>() }]));

  it('passes a clean graph', () => {
    expect(checkImportGraph(graphOf({
      'cli/main.ts': ['index.ts'], 'index.ts': ['coordinator/a.ts', 'store/etcd/etcd.ts'], 'coordinator/a.ts': ['coordinator/b.ts', 'protocol/keys.ts'],
      'coordinator/b.ts': ['store/store.ts'], 'protocol/keys.ts': ['errors.ts'], 'store/store.ts': ['errors.ts'], 'store/etcd/etcd.ts': ['store/store.ts'], 'errors.ts': [],
    }, { 'store/etcd/etcd.ts': ['etcd3'] }))).toEqual([]);
  });

  it('reports a cycle with its files, inside a module and across modules', () => {
    const problems = checkImportGraph(graphOf({
      'coordinator/a.ts': ['coordinator/b.ts'], 'coordinator/b.ts': ['coordinator/c.ts'], 'coordinator/c.ts': ['coordinator/a.ts'],
      'config.ts': ['config.ts'],
    }));
    expect(problems).toContain('import cycle: coordinator/a.ts → coordinator/b.ts → coordinator/c.ts → coordinator/a.ts');
    expect(problems).toContain('import cycle: config.ts → config.ts');
  });

  it('reports a lower layer importing a higher one, two modules of one layer, the CLI past the public surface, and the store contract importing a backend', () => {
    const problems = checkImportGraph(graphOf({
      'store/memory.ts': ['coordinator/worker.ts'], 'coordinator/worker.ts': [],
      'protocol/claims.ts': ['store/memory.ts', 'store/store.ts'], 'store/store.ts': ['store/base.ts'], 'store/base.ts': ['store/store.ts'],
      'cli/main.ts': ['coordinator/worker.ts', 'etcd.ts', 'http.ts'],
      'errors.ts': ['clock.ts'], 'clock.ts': [],
      'etcd.ts': ['store/etcd/etcd.ts'], 'http.ts': ['index.ts'], 'index.ts': [],
    }));
    expect(problems).toEqual([
      'import cycle: store/base.ts → store/store.ts → store/base.ts',
      'cli/main.ts imports coordinator/worker.ts: cli/ may import only index.ts, etcd.ts, http.ts, engine.ts, text.ts, demo/',
      'errors.ts imports clock.ts: errors.ts and clock.ts share rank 0 and must not import each other',
      'http.ts imports index.ts: http.ts and index.ts share rank 5 and must not import each other',
      'protocol/claims.ts imports store/memory.ts: protocol/ and store/ share rank 2 and must not import each other',
      'store/memory.ts imports coordinator/worker.ts: a lower layer (store/, rank 2) imports a higher one (coordinator/, rank 3)',
      'store/store.ts imports store/base.ts: a lower layer (store/store.ts, rank 1) imports a higher one (store/, rank 2)',
    ]);
  });

  it('reports a module in no layer and a dependency outside its home', () => {
    expect(checkImportGraph(graphOf(
      { 'newthing/x.ts': [], 'store/memory.ts': [], 'coordinator/log.ts': [] },
      { 'store/memory.ts': ['etcd3'], 'coordinator/log.ts': ['hono', 'prom-client'] },
    ))).toEqual([
      'coordinator/log.ts imports hono: only metrics-server.ts, dashboard/app.ts, dashboard/mount.ts, dashboard/view-stream.ts may',
      'coordinator/log.ts imports prom-client: only coordinator/load-prom-client.ts may',
      'newthing/x.ts: module newthing/ is in no layer (add it to LAYERS and docs/architecture.md)',
      'store/memory.ts imports etcd3: only store/etcd/etcd.ts may',
    ]);
  });

  it('reads a cycle from a fixture tree on disk, through every import form', () => {
    const dir = mkdtempSync(join(tmpdir(), 'splitfleet-arch-'));
    try {
      mkdirSync(join(dir, 'store'));
      mkdirSync(join(dir, 'coordinator'));
      writeFileSync(join(dir, 'errors.ts'), "// import { x } from './store/a.js' is a comment, not an import\nexport const e = 1;\n");
      writeFileSync(join(dir, 'store', 'a.ts'), "import { e } from '../errors.js';\nexport type { B } from './b.js';\nexport const a = e;\n");
      writeFileSync(join(dir, 'store', 'b.ts'), "export type B = import('./c.js').C;\n");
      writeFileSync(join(dir, 'store', 'c.ts'), "export type C = number;\nexport const load = () => import('./a.js');\n");
      writeFileSync(join(dir, 'coordinator', 'w.ts'), "import { a } from '../store/a.js';\nimport type { Etcd3 } from 'etcd3';\nexport const w = a;\n// WebAssembly in a comment is not a use\n");
      writeFileSync(join(dir, 'hash.ts'), "export const m = (b: Uint8Array) => new WebAssembly.Module(b);\n");
      const graph = readImportGraph(dir);
      expect([...graph.get('errors.ts')!.files]).toEqual([]);
      expect(checkImportGraph(graph)).toEqual([
        'import cycle: store/a.ts → store/b.ts → store/c.ts → store/a.ts',
        'coordinator/w.ts imports etcd3: only store/etcd/etcd.ts may',
        'hash.ts imports WebAssembly: only assignment/wasm.ts may',
      ]);
      // The same tree with the store importing the coordinator: the upward import.
      writeFileSync(join(dir, 'store', 'c.ts'), "import { w } from '../coordinator/w.js';\nexport type C = typeof w;\n");
      expect(checkImportGraph(readImportGraph(dir))).toContain(
        'store/c.ts imports coordinator/w.ts: a lower layer (store/, rank 2) imports a higher one (coordinator/, rank 3)',
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

/**
 * src/demo/ is the demo only (issue 32): a test or bench takes its harness from src/testing/ (what
 * the demo shares: the ledger, the synthetic job, the fleet member process, the fault facade) or
 * test/support/, never from the demo (decision 0039). The exceptions are the tests of the demo
 * itself, each with the demo files it tests; a path ending in '/' is a folder.
 */
export const DEMO_TESTS: Readonly<Record<string, readonly string[]>> = {
  'test/unit/cli/demo.test.ts': ['src/demo/'], // the demo: its run (compiled) and its live frame
  'test/etcd/member-loss.test.ts': ['src/demo/run.ts'], // the demo's timings ride out an etcd member loss
  'test/integration/keys-scope.test.ts': ['src/demo/observer.ts'], // the demo's observer reads its job's keys only
};

/** Every import of the demo (src/demo/, or its build under dist/) by a test or bench file of `graph` that DEMO_TESTS does not allow. */
export function checkDemoImports(graph: ImportGraph, demoTests = DEMO_TESTS): string[] {
  const problems: string[] = [];
  for (const [file, { files }] of [...graph].sort(([a], [b]) => (a < b ? -1 : 1))) {
    const allowed = demoTests[file] ?? [];
    for (const target of [...files].sort()) {
      const demo = /^(?:dist\/)?(src\/demo\/.*?)(?:\.js)?$/.exec(target)?.[1]?.replace(/(\.ts)?$/, '.ts');
      if (demo === undefined) continue;
      if (allowed.some((a) => (a.endsWith('/') ? demo.startsWith(a) : demo === a))) continue;
      problems.push(`${file} imports ${target}: tests and benches take their harness from src/testing/ or test/support/; src/demo/ is the demo only`);
    }
  }
  return problems;
}

const repoRoot = resolve(srcRoot, '..');

describe('tests and benches import no demo', () => {
  it('no file of test/ or bench/ imports src/demo/, but the demo\'s own tests', () => {
    const graph = readImportGraphUnder(repoRoot, ['test', 'bench']);
    expect(graph.size).toBeGreaterThan(100);
    expect(checkDemoImports(graph)).toEqual([]);
    // Each exception is still needed: its file exists and imports what it is allowed (else the entry goes).
    for (const [file, allowed] of Object.entries(DEMO_TESTS)) {
      const demo = [...(graph.get(file)?.files ?? [])].filter((t) => t.startsWith('src/demo/'));
      expect(demo.some((t) => allowed.some((a) => (a.endsWith('/') ? t.startsWith(a) : t === a))), `${file} imports ${allowed.join(', ')}`).toBe(true);
    }
  });

  it('reports a test, a support file and a bench importing the demo, and only the exception\'s own files', () => {
    const dir = mkdtempSync(join(tmpdir(), 'splitfleet-arch-demo-'));
    try {
      for (const d of ['src/demo', 'src/testing', 'test/unit/cli', 'test/integration', 'test/support', 'test/etcd', 'bench', 'dist/src/demo']) mkdirSync(join(dir, d), { recursive: true });
      for (const f of ['src/demo/run.ts', 'src/demo/fleet.ts', 'src/demo/observer.ts', 'src/testing/ledger.ts', 'dist/src/demo/fleet.js']) writeFileSync(join(dir, f), 'export const x = 1;\n');
      writeFileSync(join(dir, 'test/unit/cli/demo.test.ts'), "import { x } from '../../../src/demo/run.js';\nimport { x as y } from '../../../src/demo/fleet.js';\n");
      writeFileSync(join(dir, 'test/etcd/member-loss.test.ts'), "import { x } from '../../src/demo/run.js';\nimport type { x as y } from '../../src/demo/observer.js';\n");
      writeFileSync(join(dir, 'test/integration/steady.test.ts'), "import { x } from '../../src/testing/ledger.js';\n// import { y } from '../../src/demo/run.js' is a comment\n");
      writeFileSync(join(dir, 'test/integration/worker.test.ts'), "import type { x } from '../../src/demo/fleet.js';\n");
      writeFileSync(join(dir, 'test/support/spawn.ts'), "export const load = () => import('../../dist/src/demo/fleet.js');\n");
      writeFileSync(join(dir, 'bench/fleet.ts'), "export { x } from '../src/demo/run.js';\n");
      const graph = readImportGraphUnder(dir, ['test', 'bench']);
      expect([...graph.keys()].sort()).toEqual([
        'bench/fleet.ts', 'test/etcd/member-loss.test.ts', 'test/integration/steady.test.ts', 'test/integration/worker.test.ts',
        'test/support/spawn.ts', 'test/unit/cli/demo.test.ts',
      ]);
      const why = 'tests and benches take their harness from src/testing/ or test/support/; src/demo/ is the demo only';
      expect(checkDemoImports(graph)).toEqual([
        `bench/fleet.ts imports src/demo/run.ts: ${why}`,
        `test/etcd/member-loss.test.ts imports src/demo/observer.ts: ${why}`,
        `test/integration/worker.test.ts imports src/demo/fleet.ts: ${why}`,
        `test/support/spawn.ts imports dist/src/demo/fleet.js: ${why}`,
      ]);
      // Without the exceptions, the demo's own tests are reported too.
      expect(checkDemoImports(graph, {})).toContain(`test/unit/cli/demo.test.ts imports src/demo/run.ts: ${why}`);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

/**
 * A function that fits on a screen (issue 32, STYLE rule 13, docs/architecture.md): every function
 * of src/ and assembly/ (declarations, methods, constructors, accessors, and arrow functions and
 * function expressions, named or not) whose body spans more than FUNCTION_LINES lines carries, in
 * the comment block directly above it (its JSDoc or line comments, no blank line between; for one
 * assigned to a name, above the declaration), a line starting with FUNCTION_MARKER and the reason.
 * AssemblyScript parses as TypeScript here; its decorators (`@inline`) are part of the function.
 */
export const FUNCTION_LINES = 80;
export const FUNCTION_MARKER = 'Why one function:';

/** Each function of `text` (the source of `file`) over `limit` lines without the marker above it, as `file:line name length`. */
export function longFunctionsIn(file: string, text: string, limit = FUNCTION_LINES): string[] {
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true, ts.ScriptKind.TS);
  const lineOf = (pos: number) => source.getLineAndCharacterOfPosition(pos).line + 1;
  const problems: string[] = [];
  const visit = (node: ts.Node): void => {
    if (ts.isFunctionLike(node) && 'body' in node && node.body !== undefined) {
      const body = node.body as ts.Node;
      const length = lineOf(body.end) - lineOf(body.getStart(source)) + 1;
      if (length > limit && !anchorsOf(node).some((n) => commentAbove(text, n).split('\n').some(isMarkerLine))) {
        const named = node.name ?? (ts.isVariableDeclaration(node.parent) || ts.isPropertyAssignment(node.parent) || ts.isPropertyDeclaration(node.parent) ? node.parent.name : undefined);
        problems.push(`${file}:${lineOf((named ?? node).getStart(source))} ${functionName(node, named, source)} ${length} lines: over ${limit} without a '${FUNCTION_MARKER}' comment above it (split it into named steps, or say why it must be one)`);
      }
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return problems;
}

/** The node itself and the nodes that carry its comment when it is assigned to a name (`const f = () => …`, `{ f: function () … }`, a class field). */
function anchorsOf(node: ts.Node): ts.Node[] {
  const anchors = [node];
  for (let at = node.parent; at !== undefined; at = at.parent) {
    if (ts.isParenthesizedExpression(at) || ts.isAsExpression(at) || ts.isSatisfiesExpression(at) || ts.isVariableDeclarationList(at)) continue;
    if (ts.isVariableDeclaration(at) || ts.isVariableStatement(at) || ts.isPropertyAssignment(at) || ts.isPropertyDeclaration(at) || ts.isExportAssignment(at)) anchors.push(at);
    else break;
  }
  return anchors;
}

/** The comments directly above `node`: the run of leading comments with no blank line between them or before the node. */
function commentAbove(text: string, node: ts.Node): string {
  const ranges = ts.getLeadingCommentRanges(text, node.pos) ?? [];
  let next = node.getStart(node.getSourceFile());
  const block: string[] = [];
  for (let i = ranges.length - 1; i >= 0; i--) {
    const range = ranges[i]!;
    if ((text.slice(range.end, next).match(/\n/g) ?? []).length > 1) break;
    block.unshift(text.slice(range.pos, range.end));
    next = range.pos;
  }
  return block.join('\n');
}

/** A comment line whose text (past `//`, `/**` or `*`) starts with the marker. */
function isMarkerLine(line: string): boolean {
  return line.replace(/^\s*(?:\/\/+|\/\*+|\*+)?\s*/, '').startsWith(FUNCTION_MARKER);
}

function functionName(node: ts.SignatureDeclaration, named: ts.Node | undefined, source: ts.SourceFile): string {
  const own = ts.isConstructorDeclaration(node) ? 'constructor' : named !== undefined ? named.getText(source) : '(anonymous)';
  const prefix = ts.isGetAccessorDeclaration(node) ? 'get ' : ts.isSetAccessorDeclaration(node) ? 'set ' : '';
  const member = ts.isPropertyDeclaration(node.parent) ? node.parent : node; // a field holding an arrow function
  const owner = ts.isClassLike(member.parent) && member.parent.name !== undefined ? `${member.parent.name.text}.` : '';
  return `${owner}${prefix}${own}`;
}

/** Every function over the bound without its comment in the .ts files under `dirs` of `root`. */
export function checkLongFunctions(root: string, dirs: readonly string[], limit = FUNCTION_LINES): string[] {
  const problems: string[] = [];
  const walk = (dir: string): void => {
    for (const name of readdirSync(dir).sort()) {
      const path = join(dir, name);
      if (statSync(path).isDirectory()) walk(path);
      else if (name.endsWith('.ts') && !name.endsWith('.d.ts')) problems.push(...longFunctionsIn(toKey(root, path), readFileSync(path, 'utf8'), limit));
    }
  };
  for (const dir of dirs) if (existsSync(join(root, dir))) walk(join(root, dir));
  return problems;
}

describe('functions fit on a screen, or say why not', () => {
  it(`no function of src/ or assembly/ spans more than ${FUNCTION_LINES} lines without a '${FUNCTION_MARKER}' comment`, () => {
    expect(checkLongFunctions(repoRoot, ['src', 'assembly'])).toEqual([]);
  });

  it('reports each kind of long function without the marker directly above it, and none with it', () => {
    // A body of n lines: the braces on lines of their own, n - 2 statements between.
    const body = (n: number, indent = '  ') => `{\n${Array.from({ length: n - 2 }, (_, i) => `${indent}  x += ${i};`).join('\n')}\n${indent}}`;
    const why = `${FUNCTION_MARKER} the loop keeps its locals in registers.`;
    const text = [
      `export function fits(x: number) ${body(80, '')}`, // 80 lines: at the bound, not over it
      `export function over(x: number) ${body(81, '')}`,
      `/**\n * Documented, but without the reason.\n */\nexport function undocumented(x: number) ${body(81, '')}`,
      `/**\n * The steps.\n *\n * ${why}\n */\nexport function explained(x: number) ${body(81, '')}`,
      `// ${why}\n// (line comments too)\n@inline function decorated(x: i32): i32 ${body(81, '')}`,
      `// ${why}\n\nfunction parted(x: number) ${body(81, '')}`, // a blank line parts the comment from the function
      `function inside(x: number) {\n  // ${why}\n  x += 1;\n  ${body(81).slice(1, -1)}\n}`, // a comment inside the body is not above it
      `// ${FUNCTION_MARKER.toLowerCase()} the case matters\nfunction lower(x: number) ${body(81, '')}`,
      `export const arrow = (x: number) => ${body(81, '')};`,
      `/** ${why} */\nexport const arrowExplained = (x: number) => ${body(81, '')};`,
      `const expression = function (x: number) ${body(81, '')};`,
      `class Engine {\n  constructor(x: number) ${body(81)}\n  get size() ${body(81)}\n  run(x: number) ${body(81)}\n  // ${why}\n  step(x: number) ${body(81)}\n  field = (x: number) => ${body(81)};\n}`,
      `const table = {\n  method(x: number) ${body(81)},\n  /** ${why} */\n  explained: (x: number) => ${body(81)},\n};`,
      `export function outer(x: number) {\n  const inner = (y: number) => ${body(81)};\n  return inner;\n}`,
      `run((x: number) => ${body(81, '')});`,
    ].join('\n');
    const lineOf = (needle: string) => text.slice(0, text.indexOf(needle)).split('\n').length;
    const rest = `lines: over ${FUNCTION_LINES} without a '${FUNCTION_MARKER}' comment above it (split it into named steps, or say why it must be one)`;
    const at = (needle: string, name: string, length: number) => `fixture.ts:${lineOf(needle)} ${name} ${length} ${rest}`;
    expect(longFunctionsIn('fixture.ts', text)).toEqual([
      at('function over', 'over', 81),
      at('function undocumented', 'undocumented', 81),
      at('function parted', 'parted', 81),
      at('function inside', 'inside', 85),
      at('function lower', 'lower', 81),
      at('const arrow =', 'arrow', 81),
      at('const expression', 'expression', 81),
      at('constructor(', 'Engine.constructor', 81),
      at('get size', 'Engine.get size', 81),
      at('run(x', 'Engine.run', 81),
      at('field =', 'Engine.field', 81),
      at('method(x', 'method', 81),
      at('function outer', 'outer', 84),
      at('const inner', 'inner', 81),
      at('run((x', '(anonymous)', 81),
    ]);
    // The bound is the function's body: 80 lines pass, 81 fail, whatever the limit.
    expect(longFunctionsIn('fixture.ts', `function f(x: number) ${body(10, '')}`, 9)).toHaveLength(1);
    expect(longFunctionsIn('fixture.ts', `function f(x: number) ${body(10, '')}`, 10)).toEqual([]);
  });

  it('walks src/ and assembly/ of a fixture tree, and no other folder', () => {
    const dir = mkdtempSync(join(tmpdir(), 'splitfleet-arch-length-'));
    try {
      for (const d of ['src/coordinator', 'assembly', 'test']) mkdirSync(join(dir, d), { recursive: true });
      const long = `export function long(x: number) {\n${'  x += 1;\n'.repeat(FUNCTION_LINES)}}\n`;
      for (const f of ['src/coordinator/leader.ts', 'assembly/passes.ts', 'test/long.test.ts']) writeFileSync(join(dir, f), long);
      expect(checkLongFunctions(dir, ['src', 'assembly']).map((p) => p.split(' lines:')[0])).toEqual([
        `src/coordinator/leader.ts:1 long ${FUNCTION_LINES + 2}`,
        `assembly/passes.ts:1 long ${FUNCTION_LINES + 2}`,
      ]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

/**
 * A lane's life is changed by the lane only (issue 51, docs/architecture.md "A lane's life"): the
 * class `Lane` has no member another file could assign (every field private or readonly, no
 * public setter), and the types of its state (`LaneState` and the parts it carries) are readonly
 * throughout, so `lane.state.kind = …` or `lane.state.drain.handler = …` does not compile. The
 * compiler then refuses any file but lane.ts that would change a lane's state; this keeps it so.
 */
export const LANE_FILE = 'coordinator/lanes/lane.ts';
export const LANE_STATE_TYPES: readonly string[] = ['LaneState', 'EndedLane', 'Drain', 'EndAsked', 'TerminalWrite'];

/** The members of class `className` and the properties of the types `stateTypes` in `text` that another file could assign. */
export function assignableLaneState(file: string, text: string, className = 'Lane', stateTypes = LANE_STATE_TYPES): string[] {
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true, ts.ScriptKind.TS);
  const problems: string[] = [];
  const lineOf = (n: ts.Node) => source.getLineAndCharacterOfPosition(n.getStart(source)).line + 1;
  const has = (n: ts.Node, kind: ts.SyntaxKind) => (ts.canHaveModifiers(n) ? ts.getModifiers(n) ?? [] : []).some((m) => m.kind === kind);
  const hidden = (n: ts.Node) => has(n, ts.SyntaxKind.PrivateKeyword) || has(n, ts.SyntaxKind.ProtectedKeyword) || ((n as ts.ClassElement).name !== undefined && ts.isPrivateIdentifier((n as ts.ClassElement).name!));
  const properties = (node: ts.Node, owner: string): void => {
    if (ts.isPropertySignature(node) && !has(node, ts.SyntaxKind.ReadonlyKeyword)) {
      problems.push(`${file}:${lineOf(node)}: ${owner}.${node.name.getText(source)} is not readonly: another file could change a lane's state through it`);
    }
    ts.forEachChild(node, (child) => properties(child, owner));
  };
  const found = new Set<string>();
  for (const statement of source.statements) {
    if (ts.isClassDeclaration(statement) && statement.name?.text === className) {
      found.add(className);
      for (const member of statement.members) {
        const name = member.name?.getText(source) ?? '';
        if (ts.isPropertyDeclaration(member) && !hidden(member) && !has(member, ts.SyntaxKind.ReadonlyKeyword)) {
          problems.push(`${file}:${lineOf(member)}: ${className}.${name} can be assigned from another file: make it private (changed by a named method) or readonly`);
        } else if (ts.isSetAccessorDeclaration(member) && !hidden(member)) {
          problems.push(`${file}:${lineOf(member)}: ${className}.${name} has a public setter: change the lane's state by a named method`);
        } else if (ts.isConstructorDeclaration(member)) {
          for (const p of member.parameters) {
            const isField = (ts.getModifiers(p) ?? []).some((m) => m.kind === ts.SyntaxKind.PublicKeyword || m.kind === ts.SyntaxKind.PrivateKeyword || m.kind === ts.SyntaxKind.ProtectedKeyword || m.kind === ts.SyntaxKind.ReadonlyKeyword);
            if (isField && !hidden(p) && !has(p, ts.SyntaxKind.ReadonlyKeyword)) problems.push(`${file}:${lineOf(p)}: ${className}.${p.name.getText(source)} can be assigned from another file: make it private or readonly`);
          }
        }
      }
    } else if ((ts.isTypeAliasDeclaration(statement) || ts.isInterfaceDeclaration(statement)) && stateTypes.includes(statement.name.text)) {
      found.add(statement.name.text);
      properties(statement, statement.name.text);
    }
  }
  for (const name of [className, ...stateTypes]) if (!found.has(name)) problems.push(`${file}: ${name} is not declared here`);
  return problems;
}

describe('a lane\'s state is changed by the lane only', () => {
  it(`no member of Lane or property of its state's types (${LANE_FILE}) can be assigned from another file`, () => {
    expect(assignableLaneState(LANE_FILE, readFileSync(join(srcRoot, LANE_FILE), 'utf8'))).toEqual([]);
  });

  it('reports a public mutable field, a public setter, a mutable parameter property and a mutable state property, and nothing private, readonly or a getter', () => {
    const text = [
      'export interface Drain { readonly startedAt: number; handler: string }',
      "export type LaneState = { readonly kind: 'running' } | { readonly kind: 'ended'; as: string; readonly drain: { at: number } };",
      'export class Lane {',
      '  state = 1;',
      '  private s = 1;',
      '  #t = 1;',
      '  readonly id = 1;',
      '  get kind() { return 1; }',
      '  set kind(_: number) {}',
      '  private set hidden(_: number) {}',
      '  constructor(public ctx: number, private readonly other: number, readonly third: number) {}',
      '}',
    ].join('\n');
    expect(assignableLaneState('lane.ts', text, 'Lane', ['Drain', 'LaneState', 'Missing'])).toEqual([
      "lane.ts:1: Drain.handler is not readonly: another file could change a lane's state through it",
      "lane.ts:2: LaneState.as is not readonly: another file could change a lane's state through it",
      "lane.ts:2: LaneState.at is not readonly: another file could change a lane's state through it",
      'lane.ts:4: Lane.state can be assigned from another file: make it private (changed by a named method) or readonly',
      "lane.ts:9: Lane.kind has a public setter: change the lane's state by a named method",
      'lane.ts:11: Lane.ctx can be assigned from another file: make it private or readonly',
      'lane.ts: Missing is not declared here',
    ]);
  });
});

/**
 * The leader's per-split state has one owner (issue 51, docs/architecture.md "the leader view"):
 * `SplitColumns` changes a split's halves only through named events (`specSeen`, `recordSeen`,
 * `recordForgotten`, `problemsChanged`, …), each changing only what was seen. Its `place` is
 * private, so the compiler already refuses a call from another file; this keeps it private and
 * the rule visible: no file of the leader's room but split-columns.ts calls `.place(`.
 */
export const COLUMNS_FILE = 'coordinator/leader/split-columns.ts';

/** In `text` (file `file`): a call of `.place(` outside `columnsFile`, and in it, a `place` of `SplitColumns` that is not private. */
export function placeCallsIn(file: string, text: string, columnsFile = COLUMNS_FILE): string[] {
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true, ts.ScriptKind.TS);
  const problems: string[] = [];
  const lineOf = (n: ts.Node) => source.getLineAndCharacterOfPosition(n.getStart(source)).line + 1;
  const named = (e: ts.Expression) =>
    (ts.isPropertyAccessExpression(e) && e.name.text === 'place') || (ts.isElementAccessExpression(e) && ts.isStringLiteralLike(e.argumentExpression) && e.argumentExpression.text === 'place');
  const visit = (node: ts.Node): void => {
    if (file !== columnsFile && ts.isCallExpression(node) && named(node.expression)) {
      problems.push(`${file}:${lineOf(node)}: calls .place(: say what was seen with a SplitColumns event (specSeen, recordSeen, …)`);
    }
    if (file === columnsFile && ts.isClassDeclaration(node) && node.name?.text === 'SplitColumns') {
      for (const m of node.members) {
        const isPrivate = (ts.canHaveModifiers(m) ? ts.getModifiers(m) ?? [] : []).some((k) => k.kind === ts.SyntaxKind.PrivateKeyword);
        if (ts.isMethodDeclaration(m) && m.name.getText(source) === 'place' && !isPrivate) problems.push(`${file}:${lineOf(m)}: SplitColumns.place is not private: callers name what they saw instead`);
      }
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return problems;
}

/** Every `placeCallsIn` problem of the files under `dir` of the tree at `root`. */
export function checkPlaceCalls(root: string, dir = 'coordinator/leader'): string[] {
  const problems: string[] = [];
  const walk = (path: string): void => {
    for (const name of readdirSync(path).sort()) {
      const child = join(path, name);
      if (statSync(child).isDirectory()) walk(child);
      else if (name.endsWith('.ts')) problems.push(...placeCallsIn(toKey(root, child), readFileSync(child, 'utf8')));
    }
  };
  walk(join(root, dir));
  return problems;
}

describe('the leader\'s per-split state has one owner', () => {
  it(`no file of coordinator/leader/ but ${COLUMNS_FILE} calls .place(, and SplitColumns.place is private`, () => {
    expect(existsSync(join(srcRoot, COLUMNS_FILE))).toBe(true);
    expect(checkPlaceCalls(srcRoot)).toEqual([]);
  });

  it('reports a call of .place( by name or by string, and a public place in the columns\' file, and nothing else', () => {
    const caller = ['this.columns.place(id, 1, undefined);', "columns['place'](id, 1, 'runnable');", 'columns.specSeen(id, 1); // .place( in a comment', "const s = 'x.place(y)';"].join('\n');
    expect(placeCallsIn('coordinator/leader/a.ts', caller)).toEqual([
      'coordinator/leader/a.ts:1: calls .place(: say what was seen with a SplitColumns event (specSeen, recordSeen, …)',
      'coordinator/leader/a.ts:2: calls .place(: say what was seen with a SplitColumns event (specSeen, recordSeen, …)',
    ]);
    const open = 'export class SplitColumns {\n  place(id: string): void {}\n  specSeen(id: string): void { this.place(id); }\n}';
    expect(placeCallsIn(COLUMNS_FILE, open)).toEqual([`${COLUMNS_FILE}:2: SplitColumns.place is not private: callers name what they saw instead`]);
    expect(placeCallsIn(COLUMNS_FILE, open.replace('  place(', '  private place('))).toEqual([]);
  });
});
