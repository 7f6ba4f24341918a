/**
 * The etcd connection options the CLI's commands share: the endpoints
 * (`--etcd` or etcdctl's `--endpoints`, each `host:port` or an http(s) URL,
 * comma-separated; decision 0050), TLS (`--cacert` or `--ca`, `--cert`,
 * `--key`) and auth (`--user`, `--password`), each also read from the
 * environment when the flag is absent (CONNECTION_ENV: SPLITFLEET_ETCD_*,
 * then etcdctl's ETCDCTL_* for the endpoints and TLS files; decision 0035),
 * turned into `EtcdStoreOptions`. A flag beats the environment; with neither,
 * the endpoint is etcdctl's default, 127.0.0.1:2379. `--root` likewise from
 * SPLITFLEET_ROOT.
 *
 * Invariants: a refusal names the option (or the variable it came from) and
 * the rule and never quotes a password or key material; nothing here prints
 * or logs the options. Endpoints leave here as URLs (`host:port` becomes
 * `http://host:port`). `--user` without TLS (no `--cacert`, no https://
 * endpoint) is allowed (a local test etcd) but said once on stderr: the
 * password then crosses the network as it is.
 */
import { readFileSync } from 'node:fs';
import type { Command } from 'commander';
import { sendsPasswordInClear, type EtcdStoreOptions } from '../etcd.js';
import { openStore, SplitfleetError, type Store } from '../index.js';

export interface EtcdCliOptions {
  etcd?: string;
  /** etcdctl's spelling of `--etcd`; both given must name the same endpoints. */
  endpoints?: string;
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
} as const satisfies Record<Exclude<keyof EtcdCliOptions, 'endpoints'> | 'root', readonly string[]>;

/** etcdctl's default endpoint: where the commands that connect go when no flag or variable names one. */
export const DEFAULT_ENDPOINT = '127.0.0.1:2379';

/** The rule an endpoint follows, as a refusal states it. */
const ENDPOINT_RULE = 'host:port (meaning http://host:port) or an http:// or https:// URL, e.g. 127.0.0.1:2379 or https://etcd-0:2379';

const envNote = (name: keyof typeof CONNECTION_ENV) => `env ${CONNECTION_ENV[name].join(', then ')}`;

/** Adds `--etcd` (and `--endpoints`), the TLS and the auth options to `command`, each with its environment fallback. */
export function addConnectionOptions(command: Command): Command {
  command
    .option('--etcd <endpoints>', `etcd endpoints, comma-separated, each host:port or an http(s):// URL (${envNote('etcd')}; default ${DEFAULT_ENDPOINT})`)
    .option('--endpoints <endpoints>', 'the same as --etcd (etcdctl\'s spelling)');
  return addEtcdSecurityOptions(command);
}

/** Adds the TLS and auth options to `command`, each with its environment fallback. */
export function addEtcdSecurityOptions(command: Command): Command {
  command
    .option('--cacert <file>', `CA certificate (PEM) that signed etcd's server certificate (TLS; etcdctl's spelling) (${envNote('ca')})`)
    .option('--ca <file>', 'the same as --cacert')
    .option('--cert <file>', `client certificate (PEM), when etcd requires client certificates (${envNote('cert')})`)
    .option('--key <file>', `client private key (PEM), with --cert (${envNote('key')})`)
    .option('--user <name>', `etcd user name (auth) (${envNote('user')})`)
    .option('--password <password>', `etcd password; prefer the environment, other users can see a flag in the process list (${envNote('password')})`);
  // Filled in before the action runs, so every command sees one resolved set of options.
  return command.hook('preAction', (_parent, action) => fillFromEnv(action, process.env));
}

/**
 * Sets each connection option (and `--root`) that was not given as a flag from the environment
 * (CONNECTION_ENV), recording the source as 'env' as commander's own `.env()` does. `--cacert` is
 * folded into `ca` and `--endpoints` into `etcd`; both of a pair given and different is refused.
 * The endpoints are checked here, where it is known which flag or variable named them, and stored
 * as URLs; with neither, `etcd` is DEFAULT_ENDPOINT (source 'default').
 */
export function fillFromEnv(command: Command, env: NodeJS.ProcessEnv): void {
  const o = command.opts<EtcdCliOptions & { cacert?: string; root?: string }>();
  if (o.cacert !== undefined) {
    if (o.ca !== undefined && o.ca !== o.cacert) throw new SplitfleetError('INVALID_INPUT', '--cacert: and --ca name different files; give one');
    command.setOptionValueWithSource('ca', o.cacert, 'cli');
  }
  const known = (name: string) => command.options.some((opt) => opt.attributeName() === name);
  if (known('etcd')) {
    const named = namedEndpoints({ etcd: command.getOptionValueSource('etcd') === 'cli' ? o.etcd : undefined, endpoints: o.endpoints }, env);
    const source = named === undefined ? 'default' : named.from.startsWith('--') ? 'cli' : 'env';
    command.setOptionValueWithSource('etcd', (named?.endpoints ?? parseEndpoints(DEFAULT_ENDPOINT)).join(','), source);
  }
  for (const [name, vars] of Object.entries(CONNECTION_ENV)) {
    if (name === 'etcd' || !known(name)) continue;
    const source = command.getOptionValueSource(name);
    if ((source !== undefined && source !== 'default') || (name === 'ca' && o.cacert !== undefined)) continue;
    const value = vars.map((v) => env[v]).find((v) => v !== undefined && v !== '');
    if (value !== undefined) command.setOptionValueWithSource(name, value, 'env');
  }
}

