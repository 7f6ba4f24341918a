/**
 * The CLI's conventions (decision 0035), run as users run it (the compiled
 * bin in a child process) against a throwaway etcd with a small job written
 * record by record (test/support/split-fixture.ts):
 * - `inspect --split ID` and `inspect --splits` (paged with --limit/--after,
 *   --json), with CJK ids aligned in the table;
 * - the endpoints from SPLITFLEET_ETCD_ENDPOINTS or ETCDCTL_ENDPOINTS alone;
 * - exit 2 for "no such job" on inspect as on every operator command, and
 *   for "no such split"; every command's --help states its exit codes.
 * Build first: `npm run build`.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SplitPage, SplitView } from '../../src/inspect/splits.js';
import { displayWidth } from '../../src/inspect/width.js';
import { EtcdStore } from '../../src/store/etcd/etcd.js';
import { runCli } from '../support/cli.js';
import { CJK_IDS, writeSplitFixture } from '../support/split-fixture.js';
import { startEtcd, type EtcdHandle } from '../support/etcd.js';

let etcd: EtcdHandle;
let ids: string[] = [];
/** No connection settings inherited from the shell running the tests. */
const clean = { SPLITFLEET_ETCD_ENDPOINTS: '', ETCDCTL_ENDPOINTS: '', SPLITFLEET_ROOT: '' };

beforeAll(async () => {
  etcd = await startEtcd();
  const store = new EtcdStore({ endpoints: etcd.endpoint });
  try {
    ids = (await writeSplitFixture(store, 'splitfleet', 'small', 6)).ids;
  } finally {
    await store.close();
  }
});
afterAll(async () => {
  await etcd?.stop();
});

const cli = (args: string[], env: NodeJS.ProcessEnv = {}) => runCli([...args, '--etcd', etcd.endpoint], { ...clean, ...env });

describe('inspect --split and --splits on etcd', () => {
  it('--split ID: status, owner, epoch, attempts, lease, weight, progress, age', async () => {
    const r = await cli(['inspect', '--job', 'small', '--split', 's-01']);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^split s-01 of job small under splitfleet\/ \(revision \d+\)\n/);
    expect(r.stdout).toMatch(/status\s+running\n/);
    expect(r.stdout).toMatch(/owner\s+pod-a\n/);
    expect(r.stdout).toMatch(/epoch\s+2\n/);
    expect(r.stdout).toMatch(/lease\s+held by pod-a, epoch 2\n/);
    expect(r.stdout).toMatch(/weight\s+101\n/);
    expect(r.stdout).toMatch(/progress\s+\{"offset":4096\} \(committed by epoch 2\)\n/);
    expect(r.stdout).toMatch(/age\s+\d+ revisions? since its last change/);

    const j = await cli(['inspect', '--job', 'small', '--split', 's-03', '--json']);
    expect(j.code).toBe(0);
    const { split } = JSON.parse(j.stdout) as { split: SplitView };
    expect(split).toMatchObject({ id: 's-03', status: 'quarantined', attempts: 3, reason: 'handler threw: disk full' });
  });

  it('--splits: a table in id order, paged with --limit and --after, CJK ids aligned', async () => {
    const first = await cli(['inspect', '--job', 'small', '--splits', '--limit', '5']);
    expect(first.stderr).toBe('');
    expect(first.code).toBe(0);
    expect(first.stdout).toContain('more: --after s-04');
    const second = await cli(['inspect', '--job', 'small', '--splits', '--limit', '5', '--after', 's-04']);
    expect(second.code).toBe(0);
    expect(second.stdout).not.toContain('more:');
    const rows = (text: string) => text.split('\n').filter((l) => /^ {2}\S/.test(l) && !l.trim().startsWith('split '));
    const shown = [...rows(first.stdout), ...rows(second.stdout)].map((l) => l.trim().split(/\s{2,}/)[0]);
    expect(shown).toEqual(ids);
    // Every row's second column (status) starts at the header's, the CJK and emoji rows included.
    const header = second.stdout.split('\n').find((l) => l.trim().startsWith('split '))!;
    const col = displayWidth(header.slice(0, header.indexOf('status')));
    for (const row of rows(second.stdout)) {
      const status = row.trim().split(/\s{2,}/)[1]!;
      expect(displayWidth(row.slice(0, row.indexOf(status))), row).toBe(col);
    }
    expect(second.stdout).toContain(CJK_IDS[1]);

    const j = await cli(['inspect', '--job', 'small', '--splits', '--limit', '3', '--json']);
    const page = JSON.parse(j.stdout) as SplitPage;
    expect(page.splits.map((s) => s.id)).toEqual(ids.slice(0, 3));
    expect(page.next).toBe('s-02');
    expect(page.splits[2]).toMatchObject({ id: 's-02', status: 'draining', lease: { owner: 'pod-b' } });
  });

  it('refusals are exit 2, one line: no such split, no such job, a bad --limit, --after without --splits', async () => {
    for (const [args, message] of [
      [['inspect', '--job', 'small', '--split', 'nope'], /^splitfleet inspect: --split: job "small" has no split "nope"/],
      [['inspect', '--job', 'absent', '--splits'], /^splitfleet inspect: no job "absent" under splitfleet\//],
      [['inspect', '--job', 'absent', '--split', 's-01'], /^splitfleet inspect: no job "absent"/],
      [['inspect', '--job', 'absent'], /^splitfleet inspect: no job "absent"/],
      [['inspect', '--job', 'small', '--splits', '--limit', '0'], /^splitfleet inspect: --limit: must be an integer from 1 to 1000/],
      [['inspect', '--job', 'small', '--after', 's-01'], /^splitfleet inspect: --after: needs --splits/],
      [['pause', '--job', 'absent'], /^splitfleet pause: job: no job "absent"/],
      [['retry', '--job', 'absent', '--all-quarantined'], /^splitfleet retry: job: no job "absent"/],
      [['delete', '--job', 'absent'], /^splitfleet delete: job: no job "absent"/],
    ] as const) {
      const r = await cli([...args]);
      expect(r.code, `${args.join(' ')}: ${r.stderr}`).toBe(2);
      expect(r.stdout).toBe('');
      expect(r.stderr.trimEnd().split('\n')).toHaveLength(1);
      expect(r.stderr).toMatch(message);
    }
  });
});

