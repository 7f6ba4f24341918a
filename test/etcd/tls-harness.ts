/**
 * A throwaway etcd with TLS, and optionally client-certificate auth and
 * etcd's user/role auth, for the security tests. Certificates (a CA, a
 * server certificate for 127.0.0.1/localhost, a client certificate) are made
 * with the `openssl` CLI into a temp dir at test time; nothing is checked in.
 *
 * Invariants: the server listens on https loopback ports only; `stop()`
 * kills it and deletes its data dir; `removeCertificates` deletes the
 * certificates. Auth is set up through etcd3's admin API (no `etcdctl`
 * needed), which is why this test helper imports etcd3 directly. A missing
 * `etcd` or `openssl` binary is a loud failure, never a skip.
 * It must not be used by tests that do not need TLS: `test/support/etcd.ts`
 * is that one, and this builds on its launcher.
 */

import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Etcd3, Range } from 'etcd3';
import { etcdBinary, freePort, singleMemberArgs, spawnEtcd, waitForEtcd } from '../support/etcd.js';

/** PEM material for the tests, plus the files etcd reads. */
export interface TestCertificates {
  dir: string;
  ca: Buffer;
  clientCert: Buffer;
  clientKey: Buffer;
  files: { ca: string; serverCert: string; serverKey: string };
}

/** One user limited to one key prefix (readwrite), through a role of the same name. */
export interface PrefixUser {
  name: string;
  password: string;
  prefix: string;
}

/** A running TLS etcd under test control. */
export interface TlsEtcdHandle {
  /** `https://127.0.0.1:<port>` */
  endpoint: string;
  /** SIGKILL the server, delete its data dir. */
  stop(): Promise<void>;
}

function openssl(args: string[], cwd: string): void {
  try {
    execFileSync('openssl', args, { cwd, stdio: ['ignore', 'ignore', 'pipe'] });
  } catch (e) {
    const err = e as NodeJS.ErrnoException & { stderr?: Buffer };
    if (err.code === 'ENOENT') {
      throw new Error("security tests need the 'openssl' binary on PATH (apt-get install openssl); they are never skipped");
    }
    throw new Error(`openssl ${args[0]} failed: ${err.stderr?.toString() ?? err.message}`);
  }
}

/** A CA, a server certificate (SAN 127.0.0.1, localhost) and a client certificate (CN `clientName`), P-256, valid one day. */
export function makeCertificates(clientName = 'splitfleet-client'): TestCertificates {
  const dir = mkdtempSync(join(tmpdir(), 'splitfleet-tls-'));
  try {
    const key = (name: string) => openssl(['genpkey', '-algorithm', 'EC', '-pkeyopt', 'ec_paramgen_curve:P-256', '-out', name], dir);
    key('ca.key');
    openssl(['req', '-x509', '-new', '-key', 'ca.key', '-days', '1', '-subj', '/CN=splitfleet-test-ca', '-out', 'ca.crt'], dir);
    const leaf = (name: string, cn: string, ext: string) => {
      key(`${name}.key`);
      openssl(['req', '-new', '-key', `${name}.key`, '-subj', `/CN=${cn}`, '-out', `${name}.csr`], dir);
      writeFileSync(join(dir, `${name}.ext`), ext);
      openssl(['x509', '-req', '-in', `${name}.csr`, '-CA', 'ca.crt', '-CAkey', 'ca.key', '-CAcreateserial', '-days', '1',
        '-extfile', `${name}.ext`, '-out', `${name}.crt`], dir);
    };
    // etcd's gRPC gateway dials the server with its own certificate, so the server one is also a client certificate.
    leaf('server', 'localhost', 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth,clientAuth\n');
    leaf('client', clientName, 'extendedKeyUsage=clientAuth\n');
  } catch (e) {
    rmSync(dir, { recursive: true, force: true });
    throw e;
  }
  const read = (name: string) => readFileSync(join(dir, name));
  return {
    dir,
    ca: read('ca.crt'),
    clientCert: read('client.crt'),
    clientKey: read('client.key'),
    files: { ca: join(dir, 'ca.crt'), serverCert: join(dir, 'server.crt'), serverKey: join(dir, 'server.key') },
  };
}

/** Deletes the certificates' temp dir. */
export function removeCertificates(certs: TestCertificates): void {
  rmSync(certs.dir, { recursive: true, force: true });
}

/** The TLS options a test client uses: the CA, plus the client certificate and key when `withClientCert`. */
export function clientCredentials(certs: TestCertificates, withClientCert: boolean) {
  return withClientCert
    ? { rootCertificate: certs.ca, privateKey: certs.clientKey, certChain: certs.clientCert }
    : { rootCertificate: certs.ca };
}

/**
 * Starts etcd on https loopback ports with the server certificate; with
 * `clientCertAuth`, every client must present a certificate signed by the CA.
 * Resolves once it answers a read over TLS.
 */
export async function startTlsEtcd(certs: TestCertificates, options: { clientCertAuth: boolean }): Promise<TlsEtcdHandle> {
  etcdBinary(); // a missing binary fails here, before a data dir exists
  const dataDir = mkdtempSync(join(tmpdir(), 'splitfleet-etcd-tls-'));
  const endpoint = `https://127.0.0.1:${await freePort()}`;
  const peer = `http://127.0.0.1:${await freePort()}`;
  const args = singleMemberArgs(dataDir, endpoint, peer, [
    '--cert-file', certs.files.serverCert,
    '--key-file', certs.files.serverKey,
    // etcd requires a client certificate whenever it is given a trusted CA, so the CA goes with --client-cert-auth only.
    ...(options.clientCertAuth ? ['--client-cert-auth', '--trusted-ca-file', certs.files.ca] : []),
  ]);
  const proc = spawnEtcd(args);
  const exited = new Promise<void>((resolve) => proc.child.once('exit', () => resolve()));
  const stop = async () => {
    if (proc.child.exitCode === null && proc.child.signalCode === null) {
      proc.child.kill('SIGKILL');
      await exited;
    }
    rmSync(dataDir, { recursive: true, force: true });
  };
  try {
    await waitForEtcd(endpoint, 20_000, () =>
      proc.child.exitCode !== null || proc.child.signalCode !== null
        ? `etcd exited during start-up (code ${proc.child.exitCode}):\n${proc.log()}`
        : undefined, { credentials: clientCredentials(certs, options.clientCertAuth), detail: proc.log });
  } catch (e) {
    await stop();
    throw e;
  }
  return { endpoint, stop };
}

/**
 * Turns on etcd's auth: creates `root` (role root) with `rootPassword`, and
 * for each user a role of the same name with readwrite on its prefix only,
 * then enables auth. Afterwards every request needs a user.
 */
export async function enableAuth(
  etcd: TlsEtcdHandle,
  certs: TestCertificates,
  options: { clientCertAuth: boolean; rootPassword: string; users: PrefixUser[] },
): Promise<void> {
  const admin = new Etcd3({ hosts: etcd.endpoint, credentials: clientCredentials(certs, options.clientCertAuth) });
  try {
    await admin.user('root').create(options.rootPassword);
    await admin.role('root').create();
    await admin.user('root').addRole('root');
    for (const u of options.users) {
      await admin.user(u.name).create(u.password);
      await admin.role(u.name).create();
      await admin.role(u.name).grant({ permission: 'Readwrite', range: Range.prefix(u.prefix) });
      await admin.user(u.name).addRole(u.name);
    }
    await admin.auth.authEnable();
  } finally {
    admin.close();
  }
}
