/**
 * Claimer (coordinator/worker/claiming.ts) on a MemoryStore, with a real
 * session and view: a claim that wins opens its lane (the record and lease
 * key ours), claims ready together share one transaction, a batch that loses
 * is sent again one claim per transaction (one moved record fails them all),
 * and a claim of unknown outcome is handed to the orphan settler, not opened.
 * The order claims go in is reconcileAssignment's (the worker's test).
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { Claimer, type PreparedClaim } from '../../../../src/coordinator/worker/claiming.js';
import { SplitfleetError } from '../../../../src/errors.js';
import { initialSplitRecord } from '../../../../src/protocol/claims.js';
import { splitKey } from '../../../../src/protocol/keys.js';
import type { ReconcileDecision } from '../../../../src/protocol/reconcile.js';
import { claimTxn } from '../../../../src/protocol/txns.js';
import { counted, seedSplit, stored, workerParts, world, type World } from '../../../support/held-split.js';

type Claim = Extract<ReconcileDecision, { kind: 'claim' }>;
const create = (id: string): Claim => ({ kind: 'claim', id, claim: 'create', consumesAttempt: true });

let closing: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of closing) await c();
  closing = [];
});

async function claimer(w: World, ids: string[]) {
  for (const id of ids) await seedSplit(w, id);
  const { parts, session, view, metrics, close } = await workerParts(w);
  closing.push(close);
  await view.concern(new Set(ids));
  const won: { id: string; revision: number }[] = [];
  const uncertain: { id: string; claim: PreparedClaim | undefined }[] = [];
  let schedules = 0;
  const c = new Claimer({
    ...parts, clock: w.clock,
    hasLane: () => false,
    uncertain: (id, claim) => uncertain.push({ id, claim }),
    won: (p, revision) => won.push({ id: p.id, revision }),
    schedule: () => schedules++,
  });
  return { c, session, metrics, won, uncertain, schedules: () => schedules };
}

describe('Claimer', () => {
  it('a claim that wins: the record and the lease key are ours, and its lane opens', async () => {
    const w = world();
    const { c, session, won } = await claimer(w, ['a']);
    await c.claimAll([create('a')]);
    const s = await stored(w, 'a');
    expect(s.record).toMatchObject({ owner: 'w0', epoch: 1, attempts: 1 });
    expect(s.lease).toBe(session.leaseId);
    expect(won).toEqual([{ id: 'a', revision: s.splitRevision }]);
    expect(c.claiming.size).toBe(0);
  });

  it('claims ready together go in one transaction', async () => {
    const w = world();
    const { c, won } = await claimer(w, ['a', 'b', 'c']);
    const txn = vi.spyOn(w.store, 'txn');
    await c.claimAll([create('a'), create('b'), create('c')]);
    expect(txn).toHaveBeenCalledTimes(1);
    expect(won.map((x) => x.id)).toEqual(['a', 'b', 'c']);
    expect(new Set(won.map((x) => x.revision)).size).toBe(1);
  });

  it('a batch that loses is sent again claim by claim: the free split is won, the moved one lost', async () => {
    const w = world();
    const { c, won, metrics, schedules } = await claimer(w, ['a', 'b']);
    // A rival takes b between our observation and our send.
    const rivalLease = await w.store.grantLease(3600);
    const kv = (await w.store.get(splitKey(w.prefix, 'b')))!;
    const rival = claimTxn({ prefix: w.prefix, me: 'w1', nonce: 'r', sessionLease: rivalLease, fp: w.fp }, 'b',
      { kind: 'claim', claim: 'create', consumesAttempt: true }, { rec: initialSplitRecord('b', w.fp), modRevision: kv.modRevision }, undefined, w.config.maxAttempts);
    const real = w.store.txn.bind(w.store);
    let raced = false;
    const txn = vi.spyOn(w.store, 'txn').mockImplementation(async (t) => {
      if (!raced) {
        raced = true;
        expect((await real(rival.txn)).won).toBe(true);
      }
      return real(t);
    });
    await c.claimAll([create('a'), create('b')]);
    // The batch, then a alone, then b alone; then b, which read free and was followed quietly, is read
    // again at once (decision 0090): what beat the claim is another's write.
    const sent = txn.mock.calls.map(([t]) => (t.compares.length > 0 ? 'claim' : 'read'));
    expect(sent).toEqual(['claim', 'claim', 'claim', 'read']);
    expect(txn.mock.calls[3]![0].success.map((o) => o.key)).toContain(splitKey(w.prefix, 'b'));
    expect(won.map((x) => x.id)).toEqual(['a']);
    expect((await stored(w, 'a')).record.owner).toBe('w0');
    expect((await stored(w, 'b')).record.owner).toBe('w1');
    expect(await counted(metrics.claims, { outcome: 'lost' })).toBe(1);
    expect(schedules()).toBeGreaterThan(0); // the worker decides again on what it sees next
  });

  it('a claim of unknown outcome goes to the orphan settler with its claim; no lane opens', async () => {
    const w = world();
    const { c, won, uncertain } = await claimer(w, ['a']);
    vi.spyOn(w.store, 'txn').mockRejectedValueOnce(new SplitfleetError('TIMEOUT', 'reply lost', { retryable: true }));
    await c.claimAll([create('a')]);
    expect(won).toEqual([]);
    expect(uncertain.map((u) => [u.id, u.claim?.id])).toEqual([['a', 'a']]);
  });
});
