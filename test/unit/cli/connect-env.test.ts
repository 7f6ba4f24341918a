/**
 * The connection options from the environment (src/cli/connect.ts): each
 * flag absent is read from SPLITFLEET_ETCD_* (then etcdctl's ETCDCTL_* for
 * the endpoints and TLS files), a flag beats both, `--cacert` is `--ca`,
 * `--root` from SPLITFLEET_ROOT, and a missing `--etcd` names both ways.
 * Parsed by commander as the CLI parses, the environment passed in.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Command } from 'commander';
import { afterAll, describe, expect, it } from 'vitest';
import { addConnectionOptions, etcdStoreOptions, fillFromEnv } from '../../../src/cli/connect.js';

const dir = mkdtempSync(join(tmpdir(), 'splitfleet-env-'));
const ca = join(dir, 'ca.pem');
const other = join(dir, 'other.pem');
writeFileSync(ca, 'CA PEM');
writeFileSync(other, 'OTHER PEM');
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Parses `args` like `splitfleet x …` and fills from `env`; returns the resolved options. */
function parse(args: string[], env: NodeJS.ProcessEnv) {
  const command = addConnectionOptions(new Command('x').option('--root <prefix>', 'root', 'splitfleet').exitOverride());
  command.parse(args, { from: 'user' });
  fillFromEnv(command, env);
  return command.opts<{ etcd?: string; ca?: string; root: string; user?: string; password?: string }>();
}

describe('connection options from the environment', () => {
  it('--etcd from SPLITFLEET_ETCD_ENDPOINTS, comma-separated', () => {
    const o = parse([], { SPLITFLEET_ETCD_ENDPOINTS: 'http://10.0.0.1:2379,http://10.0.0.2:2379' });
    expect(etcdStoreOptions(o, {}).endpoints).toEqual(['http://10.0.0.1:2379', 'http://10.0.0.2:2379']);
  });

  it('falls back to ETCDCTL_ENDPOINTS; SPLITFLEET_ETCD_ENDPOINTS comes first; the flag beats both', () => {
    expect(parse([], { ETCDCTL_ENDPOINTS: 'http://e:2379' }).etcd).toBe('http://e:2379');
    expect(parse([], { ETCDCTL_ENDPOINTS: 'http://e:2379', SPLITFLEET_ETCD_ENDPOINTS: 'http://s:2379' }).etcd).toBe('http://s:2379');
    expect(parse(['--etcd', 'http://f:2379'], { ETCDCTL_ENDPOINTS: 'http://e:2379', SPLITFLEET_ETCD_ENDPOINTS: 'http://s:2379' }).etcd).toBe('http://f:2379');
    // Empty is unset.
    expect(parse([], { SPLITFLEET_ETCD_ENDPOINTS: '', ETCDCTL_ENDPOINTS: 'http://e:2379' }).etcd).toBe('http://e:2379');
  });

  it('--cacert is --ca; the CA file, user and password from the environment', () => {
    const viaFlag = etcdStoreOptions(parse(['--etcd', 'https://e:2379', '--cacert', ca], {}), {});
    expect(viaFlag.credentials?.rootCertificate?.toString()).toBe('CA PEM');
    const o = parse([], { SPLITFLEET_ETCD_ENDPOINTS: 'https://e:2379', ETCDCTL_CACERT: ca, SPLITFLEET_ETCD_USER: 'ops', SPLITFLEET_ETCD_PASSWORD: 'pw' });
    const options = etcdStoreOptions(o, {});
    expect(options.credentials?.rootCertificate?.toString()).toBe('CA PEM');
    expect(options.auth).toEqual({ username: 'ops', password: 'pw' });
    // A flag beats the environment's CA, and --cacert beats SPLITFLEET_ETCD_CACERT too.
    expect(parse(['--cacert', other], { SPLITFLEET_ETCD_CACERT: ca }).ca).toBe(other);
    expect(parse(['--ca', other], { SPLITFLEET_ETCD_CACERT: ca }).ca).toBe(other);
    expect(() => parse(['--ca', ca, '--cacert', other], {})).toThrow(/--cacert: and --ca name different files/);
  });

  it('--root from SPLITFLEET_ROOT, the flag first, the default last', () => {
    expect(parse([], {}).root).toBe('splitfleet');
    expect(parse([], { SPLITFLEET_ROOT: 'team/a' }).root).toBe('team/a');
    expect(parse(['--root', 'x'], { SPLITFLEET_ROOT: 'team/a' }).root).toBe('x');
  });

  it('a missing --etcd says both ways to give it', () => {
    expect(() => etcdStoreOptions(parse([], {}), {})).toThrow(
      '--etcd: is required: pass --etcd URL[,URL…] or set SPLITFLEET_ETCD_ENDPOINTS (a client URL such as http://127.0.0.1:2379)',
    );
  });
});
