/**
 * The columnar form's own rules (ColumnarPool): validation messages, row
 * reuse, owners of unknown splits, and its object form. Its decisions are
 * held to the reference in wasm-differential.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { ColumnarPool } from '../../../src/assignment/codec.js';
import { referenceAssignment } from '../../../src/assignment/reference.js';
import { columnarAssignment } from '../../../src/assignment/wasm.js';
import { isSplitfleetError } from '../../../src/errors.js';

function codeOf(f: () => unknown): string | undefined {
  try {
    f();
  } catch (e) {
    return isSplitfleetError(e) ? e.code : 'not a SplitfleetError';
  }
  return undefined;
}

describe('ColumnarPool', () => {
  it('refuses bad splits, members and seeds with INVALID_INPUT naming the rule', () => {
    const pool = new ColumnarPool('job');
    expect(codeOf(() => pool.upsertSplit('', 1))).toBe('INVALID_INPUT');
    expect(codeOf(() => pool.upsertSplit('a', -1))).toBe('INVALID_INPUT');
    expect(codeOf(() => pool.upsertSplit('a', 1.5))).toBe('INVALID_INPUT');
    expect(codeOf(() => pool.upsertSplit('a', 2 ** 53))).toBe('INVALID_INPUT');
    expect(codeOf(() => pool.upsertSplit('a', 1, 'done' as 'completed'))).toBe('INVALID_INPUT');
    expect(codeOf(() => pool.upsertSplit('a', 1, '__proto__' as 'completed'))).toBe('INVALID_INPUT');
    expect(codeOf(() => pool.setMembers([{ id: 'm' }, { id: 'm' }]))).toBe('INVALID_INPUT');
    expect(codeOf(() => pool.setMembers([{ id: 'm', cap: 0 }]))).toBe('INVALID_INPUT');
    expect(codeOf(() => new ColumnarPool('job', { defaultCap: 0 }))).toBe('INVALID_INPUT');
    expect(() => pool.upsertSplit('a', 2 ** 53)).toThrow(/weight of "a" must be an integer/);
    expect(() => pool.upsertSplit('a', 10n as unknown as number)).toThrow(/\(got 10n\)/);
    expect(() => pool.upsertSplit('a', NaN)).toThrow(/\(got NaN\)/);
    expect(pool.size).toBe(0);
  });

  it('reports owners of unknown splits as not applied, and reuses freed rows', () => {
    const pool = new ColumnarPool('job');
    expect(pool.setLeaseOwner('ghost', 'm')).toBe(false);
    pool.upsertSplit('a', 1);
    pool.upsertSplit('b', 2);
    expect(pool.setLeaseOwner('a', 'm')).toBe(true);
    expect(pool.removeSplit('a')).toBe(true);
    expect(pool.removeSplit('a')).toBe(false);
    expect(pool.rowOf('a')).toBe(-1);
    pool.upsertSplit('c', 3);
    expect(pool.rowOf('c')).toBe(0);
    expect(pool.idAt(0)).toBe('c');
    expect(pool.rowCount).toBe(2);
    expect(pool.toInput().splits.find((s) => s.id === 'c')!.leaseOwner).toBeNull();
  });

  it('decides per row, and its object form is the reference input', () => {
    const pool = new ColumnarPool('job', { defaultCap: 1 });
    pool.setMembers([{ id: 'x' }, { id: 'y', cap: 2 }]);
    for (const [id, w] of [['s1', 5], ['s2', 4], ['s3', 3], ['s4', 0]] as const) pool.upsertSplit(id, w);
    pool.upsertSplit('done', 9, 'completed');
    pool.setReserved(['s3']);
    pool.setLeaseOwner('s2', 'x');
    const decision = columnarAssignment(pool);
    const want = referenceAssignment(pool.toInput());
    for (const [member, ids] of Object.entries(want.assignment)) {
      for (const id of ids) expect(pool.assigneeOf(decision, id)).toBe(member);
    }
    expect(pool.assigneeOf(decision, 'done')).toBeNull();
    expect(pool.assigneeOf(decision, 's3')).toBeNull();
    expect(pool.assigneeOf(decision, 'nope')).toBeNull();
    expect({ ...decision.stats, computeMs: 0 }).toEqual(want.stats);
  });
});
