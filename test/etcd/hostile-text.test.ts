/**
 * Hostile text in the store, as the CLI prints it (issue 28, decision 0030),
 * on a real etcd with the CLI from dist/: a quarantined split whose reason
 * carries a terminal-title escape, an erase-line, a carriage return, a
 * newline and a forged "splits completed" line, and a leader record whose
 * instance does the same. `inspect`, `inspect --json` and `jobs` print no
 * ESC, no BEL, no CR, no bidi override, and the forged line never starts a
 * line; `--json` still carries the raw reason. An error line quoting such an
 * id is one escaped line. `--user` over http:// warns
 * once on stderr that the password goes in clear.
 */
import { runCli } from '../support/cli.js';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import type { JobReport } from '../../src/inspect/report.js';
import { defaultFingerprint } from '../../src/config.js';
import { jobPrefix, leaderKey, planKey, specKey, splitKey } from '../../src/protocol/keys.js';
import { encodeRecord, fingerprintHash, SCHEMA_VERSION } from '../../src/protocol/records.js';
import { EtcdStore } from '../../src/store/etcd/etcd.js';
import { startEtcd, type EtcdHandle } from '../support/etcd.js';

const JOB = 'hostile';
const P = jobPrefix('splitfleet', JOB);
const base = { v: SCHEMA_VERSION, fp: fingerprintHash(defaultFingerprint('splitfleet', JOB)) };
const FORGED = 'all splits completed';
const REASON = `boom\x1b]0;pwned\x07\x1b[2K\r\n${FORGED}\n\u202eevil`;
const LEADER = `w1\x1b]0;owned\x07\r\n${FORGED}`;

let etcd: EtcdHandle;
beforeAll(async () => {
  etcd = await startEtcd();
  const store = new EtcdStore({ endpoints: etcd.endpoint });
  try {
    await store.put(planKey(P), encodeRecord('plan', { ...base, generation: 1, final: true, planned: 1 }));
    await store.put(specKey(P, 's1'), encodeRecord('spec', { ...base, id: 's1', weight: 1, descriptor: null, generation: 1 }));
    await store.put(splitKey(P, 's1'), encodeRecord('split', { ...base, id: 's1', epoch: 1, status: 'quarantined', owner: '', attempts: 4, reason: REASON }));
    // Written by hand, as `etcdctl put` would: `jobs` reads the leader's instance without decoding the record.
    await store.put(leaderKey(P), JSON.stringify({ ...base, instance: LEADER, generation: 1 }));
  } finally {
    await store.close();
  }
}, 60_000);
afterAll(async () => {
  await etcd?.stop();
});

const cli = runCli;

/** No terminal control in `text` but newlines, and no line starting with the forged text. */
function expectHarmless(text: string): void {
  expect(text).not.toContain('\x1b');
  expect(text).not.toContain('\x07');
  expect(text).not.toContain('\r');
  expect(text).not.toContain('\u202e');
  expect(text).not.toMatch(/[\0-\x09\x0b-\x1f\x7f-\x9f]/);
  for (const line of text.split('\n')) expect(line.trimStart().startsWith(FORGED), line).toBe(false);
}

describe('hostile store text through the CLI (real etcd)', () => {
  test('inspect prints the reason escaped, on its own line', async () => {
    const r = await cli(['inspect', '--etcd', etcd.endpoint, '--job', JOB]);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expectHarmless(r.stdout);
    expect(r.stdout).toContain('s1  after 4 attempts: boom\\u001b]0;pwned\\u0007\\u001b[2K\\r\\nall splits completed\\n\\u202eevil\n');
    expect(r.stdout).toContain(`leader     w1\\u001b]0;owned\\u0007\\r\\nall splits completed`);
  });

  test('inspect --json carries the raw reason, with nothing raw a terminal acts on', async () => {
    const r = await cli(['inspect', '--etcd', etcd.endpoint, '--job', JOB, '--json']);
    expect(r.code).toBe(0);
    expectHarmless(r.stdout);
    const report = JSON.parse(r.stdout) as JobReport;
    expect(report.quarantined[0]!.reason).toBe(REASON);
  });

  test('jobs prints the leader escaped', async () => {
    const r = await cli(['jobs', '--etcd', etcd.endpoint]);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expectHarmless(r.stdout);
    expect(r.stdout).toContain('w1\\u001b]0;owned\\u0007\\r\\nall splits completed');
  });

  test('an error line quoting an id with escapes stays one harmless line', async () => {
    const r = await cli(['retry', '--etcd', etcd.endpoint, '--job', JOB, '--split', `s9\x1b]0;t\x07\n${FORGED}`]);
    expect(r.code).toBe(2);
    expect(r.stdout).toBe('');
    expectHarmless(r.stderr.replace(/\n$/, ''));
    expect(r.stderr.split('\n')).toHaveLength(2);
    expect(r.stderr).toMatch(/^splitfleet retry: split "s9\\u001b\]0;t\\u0007\\nall splits completed": job "hostile" has no such split\n$/);
  });

  test('--user over http:// warns once that the password goes in clear', async () => {
    const r = await cli(['jobs', '--etcd', etcd.endpoint, '--user', 'root'], { SPLITFLEET_ETCD_PASSWORD: 'secret-pw' });
    const warnings = r.stderr.split('\n').filter((l) => l.includes('in clear'));
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatch(/^splitfleet: warning: --user over http:\/\//);
    expect(r.stderr).not.toContain('secret-pw');
  });
});
