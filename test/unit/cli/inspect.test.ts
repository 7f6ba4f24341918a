/**
 * `splitfleet inspect`, run as users run it (the compiled bin in a child
 * process) against throwaway etcd servers with a small job running:
 * - `--json` shows the leader, the members with their lane budgets, and
 *   each instance's assignment against what it holds; the text report says
 *   the same; `--watch --json` prints one report per refresh until SIGINT;
 * - the endpoints as etcdctl takes them: host:port in ETCDCTL_ENDPOINTS or `--endpoints`;
 * - over TLS with auth (`--ca`, `--user`, SPLITFLEET_ETCD_PASSWORD), and a
 *   wrong password refused in one line that never quotes it;
 * - a job that does not exist is exit 2 (as for the operator commands); bad options are exit 2, one line.
 * Build first: `npm run build`.
 */
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { startCoordinator, type Coordinator } from '../../../src/coordinator/coordinator.js';
import { silentLogger } from '../../../src/coordinator/log.js';
import { pacedHandler, syntheticPlanner } from '../../../src/testing/synthetic.js';
import type { JobReport } from '../../../src/inspect/report.js';
import { EtcdStore, type EtcdStoreOptions } from '../../../src/store/etcd/etcd.js';
import { startEtcd, type EtcdHandle } from '../../support/etcd.js';
import {
  clientCredentials, enableAuth, makeCertificates, removeCertificates, startTlsEtcd, type TestCertificates, type TlsEtcdHandle,
} from '../../etcd/tls-harness.js';

const root = fileURLToPath(new URL('../../../', import.meta.url));
const CLI = join(root, 'dist/src/cli/main.js');
const fast = { leaseDurationMs: 3000, opTimeoutMs: 1000, rebalanceDelayMs: 1000, drainDeadlineMs: 1000, reconcileIntervalMs: 2000 };
const PASSWORD = 'inspect-pw-5d0c8e27';

let etcd: EtcdHandle | undefined;
let certs: TestCertificates | undefined;
let secure: TlsEtcdHandle | undefined;
const fleet: Coordinator[] = [];
const stores: EtcdStore[] = [];

interface Ran { code: number | null; stdout: string; stderr: string }

/** `stopAfter`: SIGINT after this many ms, or once stdout satisfies the predicate (a loaded machine starts slowly). */
function run(args: string[], env: Record<string, string> = {}, stopAfter?: number | ((stdout: string) => boolean)): Promise<Ran> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [CLI, ...args], { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, NO_COLOR: '1', ...env } });
    let stdout = '';
    let stderr = '';
    let interrupted = false;
    child.stdout.on('data', (c: Buffer) => {
      stdout += c.toString();
      // Once: a second SIGINT, after the command's own handler is gone, would kill it outright.
      if (typeof stopAfter === 'function' && !interrupted && stopAfter(stdout)) {
        interrupted = true;
        child.kill('SIGINT');
      }
    });
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    const stop = typeof stopAfter === 'number' ? setTimeout(() => child.kill('SIGINT'), stopAfter) : undefined;
    const hard = setTimeout(() => child.kill('SIGKILL'), 30_000);
    child.on('close', (code) => {
      clearTimeout(stop);
      clearTimeout(hard);
      resolve({ code, stdout, stderr });
    });
  });
}

/** Starts `instances` coordinators on a slow synthetic job, resolving once every one holds a full set of lanes. */
async function runJob(options: EtcdStoreOptions, job: string, instances: string[], lanes: number): Promise<Coordinator[]> {
  const started: Coordinator[] = [];
  for (const instance of instances) {
    const store = new EtcdStore(options);
    stores.push(store);
    const c = await startCoordinator({
      store, job, instance, maxInFlight: lanes, logger: silentLogger, ...fast,
      // Long splits (100 to 200 s at this pace): none completes while the tests look.
      planner: syntheticPlanner({ splits: 12, seed: 3, minUnits: 100, maxUnits: 200 }),
      handler: pacedHandler({ unitMs: 1000, commitEvery: 1, onUnit: () => undefined }),
    });
    fleet.push(c);
    started.push(c);
  }
  const deadline = Date.now() + 20_000;
  while (started.some((c) => c.held.length < lanes)) {
    if (Date.now() > deadline) throw new Error(`the job did not settle: held ${started.map((c) => c.held.length).join(', ')}`);
    await new Promise((r) => setTimeout(r, 100));
  }
  return started;
}

beforeAll(async () => {
  if (!existsSync(CLI)) throw new Error(`${CLI} is missing: these tests run the compiled CLI; build it first with \`npm run build\``);
  etcd = await startEtcd();
});

afterAll(async () => {
  await Promise.all(fleet.map((c) => c.close().catch(() => undefined)));
  await Promise.all(stores.map((s) => s.close().catch(() => undefined)));
  await etcd?.stop();
  await secure?.stop();
  if (certs) removeCertificates(certs);
});

