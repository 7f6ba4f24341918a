/**
 * The etcd connection options the CLI's commands share: `--etcd URL[,URL…]`,
 * TLS (`--cacert` or `--ca`, `--cert`, `--key`) and auth (`--user`,
 * `--password`), each also read from the environment when the flag is absent
 * (CONNECTION_ENV: SPLITFLEET_ETCD_*, then etcdctl's ETCDCTL_* for the
 * endpoints and TLS files; decision 0035), turned into `EtcdStoreOptions`.
 * A flag beats the environment; `--root` likewise from SPLITFLEET_ROOT.
 *
 * Invariants: a refusal names the option and the rule and never quotes a
 * password or key material; nothing here prints or logs the options. `--user`
 * without TLS (no `--cacert`, no https:// endpoint) is allowed (a local test
 * etcd) but said once on stderr: the password then crosses the network as
 * it is.
 */
import { readFileSync } from 'node:fs';
import type { Command } from 'commander';
import { sendsPasswordInClear, type EtcdStoreOptions } from '../etcd.js';
import { SplitfleetError } from '../index.js';

export interface EtcdCliOptions {
  etcd?: string;
  ca?: string;
  cert?: string;
  key?: string;
  user?: string;
  password?: string;
}

/**
 * Where each connection option is read from when its flag is absent, first set (non-empty) wins.
 * etcdctl's variables come second, so a shell set up for etcdctl works as it is; ETCDCTL_USER is
 * not read: it is `name:password` in one variable, which this CLI keeps apart (decision 0035).
 */
export const CONNECTION_ENV = {
  etcd: ['SPLITFLEET_ETCD_ENDPOINTS', 'ETCDCTL_ENDPOINTS'],
  ca: ['SPLITFLEET_ETCD_CACERT', 'ETCDCTL_CACERT'],
  cert: ['SPLITFLEET_ETCD_CERT', 'ETCDCTL_CERT'],
  key: ['SPLITFLEET_ETCD_KEY', 'ETCDCTL_KEY'],
  user: ['SPLITFLEET_ETCD_USER'],
  password: ['SPLITFLEET_ETCD_PASSWORD'],
  root: ['SPLITFLEET_ROOT'],
} as const satisfies Record<keyof EtcdCliOptions | 'root', readonly string[]>;

const envNote = (name: keyof typeof CONNECTION_ENV) => ` (env ${CONNECTION_ENV[name].join(', then ')})`;

/** Adds `--etcd` and the TLS and auth options to `command`, each with its environment fallback. */
export function addConnectionOptions(command: Command): Command {
  command.option('--etcd <urls>', `etcd client URL(s), comma-separated${envNote('etcd')}`);
  return addEtcdSecurityOptions(command);
}

/** Adds the TLS and auth options to `command`, each with its environment fallback. */
export function addEtcdSecurityOptions(command: Command): Command {
  command
    .option('--cacert <file>', `CA certificate (PEM) that signed etcd's server certificate (TLS; etcdctl's spelling)${envNote('ca')}`)
    .option('--ca <file>', 'the same as --cacert')
    .option('--cert <file>', `client certificate (PEM), when etcd requires client certificates${envNote('cert')}`)
    .option('--key <file>', `client private key (PEM), with --cert${envNote('key')}`)
    .option('--user <name>', `etcd user name (auth)${envNote('user')}`)
    .option('--password <password>', `etcd password; prefer the environment, other users can see a flag in the process list${envNote('password')}`);
  // Filled in before the action runs, so every command sees one resolved set of options.
  return command.hook('preAction', (_parent, action) => fillFromEnv(action, process.env));
}

/**
 * Sets each connection option (and `--root`) that was not given as a flag from the environment
 * (CONNECTION_ENV), recording the source as 'env' as commander's own `.env()` does. `--cacert` is
 * folded into `ca`; both given and different is refused.
 */
