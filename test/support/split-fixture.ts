/**
 * A small job written record by record (no fleet), for the per-split view's
 * tests: ids `s-00` … `s-NN` and two CJK ids, one split running on `pod-a`
 * with committed progress, one draining (held by `pod-b`, assigned to
 * `pod-a`), one quarantined with a reason, one retrying (`notBefore` ahead),
 * the rest queued. The same writes on any Store.
 */
import { assignKey, leaseKey, planKey, progressKey, specKey, splitKey } from '../../src/protocol/keys.js';
import { encodeRecord, fingerprintHash, SCHEMA_VERSION } from '../../src/protocol/records.js';
import type { Store } from '../../src/store/store.js';

export const CJK_IDS = ['数据-東京', '💾データ'];

export interface SplitFixture { prefix: string; ids: string[]; fp: string; retryAt: number }

export async function writeSplitFixture(store: Store, root: string, job: string, plain = 6, now = Date.now()): Promise<SplitFixture> {
  const prefix = `${root}/${job}/`;
  const fp = fingerprintHash(`fixture:${job}`);
  const v = SCHEMA_VERSION;
  const ids = [...Array.from({ length: plain }, (_, i) => `s-${String(i).padStart(2, '0')}`), ...CJK_IDS];
  const retryAt = now + 3_600_000;
  await store.put(planKey(prefix), encodeRecord('plan', { v, fp, generation: 1, final: true, planned: ids.length }));
  for (const [i, id] of ids.entries()) {
    await store.put(specKey(prefix, id), encodeRecord('spec', { v, fp, id, weight: 100 + i, descriptor: { n: i }, generation: 1 }));
    const base = { v, fp, id, epoch: 0, status: 'runnable' as const, owner: '', attempts: 0 };
    let rec: typeof base & { reason?: string; notBefore?: number } = base;
    if (id === 's-01' || id === CJK_IDS[0]) rec = { ...base, epoch: 2, owner: 'pod-a', attempts: 1 };
    if (id === 's-02') rec = { ...base, epoch: 1, owner: 'pod-b', attempts: 1 };
    if (id === 's-03') rec = { ...base, epoch: 3, status: 'quarantined' as never, attempts: 3, reason: 'handler threw: disk full' };
    if (id === 's-04') rec = { ...base, epoch: 1, attempts: 1, reason: 'timeout talking to S3', notBefore: retryAt };
    await store.put(splitKey(prefix, id), encodeRecord('split', rec as never));
  }
  await store.put(progressKey(prefix, 's-01'), encodeRecord('progress', { v, fp, id: 's-01', epoch: 2, progress: { offset: 4096 } }));
  await store.put(progressKey(prefix, CJK_IDS[0]!), encodeRecord('progress', { v, fp, id: CJK_IDS[0]!, epoch: 2, progress: { offset: 7 } }));
  await store.put(leaseKey(prefix, 's-01'), encodeRecord('lease', { v, fp, id: 's-01', owner: 'pod-a', nonce: 'n-a', epoch: 2 }));
  await store.put(leaseKey(prefix, CJK_IDS[0]!), encodeRecord('lease', { v, fp, id: CJK_IDS[0]!, owner: 'pod-a', nonce: 'n-a', epoch: 2 }));
  await store.put(leaseKey(prefix, 's-02'), encodeRecord('lease', { v, fp, id: 's-02', owner: 'pod-b', nonce: 'n-b', epoch: 1 }));
  await store.put(assignKey(prefix, 'pod-a'), encodeRecord('assign', { v, fp, instance: 'pod-a', generation: 1, splits: ['s-01', 's-02', CJK_IDS[0]!].sort() }));
  await store.put(assignKey(prefix, 'pod-b'), encodeRecord('assign', { v, fp, instance: 'pod-b', generation: 1, splits: [] }));
  return { prefix, ids, fp, retryAt };
}
