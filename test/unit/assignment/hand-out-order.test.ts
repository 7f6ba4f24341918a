/**
 * The hand-out order and the weight rule (src/assignment/hand-out-order.ts) hold both engines:
 * a lone member with k lanes and nothing owned is handed the first k splits of the pool in that
 * order (its fill is heaviest first and no improving move exists with one member), by the
 * reference engine and the WebAssembly engine alike; the queue's head is held to it by
 * queue-head.test.ts through test/support/pool-order.ts.
 */
import { describe, expect, it } from 'vitest';
import { fc, test } from '@fast-check/vitest';
import { effectiveWeight, handOutOrder, handOutOrderByKey } from '../../../src/assignment/hand-out-order.js';
import { desiredAssignment } from '../../../src/assignment/engine.js';
import { hashInto, seedState } from '../../../src/hash.js';
import { jsStringOrder } from '../../../src/js-order.js';

describe('the weight rule and the order', () => {
  it('weight 0 counts as 1, any other weight as itself', () => {
    expect([0, 1, 2, 2 ** 40].map(effectiveWeight)).toEqual([1, 1, 2, 2 ** 40]);
  });
  it('heaviest first, then the key (hi before lo), then the id', () => {
    expect(handOutOrderByKey(5, 9, 9, 4, 0, 0)).toBeLessThan(0);
    expect(handOutOrderByKey(0, 1, 0, 1, 1, 0)).toBe(0);
    expect(handOutOrderByKey(3, 1, 9, 3, 2, 0)).toBeLessThan(0);
    expect(handOutOrderByKey(3, 1, 1, 3, 1, 2)).toBeLessThan(0);
    expect(handOutOrder({ weight: 3, hi: 1, lo: 1, id: 'b' }, { weight: 3, hi: 1, lo: 1, id: 'a' })).toBeGreaterThan(0);
  });
});

/** The first k ids of `splits` in hand-out order, keyed as the engines key them (seed `seed`). */
function firstInOrder(seed: string, splits: readonly { id: string; weight: number }[], k: number): string[] {
  const state = seedState(seed);
  const key = new Uint32Array(2);
  const keyed = splits.map((s) => {
    hashInto(state, s.id, key, 0);
    return { id: s.id, weight: s.weight, lo: key[0]!, hi: key[1]! };
  });
  return keyed.sort(handOutOrder).slice(0, k).map((s) => s.id).sort(jsStringOrder);
}

const pools = fc.uniqueArray(fc.record({ id: fc.stringMatching(/^[a-z0-9]{1,6}$/), weight: fc.oneof(fc.constantFrom(0, 1, 2, 3), fc.integer({ min: 0, max: 1e6 })) }), {
  minLength: 1, maxLength: 60, selector: (s) => s.id,
});

describe('both engines hand out in that order', () => {
  for (const engine of ['reference', 'wasm'] as const) {
    test.prop([pools, fc.integer({ min: 1, max: 20 }), fc.string({ minLength: 1, maxLength: 8 })])(`${engine}: a lone member's k lanes take the first k splits`, (splits, k, seed) => {
      const out = desiredAssignment({ seed, members: [{ id: 'm', cap: k }], splits }, { engine });
      expect(out.assignment.m).toEqual(firstInOrder(seed, splits, k));
    });
  }
});
