/**
 * The etcd connection options the CLI's commands share: `--etcd URL[,URL…]`,
 * TLS (`--ca`, `--cert`, `--key`) and auth (`--user`, `--password`, or the
 * password from SPLITFLEET_ETCD_PASSWORD), turned into `EtcdStoreOptions`.
 *
 * Invariants: a refusal names the option and the rule and never quotes a
 * password or key material; nothing here prints or logs the options. `--user`
 * without TLS (no `--ca`, no https:// endpoint) is allowed (a local test
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

/** Adds the TLS and auth options to `command` (the caller adds `--etcd`, required or not). */
export function addEtcdSecurityOptions(command: Command): Command {
  return command
    .option('--ca <file>', 'CA certificate (PEM) that signed etcd\'s server certificate (TLS)')
    .option('--cert <file>', 'client certificate (PEM), when etcd requires client certificates')
    .option('--key <file>', 'client private key (PEM), with --cert')
    .option('--user <name>', 'etcd user name (auth)')
    .option('--password <password>', 'etcd password (prefer the SPLITFLEET_ETCD_PASSWORD environment variable)');
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
  if (o.etcd === undefined) throw new SplitfleetError('INVALID_INPUT', '--etcd: is required (a client URL such as http://127.0.0.1:2379)');
  const options: EtcdStoreOptions = { endpoints: parseEndpoints(o.etcd), opTimeoutMs };
  if (o.cert !== undefined && o.key === undefined) throw new SplitfleetError('INVALID_INPUT', '--cert: needs --key (the client certificate\'s private key)');
  if (o.key !== undefined && o.cert === undefined) throw new SplitfleetError('INVALID_INPUT', '--key: needs --cert (the client certificate)');
  if ((o.cert !== undefined || o.ca !== undefined)) {
    if (o.ca === undefined) throw new SplitfleetError('INVALID_INPUT', '--cert: needs --ca (the CA that signed etcd\'s server certificate)');
    options.credentials = { rootCertificate: readPem('--ca', o.ca) };
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
      warn('splitfleet: warning: --user over http:// without TLS: the password is sent in clear; use https:// endpoints with --ca\n');
    }
  } else if (o.password !== undefined) {
    throw new SplitfleetError('INVALID_INPUT', '--password: needs --user');
  }
  return options;
}
