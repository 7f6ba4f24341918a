/**
 * A packed job's result records in fold order (fold-order.ts, decision 0069): unpadded keys sort
 * `result.10.0` before `result.2.0` and `result.2.10` before `result.2.2`; the walk visits them by
 * generation, then seq, numerically, from any fold on, passing over keys of no canonical form.
 */
import { describe, expect, it } from 'vitest';
import { nextOfLength, resultsInFoldOrder, type Fold } from '../../../src/operator/fold-order.js';
import { MemoryStore } from '../../../src/store/memory.js';

const prefix = 'splitfleet/j/';

async function walk(store: MemoryStore, from?: Fold): Promise<string[]> {
  const out: string[] = [];
  for await (const { fold, kv } of resultsInFoldOrder(store, prefix, from)) {
    expect(kv.key).toBe(`${prefix}result.${fold.generation}.${fold.seq}`);
    out.push(`${fold.generation}.${fold.seq}`);
  }
  return out;
}

describe('result records in fold order', () => {
  it('nextOfLength: the next candidate of d digits past a key', () => {
    expect(nextOfLength('10', 1)).toBe(2);
    expect(nextOfLength('9', 1)).toBeUndefined();
    expect(nextOfLength('2', 2)).toBe(20);
    expect(nextOfLength('2.7', 2)).toBe(20);
    expect(nextOfLength('2a', 2)).toBe(30);
    expect(nextOfLength('9a', 2)).toBeUndefined();
    expect(nextOfLength('01', 1)).toBe(1);
    expect(nextOfLength('199', 2)).toBe(20);
    expect(nextOfLength('99', 2)).toBeUndefined();
    expect(nextOfLength('x', 1)).toBeUndefined();
  });

  it('visits generations, then seqs, numerically, from any fold on', async () => {
    const store = new MemoryStore();
    const folds: string[] = [];
    for (const g of [0, 1, 2, 9, 10, 11, 20, 100, 1234567890]) {
      for (const s of [0, 1, 2, 3, 9, 10, 11, 19, 20, 99, 100, 101, 1000]) folds.push(`${g}.${s}`);
    }
    for (const f of folds) await store.put(`${prefix}result.${f}`, '{}');
    // Keys of no canonical form, a nested job's, and other kinds: never visited, never in the way.
    for (const k of ['result.01.0', 'result.2.01', 'result.2.x', 'result.2', 'result.x.1', 'result.2.3.4', 'result.2.3/x', 'queue.0.0', 'spec.a', 'result.10.0/plan']) {
      await store.put(`${prefix}${k}`, '{}');
    }
    await store.put('splitfleet/j/result.2.7/result.2.8', '{}');
    expect(await walk(store)).toEqual(folds);
    expect(await walk(store, { generation: 2, seq: 10 })).toEqual(folds.slice(folds.indexOf('2.10')));
    expect(await walk(store, { generation: 10, seq: 0 })).toEqual(folds.slice(folds.indexOf('10.0')));
    // A fold that is not there: the walk starts at the next one.
    expect(await walk(store, { generation: 3, seq: 5 })).toEqual(folds.slice(folds.indexOf('9.0')));
    expect(await walk(store, { generation: 2, seq: 1001 })).toEqual(folds.slice(folds.indexOf('9.0')));
    expect(await walk(new MemoryStore())).toEqual([]);
  });

  it('reads lazily: a caller that stops early has read a bounded number of records', async () => {
    const store = new MemoryStore();
    for (let s = 0; s < 300; s++) await store.put(`${prefix}result.5.${s}`, '{}');
    let listed = 0;
    const list = store.list.bind(store);
    store.list = async (p, o) => {
      const page = await list(p, o);
      listed += page.kvs.length;
      return page;
    };
    const seen: number[] = [];
    for await (const { fold } of resultsInFoldOrder(store, prefix, { generation: 5, seq: 150 })) {
      seen.push(fold.seq);
      if (seen.length === 20) break;
    }
    expect(seen).toEqual(Array.from({ length: 20 }, (_, i) => 150 + i));
    expect(listed).toBeLessThan(60);
  });
});