describe('splitfleet inspect on a running job', () => {
  let coordinators: Coordinator[] = [];

  beforeAll(async () => {
    coordinators = await runJob({ endpoints: etcd!.endpoint }, 'inspected', ['pod-a', 'pod-b'], 3);
  });

  test('--json: the leader, members with lane budgets, each assignment against holdings', async () => {
    const r = await run(['inspect', '--etcd', etcd!.endpoint, '--job', 'inspected', '--json']);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const lines = r.stdout.trimEnd().split('\n');
    expect(lines).toHaveLength(1);
    const report = JSON.parse(lines[0]!) as JobReport;
    const leader = coordinators.find((c) => c.isLeader)!;
    // The generation the leader itself sees: 1, or more when a loaded machine cost it a term and it won again.
    expect(report.leader).toMatchObject({ instance: leader.instance, generation: leader.view.leader!.rec.generation, live: true });
    expect(report.leader!.generation).toBeGreaterThanOrEqual(1);
    expect(report.plan).toMatchObject({ final: true, planned: 12, seeded: 12 });
    expect(report.members.map((m) => [m.instance, m.live, m.maxInFlight])).toEqual([['pod-a', true, 3], ['pod-b', true, 3]]);
    for (const c of coordinators) {
      const m = report.members.find((x) => x.instance === c.instance)!;
      expect(m.held).toEqual(c.held);
      expect(m.assigned).toEqual([...(c.view.assign?.rec.splits ?? [])]);
      expect(m.load).toBeGreaterThan(0);
    }
    expect(report.splits.total).toBe(12);
    expect(report.splits.running).toBe(6);
    expect(report.splits.queued).toBe(6);
    expect(report.progress.verdict).toBeNull();
    expect(report.problems).toEqual([]);
  });

  test('the text report says the same', async () => {
    const r = await run(['inspect', '--etcd', etcd!.endpoint, '--job', 'inspected']);
    expect(r.code).toBe(0);
    const leader = coordinators.find((c) => c.isLeader)!;
    expect(r.stdout).toContain(`leader     ${leader.instance}, generation ${leader.view.leader!.rec.generation}`);
    expect(r.stdout).toContain('plan       final, 12 planned, 12 seeded');
    expect(r.stdout).toMatch(/pod-a\s.*3\/3/);
    expect(r.stdout).toMatch(/pod-b\s.*3\/3/);
    expect(r.stdout).toContain('assignment vs holdings');
    expect(r.stdout).toContain(`    held      ${coordinators[0]!.held.join(' ')}`);
    expect(r.stdout).not.toContain('\x1b[');
  });

  test('--watch --json refreshes until interrupted', async () => {
    // Interrupted once a report shows a later revision than the first, however slowly it started: the
    // second report may follow an event the first already included (the watch starts before the first
    // read), and on a loaded machine the next progress commit can be seconds away.
    const later = (out: string): boolean => {
      const revisions = out.split('\n').slice(0, -1).map((l) => (JSON.parse(l) as JobReport).revision);
      return revisions.length >= 2 && revisions.at(-1)! > revisions[0]!;
    };
    const r = await run(['inspect', '--etcd', etcd!.endpoint, '--job', 'inspected', '--watch', '--json'], {}, later);
    expect(r.code).toBe(0);
    const reports = r.stdout.trimEnd().split('\n').map((l) => JSON.parse(l) as JobReport);
    expect(reports.length).toBeGreaterThanOrEqual(2); // progress commits every second
    expect(reports.at(-1)!.revision).toBeGreaterThan(reports[0]!.revision);
  });

  test('host:port as etcdctl takes it, in ETCDCTL_ENDPOINTS or --endpoints (decision 0050)', async () => {
    const hostPort = new URL(etcd!.endpoint).host;
    expect(hostPort).toMatch(/^[^/]+:\d+$/);
    for (const [args, env] of [[[], { SPLITFLEET_ETCD_ENDPOINTS: '', ETCDCTL_ENDPOINTS: hostPort }], [['--endpoints', hostPort], { SPLITFLEET_ETCD_ENDPOINTS: 'http://127.0.0.1:1' }]] as const) {
      const r = await run(['inspect', ...args, '--job', 'inspected', '--json'], env);
      expect(r.stderr).toBe('');
      expect(r.code).toBe(0);
      expect((JSON.parse(r.stdout) as JobReport).plan).toMatchObject({ planned: 12 });
    }
  });

  test('a job that does not exist: exit 2, one line', async () => {
    const r = await run(['inspect', '--etcd', etcd!.endpoint, '--job', 'no-such-job']);
    expect(r.code).toBe(2);
    expect(r.stdout).toBe('');
    expect(r.stderr).toBe('splitfleet inspect: no job "no-such-job" under splitfleet/: nothing is stored at splitfleet/no-such-job/ (check --job and --root)\n');
  });
});

