/**
 * Residual ids (decision 0063): derived from the parent's id and the division's sequence number,
 * valid split ids, of a form a planner may not use, distinct per (parent, seq).
 */
import { describe, expect } from 'vitest';
import { test, fc } from '@fast-check/vitest';
import { idProblem, MAX_ID_BYTES, utf8ByteLength } from '../../../src/protocol/keys.js';
import { isResidualId, reservedIdProblem, residualId } from '../../../src/protocol/residual-ids.js';

const validId = fc.string({ unit: 'grapheme', minLength: 1, maxLength: 60 }).filter((s) => idProblem(s) === undefined);

describe('residual ids', () => {
  test.prop([validId, fc.integer({ min: 1, max: 1e9 })])('a residual id is a valid split id, of the reserved form, deterministic', (parent, seq) => {
    const id = residualId(parent, seq);
    expect(idProblem(id)).toBeUndefined();
    expect(isResidualId(id)).toBe(true);
    expect(reservedIdProblem(id)).toMatch(/reserved for the residuals of divided splits/);
    expect(residualId(parent, seq)).toBe(id);
  });

  test.prop([validId, validId, fc.integer({ min: 1, max: 50 }), fc.integer({ min: 1, max: 50 })])('two (parent, seq) pairs that differ name two residuals', (a, b, i, j) => {
    fc.pre(a !== b || i !== j);
    expect(residualId(a, i)).not.toBe(residualId(b, j));
  });

  test.prop([validId])('a planned id without the form is not reserved', (id) => {
    fc.pre(!/÷[1-9][0-9]*$/u.test(id));
    expect(isResidualId(id)).toBe(false);
    expect(reservedIdProblem(id)).toBeUndefined();
  });

  test.prop([fc.integer({ min: 1, max: 1e6 })])('a parent too long to extend gets a fixed-size stand-in, still valid and distinct per seq', (seq) => {
    const parent = 'x'.repeat(MAX_ID_BYTES);
    const id = residualId(parent, seq);
    expect(utf8ByteLength(id)).toBeLessThanOrEqual(MAX_ID_BYTES);
    expect(isResidualId(id)).toBe(true);
    expect(id).not.toBe(residualId(parent, seq + 1));
    expect(id).not.toBe(residualId(`${'x'.repeat(MAX_ID_BYTES - 1)}y`, seq));
  });

  test.prop([fc.integer({ max: 0 })])('a sequence number below 1 is a bug', (seq) => {
    expect(() => residualId('a', seq)).toThrow(RangeError);
  });

  test('examples', () => {
    expect(residualId('logs/2026/a.gz', 1)).toBe('logs/2026/a.gz÷1');
    expect(residualId('logs/2026/a.gz÷1', 2)).toBe('logs/2026/a.gz÷1÷2');
    expect(isResidualId('a÷0')).toBe(false);
    expect(isResidualId('a÷01')).toBe(false);
    expect(isResidualId('a÷')).toBe(false);
    expect(isResidualId('÷12')).toBe(true);
  });
});
