/**
 * Security on a real etcd, with certificates generated for the run:
 * - mutual TLS: a client certificate signed by the CA is accepted; a client
 *   without one is refused with a clear, non-retryable error;
 * - username/password over TLS: a user whose role covers `splitfleet/job-a/`
 *   runs a whole coordinated job there, and cannot read, write or watch any
 *   other job's keys (permission denied, not retryable); a wrong or missing
 *   password is refused clearly;
 * - no password, private key or other credential appears in any error
 *   (message, stack, cause chain, JSON, inspection) or in captured logs.
 */

import { inspect } from 'node:util';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { startCoordinator } from '../../src/coordinator/coordinator.js';
import type { Logger } from '../../src/coordinator/log.js';
import { syntheticPlanner } from '../../src/testing/synthetic.js';
import { SplitfleetError } from '../../src/errors.js';
import { EtcdStore, type EtcdStoreOptions } from '../../src/store/etcd/etcd.js';
import { cmp, op, type Store, type WatchEvent } from '../../src/store/store.js';
import {
  clientCredentials, enableAuth, makeCertificates, removeCertificates, startTlsEtcd,
  type TestCertificates, type TlsEtcdHandle,
} from './tls-harness.js';

const ROOT_PASSWORD = 'root-pw-3b9f1c7e';
const JOB_A = { name: 'job-a', password: 'job-a-pw-8d2e5a91', prefix: 'splitfleet/job-a/' };
const JOB_B = { name: 'job-b', password: 'job-b-pw-c41f07b3', prefix: 'splitfleet/job-b/' };
const WRONG_PASSWORD = 'wrong-pw-5e6a2d40';
const fast = { leaseDurationMs: 3000, opTimeoutMs: 1000, rebalanceDelayMs: 0, drainDeadlineMs: 1000, reconcileIntervalMs: 1000 };

let certs: TestCertificates;
let otherCerts: TestCertificates; // a second CA and client key that etcd does not trust
let mtls: TlsEtcdHandle; // client certificates required, no user auth
let secured: TlsEtcdHandle; // server TLS, user/password auth with one role per job
const stores: Store[] = [];
const logLines: string[] = [];
const log: Logger = pino({ level: 'debug' }, { write: (line: string) => void logLines.push(line) });
const failures: unknown[] = [];

beforeAll(async () => {
  certs = makeCertificates();
  otherCerts = makeCertificates();
  // allSettled: if one start fails, the other is still recorded, so afterAll stops it.
  const started = await Promise.allSettled([
    startTlsEtcd(certs, { clientCertAuth: true }).then((h) => (mtls = h)),
    startTlsEtcd(certs, { clientCertAuth: false }).then((h) => (secured = h)),
  ]);
  for (const r of started) if (r.status === 'rejected') throw r.reason;
  await enableAuth(secured, certs, { clientCertAuth: false, rootPassword: ROOT_PASSWORD, users: [JOB_A, JOB_B] });
});

afterAll(async () => {
  await Promise.all(stores.map((s) => s.close()));
  await Promise.all([mtls?.stop(), secured?.stop()]);
  if (certs) removeCertificates(certs);
  if (otherCerts) removeCertificates(otherCerts);
});

function store(options: Omit<EtcdStoreOptions, 'opTimeoutMs'>): EtcdStore {
  const s = new EtcdStore({ opTimeoutMs: 3000, ...options });
  stores.push(s);
  return s;
}

const asUser = (user: { name: string }, password: string) =>
  store({ endpoints: secured.endpoint, credentials: clientCredentials(certs, false), auth: { username: user.name, password } });

/** Awaits `promise`, expects a SplitfleetError, records it for the leak checks and returns it. */
async function refusal(promise: Promise<unknown>): Promise<SplitfleetError> {
  const err = await promise.then(() => undefined, (e: unknown) => e);
  failures.push(err);
  expect(err, 'expected a refusal').toBeInstanceOf(SplitfleetError);
  return err as SplitfleetError;
}