describe('splitfleet inspect over TLS with auth', () => {
  beforeAll(async () => {
    certs = makeCertificates();
    secure = await startTlsEtcd(certs, { clientCertAuth: false });
    await enableAuth(secure, certs, { clientCertAuth: false, rootPassword: 'root-pw-1a2b3c4d', users: [{ name: 'ops', password: PASSWORD, prefix: 'splitfleet/secured/' }] });
    await runJob({ endpoints: secure.endpoint, credentials: clientCredentials(certs, false), auth: { username: 'ops', password: PASSWORD } }, 'secured', ['pod-s'], 2);
  });

  test('--ca, --user and SPLITFLEET_ETCD_PASSWORD', async () => {
    const r = await run(['inspect', '--etcd', secure!.endpoint, '--job', 'secured', '--ca', certs!.files.ca, '--user', 'ops', '--json'], {
      SPLITFLEET_ETCD_PASSWORD: PASSWORD,
    });
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const report = JSON.parse(r.stdout) as JobReport;
    expect(report.leader?.instance).toBe('pod-s');
    expect(report.members[0]).toMatchObject({ instance: 'pod-s', maxInFlight: 2 });
    expect(r.stdout).not.toContain(PASSWORD);
  });

  test('a wrong password is refused in one line that never quotes it', async () => {
    const wrong = 'not-the-password-77e1';
    const r = await run(['inspect', '--etcd', secure!.endpoint, '--job', 'secured', '--ca', certs!.files.ca, '--user', 'ops', '--password', wrong]);
    expect(r.code).toBe(1);
    expect(r.stdout).toBe('');
    expect(r.stderr.trimEnd().split('\n')).toHaveLength(1);
    expect(r.stderr).toMatch(/^splitfleet inspect: .*authenticate/);
    expect(r.stderr).not.toContain(wrong);
    expect(r.stderr).not.toContain(PASSWORD);
  });
});

describe('splitfleet inspect refuses bad options (exit 2, one line)', () => {
  test.concurrent.each([
    // Endpoints as etcdctl takes them (decision 0050): a refusal names the flag and the rule.
    [['inspect', '--job', 'x', '--etcd', 'localhost'], /^splitfleet inspect: --etcd: "localhost" is neither host:port nor an http:\/\/ or https:\/\/ URL/],
    [['inspect', '--job', 'x', '--endpoints', '127.0.0.1:99999'], /^splitfleet inspect: --endpoints: "127.0.0.1:99999" has port 99999; a port must be 1 to 65535$/],
    [['inspect', '--job', 'x', '--etcd', '127.0.0.1:1', '--endpoints', '127.0.0.1:2'], /^splitfleet inspect: --endpoints: and --etcd name different endpoints; give one/],
    [['inspect', '--etcd', 'http://127.0.0.1:1'], /^splitfleet inspect: --job: required \(only --serve lists every job\)$/],
    [['inspect', '--etcd', 'http://127.0.0.1:1', '--job', 'x', '--actions'], /^splitfleet inspect: --actions: needs --serve/],
    [['inspect', '--etcd', 'http://127.0.0.1:1', '--serve', '0', '--split', 's1'], /^splitfleet inspect: --split: cannot be combined with --serve/],
    [['inspect', '--etcd', 'http://127.0.0.1:1', '--job', 'a/b'], /^splitfleet inspect: --job: must be 1 to 128 characters of \[A-Za-z0-9._-\] \(got "a\/b"\)$/],
    [['inspect', '--etcd', 'http://127.0.0.1:1', '--job', 'x', '--root', '/abs'], /^splitfleet inspect: --root: must be '\/'-separated segments/],
    [['inspect', '--etcd', 'http://127.0.0.1:1', '--job', 'x', '--user', 'ops'], /^splitfleet inspect: --user: needs a password: set SPLITFLEET_ETCD_PASSWORD/],
    [['inspect', '--etcd', 'http://127.0.0.1:1', '--job', 'x', '--cert', '/nonexistent.pem'], /^splitfleet inspect: --cert: needs --key/],
    [['inspect', '--etcd', 'http://127.0.0.1:1', '--job', 'x', '--ca', '/nonexistent/ca.pem'], /^splitfleet inspect: --cacert: cannot read "\/nonexistent\/ca.pem" \(ENOENT\)$/],
    [['inspect', '--etcd', 'http://u:secret@127.0.0.1:1', '--job', 'x'], /^splitfleet inspect: --etcd: must not carry credentials in the URL/],
  ])('%j', async (args, message) => {
    const r = await run(args, { SPLITFLEET_ETCD_PASSWORD: '', SPLITFLEET_ETCD_ENDPOINTS: '', ETCDCTL_ENDPOINTS: '' });
    expect(r.code).toBe(2);
    expect(r.stdout).toBe('');
    expect(r.stderr.trimEnd().split('\n')).toHaveLength(1);
    expect(r.stderr.trimEnd()).toMatch(message);
    expect(r.stderr).not.toContain('secret');
  });
});
