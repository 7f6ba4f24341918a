/**
 * A packed fold-back that keeps results (decision 0069): the entries it keeps, how a batch is cut
 * to the request limit, the transaction's compares and ops, the `result` key and record.
 */
import { describe, expect, it } from 'vitest';
import { cutFoldBatch, foldSplitBytes, resultEntry } from '../../../src/protocol/fold-results.js';
import { MAX_FOLD_NUMBER, parseKey, resultKey } from '../../../src/protocol/keys.js';
import { FoldedBits } from '../../../src/protocol/packed.js';
import { foldTxn } from '../../../src/protocol/packed-txns.js';
import { decodeRecord, encodeRecord, SCHEMA_VERSION } from '../../../src/protocol/records.js';
import { cmp, itemBytes, OVERHEAD_PER_REQUEST } from '../../../src/store/store.js';

const P = 'splitfleet/j/';
const FP = '0123456789abcdef';
const guard = cmp.value(`${P}leader`, 'me');

describe('resultEntry', () => {
  it('keeps progress and end, null when the split committed none', () => {
    expect(resultEntry('a', undefined)).toEqual({ id: 'a', progress: null });
    expect(resultEntry('a', { v: 1, fp: FP, id: 'a', epoch: 3, progress: { n: 5 }, done: 1 })).toEqual({ id: 'a', progress: { n: 5 } });
    expect(resultEntry('a', { v: 1, fp: FP, id: 'a', epoch: 3, progress: 7, end: 9 })).toEqual({ id: 'a', progress: 7, end: 9 });
  });
});

describe('cutFoldBatch', () => {
  const entries = (n: number, size: number) => Array.from({ length: n }, (_, i) => ({ id: `s${i}`, progress: 'x'.repeat(size) }));

  it('takes every entry while the request fits', () => {
    expect(cutFoldBatch(P, entries(31, 10), 1.5 * 1024 * 1024)).toEqual({ take: 31, tooLarge: [] });
  });

  it('stops at the request limit', () => {
    const cut = cutFoldBatch(P, entries(10, 100_000), 350_000);
    expect(cut).toEqual({ take: 3, tooLarge: [] });
  });

  it('names an entry that could not fit even alone, and takes it with the batch so it is dropped', () => {
    const list = [...entries(2, 10), { id: 'huge', progress: 'x'.repeat(400_000) }, ...entries(1, 10).map((e) => ({ ...e, id: 'after' }))];
    expect(cutFoldBatch(P, list, 350_000)).toEqual({ take: 4, tooLarge: ['huge'] });
  });

  it('bounds the real request: a batch it passes passes the store\'s own count', () => {
    const list = entries(31, 60_000);
    const limit = 1.5 * 1024 * 1024;
    const { take } = cutFoldBatch(P, list, limit);
    const batch = list.slice(0, take);
    const pages = batch.map((_, i) => ({ bucket: i, page: 0, modRevision: 5, bits: FoldedBits.empty().with([0, 1, 2, 100, 1000]), pageGeneration: 2 ** 40 }));
    const txn = foldTxn(P, FP, guard, pages, batch.map((e) => ({ id: e.id, splitRevision: 4, progressRevision: 3 })), { generation: 2, seq: 9, entries: batch });
    const bytes = OVERHEAD_PER_REQUEST + [...txn.compares, ...txn.success].reduce((n, x) => n + itemBytes(x), 0);
    expect(bytes).toBeLessThanOrEqual(limit);
    expect(take).toBeLessThan(31);
    expect(foldSplitBytes(P, batch[0]!)).toBeGreaterThan(60_000);
  });
});

describe('foldTxn with results', () => {
  const pages = [{ bucket: 3, page: 1, modRevision: 7, bits: FoldedBits.empty().with([0, 4]), pageGeneration: 1 }];
  const splits = [{ id: 'a', splitRevision: 10, progressRevision: 9 }, { id: 'b', splitRevision: 11, progressRevision: 0 }];
  const entries = [{ id: 'a', progress: { n: 1 } }, { id: 'b', progress: null }];

  it('compares each progress at the revision read and the results record absent, and creates it with the deletes', () => {
    const txn = foldTxn(P, FP, guard, pages, splits, { generation: 4, seq: 2, entries });
    expect(txn.compares).toContainEqual(cmp.absent(`${P}result.4.2`));
    expect(txn.compares).toContainEqual(cmp.modRevision(`${P}progress.a`, 9));
    expect(txn.compares).toContainEqual(cmp.modRevision(`${P}progress.b`, 0));
    const put = txn.success.find((o) => o.key === `${P}result.4.2`);
    expect(put?.op).toBe('put');
    const rec = decodeRecord('result', `${P}result.4.2`, (put as { value: string }).value, FP);
    expect(rec).toEqual({ v: SCHEMA_VERSION, fp: FP, generation: 4, seq: 2, splits: entries });
    expect(txn.success.filter((o) => o.op === 'delete').map((o) => o.key)).toEqual([
      `${P}split.a`, `${P}spec.a`, `${P}progress.a`, `${P}split.b`, `${P}spec.b`, `${P}progress.b`,
    ]);
  });

  it('without results, is the fold-back it was: no progress compares, no results record', () => {
    const txn = foldTxn(P, FP, guard, pages, splits);
    expect(txn.compares.some((c) => c.key.includes('progress.'))).toBe(false);
    expect(txn.success.some((o) => o.key.includes('result.'))).toBe(false);
  });

  it('refuses results that do not name exactly the folded splits', () => {
    expect(() => foldTxn(P, FP, guard, pages, splits, { generation: 4, seq: 2, entries: entries.slice(0, 1) })).toThrow(/entries must name exactly the folded splits/);
    expect(() => foldTxn(P, FP, guard, pages, splits, { generation: 4, seq: 2, entries: [entries[0]!, { id: 'c', progress: 1 }] })).toThrow(/entries must name exactly the folded splits/);
  });
});

describe('the result key and record', () => {
  it('builds and parses result.{generation}.{seq}, and refuses other numbers', () => {
    expect(resultKey(P, 12, 0)).toBe(`${P}result.12.0`);
    expect(parseKey(P, `${P}result.12.0`)).toEqual({ kind: 'result', generation: 12, seq: 0 });
    for (const bad of ['result.1', 'result.01.2', 'result.1.2.3', 'result.a.1', `result.${MAX_FOLD_NUMBER + 1}.0`]) expect(parseKey(P, `${P}${bad}`)).toEqual({ kind: 'unknown' });
    expect(() => resultKey(P, -1, 0)).toThrow(/generation and seq must be integers/);
  });

  it('refuses a record whose numbers are not its key\'s, an empty one, and a split named twice', () => {
    const text = (r: object) => JSON.stringify({ v: 1, fp: FP, ...r });
    expect(() => decodeRecord('result', `${P}result.1.2`, text({ generation: 1, seq: 3, splits: [{ id: 'a', progress: 1 }] }), FP)).toThrow(/generation 1 and seq 3 do not match the key's "1.2"/);
    expect(() => decodeRecord('result', `${P}result.1.2`, text({ generation: 1, seq: 2, splits: [] }), FP)).toThrow(/splits: must hold at least one split/);
    expect(() => decodeRecord('result', `${P}result.1.2`, text({ generation: 1, seq: 2, splits: [{ id: 'a', progress: 1 }, { id: 'a', progress: 2 }] }), FP)).toThrow(/must name each split once/);
    expect(() => encodeRecord('result', { v: 1, fp: FP, generation: 1, seq: 2, splits: [{ id: '', progress: 1 }] })).toThrow(/INVALID_RECORD|must not be empty/);
  });
});
