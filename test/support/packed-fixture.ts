/**
 * A small packed job (decision 0037) written record by record (no fleet), for
 * the operator tools' tests: 40 splits `p-00` … `p-39` (weight 10 + i,
 * descriptor `{ n: i }`) in 4 buckets, cut into queue pages of at most 4
 * splits (so every bucket has several pages); slot 0 of every page folded
 * back as completed; and three promoted splits with records of their own:
 * one running on `pod-a` (lease, committed progress, assignment), one
 * quarantined, one completed but not yet folded. The rest are queued. The
 * same writes on any Store.
 */
import { assignKey, foldedKey, leaseKey, planKey, progressKey, queueKey, specKey, splitKey } from '../../src/protocol/keys.js';
import { bucketOf, FoldedBits } from '../../src/protocol/packed.js';
import { encodeRecord, fingerprintHash, PACKED_PLAN_VERSION, SCHEMA_VERSION, type SplitRecord } from '../../src/protocol/records.js';
import type { Store } from '../../src/store/store.js';

export const PACKED_BUCKETS = 4;
/** Splits per page in the fixture (a real page holds up to 1,024). */
const PER_PAGE = 4;

export interface PackedFixture {
  prefix: string;
  fp: string;
  /** Every id, in page order: queue key order, then slot order. */
  pageOrder: string[];
  /** The expected state of every split, as inspect reports it. */
  state: Map<string, 'queued' | 'running' | 'completed' | 'quarantined'>;
  folded: Set<string>;
  running: string;
  quarantined: string;
  completedKeyed: string;
}

export async function writePackedFixture(store: Store, root: string, job: string): Promise<PackedFixture> {
  const prefix = `${root}/${job}/`;
  const fp = fingerprintHash(`fixture:${job}`);
  const v = SCHEMA_VERSION;
  const ids = Array.from({ length: 40 }, (_, i) => `p-${String(i).padStart(2, '0')}`);
  const weight = (id: string) => 10 + Number(id.slice(2));
  await store.put(planKey(prefix), encodeRecord('plan', {
    v: PACKED_PLAN_VERSION, fp, generation: 1, final: true, planned: ids.length, layout: 'packed', buckets: PACKED_BUCKETS,
  }));
  const byBucket = new Map<number, string[]>();
  for (const id of ids) {
    const b = bucketOf(fp, id, PACKED_BUCKETS);
    byBucket.set(b, [...(byBucket.get(b) ?? []), id]);
  }
  const pages: { bucket: number; page: number; ids: string[] }[] = [];
  for (const [bucket, members] of byBucket) {
    for (let p = 0; p * PER_PAGE < members.length; p++) pages.push({ bucket, page: p, ids: members.slice(p * PER_PAGE, (p + 1) * PER_PAGE) });
  }
  const folded = new Set<string>();
  for (const p of pages) {
    await store.put(queueKey(prefix, p.bucket, p.page), encodeRecord('queue', {
      v, fp, bucket: p.bucket, page: p.page, generation: 1, ids: p.ids, weights: p.ids.map(weight), descriptors: p.ids.map((id) => ({ n: Number(id.slice(2)) })),
    }));
    await store.put(foldedKey(prefix, p.bucket, p.page), encodeRecord('folded', { v, fp, bucket: p.bucket, page: p.page, bits: FoldedBits.empty().with([0]).encode() }));
    folded.add(p.ids[0]!);
  }
  const keyOrder = (p: { bucket: number; page: number }) => queueKey(prefix, p.bucket, p.page);
  const pageOrder = [...pages].sort((a, b) => (keyOrder(a) < keyOrder(b) ? -1 : 1)).flatMap((p) => p.ids);
  // Promoted splits: at slot 1 of three different pages, so none is folded.
  const [running, quarantined, completedKeyed] = pages.filter((p) => p.ids.length >= 2).slice(0, 3).map((p) => p.ids[1]!);
  const promote = async (id: string, rec: Partial<SplitRecord>) => {
    await store.put(specKey(prefix, id), encodeRecord('spec', { v, fp, id, weight: weight(id), descriptor: { n: Number(id.slice(2)) }, generation: 1 }));
    await store.put(splitKey(prefix, id), encodeRecord('split', { v, fp, id, epoch: 0, status: 'runnable', owner: '', attempts: 0, ...rec }));
  };
  await promote(running!, { epoch: 1, owner: 'pod-a', attempts: 1 });
  await store.put(leaseKey(prefix, running!), encodeRecord('lease', { v, fp, id: running!, owner: 'pod-a', nonce: 'n-a', epoch: 1 }));
  await store.put(progressKey(prefix, running!), encodeRecord('progress', { v, fp, id: running!, epoch: 1, progress: { offset: 77 } }));
  await store.put(assignKey(prefix, 'pod-a'), encodeRecord('assign', { v, fp, instance: 'pod-a', generation: 1, splits: [running!] }));
  await promote(quarantined!, { epoch: 3, status: 'quarantined', attempts: 3, reason: 'handler threw: corrupt input' });
  await promote(completedKeyed!, { epoch: 1, status: 'completed' });
  const state: PackedFixture['state'] = new Map(ids.map((id) => [id, folded.has(id) ? 'completed' : 'queued']));
  state.set(running!, 'running');
  state.set(quarantined!, 'quarantined');
  state.set(completedKeyed!, 'completed');
  return { prefix, fp, pageOrder, state, folded, running: running!, quarantined: quarantined!, completedKeyed: completedKeyed! };
}
