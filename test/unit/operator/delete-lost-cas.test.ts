/**
 * `deleteJob` takes a lost compare as a value (issue 51, decision 0083): the plan record a forced
 * delete removes first is written by its leader while the job runs, so a delete that loses its
 * compare reads the plan again and deletes it at its new revision, rather than failing the command;
 * only a plan that keeps changing (ACTION_ATTEMPTS losses in a row) is `contended`. A definition
 * another hand deleted first is counted as not deleted by this call. On MemoryStore, whose `txn`
 * lets a test move a record just before a chosen transaction is applied.
 */
import { describe, expect, it } from 'vitest';
import { deleteJob } from '../../../src/operator/delete.js';
import { ACTION_ATTEMPTS } from '../../../src/operator/job.js';
import { submitJob } from '../../../src/operator/submit.js';
import { definitionKey } from '../../../src/protocol/definitions.js';
import { planKey } from '../../../src/protocol/keys.js';
import { MemoryStore } from '../../../src/store/memory.js';
import type { Txn, TxnResult } from '../../../src/store/store.js';
import { expectCode } from '../../../src/store/contract-fixture.js';
import { writeSplitFixture } from '../../support/split-fixture.js';

/** A MemoryStore that runs `before` ahead of each guarded delete of `key` (what another writer did meanwhile). */
class Interleaved extends MemoryStore {
  guardedDeletes = 0;

  constructor(private readonly key: string, private readonly before: (store: MemoryStore, n: number) => Promise<void>) {
    super();
  }

  override async txn(t: Txn): Promise<TxnResult> {
    if (t.compares.length > 0 && t.success.some((o) => o.op === 'delete' && o.key === this.key)) await this.before(this, ++this.guardedDeletes);
    return super.txn(t);
  }
}

/** The leader restating the plan record: the same value, a new modRevision. */
const rewrite = async (store: MemoryStore, key: string) => {
  const kv = (await store.get(key))!;
  await store.put(kv.key, kv.value);
};

describe('deleteJob when its compare loses', () => {
  it('deletes a plan the leader rewrote after it was read, at its new revision, and tears the job down', async () => {
    const key = planKey('splitfleet/j/');
    const store = new Interleaved(key, async (s, n) => (n === 1 ? rewrite(s, key) : undefined));
    const f = await writeSplitFixture(store, 'splitfleet', 'j');
    const keys = (await store.list(f.prefix)).kvs.length;
    const r = await deleteJob({ store, job: 'j', force: true, waitMs: 0 });
    expect(store.guardedDeletes).toBe(2); // lost once, then won at the revision read again
    expect(r.deleted).toBe(keys);
    expect((await store.list(f.prefix)).kvs).toEqual([]);
    await store.close();
  });

  it(`is contended when the plan moves before each of ${ACTION_ATTEMPTS} attempts, and deletes nothing`, async () => {
    const key = planKey('splitfleet/j/');
    const store = new Interleaved(key, (s) => rewrite(s, key));
    const f = await writeSplitFixture(store, 'splitfleet', 'j');
    const keys = (await store.list(f.prefix)).kvs.length;
    const err = await expectCode(deleteJob({ store, job: 'j', force: true, waitMs: 0 }), 'STORE_UNAVAILABLE', `deleting the plan record ${key}: the record kept changing`);
    expect((err as { retryable?: boolean }).retryable).toBe(true);
    expect(store.guardedDeletes).toBe(ACTION_ATTEMPTS);
    expect((await store.list(f.prefix)).kvs).toHaveLength(keys);
    await store.close();
  });

  it('goes on with the teardown when another hand deleted the plan first, not counting it', async () => {
    const key = planKey('splitfleet/j/');
    const store = new Interleaved(key, async (s) => void (await s.delete(key)));
    const f = await writeSplitFixture(store, 'splitfleet', 'j');
    const keys = (await store.list(f.prefix)).kvs.length;
    const r = await deleteJob({ store, job: 'j', force: true, waitMs: 0 });
    expect(r.deleted).toBe(keys - 1);
    expect((await store.list(f.prefix)).kvs).toEqual([]);
    await store.close();
  });

  it('counts a never-started job\'s definition as not deleted when another hand deleted it first', async () => {
    const key = definitionKey('splitfleet', 'queued');
    const store = new Interleaved(key, async (s) => void (await s.delete(key)));
    await submitJob({ store, job: 'queued', kind: 'k', params: null });
    expect(await deleteJob({ store, job: 'queued' })).toEqual({ deleted: 0, stopped: [], verdict: null });
    expect(await store.get(key)).toBeUndefined();
    await store.close();
  });
});
