/**
 * The rules of the one conversion from an etcd failure to a `SplitfleetError`
 * (STYLE rule 5): which code, whether it is retryable, and the message. Store
 * outages, deadlines and unknown etcd errors are retryable; credentials
 * (refused login, denied permission, failed TLS handshake), limits and bad
 * input are not. Messages quote etcd's message, never the credentials.
 *
 * Must not import etcd3: etcd.ts's `toStoreError` recognises etcd3's error
 * classes and names the class here as an `EtcdFailureClass`; everything else is
 * decided from that and the message, so the rules are testable without etcd.
 */
import { SplitfleetError } from '../../errors.js';
import { CompactedError } from '../store.js';

/** What etcd3's error class says about a failure; `other` when it is none of these. */
export type EtcdFailureClass = 'closed' | 'lease-invalid' | 'deadline' | 'permission-denied' | 'unauthenticated' | 'invalid-argument' | 'other';

/** The SplitfleetError for one failed etcd call (`what` names it, e.g. `get 'k'`; `revision`, a read's). */
export function etcdFailureToStoreError(e: Error, kind: EtcdFailureClass, what: string, revision?: number): SplitfleetError {
  const msg = e.message;
  const fail = (code: SplitfleetError['code'], text: string, retryable = false) =>
    new SplitfleetError(code, `${what}: ${text} (${msg})`, { retryable, cause: e });
  if (kind === 'closed') return fail('CLOSED', 'the etcd store was used after close()');
  if (msg.includes('required revision has been compacted')) return new CompactedError(revision ?? 0, e);
  if (msg.includes('request is too large') || msg.includes('too many operations in txn') || /larger than max/i.test(msg)) {
    return fail('RECORD_TOO_LARGE', 'etcd refused the request as over its size or operation limits');
  }
  if (msg.includes('database space exceeded') || msg.includes('NOSPACE')) {
    // Retryable: nothing is lost (the write did not land), and the fleet resumes by itself once
    // an operator has made room; every writer keeps retrying meanwhile.
    return fail('STORE_FULL', 'etcd is out of space (its NOSPACE alarm is raised) and refuses writes until an operator makes room: '
      + 'compact its history (etcdctl compact <revision>), defragment (etcdctl defrag), then disarm the alarm (etcdctl alarm disarm); '
      + 'see docs/operations.md', true);
  }
  if (kind === 'lease-invalid' || msg.includes('lease not found')) return fail('LEASE_LOST', 'the lease no longer exists');
  if (kind === 'deadline') return fail('TIMEOUT', 'etcd did not answer before the deadline', true);
  if (kind === 'permission-denied') {
    return fail('STORE_UNAVAILABLE', "etcd denied permission: this user's roles do not grant that access to the key");
  }
  if (kind === 'unauthenticated' || msg.includes('user name is empty') || msg.includes('authentication is not enabled')) {
    return fail('STORE_UNAVAILABLE', 'etcd refused to authenticate this client; check the auth username and password, and that etcd has auth enabled');
  }
  if (kind === 'invalid-argument' || msg.includes('future revision') || msg.includes('duplicate key')) {
    return fail('INVALID_INPUT', 'etcd refused the request as invalid');
  }
  // Certificate problems only: other TLS errors (a reset or EOF mid-handshake) happen when etcd restarts, and are retried.
  if (/certificate|alert unknown ca/i.test(msg)) {
    return fail('STORE_UNAVAILABLE', 'the TLS handshake with etcd failed; check credentials (rootCertificate, and privateKey and certChain if etcd requires client certificates)');
  }
  return fail('STORE_UNAVAILABLE', 'etcd is unreachable or failed the request', true);
}

/** The error of any call on a closed store. */
export function closedError(): SplitfleetError {
  return new SplitfleetError('CLOSED', 'the etcd store was used after close()');
}
