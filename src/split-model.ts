/**
 * Facts of the split model that every layer states the same way: the split
 * statuses (`SplitStatus`, which protocol/records.ts and assignment/types.ts
 * re-export) and their one numbering in columns, and the rule a split's
 * weight keeps. The record codec (protocol/records.ts), the engine's input checks
 * (assignment/validate.ts, the columnar pool, the thread wire) and the leader
 * (coordinator/leader/seeding.ts, split-columns.ts) import them from here, so no
 * layer keeps a copy of its own; protocol/ and assignment/ may not import
 * each other, so the home is a leaf below both.
 * A leaf: pure, no imports.
 */

/** A split's status: `runnable` until it is completed or quarantined (both terminal). */
export type SplitStatus = 'runnable' | 'completed' | 'quarantined';

/** The split-status numbering of every status column; an absent status is runnable (0). */
export const STATUS_CODES: Readonly<Record<SplitStatus, number>> = Object.freeze({ runnable: 0, completed: 1, quarantined: 2 });
/** Status names by code (`STATUS_NAMES[STATUS_CODES[s]] === s`). */
export const STATUS_NAMES: readonly SplitStatus[] = ['runnable', 'completed', 'quarantined'];

/** The words of the weight rule, as the errors that refuse a weight say them. */
export const WEIGHT_RULE = `must be an integer 0 ≤ weight ≤ ${Number.MAX_SAFE_INTEGER}`;

/** True when `w` is a split weight: an integer 0 ≤ w ≤ Number.MAX_SAFE_INTEGER. */
export function isValidWeight(w: unknown): w is number {
  return typeof w === 'number' && Number.isSafeInteger(w) && w >= 0;
}
