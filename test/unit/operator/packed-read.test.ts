/**
 * The operator's reads of a packed job's pages (src/operator/packed-read.ts): a folded record
 * counts for the page of the generation it names (decision 0091), so a record put back after its
 * page's number was given again marks none of the new page's splits completed, in `status`'s
 * counts nor in what `retry` finds of a split; one of the page's own generation, or an older
 * build's (no generation named), does.
 */
import { describe, expect, it } from 'vitest';
import { countPackedSplits, pagedState } from '../../../src/operator/packed-read.js';
import { bumpedPlanRecord } from '../../../src/protocol/leader-txns.js';
import { bucketOf, FoldedBits } from '../../../src/protocol/packed.js';
import { foldedKey, jobPrefix, queueKey } from '../../../src/protocol/keys.js';
import { encodeRecord, fingerprintHash } from '../../../src/protocol/records.js';
import { MemoryStore } from '../../../src/store/memory.js';
import { op } from '../../../src/store/store.js';

const prefix = jobPrefix('splitfleet', 'paged');
const fp = fingerprintHash('fingerprint');
const plan = { ...bumpedPlanRecord(undefined, fp, 2, 'packed'), planned: 2, final: true, buckets: 1 };
const ids = ['a', 'b'];

async function job(pageGeneration: number | undefined): Promise<MemoryStore> {
  const store = new MemoryStore();
  const folded = { v: 1, fp, bucket: 0, page: 0, bits: FoldedBits.empty().with([0]).encode(), ...(pageGeneration === undefined ? {} : { pageGeneration }) };
  await store.txn({
    compares: [],
    success: [
      op.put(`${prefix}plan`, encodeRecord('plan', plan)),
      op.put(queueKey(prefix, 0, 0), encodeRecord('queue', { v: 1, fp, bucket: 0, page: 0, generation: 2, ids, weights: [1, 1], descriptors: [null, null] })),
      op.put(foldedKey(prefix, 0, 0), encodeRecord('folded', folded)),
    ],
  });
  return store;
}

describe('packed reads and the folded record\'s page generation', () => {
  it('a record of another generation marks nothing; the page\'s own, or one naming none, marks its slot', async () => {
    expect(bucketOf(fp, 'a', 1)).toBe(0);
    for (const [pageGeneration, completed] of [[1, 0], [2, 1], [undefined, 1]] as const) {
      const store = await job(pageGeneration);
      expect(await countPackedSplits(store, prefix, fp), `pageGeneration ${pageGeneration}`).toMatchObject({ completed, runnable: 2 - completed, total: 2, problems: [] });
      expect(await pagedState(store, prefix, plan, 'a')).toBe(completed === 1 ? 'folded' : 'queued');
      expect(await pagedState(store, prefix, plan, 'b')).toBe('queued');
    }
  });
});
