/**
 * A password sent to etcd without TLS is said once (issue 28): the CLI's
 * `--user` with only http:// endpoints writes one stderr line (never the
 * password), and EtcdStore given `auth` that way emits one process warning
 * (SPLITFLEET_CLEARTEXT_PASSWORD). With https:// endpoints or TLS material,
 * nothing is said. Each is once per process, so the quiet cases run first.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, test, vi } from 'vitest';
import { etcdStoreOptions } from '../../../src/cli/connect.js';
import { EtcdStore } from '../../../src/store/etcd/etcd.js';
import { sendsPasswordInClear } from '../../../src/store/etcd/etcd-options.js';

const env = { SPLITFLEET_ETCD_PASSWORD: 'hunter2' };

afterEach(() => {
  vi.restoreAllMocks();
});

describe('sendsPasswordInClear', () => {
  test('auth without TLS material and no https:// endpoint', () => {
    const auth = { username: 'u', password: 'p' };
    expect(sendsPasswordInClear({ endpoints: 'http://127.0.0.1:2379', auth })).toBe(true);
    expect(sendsPasswordInClear({ endpoints: ['http://a:2379', 'http://b:2379'], auth })).toBe(true);
    expect(sendsPasswordInClear({ endpoints: ['127.0.0.1:2379'], auth })).toBe(true);
    expect(sendsPasswordInClear({ endpoints: ['https://a:2379'], auth })).toBe(false);
    expect(sendsPasswordInClear({ endpoints: ['http://a:2379'], auth, credentials: { rootCertificate: Buffer.from('x') } })).toBe(false);
    expect(sendsPasswordInClear({ endpoints: ['http://a:2379'] })).toBe(false);
  });
});

describe('the CLI (--user)', () => {
  test('says nothing over https:// or with --ca, and once over http://, without the password', () => {
    const lines: string[] = [];
    const warn = (line: string) => lines.push(line);
    const ca = join(mkdtempSync(join(tmpdir(), 'splitfleet-ca-')), 'ca.pem');
    writeFileSync(ca, 'not checked here');
    etcdStoreOptions({ etcd: 'https://127.0.0.1:2379', user: 'root' }, env, 5000, warn);
    etcdStoreOptions({ etcd: 'http://127.0.0.1:2379', user: 'root', ca }, env, 5000, warn);
    etcdStoreOptions({ etcd: 'http://127.0.0.1:2379' }, env, 5000, warn);
    expect(lines).toEqual([]);
    etcdStoreOptions({ etcd: 'http://127.0.0.1:2379', user: 'root' }, env, 5000, warn);
    etcdStoreOptions({ etcd: 'http://127.0.0.1:2379,http://127.0.0.2:2379', user: 'root' }, env, 5000, warn);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/^splitfleet: warning: --user over http:\/\/ .*the password is sent in clear/);
    expect(lines[0]).not.toContain('hunter2');
  });
});

describe('EtcdStore (auth)', () => {
  test('emits one process warning for auth over http://, none over https://', async () => {
    const emit = vi.spyOn(process, 'emitWarning').mockImplementation(() => {});
    const ours = () => emit.mock.calls.filter((c) => (c[1] as { code?: string } | undefined)?.code === 'SPLITFLEET_CLEARTEXT_PASSWORD');
    const auth = { username: 'root', password: 'hunter2' };
    const stores = [new EtcdStore({ endpoints: 'https://127.0.0.1:2379', auth }), new EtcdStore({ endpoints: 'http://127.0.0.1:2379' })];
    expect(ours()).toHaveLength(0);
    stores.push(new EtcdStore({ endpoints: 'http://127.0.0.1:2379', auth }), new EtcdStore({ endpoints: ['http://127.0.0.1:2379'], auth }));
    expect(ours()).toHaveLength(1);
    expect(String(ours()[0]![0])).toMatch(/password is sent in clear/);
    expect(String(ours()[0]![0])).not.toContain('hunter2');
    await Promise.all(stores.map((s) => s.close()));
  });
});
