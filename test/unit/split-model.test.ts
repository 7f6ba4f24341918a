/**
 * The split model's facts, one home each (src/split-model.ts): every layer
 * that checks a weight accepts exactly the weights the one rule accepts (the
 * record codec, the seeder, the engine's input, the columnar pool), and the
 * status numbering round-trips.
 */
import { describe, expect, it } from 'vitest';
import { ColumnarPool } from '../../src/assignment/columnar.js';
import { validateAssignmentInput } from '../../src/assignment/validate.js';
import { IdArena } from '../../src/assignment/id-arena.js';
import { validatePlanned } from '../../src/coordinator/leader/seeding.js';
import { encodeRecord, fingerprintHash, SCHEMA_VERSION } from '../../src/protocol/records.js';
import { isValidWeight, STATUS_CODES, STATUS_NAMES, WEIGHT_RULE } from '../../src/split-model.js';

const MAX = Number.MAX_SAFE_INTEGER;
const WEIGHTS: unknown[] = [0, -0, 1, 2 ** 40, MAX, -1, 0.5, 1.5, MAX + 1, 2 ** 53, -MAX, NaN, Infinity, -Infinity, '3', null, undefined, 3n, true];

const accepts = (fn: () => unknown): boolean => {
  try {
    fn();
    return true;
  } catch {
    return false;
  }
};

describe('the split model', () => {
  it('every layer accepts exactly the weights the one rule accepts', () => {
    const fp = fingerprintHash('splitfleet-v1:splitfleet/job');
    for (const w of WEIGHTS) {
      const rule = isValidWeight(w);
      const shown = typeof w === 'bigint' ? `${w}n` : String(w);
      expect(accepts(() => encodeRecord('spec', { v: SCHEMA_VERSION, fp, id: 'a', weight: w as number, descriptor: null, generation: 1 })), `record codec, ${shown}`).toBe(rule);
      expect(accepts(() => validatePlanned([{ id: 'a', weight: w as number, descriptor: null }], 0, 1, new IdArena())), `seeder, ${shown}`).toBe(rule);
      expect(accepts(() => validateAssignmentInput({ seed: '', members: [], splits: [{ id: 'a', weight: w }] })), `engine input, ${shown}`).toBe(rule);
      expect(accepts(() => new ColumnarPool('').upsertSplit('a', w as number)), `columnar pool, ${shown}`).toBe(rule);
    }
    expect(WEIGHTS.filter(isValidWeight)).toEqual([0, -0, 1, 2 ** 40, MAX]);
  });

  it('the seeder and the engine refuse a weight in the same words', () => {
    expect(() => validatePlanned([{ id: 'a', weight: 1.5, descriptor: null }], 0, 1, new IdArena()))
      .toThrow(`planner split "a".weight: ${WEIGHT_RULE} (got 1.5)`);
    expect(() => validateAssignmentInput({ seed: '', members: [], splits: [{ id: 'a', weight: 1.5 }] }))
      .toThrow(`splits[0].weight: ${WEIGHT_RULE} (got 1.5)`);
  });

  it('the status numbering round-trips, runnable first (an absent status is 0)', () => {
    for (const s of STATUS_NAMES) expect(STATUS_NAMES[STATUS_CODES[s]]).toBe(s);
    expect(STATUS_CODES.runnable).toBe(0);
    expect(Object.keys(STATUS_CODES).sort()).toEqual([...STATUS_NAMES].sort());
  });
});
