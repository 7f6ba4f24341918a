/**
 * `splitfleet demo`, run as users run it: the compiled bin
 * (dist/src/cli/main.js) in a child process, on the embedded MemoryStore.
 * Build first: `npm run build`.
 *
 * A small job finishes with nothing lost and a parseable `--json` last line;
 * so does one with a crashed worker and a joining one, and a packed one
 * (`--layout packed`, decision 0037); a poisoned split
 * stalls the job (exit 1); bad options are refused (exit 2, one line). The
 * first line says which store the demo runs on and what chose it: memory
 * when nothing names an etcd, etcd when a flag or SPLITFLEET_ETCD_ENDPOINTS
 * or ETCDCTL_ENDPOINTS does (decision 0050). The demo's pure parts (ledger
 * check, live frame) are tested directly.
 */
import { spawn } from 'node:child_process';
import { existsSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, test } from 'vitest';
import { Ledger } from '../../../src/testing/ledger.js';
import { frame, paint, truncate, visible } from '../../../src/demo/view.js';
import { jobReport, emptyJobRecords } from '../../../src/inspect/report.js';
import { syntheticSplits } from '../../../src/testing/synthetic.js';

const root = fileURLToPath(new URL('../../../', import.meta.url));
const CLI = join(root, 'dist/src/cli/main.js');

beforeAll(() => {
  if (!existsSync(CLI)) throw new Error(`${CLI} is missing: these tests run the compiled CLI; build it first with \`npm run build\``);
  for (const name of ['cli/demo', 'demo/run', 'demo/fleet', 'demo/observer', 'inspect/packed-records', 'testing/faults', 'testing/fleet-member', 'testing/synthetic']) {
    const out = join(root, `dist/src/${name}.js`);
    if (!existsSync(out) || statSync(join(root, `src/${name}.ts`)).mtimeMs > statSync(out).mtimeMs) {
      throw new Error(`dist/src/${name}.js is missing or older than src/${name}.ts: rebuild with \`npm run build:ts\``);
    }
  }
});

interface Ran { code: number | null; stdout: string; stderr: string }

