/**
 * The connection options from the environment (src/cli/connect.ts): each
 * flag absent is read from SPLITFLEET_ETCD_* (then etcdctl's ETCDCTL_* for
 * the endpoints and TLS files), a flag beats both, `--cacert` is `--ca`,
 * `--root` from SPLITFLEET_ROOT. The endpoints as etcdctl takes them
 * (decision 0050): `host:port` or a URL in a flag or a variable,
 * `--endpoints` as `--etcd`, 127.0.0.1:2379 when nothing names one, and a
 * refusal that names the flag or variable and the rule.
 * Parsed by commander as the CLI parses, the environment passed in.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Command } from 'commander';
import { afterAll, describe, expect, it } from 'vitest';
import { addConnectionOptions, etcdStoreOptions, fillFromEnv, namedEndpoints, parseEndpoints } from '../../../src/cli/connect.js';

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
  return command.opts<{ etcd?: string; endpoints?: string; ca?: string; root: string; user?: string; password?: string }>();
}

/** The store's endpoints for `args` and `env`, as a command that connects would get them. */
const endpoints = (args: string[], env: NodeJS.ProcessEnv) => etcdStoreOptions(parse(args, env), {}).endpoints;

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

});

describe('endpoints as etcdctl takes them (decision 0050)', () => {
  it('host:port, meaning http://host:port, in either variable and in the flag', () => {
    expect(endpoints([], { ETCDCTL_ENDPOINTS: '127.0.0.1:2379' })).toEqual(['http://127.0.0.1:2379']);
    expect(endpoints([], { SPLITFLEET_ETCD_ENDPOINTS: '10.0.0.1:2379, 10.0.0.2:2379' })).toEqual(['http://10.0.0.1:2379', 'http://10.0.0.2:2379']);
    expect(endpoints(['--etcd', 'etcd-0.etcd:2379,[::1]:2379'], {})).toEqual(['http://etcd-0.etcd:2379', 'http://[::1]:2379']);
    // Mixed with URLs; a URL keeps its scheme (lower-cased: etcd3 strips only `http://` and `https://`).
    expect(endpoints(['--etcd', 'a:2379,http://b:2379'], {})).toEqual(['http://a:2379', 'http://b:2379']);
    expect(endpoints(['--etcd', 'HTTPS://etcd-0:2379'], {})).toEqual(['https://etcd-0:2379']);
    // Stored resolved: the option's value is what the store gets.
    expect(parse([], { ETCDCTL_ENDPOINTS: '127.0.0.1:2379' }).etcd).toBe('http://127.0.0.1:2379');
  });

  it('--endpoints is --etcd; both naming the same endpoints is fine, different ones are refused', () => {
    expect(endpoints(['--endpoints', '127.0.0.1:23790'], {})).toEqual(['http://127.0.0.1:23790']);
    // A flag beats the environment, whichever spelling.
    expect(endpoints(['--endpoints', 'f:2379'], { SPLITFLEET_ETCD_ENDPOINTS: 's:2379', ETCDCTL_ENDPOINTS: 'e:2379' })).toEqual(['http://f:2379']);
    expect(endpoints(['--etcd', 'a:2379,b:2379', '--endpoints', 'http://b:2379,http://a:2379'], {})).toEqual(['http://a:2379', 'http://b:2379']);
    expect(() => parse(['--etcd', 'a:2379', '--endpoints', 'b:2379'], {})).toThrow('--endpoints: and --etcd name different endpoints; give one (they mean the same)');
    // Without fillFromEnv too (a program calling etcdStoreOptions itself).
    expect(() => etcdStoreOptions({ etcd: 'a:2379', endpoints: 'b:2379' }, {})).toThrow(/^--endpoints: and --etcd name different endpoints/);
  });

  it('neither flag nor variable: etcdctl\'s default, 127.0.0.1:2379', () => {
    expect(parse([], {}).etcd).toBe('http://127.0.0.1:2379');
    expect(endpoints([], {})).toEqual(['http://127.0.0.1:2379']);
    expect(endpoints([], { SPLITFLEET_ETCD_ENDPOINTS: '', ETCDCTL_ENDPOINTS: '' })).toEqual(['http://127.0.0.1:2379']);
    expect(etcdStoreOptions({}, {}).endpoints).toEqual(['http://127.0.0.1:2379']);
    // For demo (no default) the caller decides: nothing is named.
    expect(namedEndpoints({}, {})).toBeUndefined();
    expect(namedEndpoints({}, { ETCDCTL_ENDPOINTS: 'e:2379' })).toEqual({ endpoints: ['http://e:2379'], from: 'ETCDCTL_ENDPOINTS' });
  });

  it.each([
    ['http//x', '--etcd: "http//x" is neither host:port nor an http:// or https:// URL (e.g. 127.0.0.1:2379 or https://etcd-0:2379)'],
    ['localhost', '--etcd: "localhost" is neither host:port nor an http:// or https:// URL'],
    ['etcd:port', '--etcd: "etcd:port" is neither host:port nor an http:// or https:// URL'],
    ['a:2379,,b:2379', '--etcd: endpoint 2 of 3 is empty; separate endpoints with single commas'],
    ['a:2379,', '--etcd: endpoint 2 of 2 is empty'],
    [' , ', '--etcd: must name at least one endpoint: host:port (meaning http://host:port) or an http:// or https:// URL'],
    ['etcd:65536', '--etcd: "etcd:65536" has port 65536; a port must be 1 to 65535'],
    ['etcd:0', '--etcd: "etcd:0" has port 0; a port must be 1 to 65535'],
    ['http://etcd:99999', '--etcd: "http://etcd:99999" has port 99999; a port must be 1 to 65535'],
    ['[::1]:70000', '--etcd: "[::1]:70000" has port 70000'],
    ['unix://etcd.sock', '--etcd: "unix://etcd.sock" has another scheme: give http:// or https://, or none (host:port means http://host:port)'],
    ['http://:2379', '--etcd: "http://:2379" is not a valid http:// or https:// URL (e.g. https://etcd-0:2379)'],
  ])('refuses --etcd %j, naming the flag and the rule', (value, message) => {
    expect(() => parse(['--etcd', value], {})).toThrow(message);
  });

  it('a refusal names the flag or the variable the value came from', () => {
    expect(() => parse(['--endpoints', 'http//x'], {})).toThrow(/^--endpoints: "http\/\/x" is neither host:port nor/);
    expect(() => parse([], { SPLITFLEET_ETCD_ENDPOINTS: 'http//x' })).toThrow(/^SPLITFLEET_ETCD_ENDPOINTS: "http\/\/x" is neither host:port nor/);
    expect(() => parse([], { ETCDCTL_ENDPOINTS: 'e:2379,,f:2379' })).toThrow(/^ETCDCTL_ENDPOINTS: endpoint 2 of 3 is empty/);
    // A variable of spaces is not empty, so not unset: it names nothing.
    expect(() => parse([], { SPLITFLEET_ETCD_ENDPOINTS: ' ' })).toThrow(/^SPLITFLEET_ETCD_ENDPOINTS: must name at least one endpoint/);
    // The flag beats a bad variable: the variable is not read.
    expect(parse(['--etcd', 'f:2379'], { SPLITFLEET_ETCD_ENDPOINTS: 'http//x' }).etcd).toBe('http://f:2379');
  });

  it('credentials in an endpoint are refused without quoting them', () => {
    for (const value of ['http://u:hunter2@e:2379', 'u:hunter2@e:2379']) {
      expect(() => parse(['--etcd', value], {})).toThrow('--etcd: must not carry credentials in the URL; use --user and SPLITFLEET_ETCD_PASSWORD');
      expect(() => parse([], { ETCDCTL_ENDPOINTS: value })).toThrow(/^ETCDCTL_ENDPOINTS: must not carry credentials in the URL/);
      expect(() => parseEndpoints(value)).not.toThrow(/hunter2/);
    }
  });
});