/** Endpoints as URLs, and the flag or variable that named them (what a refusal or a note names). */
export interface NamedEndpoints {
  endpoints: string[];
  from: '--etcd' | '--endpoints' | (typeof CONNECTION_ENV.etcd)[number];
}

/**
 * The endpoints the flags name (`--etcd`, or `--endpoints`: both given must name the same ones),
 * else the first non-empty variable of CONNECTION_ENV.etcd; undefined when none does (the caller
 * decides: DEFAULT_ENDPOINT for the commands that connect, the memory store for `demo`).
 */
export function namedEndpoints(o: Pick<EtcdCliOptions, 'etcd' | 'endpoints'>, env: NodeJS.ProcessEnv): NamedEndpoints | undefined {
  const etcd = o.etcd === undefined ? undefined : parseEndpoints(o.etcd, '--etcd');
  const alias = o.endpoints === undefined ? undefined : parseEndpoints(o.endpoints, '--endpoints');
  if (etcd !== undefined && alias !== undefined && [...etcd].sort().join(',') !== [...alias].sort().join(',')) {
    throw new SplitfleetError('INVALID_INPUT', '--endpoints: and --etcd name different endpoints; give one (they mean the same)');
  }
  if (etcd !== undefined) return { endpoints: etcd, from: '--etcd' };
  if (alias !== undefined) return { endpoints: alias, from: '--endpoints' };
  for (const name of CONNECTION_ENV.etcd) {
    const value = env[name];
    if (value !== undefined && value !== '') return { endpoints: parseEndpoints(value, name), from: name };
  }
  return undefined;
}

/**
 * Splits an endpoints value into client URLs, as etcdctl takes them: each entry `host:port`
 * (becomes `http://host:port`) or an http:// or https:// URL (kept, its scheme in lower case).
 * Refuses, naming `from` (the flag or variable) and the rule: no entry, an empty entry, anything
 * else, another scheme, a port outside 1 to 65535, credentials in the entry (never quoted).
 */
export function parseEndpoints(value: string, from = '--etcd'): string[] {
  const entries = value.split(',').map((s) => s.trim());
  if (entries.every((s) => s === '')) throw new SplitfleetError('INVALID_INPUT', `${from}: must name at least one endpoint: ${ENDPOINT_RULE}`);
  return entries.map((entry, i) => {
    if (entry === '') {
      throw new SplitfleetError('INVALID_INPUT', `${from}: endpoint ${i + 1} of ${entries.length} is empty; separate endpoints with single commas`);
    }
    return endpointUrl(entry, from);
  });
}

/** One endpoint as a URL (see parseEndpoints). */
function endpointUrl(entry: string, from: string): string {
  const refuse = (rule: string) => new SplitfleetError('INVALID_INPUT', `${from}: ${JSON.stringify(entry)} ${rule}`);
  // Before anything quotes the entry: `user:password@host` must never be echoed.
  if (entry.includes('@')) throw new SplitfleetError('INVALID_INPUT', `${from}: must not carry credentials in the URL; use --user and SPLITFLEET_ETCD_PASSWORD`);
  const scheme = /^([A-Za-z][A-Za-z0-9+.-]*):\/\//.exec(entry);
  const rest = scheme === null ? entry : entry.slice(scheme[0].length);
  // The authority's port, if any (an IPv6 host is bracketed, so its colons do not count).
  const port = /^(?:\[[^\]]*\]|[^/?#:[\]]*):(\d+)(?:[/?#]|$)/.exec(rest)?.[1];
  if (port !== undefined && !(Number(port) >= 1 && Number(port) <= 65535)) throw refuse(`has port ${port}; a port must be 1 to 65535`);
  if (scheme === null) {
    if (!/^(?:\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9._-]+):\d+$/.test(entry) || !URL.canParse(`http://${entry}`)) {
      throw refuse('is neither host:port nor an http:// or https:// URL (e.g. 127.0.0.1:2379 or https://etcd-0:2379)');
    }
    return `http://${entry}`;
  }
  const protocol = scheme[1]!.toLowerCase();
  if (protocol !== 'http' && protocol !== 'https') throw refuse('has another scheme: give http:// or https://, or none (host:port means http://host:port)');
  if (!URL.canParse(entry) || new URL(entry).hostname === '') throw refuse('is not a valid http:// or https:// URL (e.g. https://etcd-0:2379)');
  // etcd3 strips only a lower-case `http://` or `https://` before dialling.
  return `${protocol}://${rest}`;
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
  // The environment was read by fillFromEnv; here only the flags, then etcdctl's default.
  const endpoints = namedEndpoints(o, {})?.endpoints ?? parseEndpoints(DEFAULT_ENDPOINT);
  const options: EtcdStoreOptions = { endpoints, opTimeoutMs };
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

/**
 * The store a command works on: the one place the CLI opens one, through the library's `openStore`
 * (a second backend is a `StoreSpec` there and its flags here, not a change to each command;
 * docs/backends.md).
 */
export function connectStore(o: EtcdCliOptions): Promise<Store> {
  return openStore({ backend: 'etcd', ...etcdStoreOptions(o) });
}
