/**
 * The engine's content keys against hash.ts, and forced key collisions
 * (a seam on hash.ts `hashInto` and the engine's own, `forceEngineKeys`):
 * duplicate counting in every partition of the key space, and splits with
 * equal weight and equal key ordered by id as the reference orders them.
 *
 * Needs build/engine.wasm: built here when missing or older than assembly/.
 * A failing property prints its seed; replay with { seed, path } in fc.assert.
 */
import fc from 'fast-check';
import { beforeAll, describe, expect, it, vi } from 'vitest';
import { LAYOUT } from '../../../src/assignment/codec.js';
import { referenceAssignment } from '../../../src/assignment/reference.js';
import type { AssignmentInput, SplitInput } from '../../../src/assignment/types.js';
import { engineWord, forceEngineKeys, forgetWasmMemo, wasmAssignment } from '../../../src/assignment/wasm.js';
import { hashInto, seedState } from '../../../src/hash.js';
import { buildEngineIfStale, expectColumnarSame, expectSameAsReference, outcome, poolOf } from './wasm-compare.js';

// The seam for forced collisions: ids listed here hash to the given key.
const forcedKeys = vi.hoisted(() => new Map<string, [lo: number, hi: number]>());
vi.mock('../../../src/hash.js', async (importOriginal) => {
  const real = await importOriginal<typeof import('../../../src/hash.js')>();
  return {
    ...real,
    hashInto(state: number, id: string, into: Uint32Array, at: number): void {
      const k = forcedKeys.get(id);
      if (k === undefined) real.hashInto(state, id, into, at);
      else [into[at], into[at + 1]] = k;
    },
  };
});

beforeAll(() => {
  buildEngineIfStale();
  // The engine hashes ids itself (assembly/hash.ts): the forced keys reach it through its own seam.
  forceEngineKeys((id) => forcedKeys.get(id));
}, 120_000);

describe('content keys', () => {
  it('the engine hashes code units as hash.ts hashes strings (hashKeys = hashInto)', () => {
    fc.assert(
      fc.property(fc.string(), fc.uniqueArray(fc.string({ unit: 'binary', minLength: 1 }), { minLength: 1, maxLength: 40 }), (seed, ids) => {
        const seen = new Map<string, readonly [number, number]>();
        forceEngineKeys((id, hashed) => void seen.set(id, hashed));
        try {
          forgetWasmMemo();
          wasmAssignment({ seed, members: [{ id: 'm' }], splits: ids.map((id, i) => ({ id, weight: i })) });
        } finally {
          forceEngineKeys((id) => forcedKeys.get(id));
          forgetWasmMemo();
        }
        const want = new Uint32Array(2);
        expect([...seen.keys()].sort()).toEqual([...ids].sort());
        for (const id of ids) {
          hashInto(seedState(seed), id, want, 0);
          expect(seen.get(id)).toEqual([want[0], want[1]]);
        }
      }),
      { numRuns: 300 },
    );
  });
});

describe('content-key collisions', () => {
  it('counts every row whose key repeats an earlier one, in any partition of the key space (countDuplicateKeys)', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 3000 }),
        fc.array(fc.tuple(fc.nat(), fc.constantFrom<'same-id' | 'same-key' | 'zero-key'>('same-id', 'same-key', 'zero-key')), { maxLength: 12 }),
        fc.nat(),
        (n, extra, top) => {
          forgetWasmMemo();
          try {
            const splits: SplitInput[] = Array.from({ length: n }, (_, i) => ({ id: `u-${i}`, weight: i % 17 }));
            // Rows that repeat an earlier key: the same id again, or two new ids forced to one key
            // (in one of a few partitions: the top byte of the high word), or to the zero key.
            extra.forEach(([at, how], k) => {
              if (how === 'same-id') return void splits.push({ id: splits[at % splits.length]!.id, weight: 1 });
              const key: [number, number] = how === 'zero-key' ? [0, 0] : [at % 5, ((top + at) % 3) << 24];
              forcedKeys.set(`x-${k}`, key);
              forcedKeys.set(`y-${k}`, key);
              splits.push({ id: `y-${k}`, weight: 2 }, { id: `x-${k}`, weight: 3 });
            });
            // The model: the engine's keys (hash.ts, forced keys included), counted with a Set.
            const seen = new Set<string>();
            const key = new Uint32Array(2);
            let want = 0;
            let zeros = 0;
            for (const sp of splits) {
              hashInto(seedState('dups'), sp.id, key, 0);
              const k = `${key[0]}:${key[1]}`;
              if (k === '0:0') zeros++;
              else if (seen.has(k)) want++;
              else seen.add(k);
            }
            want += Math.max(0, zeros - 1);
            const got = outcome(() => wasmAssignment({ seed: 'dups', members: [{ id: 'm' }], splits }));
            expect(engineWord(LAYOUT.H_DUPLICATES)).toBe(want);
            expect(got.ok).toBe(extra.every(([, how]) => how !== 'same-id'));
          } finally {
            forcedKeys.clear();
            forgetWasmMemo();
          }
        },
      ),
      { numRuns: 60 },
    );
  });

  it('orders splits with equal weight and equal key by id, as the reference does', () => {
    const ids = ['d', 'b', 'e', 'a', 'c'];
    for (const id of ids) forcedKeys.set(id, [7, 9]);
    forcedKeys.set('m-z', [1, 1]);
    forcedKeys.set('m-y', [1, 1]);
    forgetWasmMemo();
    try {
      const input: AssignmentInput = {
        seed: 'collide',
        members: [{ id: 'm-z', cap: 2 }, { id: 'm-y', cap: 1 }],
        splits: [...ids.map((id) => ({ id, weight: 10 })), { id: 'f', weight: 10 }, { id: 'g', weight: 0 }, { id: 'h', weight: 1 }],
      };
      const want = referenceAssignment(input);
      expectSameAsReference(input);
      expect(engineWord(LAYOUT.H_COLLISIONS)).toBe(ids.length - 1);
      expectColumnarSame(poolOf(input));
      expect(engineWord(LAYOUT.H_COLLISIONS)).toBe(ids.length - 1);
      // Only the first three in id order fit: the collision decides who queues.
      expect(Object.values(want.assignment).flat().sort()).toEqual(['a', 'b', 'c']);
      // Equal keys of distinct ids are not duplicates; equal ids still are.
      const dup = outcome(() => wasmAssignment({ ...input, splits: [...input.splits, { id: 'a', weight: 1 }] }));
      expect(dup).toEqual(outcome(() => referenceAssignment({ ...input, splits: [...input.splits, { id: 'a', weight: 1 }] })));
      expect(dup.ok).toBe(false);
    } finally {
      forcedKeys.clear();
      forgetWasmMemo();
    }
  });
});