/** Runs the CLI; the endpoint variables are cleared (an empty one is unset) unless `env` sets them. */
function run(args: string[], timeoutMs = 60_000, env: NodeJS.ProcessEnv = {}): Promise<Ran> {
  return new Promise((resolve) => {
    const childEnv = { ...process.env, NO_COLOR: '1', SPLITFLEET_ETCD_ENDPOINTS: '', ETCDCTL_ENDPOINTS: '', ...env };
    const child = spawn(process.execPath, [CLI, ...args], { stdio: ['ignore', 'pipe', 'pipe'], env: childEnv });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

const KEYS = ['planned', 'completed', 'quarantined', 'lost', 'duplicates', 'cooperativeRevocations', 'forcedRevocations', 'leaderChanges', 'durationMs', 'maxImbalance'];

function summary(stdout: string): Record<string, unknown> {
  const lines = stdout.trimEnd().split('\n');
  const last = JSON.parse(lines[lines.length - 1]!) as Record<string, unknown>;
  for (const k of KEYS) expect(typeof last[k], k).toBe('number');
  return last;
}

describe('splitfleet demo on the memory store', () => {
  test('a small job: every unit processed, nothing lost, --json last', async () => {
    const r = await run(['demo', '--splits', '30', '--rate', '200', '--json']);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const s = summary(r.stdout);
    expect(s).toMatchObject({ planned: 30, completed: 30, quarantined: 0, lost: 0, verdict: 'complete', store: 'memory' });
    expect(s.processed).toBe(s.units);
    expect(r.stdout).toContain('0 lost');
    expect(r.stdout).toMatch(/progress \d+\/\d+ units/);
    // Nothing names an etcd: in memory, and the first line says so.
    expect(r.stdout.split('\n')[0]).toBe('splitfleet demo: in memory (no --etcd, SPLITFLEET_ETCD_ENDPOINTS or ETCDCTL_ENDPOINTS set)');
  });

  test.concurrent.each([
    [{ SPLITFLEET_ETCD_ENDPOINTS: '127.0.0.1:1' }, [], 'from SPLITFLEET_ETCD_ENDPOINTS (unset it to run in memory)'],
    [{ ETCDCTL_ENDPOINTS: '127.0.0.1:1' }, [], 'from ETCDCTL_ENDPOINTS (unset it to run in memory)'],
    [{ ETCDCTL_ENDPOINTS: 'http://127.0.0.1:2' }, ['--endpoints', '127.0.0.1:1'], 'from --endpoints'],
  ])('an etcd named by %j %j: runs on it, and the first line says so and why', async (env, args, why) => {
    // Nothing listens on port 1: the run fails (exit 1) once it tries the store, after the first line.
    const r = await run(['demo', '--splits', '4', ...args], 30_000, env);
    expect(r.stdout.split('\n')[0]).toBe(`splitfleet demo: on etcd http://127.0.0.1:1, ${why}`);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/127\.0\.0\.1:1\b/);
  });

  test('--layout packed: the job is created packed, and still nothing is lost', async () => {
    const r = await run(['demo', '--splits', '30', '--rate', '200', '--layout', 'packed', '--json']);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const s = summary(r.stdout);
    // `layout` is what the job's plan record says, as the demo's observer read it.
    expect(s).toMatchObject({ planned: 30, completed: 30, quarantined: 0, lost: 0, verdict: 'complete', layout: 'packed' });
    expect(s.processed).toBe(s.units);
    expect(r.stdout).toContain('30 splits (packed)');
  });

  test('a crashed worker and a joining one: still nothing lost', async () => {
    const r = await run(['demo', '--splits', '30', '--rate', '20', '--kill', '1', '--join', '1', '--json']);
    expect(r.code, r.stdout + r.stderr).toBe(0);
    const s = summary(r.stdout);
    expect(s).toMatchObject({ planned: 30, completed: 30, lost: 0, verdict: 'complete' });
    expect(r.stdout).toMatch(/crashed w\d/);
    expect(r.stdout).toMatch(/starting w5/);
    expect(r.stdout).toMatch(/claimed by w\d from w\d, resuming at/);
  });

  test('a poisoned split ends quarantined: the job stalls and the exit code says so', async () => {
    const r = await run(['demo', '--splits', '8', '--workers', '2', '--rate', '200', '--poison', '1', '--json']);
    expect(r.code).toBe(1);
    const s = summary(r.stdout);
    expect(s).toMatchObject({ planned: 8, completed: 7, quarantined: 1, lost: 0, verdict: 'stalled' });
    expect(r.stdout).toMatch(/quarantine\s+obj-7 quarantined after 4 attempts/);
  });

  test.concurrent.each([
    [['--workers', '0'], /^splitfleet demo: --workers: must be an integer 1 ≤ n ≤ 64 \(got "0"\)$/],
    [['--rate', 'fast'], /^splitfleet demo: --rate: must be a number of units per second/],
    [['--kill', '4'], /^splitfleet demo: --kill: killing 4 of 4 workers .* would leave nobody to finish the job/],
    [['--kill', '2', '--stall', '2'], /^splitfleet demo: --stall: 2 kills plus 2 stalls need 4 workers besides the leader/],
    [['--drain-deadline', '10'], /^splitfleet demo: --drain-deadline: must be an integer 1000 ≤ n/],
    [['--etcd', 'localhost'], /^splitfleet demo: --etcd: "localhost" is neither host:port nor an http:\/\/ or https:\/\/ URL \(e\.g\. 127\.0\.0\.1:2379 or https:\/\/etcd-0:2379\)$/],
    [['--etcd', 'localhost:70000'], /^splitfleet demo: --etcd: "localhost:70000" has port 70000; a port must be 1 to 65535$/],
    [['--endpoints', 'a:2379,,b:2379'], /^splitfleet demo: --endpoints: endpoint 2 of 3 is empty; separate endpoints with single commas$/],
    [['--etcd', 'a:2379', '--endpoints', 'b:2379'], /^splitfleet demo: --endpoints: and --etcd name different endpoints; give one/],
    [['--job', 'a/b'], /^splitfleet demo: --job: must be 1 to 128 characters/],
    [['--layout', 'chunked'], /^splitfleet demo: --layout: must be keys or packed \(got "chunked"\)$/],
    [['--bogus'], /^splitfleet demo: unknown option '--bogus'/],
  ])('refuses %j with exit 2 and one line', async (args, message) => {
    const r = await run(['demo', ...args]);
    expect(r.code).toBe(2);
    expect(r.stdout).toBe('');
    expect(r.stderr.trimEnd().split('\n')).toHaveLength(1);
    expect(r.stderr.trimEnd()).toMatch(message);
  });

  test.concurrent.each([
    [{ SPLITFLEET_ETCD_ENDPOINTS: 'http//x' }, /^splitfleet demo: SPLITFLEET_ETCD_ENDPOINTS: "http\/\/x" is neither host:port nor an http:\/\/ or https:\/\/ URL/],
    [{ ETCDCTL_ENDPOINTS: 'etcd:0' }, /^splitfleet demo: ETCDCTL_ENDPOINTS: "etcd:0" has port 0; a port must be 1 to 65535$/],
  ])('refuses a bad endpoint variable %j with exit 2, naming it', async (env, message) => {
    const r = await run(['demo'], 60_000, env);
    expect(r.code).toBe(2);
    expect(r.stdout).toBe('');
    expect(r.stderr.trimEnd()).toMatch(message);
  });

  test('--help names the short protocol timings', async () => {
    const r = await run(['demo', '--help']);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('leaseDurationMs 5000'); // 5 s rides out an etcd election (decision 0034)
    expect(r.stdout).toContain('drainDeadlineMs 2000');
  });
});

describe('the demo ledger', () => {
  const splits = [{ id: 'a', weight: 3, units: 3 }, { id: 'b', weight: 2, units: 2 }, { id: 'c', weight: 1, units: 1 }];

  test('counts lost units of completed splits, duplicates everywhere, and unfinished work apart', () => {
    const ledger = new Ledger(splits);
    for (const u of [1, 2, 3, 3, 3]) ledger.record('a', u);
    ledger.record('b', 1);
    ledger.record('zzz', 1); // unknown split: ignored
    ledger.record('a', 9); // past the split's end: ignored
    const status = { a: 'completed', b: 'completed', c: 'runnable' } as const;
    const check = ledger.check((id) => status[id as keyof typeof status]);
    expect(check).toEqual({ units: 6, processed: 4, lost: 1, duplicates: 2, unfinished: 1, examples: ['b#2'] });
    expect(ledger.processedOf('a')).toBe(3);
  });

  test('a quarantined split is not lost', () => {
    const ledger = new Ledger(splits);
    expect(ledger.check(() => 'quarantined').lost).toBe(0);
  });
});

describe('the live frame', () => {
  test('draws workers, split states, the job bar and recent events, cut to the width', () => {
    const records = emptyJobRecords();
    const report = jobReport(records, { root: 'splitfleet', job: 'demo', prefix: 'splitfleet/demo/', revision: 1, fingerprintHash: undefined });
    const lines = frame({
      elapsedMs: 1500, title: 'job demo', report, members: [{ instance: 'w1', state: 'running' }, { instance: 'w2', state: 'killed' }],
      lanes: 4, unitsProcessed: 5, units: 10, leaderChanges: 0, moves: 2, revocations: { cooperative: 1, forced: 0 },
      recent: [{ at: 1200, kind: 'chaos', text: 'crashed w2' }], unitWeight: 1, unitName: 'MiB',
    }, 60, paint(true));
    const plain = lines.map((l) => l.replace(/\x1b\[[0-9;?]*[A-Za-z]/g, ''));
    expect(plain.some((l) => l.startsWith(' w1'))).toBe(true);
    expect(plain.some((l) => l.includes('w2') && l.includes('dead'))).toBe(true);
    expect(plain.some((l) => l.includes(' 50%'))).toBe(true);
    expect(plain.some((l) => l.includes('crashed w2'))).toBe(true);
    for (const l of lines) expect(visible(l)).toBeLessThanOrEqual(60);
  });

  test('truncate keeps escapes and cuts visible characters', () => {
    const s = `\x1b[31m${'x'.repeat(20)}\x1b[0m`;
    expect(visible(truncate(s, 10))).toBe(10);
    expect(truncate('short', 10)).toBe('short');
  });

  test('the synthetic splits are skewed and deterministic', () => {
    const a = syntheticSplits({ splits: 50, seed: 7 });
    expect(syntheticSplits({ splits: 50, seed: 7 })).toEqual(a);
    const units = a.map((s) => s.units);
    expect(Math.max(...units)).toBeGreaterThan(4 * Math.min(...units));
  });
});
