/**
 * The packed queue's protocol (decision 0037): page keys, the queue and
 * folded records, the packed plan record, bucketing, page cutting, the
 * folded bitset and the promotion / fold-back transactions.
 */
import { describe, expect, it } from 'vitest';
import { fc, test as fcTest } from '@fast-check/vitest';
import { bucketPrefix, foldedKey, jobPrefix, parseKey, queueKey } from '../../../src/protocol/keys.js';
import { bucketing, bucketOf, bucketsFor, cutPages, FoldedBits, jsonNumberLength, jsonStringBytes, PAGE_SPLITS } from '../../../src/protocol/packed.js';
import { utf8ByteLength } from '../../../src/protocol/keys.js';
import { foldTxn, promoteTxn, queuePagePut } from '../../../src/protocol/packed-txns.js';
import { bumpedPlanRecord, campaignTxn, seededPlanRecord } from '../../../src/protocol/leader-txns.js';
import { decodeRecord, encodeRecord, fingerprintHash } from '../../../src/protocol/records.js';
import { cmp } from '../../../src/store/store.js';

const prefix = jobPrefix('splitfleet', 'p');
const fp = fingerprintHash('fp');
const guard = cmp.modRevision(`${prefix}leader`, 7);

describe('page keys', () => {
  it('build and parse queue and folded keys, canonical decimals only', () => {
    expect(queueKey(prefix, 3, 0)).toBe('splitfleet/p/queue.3.0');
    expect(foldedKey(prefix, 65535, 12)).toBe('splitfleet/p/folded.65535.12');
    expect(bucketPrefix(prefix, 3)).toBe('splitfleet/p/queue.3.');
    expect(parseKey(prefix, 'splitfleet/p/queue.3.0')).toEqual({ kind: 'queue', bucket: 3, page: 0 });
    expect(parseKey(prefix, 'splitfleet/p/folded.1.2')).toEqual({ kind: 'folded', bucket: 1, page: 2 });
    for (const bad of ['queue.03.0', 'queue.3', 'queue.3.0.1', 'queue.-1.0', 'queue.65536.0', 'queue.a.0', 'queue.3.00', 'queue..0']) {
      expect(parseKey(prefix, `splitfleet/p/${bad}`), bad).toEqual({ kind: 'unknown' });
    }
    expect(() => queueKey(prefix, 65536, 0)).toThrow('bucket must be an integer 0 ≤ b < 65536');
  });
});