describe('connection from the environment', () => {
  it('SPLITFLEET_ETCD_ENDPOINTS, or ETCDCTL_ENDPOINTS, in place of --etcd', async () => {
    for (const env of [{ SPLITFLEET_ETCD_ENDPOINTS: etcd.endpoint }, { ETCDCTL_ENDPOINTS: etcd.endpoint }]) {
      const r = await runCli(['jobs', '--json'], { ...clean, ...env });
      expect(r.stderr).toBe('');
      expect(r.code).toBe(0);
      expect((JSON.parse(r.stdout) as { jobs: { job: string }[] }).jobs.map((j) => j.job)).toEqual(['small']);
    }
    // The flag beats the environment: a dead endpoint in the environment is not used.
    const r = await runCli(['inspect', '--job', 'small', '--split', 's-00', '--etcd', etcd.endpoint], { ...clean, SPLITFLEET_ETCD_ENDPOINTS: 'http://127.0.0.1:1' });
    expect(r.code).toBe(0);
  });

  it('without either, it dials etcdctl\'s default, 127.0.0.1:2379 (decision 0050)', async () => {
    // Nothing listens there in the suites (their etcd is on other ports): the failure names it.
    const r = await runCli(['jobs'], clean);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/^splitfleet jobs: .*127\.0\.0\.1:2379/);
  });
});

describe('--help', () => {
  it('every command states its exit codes, 2 covering no such job where a job is named', async () => {
    for (const command of ['inspect', 'jobs', 'retry', 'pause', 'resume', 'evacuate', 'delete', 'plan', 'demo']) {
      const r = await runCli([command, '--help'], clean);
      expect(r.code, command).toBe(0);
      expect(r.stdout, command).toMatch(/Exit codes: 0 [^;]+; 2 refused \(bad options[^)]*\); 1 /);
      if (!['jobs', 'plan', 'demo'].includes(command)) expect(r.stdout, command).toMatch(/2 refused \(bad options, no such job/);
      if (!['plan', 'demo'].includes(command)) expect(r.stdout, command).toContain('SPLITFLEET_ETCD_ENDPOINTS');
    }
    const top = await runCli(['--help'], clean);
    expect(top.stdout).toMatch(/Exit codes: 0 success; 2 refused/);
  });
});
