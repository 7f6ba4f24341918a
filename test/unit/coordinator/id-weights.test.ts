/**
 * IdWeights (coordinator/leader/id-weights.ts), the halves of splits whose
 * record is not seen yet, against the Map it replaced: any sequence of sets,
 * deletes, reserves and clears leaves both answering alike, keys in the
 * order rows were first taken; and a listing's reserve makes room for the
 * planned splits in SplitColumns without changing what it answers.
 */
import { fc, test } from '@fast-check/vitest';
import { describe, expect, it } from 'vitest';
import { IdWeights } from '../../../src/coordinator/leader/id-weights.js';
import { SplitColumns } from '../../../src/coordinator/leader/split-columns.js';

type Op = { kind: 'set'; id: string; w: number } | { kind: 'delete'; id: string } | { kind: 'reserve'; n: number } | { kind: 'clear' };
const id = fc.constantFrom('a', 'b', 'c', 'd', 'é', '日本', 'x/y', 'a'.repeat(40));
const opArb: fc.Arbitrary<Op> = fc.oneof(
  { weight: 5, arbitrary: fc.record({ kind: fc.constant('set' as const), id, w: fc.nat() }) },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant('delete' as const), id }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('reserve' as const), n: fc.nat(100) }) },
  { weight: 1, arbitrary: fc.constant({ kind: 'clear' as const }) },
);

describe('IdWeights', () => {
  test.prop([fc.array(opArb, { maxLength: 200 })])('answers as a Map does', (ops) => {
    const w = new IdWeights();
    const m = new Map<string, number>();
    for (const op of ops) {
      if (op.kind === 'set') {
        w.set(op.id, op.w);
        m.set(op.id, op.w);
      } else if (op.kind === 'delete') {
        expect(w.delete(op.id)).toBe(m.delete(op.id));
      } else if (op.kind === 'reserve') {
        w.reserve(op.n);
      } else {
        w.clear();
        m.clear();
      }
      expect(w.size).toBe(m.size);
    }
    for (const k of ['a', 'b', 'c', 'd', 'é', '日本', 'x/y', 'a'.repeat(40), 'zz']) {
      expect(w.has(k)).toBe(m.has(k));
      expect(w.get(k)).toBe(m.get(k));
    }
    expect([...w.keys()].sort()).toEqual([...m.keys()].sort());
  });

  it('SplitColumns.reserveListing leaves the answers alone and bounds what a record can make it reserve', () => {
    const c = new SplitColumns('seed', new Map(), new Map());
    c.reserveListing(Number.MAX_SAFE_INTEGER); // a hostile `planned`: bounded, no RangeError
    c.specSeen('a', 5);
    c.specSeen('b', 3);
    expect(c.specCount).toBe(2);
    expect(c.unrecorded(10)).toEqual(['a', 'b']);
    c.recordSeen('a', 'runnable');
    expect(c.unrecorded(10)).toEqual(['b']);
    expect(c.weightOf('b')).toBe(3);
  });
});