describe('records', () => {
  const page = { v: 1 as const, fp, bucket: 2, page: 0, generation: 1, ids: ['a', 'b'], weights: [1, 2], descriptors: [null, { x: 1 }] };
  it('round-trips a queue page and a folded record', () => {
    const key = queueKey(prefix, 2, 0);
    expect(decodeRecord('queue', key, encodeRecord('queue', page), fp)).toEqual(page);
    const bits = FoldedBits.empty().with([0, 9, 1023]).encode();
    expect(decodeRecord('folded', foldedKey(prefix, 2, 0), encodeRecord('folded', { v: 1, fp, bucket: 2, page: 0, bits }), fp).bits).toBe(bits);
  });
  it('refuses a page that breaks a rule, naming it', () => {
    const key = queueKey(prefix, 2, 0);
    const text = (r: object) => JSON.stringify(r);
    expect(() => decodeRecord('queue', queueKey(prefix, 2, 1), text(page), fp)).toThrow("bucket 2 and page 0 do not match the key's \"2.1\"");
    expect(() => decodeRecord('queue', key, text({ ...page, ids: ['a', 'a'] }), fp)).toThrow('ids.1: "a" appears twice in the page');
    expect(() => decodeRecord('queue', key, text({ ...page, weights: [1] }), fp)).toThrow('weights: must be an array as long as ids');
    expect(() => decodeRecord('queue', key, text({ ...page, weights: [1, -2] }), fp)).toThrow('weights.1: must be an integer');
    expect(() => decodeRecord('queue', key, text({ ...page, ids: [], weights: [], descriptors: [] }), fp)).toThrow('ids: must be an array of 1 to 1024 split ids');
    expect(() => decodeRecord('folded', foldedKey(prefix, 2, 0), text({ v: 1, fp, bucket: 2, page: 0, bits: '!!' }), fp)).toThrow('bits: must be base64 of at most 128 bytes');
  });
  it('a packed plan is schema version 2, and only a packed plan is', () => {
    const key = `${prefix}plan`;
    const packed = bumpedPlanRecord(undefined, fp, 1, 'packed');
    expect(packed).toEqual({ v: 2, fp, generation: 1, final: false, planned: 0, layout: 'packed' });
    expect(decodeRecord('plan', key, encodeRecord('plan', { ...packed, buckets: 64 }), fp)).toMatchObject({ v: 2, layout: 'packed', buckets: 64 });
    expect(() => decodeRecord('plan', key, JSON.stringify({ ...packed, v: 1 }), fp)).toThrow('a packed plan');
    expect(() => decodeRecord('plan', key, JSON.stringify({ ...packed, layout: undefined }), fp)).toThrow('a packed plan');
    expect(() => decodeRecord('plan', key, JSON.stringify({ ...packed, buckets: 48 }), fp)).toThrow('buckets: must be a power of two');
    expect(() => decodeRecord('plan', key, JSON.stringify({ ...packed, v: 3 }), fp)).toThrow('newer major version');
    // Seeding restates the plan over the record as read: its version stays.
    expect(seededPlanRecord({ ...packed, buckets: 64 }, fp, { generation: 2, final: true, planned: 5, cursor: undefined })).toMatchObject({ v: 2, layout: 'packed', buckets: 64 });
    // A job's layout is chosen once: a bump of an existing keys plan stays keys.
    const txn = campaignTxn(prefix, fp, 'w0', { rec: bumpedPlanRecord(undefined, fp, 1), modRevision: 3 }, 'L1', 'packed');
    expect(JSON.parse((txn.success[1] as { value: string }).value)).toMatchObject({ v: 1, generation: 2 });
    // A new job's campaign creates it in the layout asked for.
    expect(JSON.parse((campaignTxn(prefix, fp, 'w0', undefined, 'L1', 'packed').success[1] as { value: string }).value)).toMatchObject({ v: 2, layout: 'packed', generation: 1 });
  });
});

