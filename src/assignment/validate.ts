/**
 * Validation of the assignment input (the `plan` JSON shape). Both engines
 * and the CLI call it before deciding anything, so bad input is refused whole
 * with a message naming the field and the rule, and nothing is half-computed.
 */
import { SplitfleetError } from '../errors.js';
import type { AssignmentInput } from './types.js';

const STATUSES = new Set(['runnable', 'completed', 'quarantined']);

/** How a rejected value is shown: numbers as JS prints them (NaN, Infinity), never throwing (BigInt). */
function show(v: unknown): string {
  if (typeof v === 'number' || typeof v === 'bigint') return typeof v === 'bigint' ? `${v}n` : String(v);
  try {
    return JSON.stringify(v) ?? String(v);
  } catch {
    return typeof v;
  }
}

function fail(field: string, rule: string, got?: unknown): never {
  const shown = got === undefined ? '' : ` (got ${show(got)})`;
  throw new SplitfleetError('INVALID_INPUT', `${field}: ${rule}${shown}`);
}

function optionalOwner(value: unknown, field: string): void {
  if (value !== undefined && value !== null && typeof value !== 'string') {
    fail(field, 'must be a member id string or null', value);
  }
}

/** True when `w` is an integer weight 0 ≤ w ≤ Number.MAX_SAFE_INTEGER. */
export function isValidWeight(w: unknown): w is number {
  return typeof w === 'number' && Number.isSafeInteger(w) && w >= 0;
}

/** Throws SplitfleetError('INVALID_INPUT') naming the first broken rule. */
export function validateAssignmentInput(input: unknown): asserts input is AssignmentInput {
  if (typeof input !== 'object' || input === null || Array.isArray(input)) {
    fail('input', 'must be a JSON object with "members" and "splits"');
  }
  const o = input as Record<string, unknown>;
  if (typeof o.seed !== 'string') fail('seed', 'must be a string (the job fingerprint)', o.seed);
  if (o.defaultCap !== undefined && !(Number.isSafeInteger(o.defaultCap) && (o.defaultCap as number) >= 1)) {
    fail('defaultCap', 'must be an integer ≥ 1', o.defaultCap);
  }
  if (!Array.isArray(o.members)) fail('members', 'is required and must be an array');
  if (!Array.isArray(o.splits)) fail('splits', 'is required and must be an array');

  const memberIds = new Set<string>();
  o.members.forEach((m: unknown, i: number) => {
    if (typeof m !== 'object' || m === null) fail(`members[${i}]`, 'must be an object with an "id"');
    const mm = m as Record<string, unknown>;
    if (typeof mm.id !== 'string' || mm.id === '') fail(`members[${i}].id`, 'must be a non-empty string', mm.id);
    if (memberIds.has(mm.id)) fail(`members[${i}].id`, `must be unique; "${mm.id}" appears twice`);
    memberIds.add(mm.id);
    if (mm.cap !== undefined && !(Number.isSafeInteger(mm.cap) && (mm.cap as number) >= 1)) {
      fail(`members[${i}].cap`, 'must be an integer ≥ 1', mm.cap);
    }
  });

  const splitIds = new Set<string>();
  o.splits.forEach((s: unknown, i: number) => {
    if (typeof s !== 'object' || s === null) fail(`splits[${i}]`, 'must be an object with "id" and "weight"');
    const ss = s as Record<string, unknown>;
    if (typeof ss.id !== 'string' || ss.id === '') fail(`splits[${i}].id`, 'must be a non-empty string', ss.id);
    if (splitIds.has(ss.id)) fail(`splits[${i}].id`, `must be unique; "${ss.id}" appears twice`);
    splitIds.add(ss.id);
    if (!isValidWeight(ss.weight)) {
      fail(`splits[${i}].weight`, `must be an integer 0 ≤ weight ≤ ${Number.MAX_SAFE_INTEGER}`, ss.weight);
    }
    if (ss.status !== undefined && !STATUSES.has(ss.status as string)) {
      fail(`splits[${i}].status`, 'must be one of runnable, completed, quarantined', ss.status);
    }
    optionalOwner(ss.leaseOwner, `splits[${i}].leaseOwner`);
    optionalOwner(ss.recordOwner, `splits[${i}].recordOwner`);
    optionalOwner(ss.previous, `splits[${i}].previous`);
  });

  if (o.reserved !== undefined) {
    if (!Array.isArray(o.reserved)) fail('reserved', 'must be an array of split ids');
    o.reserved.forEach((r: unknown, i: number) => {
      if (typeof r !== 'string') fail(`reserved[${i}]`, 'must be a split id string', r);
    });
  }
}