export function fillFromEnv(command: Command, env: NodeJS.ProcessEnv): void {
  const o = command.opts<EtcdCliOptions & { cacert?: string; root?: string }>();
  if (o.cacert !== undefined) {
    if (o.ca !== undefined && o.ca !== o.cacert) throw new SplitfleetError('INVALID_INPUT', '--cacert: and --ca name different files; give one');
    command.setOptionValueWithSource('ca', o.cacert, 'cli');
  }
  for (const [name, vars] of Object.entries(CONNECTION_ENV)) {
    const source = command.getOptionValueSource(name);
    const known = command.options.some((opt) => opt.attributeName() === name);
    if (!known || (source !== undefined && source !== 'default') || (name === 'ca' && o.cacert !== undefined)) continue;
    const value = vars.map((v) => env[v]).find((v) => v !== undefined && v !== '');
    if (value !== undefined) command.setOptionValueWithSource(name, value, 'env');
  }
}

/** Splits `--etcd` into client URLs, refusing anything that is not one. */
export function parseEndpoints(value: string): string[] {
  const urls = value.split(',').map((s) => s.trim()).filter((s) => s !== '');
  if (urls.length === 0) throw new SplitfleetError('INVALID_INPUT', '--etcd: must name at least one client URL, e.g. http://127.0.0.1:2379');
  for (const url of urls) {
    let parsed: URL;
    try {
      parsed = new URL(url);
    } catch {
      throw new SplitfleetError('INVALID_INPUT', `--etcd: ${JSON.stringify(url)} is not a URL; give a client URL such as http://127.0.0.1:2379`);
    }
    if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') {
      throw new SplitfleetError('INVALID_INPUT', `--etcd: ${JSON.stringify(url)} must be an http:// or https:// client URL`);
    }
    if (parsed.username !== '' || parsed.password !== '') {
      throw new SplitfleetError('INVALID_INPUT', '--etcd: must not carry credentials in the URL; use --user and SPLITFLEET_ETCD_PASSWORD');
    }
  }
  return urls;
}

function readPem(option: string, file: string): Buffer {
  try {
    return readFileSync(file);
  } catch (e) {
    const code = (e as { code?: unknown }).code;
    throw new SplitfleetError('INVALID_INPUT', `${option}: cannot read ${JSON.stringify(file)}${typeof code === 'string' ? ` (${code})` : ''}`);
  }
}

let warnedCleartext = false;

/** The store options for the parsed CLI options; `warn` gets the one line about a password sent in clear. */
export function etcdStoreOptions(
  o: EtcdCliOptions, env: NodeJS.ProcessEnv = process.env, opTimeoutMs = 5000, warn: (line: string) => void = (line) => process.stderr.write(line),
): EtcdStoreOptions {
  if (o.etcd === undefined) {
    throw new SplitfleetError('INVALID_INPUT', '--etcd: is required: pass --etcd URL[,URL…] or set SPLITFLEET_ETCD_ENDPOINTS (a client URL such as http://127.0.0.1:2379)');
  }
  const options: EtcdStoreOptions = { endpoints: parseEndpoints(o.etcd), opTimeoutMs };
  if (o.cert !== undefined && o.key === undefined) throw new SplitfleetError('INVALID_INPUT', '--cert: needs --key (the client certificate\'s private key)');
  if (o.key !== undefined && o.cert === undefined) throw new SplitfleetError('INVALID_INPUT', '--key: needs --cert (the client certificate)');
  if ((o.cert !== undefined || o.ca !== undefined)) {
    if (o.ca === undefined) throw new SplitfleetError('INVALID_INPUT', '--cert: needs --cacert (the CA that signed etcd\'s server certificate)');
    options.credentials = { rootCertificate: readPem('--cacert', o.ca) };
    if (o.cert !== undefined && o.key !== undefined) {
      options.credentials.certChain = readPem('--cert', o.cert);
      options.credentials.privateKey = readPem('--key', o.key);
    }
  }
  const password = o.password ?? env.SPLITFLEET_ETCD_PASSWORD;
  if (o.user !== undefined) {
    if (password === undefined || password === '') {
      throw new SplitfleetError('INVALID_INPUT', '--user: needs a password: set SPLITFLEET_ETCD_PASSWORD (or pass --password)');
    }
    options.auth = { username: o.user, password };
    if (sendsPasswordInClear(options) && !warnedCleartext) {
      warnedCleartext = true;
      warn('splitfleet: warning: --user over http:// without TLS: the password is sent in clear; use https:// endpoints with --cacert\n');
    }
  } else if (o.password !== undefined) {
    throw new SplitfleetError('INVALID_INPUT', '--password: needs --user');
  }
  return options;
}