describe('bucketing and pages', () => {
  fcTest.prop([fc.string({ minLength: 1 }), fc.integer({ min: 0, max: 16 })])('bucketOf is in range and the same whichever way it is computed', (id, log2) => {
    const buckets = 2 ** log2;
    const b = bucketOf(fp, id, buckets);
    expect(b).toBeGreaterThanOrEqual(0);
    expect(b).toBeLessThan(buckets);
    expect(bucketing(fp, buckets)(id)).toBe(b);
  });
  it('bucketsFor aims under a page per bucket, a power of two, at most 65536', () => {
    expect(bucketsFor(0)).toBe(1);
    expect(bucketsFor(768)).toBe(1);
    expect(bucketsFor(769)).toBe(2);
    expect(bucketsFor(10_000_000)).toBe(16384);
    expect(bucketsFor(1e12)).toBe(65536);
  });
  it('cutPages keeps order, at most PAGE_SPLITS a page and under the byte limit', () => {
    const splits = Array.from({ length: 2500 }, (_, i) => ({ id: `s${i}`, weight: i, descriptor: { pad: 'x'.repeat(i % 50) } }));
    const pages = cutPages(splits, 40_000);
    expect(pages[0]![0]).toBe(0);
    expect(pages.at(-1)![1]).toBe(2500);
    for (let k = 0; k < pages.length; k++) {
      const [start, end] = pages[k]!;
      if (k > 0) expect(start).toBe(pages[k - 1]![1]);
      expect(end - start).toBeLessThanOrEqual(PAGE_SPLITS);
      const put = queuePagePut(prefix, fp, 1, { bucket: 0, page: k, splits: splits.slice(start, end) }, 40_000);
      expect(Buffer.byteLength((put as { value: string }).value)).toBeLessThanOrEqual(40_000);
    }
    expect(() => cutPages([{ id: 'big', weight: 1, descriptor: 'x'.repeat(5000) }], 4000)).toThrow('split "big"');
  });
  // Strings of every kind JSON escapes or UTF-8 widens: controls, quotes, backslashes, DEL, non-ASCII, lone surrogates.
  fcTest.prop([fc.oneof(fc.string(), fc.string({ unit: 'binary' }), fc.string({ unit: fc.constantFrom('a', '"', '\\', '\u0000', '\u007f', 'é', '\ud800', '\udc00', '日') }))])(
    'jsonStringBytes is the UTF-8 length of JSON.stringify, fast path or not',
    (s) => {
      expect(jsonStringBytes(s)).toBe(utf8ByteLength(JSON.stringify(s)));
    },
  );
  // Powers of ten and their neighbours, where a digit count changes, as well as any number.
  fcTest.prop([fc.oneof(
    fc.integer({ min: 0, max: 15 }).chain((k) => fc.constantFrom(10 ** k - 1, 10 ** k, 10 ** k + 1)),
    fc.maxSafeNat(), fc.double(), fc.integer(),
  )])('jsonNumberLength is the length of JSON.stringify', (w) => {
    expect(jsonNumberLength(w)).toBe(JSON.stringify(w).length);
  });
  fcTest.prop([fc.uniqueArray(fc.integer({ min: 0, max: PAGE_SPLITS - 1 }))])('FoldedBits round-trip, and setting bits never clears one', (slots) => {
    const half = slots.slice(0, slots.length >> 1);
    const a = FoldedBits.empty().with(half);
    const b = FoldedBits.decode(a.encode()).with(slots);
    for (let s = 0; s < PAGE_SPLITS; s++) expect(b.has(s)).toBe(slots.includes(s));
    expect(b.count).toBe(slots.length);
    expect(FoldedBits.decode(b.encode()).count).toBe(slots.length);
  });
});

describe('transactions', () => {
  it('a promotion compares leadership, each page folded revision, and the split record absent (a spec left by a deleted record is put again)', () => {
    const txn = promoteTxn(prefix, fp, guard, [{ bucket: 1, page: 0, modRevision: 0 }], [{ id: 'a', weight: 3, descriptor: { x: 1 }, generation: 2 }]);
    expect(txn.compares).toEqual([guard, cmp.modRevision(foldedKey(prefix, 1, 0), 0), cmp.absent(`${prefix}split.a`)]);
    expect(txn.success.map((o) => o.key)).toEqual([`${prefix}spec.a`, `${prefix}split.a`]);
    expect(decodeRecord('spec', `${prefix}spec.a`, (txn.success[0] as { value: string }).value, fp)).toMatchObject({ weight: 3, descriptor: { x: 1 }, generation: 2 });
    expect(decodeRecord('split', `${prefix}split.a`, (txn.success[1] as { value: string }).value, fp)).toMatchObject({ status: 'runnable', epoch: 0, owner: '' });
  });
  it('a fold-back compares the record, the lease and the page; sets the bits and deletes the keys in one revision', () => {
    const bits = FoldedBits.empty().with([4]);
    const txn = foldTxn(prefix, fp, guard, [{ bucket: 1, page: 0, modRevision: 9, bits, pageGeneration: 3 }], [{ id: 'a', splitRevision: 12 }]);
    expect(txn.compares).toEqual([guard, cmp.modRevision(foldedKey(prefix, 1, 0), 9), cmp.modRevision(`${prefix}split.a`, 12), cmp.noLease(`${prefix}lease.a`)]);
    expect(txn.success.map((o) => `${o.op} ${o.key}`)).toEqual([
      `put ${foldedKey(prefix, 1, 0)}`, `delete ${prefix}split.a`, `delete ${prefix}spec.a`, `delete ${prefix}progress.a`,
    ]);
  });
});
