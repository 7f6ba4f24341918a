/**
 * Jobs written by hand on a MemoryStore for the dashboard's job list tests:
 * - `alpha`, started as startCoordinator starts a job (no definition): a
 *   final plan of 3, its leader and one member, one split completed, one
 *   quarantined with a reason, one runnable;
 * - `beta`, submitted (kind `export`) and not yet planned by any fleet;
 * - `gamma`, submitted (kind `report`), planned under its definition's
 *   fingerprint, and paused.
 */
import { defaultFingerprint } from '../../src/config.js';
import { submitJob } from '../../src/operator/submit.js';
import { controlKey, jobPrefix, leaderKey, planKey, specKey, splitKey, workerKey } from '../../src/protocol/keys.js';
import { definitionFingerprint } from '../../src/protocol/definitions.js';
import { encodeRecord, fingerprintHash, SCHEMA_VERSION } from '../../src/protocol/records.js';
import type { MemoryStore } from '../../src/store/memory.js';

export const ROOT = 'splitfleet';

/** What a job's records carry: its schema version and fingerprint hash. */
export function stampOf(job: string, fingerprint = defaultFingerprint(ROOT, job)) {
  return { v: SCHEMA_VERSION, fp: fingerprintHash(fingerprint) };
}

/** Writes a split record of `job` (alpha's fingerprint unless told). */
export async function putSplit(
  store: MemoryStore, job: string, id: string, status: 'runnable' | 'completed' | 'quarantined', reason?: string, stamp = stampOf(job),
): Promise<void> {
  const P = jobPrefix(ROOT, job);
  await store.put(specKey(P, id), encodeRecord('spec', { ...stamp, id, weight: 10, descriptor: null, generation: 1 }));
  await store.put(splitKey(P, id), encodeRecord('split', {
    ...stamp, id, epoch: 1, status, owner: '', attempts: status === 'quarantined' ? 3 : 0, ...(reason !== undefined ? { reason } : {}),
  }));
}

export async function writeJobs(store: MemoryStore): Promise<void> {
  const A = jobPrefix(ROOT, 'alpha');
  const a = stampOf('alpha');
  await store.put(planKey(A), encodeRecord('plan', { ...a, generation: 1, final: true, planned: 3 }));
  await store.put(leaderKey(A), encodeRecord('leader', { ...a, instance: 'w1', generation: 1 }));
  await store.put(workerKey(A, 'w1'), encodeRecord('worker', { ...a, instance: 'w1', maxInFlight: 2, nonce: 'n1' }));
  await putSplit(store, 'alpha', 's1', 'completed');
  await putSplit(store, 'alpha', 's2', 'quarantined', 'poisoned: bad row 7');
  await putSplit(store, 'alpha', 's3', 'runnable');

  await submitJob({ store, root: ROOT, job: 'beta', kind: 'export', params: { table: 'orders' } });

  await submitJob({ store, root: ROOT, job: 'gamma', kind: 'report', params: { month: '2024-06' } });
  const G = jobPrefix(ROOT, 'gamma');
  const g = stampOf('gamma', definitionFingerprint(ROOT, 'gamma', 'report', { month: '2024-06' }));
  await store.put(planKey(G), encodeRecord('plan', { ...g, generation: 1, final: true, planned: 2 }));
  await putSplit(store, 'gamma', 'g1', 'runnable', undefined, g);
  await putSplit(store, 'gamma', 'g2', 'runnable', undefined, g);
  await store.put(controlKey(G), encodeRecord('control', { ...g, paused: true, evacuated: [] }));
}