describe('mutual TLS', () => {
  test('a client certificate signed by the CA gets put, get, txn and watch', async () => {
    const s = store({ endpoints: mtls.endpoint, credentials: clientCredentials(certs, true) });
    const events: WatchEvent[] = [];
    const watch = s.watch('mtls/', { onEvent: (e) => events.push(e) });
    await watch.ready;
    const rev = await s.put('mtls/a', '1');
    expect((await s.get('mtls/a'))?.value).toBe('1');
    const won = await s.txn({ compares: [cmp.modRevision('mtls/a', rev)], success: [op.put('mtls/a', '2'), op.put('mtls/b', 'x')] });
    expect(won.won).toBe(true);
    expect((await s.createIfAbsent('mtls/b', 'y')).won).toBe(false);
    await expect.poll(() => events.map((e) => `${e.key}=${e.value}`)).toEqual(['mtls/a=1', 'mtls/a=2', 'mtls/b=x']);
    await watch.close();
  });

  test('a client without a certificate is refused: TLS handshake failed, not retryable', async () => {
    const err = await refusal(store({ endpoints: mtls.endpoint, credentials: clientCredentials(certs, false) }).get('mtls/a'));
    expect(err.code).toBe('STORE_UNAVAILABLE');
    expect(err.retryable).toBe(false);
    expect(err.message).toMatch(/^get 'mtls\/a': the TLS handshake with etcd failed; check credentials/);
    expect(err.message).toMatch(/bad certificate/);
  });

  test('a certificate from an untrusted CA, or a server the CA did not sign, is refused the same way', async () => {
    const foreign = { rootCertificate: certs.ca, privateKey: otherCerts.clientKey, certChain: otherCerts.clientCert };
    const errs = [
      await refusal(store({ endpoints: mtls.endpoint, credentials: foreign }).get('mtls/a')),
      await refusal(store({ endpoints: secured.endpoint, credentials: { rootCertificate: otherCerts.ca } }).get('mtls/a')),
    ];
    for (const err of errs) {
      expect(err.message).toMatch(/the TLS handshake with etcd failed/);
      expect(err.retryable).toBe(false);
    }
  });

  test('an unusable private key is an INVALID_CONFIG error at construction', () => {
    const mismatched = { rootCertificate: certs.ca, privateKey: otherCerts.clientKey, certChain: certs.clientCert };
    let err: unknown;
    try {
      store({ endpoints: mtls.endpoint, credentials: mismatched });
    } catch (e) {
      err = e;
    }
    failures.push(err);
    expect(err).toBeInstanceOf(SplitfleetError);
    expect((err as SplitfleetError).code).toBe('INVALID_CONFIG');
    expect((err as SplitfleetError).message).toMatch(/^credentials: the TLS key or certificates are unusable \(.*key values mismatch/);
  });
});

describe('username and password, one role per job prefix', () => {
  test('job-a runs a whole coordinated job under splitfleet/job-a/ to completion', async () => {
    const handler = async (split: { complete(progress?: unknown): Promise<void> }) => split.complete('done');
    const fleet = await Promise.all(
      ['w-0', 'w-1'].map((instance) =>
        startCoordinator({
          store: asUser(JOB_A, JOB_A.password), job: 'job-a', instance, maxInFlight: 4, layout: 'keys', // the split records are read below
          planner: syntheticPlanner({ splits: 5, seed: 7 }), handler, logger: log, ...fast,
        }),
      ),
    );
    expect(await Promise.all(fleet.map((c) => c.done))).toEqual(['complete', 'complete']);
    const { kvs } = await asUser(JOB_A, JOB_A.password).listAll(JOB_A.prefix);
    const splits = kvs.filter((kv) => kv.key.startsWith(`${JOB_A.prefix}split.`));
    expect(splits).toHaveLength(5);
    for (const kv of splits) expect(JSON.parse(kv.value)).toMatchObject({ status: 'completed' });
  });

  test('job-a cannot read, write or watch job-b (or any key outside its prefix): permission denied, not retryable', async () => {
    const b = asUser(JOB_B, JOB_B.password);
    await b.put('splitfleet/job-b/plan', 'job-b data');
    const a = asUser(JOB_A, JOB_A.password);
    const refused = [
      await refusal(a.get('splitfleet/job-b/plan')),
      await refusal(a.list('splitfleet/job-b/')),
      await refusal(a.list('splitfleet/')),
      await refusal(a.put('splitfleet/job-b/plan', 'overwritten by job-a')),
      await refusal(a.delete('splitfleet/job-b/plan')),
      await refusal(a.createIfAbsent('splitfleet/job-b/new', 'x')),
      await refusal(a.put('splitfleet/job-ab/x', 'a sibling prefix is not job-a/')),
      // One refused key refuses the whole transaction: job-a's own write does not land either.
      await refusal(a.txn({ compares: [], success: [op.put('splitfleet/job-a/mixed', 'x'), op.put('splitfleet/job-b/mixed', 'x')] })),
      await refusal(a.watch('splitfleet/job-b/', { onEvent: () => undefined }).ready),
    ];
    for (const err of refused) {
      expect(err.code).toBe('STORE_UNAVAILABLE');
      expect(err.retryable).toBe(false);
      expect(err.message).toMatch(/etcd denied permission: this user's roles do not grant that access to the key \(.*permission denied\)$/);
    }
    expect(refused[0]!.message).toMatch(/^get 'splitfleet\/job-b\/plan': /);
    expect(await a.get('splitfleet/job-a/mixed')).toBeUndefined();
    expect((await b.get('splitfleet/job-b/plan'))?.value).toBe('job-b data');
    expect(await b.get('splitfleet/job-b/new')).toBeUndefined();

    // A coordinator of job-b on job-a's credentials does not start; the refusal is its error.
    const start = startCoordinator({
      store: a, job: 'job-b', instance: 'w-0', planner: syntheticPlanner({ splits: 1, seed: 1 }), handler: async () => undefined, logger: log, ...fast,
    });
    expect((await refusal(start)).message).toMatch(/etcd denied permission/);
  });

  test('a wrong password, none, or a password etcd does not expect is refused clearly and is not retryable', async () => {
    const wrong = await refusal(asUser(JOB_A, WRONG_PASSWORD).get('splitfleet/job-a/plan'));
    const unknownUser = await refusal(asUser({ name: 'nobody' }, JOB_A.password).get('splitfleet/job-a/plan'));
    for (const err of [wrong, unknownUser]) {
      expect(err.message).toMatch(/etcd refused to authenticate this client; check the auth username and password.*authentication failed, invalid user ID or password/);
    }
    const anonymous = await refusal(store({ endpoints: secured.endpoint, credentials: clientCredentials(certs, false) }).get('splitfleet/job-a/plan'));
    expect(anonymous.message).toMatch(/etcd refused to authenticate this client.*user name is empty/);
    const noAuthOnEtcd = await refusal(
      store({ endpoints: mtls.endpoint, credentials: clientCredentials(certs, true), auth: { username: JOB_A.name, password: JOB_A.password } }).get('a'),
    );
    expect(noAuthOnEtcd.message).toMatch(/etcd refused to authenticate this client.*authentication is not enabled/);
    for (const err of [wrong, unknownUser, anonymous, noAuthOnEtcd]) {
      expect(err.code).toBe('STORE_UNAVAILABLE');
      expect(err.retryable).toBe(false);
    }
    const start = startCoordinator({
      store: asUser(JOB_A, WRONG_PASSWORD), job: 'job-a', instance: 'w-9', planner: syntheticPlanner({ splits: 1, seed: 1 }),
      handler: async () => undefined, logger: log, ...fast,
    });
    expect((await refusal(start)).message).toMatch(/refused to authenticate/);
  });
});

describe('credentials stay secret', () => {
  /** Every form a credential could leak in: the text, each line of a PEM body, the raw bytes as hex and as JSON. */
  function secretForms(): string[] {
    const forms = [ROOT_PASSWORD, JOB_A.password, JOB_B.password, WRONG_PASSWORD];
    for (const key of [certs.clientKey, otherCerts.clientKey]) {
      const pem = key.toString();
      forms.push(pem, ...pem.split('\n').filter((line) => line.length >= 16 && !line.startsWith('-----')));
      forms.push(key.subarray(40, 64).toString('hex'), [...key.subarray(40, 64)].join(","), inspect(key.subarray(40, 64)).slice(8, -1));
    }
    return forms;
  }

  /** JSON as a logger would write it (circular references dropped, as pino's safe stringify does). */
  function json(value: unknown): string {
    const seen = new WeakSet<object>();
    return JSON.stringify(value, (_k, v: unknown) => {
      if (typeof v !== 'object' || v === null) return v;
      if (seen.has(v)) return '[Circular]';
      seen.add(v);
      return v;
    }) ?? '';
  }

  function renderings(err: unknown): string[] {
    const out: string[] = [];
    const seen = new Set<unknown>();
    for (let e = err; e !== undefined && e !== null && !seen.has(e); e = (e as { cause?: unknown }).cause) {
      seen.add(e);
      if (e instanceof Error) out.push(e.message, e.stack ?? '');
      out.push(json(e), inspect(e, { depth: Infinity, showHidden: true }));
    }
    return out;
  }

  test('no error, log line or store inspection contains a password or private key', () => {
    // Every refusal above (TLS, wrong password, permission, bad key) was recorded; log them as an app would.
    expect(failures.length, 'the refusals of the tests above (run the whole file)').toBeGreaterThanOrEqual(15);
    for (const err of failures) log.error({ err }, 'store failure');
    expect(logLines.some((line) => line.includes('permission denied'))).toBe(true);
    const texts = [
      ...failures.flatMap(renderings),
      ...logLines,
      ...stores.flatMap((s) => [inspect(s, { depth: Infinity }), json(s)]),
    ];
    for (const secret of secretForms()) {
      const leaked = texts.find((t) => t.includes(secret));
      expect(leaked, `a credential leaked into:\n${leaked?.slice(0, 2000)}`).toBeUndefined();
    }
  });
});
