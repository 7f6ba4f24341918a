/**
 * Validation of the assignment input (the `plan` JSON shape). Both engines
 * and the CLI call it before deciding anything, so bad input is refused whole
 * with a message naming the field and the rule, and nothing is half-computed.
 *
 * Each rule is written here once, as a predicate and the words of its error
 * (`RULES`); the fast checks of the engine's codec (fields.ts, marshal.ts)
 * and `ColumnarPool` test with the same predicates and say the same words.
 * The weight rule and the status numbering are the split model's, shared
 * with the record codec and the leader (src/split-model.ts).
 */
import { SplitfleetError } from '../errors.js';
import type { AssignmentInput } from './types.js';
import { isValidWeight, STATUS_CODES, WEIGHT_RULE } from '../split-model.js';

/** The words of each rule, as every error that refuses it says them. */
export const RULES = {
  id: 'must be a non-empty string',
  weight: WEIGHT_RULE,
  status: 'must be one of runnable, completed, quarantined',
  owner: 'must be a member id string or null',
  cap: 'must be an integer ≥ 1',
  seed: 'must be a string (the job fingerprint)',
  reservedId: 'must be a split id string',
} as const;

/** A split or member id: a non-empty string. */
export const isId = (v: unknown): v is string => typeof v === 'string' && v !== '';

/** A lane budget (`cap`, `defaultCap`): an integer ≥ 1. */
export const isCap = (v: unknown): v is number => Number.isSafeInteger(v) && (v as number) >= 1;

/** An owner field: absent, null, or a member id string. */
export const isOwner = (v: unknown): v is string | null | undefined => v === undefined || v === null || typeof v === 'string';

/** `STATUS_CODES` of a split's status (absent: runnable), or −1 when it names no status. */
export function statusCode(v: unknown): number {
  if (v === undefined || v === 'runnable') return STATUS_CODES.runnable;
  if (v === 'completed') return STATUS_CODES.completed;
  if (v === 'quarantined') return STATUS_CODES.quarantined;
  return -1;
}

/** A rejected value of the assignment input, as its error shows it: numbers as JS prints them (NaN, Infinity), anything else as JSON, never throwing (BigInt). */
function describeInputValue(v: unknown): string {
  if (typeof v === 'number' || typeof v === 'bigint') return typeof v === 'bigint' ? `${v}n` : String(v);
  try {
    return JSON.stringify(v) ?? String(v);
  } catch {
    return typeof v;
  }
}

/** Throws INVALID_INPUT: "field: rule (got value)", the value left out when undefined. */
export function invalid(field: string, rule: string, got?: unknown): never {
  const shown = got === undefined ? '' : ` (got ${describeInputValue(got)})`;
  throw new SplitfleetError('INVALID_INPUT', `${field}: ${rule}${shown}`);
}

function optionalOwner(value: unknown, field: string): void {
  if (!isOwner(value)) invalid(field, RULES.owner, value);
}

/** Throws SplitfleetError('INVALID_INPUT') naming the first broken rule. */
export function validateAssignmentInput(input: unknown): asserts input is AssignmentInput {
  if (typeof input !== 'object' || input === null || Array.isArray(input)) {
    invalid('input', 'must be a JSON object with "members" and "splits"');
  }
  const o = input as Record<string, unknown>;
  if (typeof o.seed !== 'string') invalid('seed', RULES.seed, o.seed);
  if (o.defaultCap !== undefined && !isCap(o.defaultCap)) invalid('defaultCap', RULES.cap, o.defaultCap);
  if (!Array.isArray(o.members)) invalid('members', 'is required and must be an array');
  if (!Array.isArray(o.splits)) invalid('splits', 'is required and must be an array');

  const memberIds = new Set<string>();
  o.members.forEach((m: unknown, i: number) => {
    if (typeof m !== 'object' || m === null) invalid(`members[${i}]`, 'must be an object with an "id"');
    const mm = m as Record<string, unknown>;
    if (!isId(mm.id)) invalid(`members[${i}].id`, RULES.id, mm.id);
    if (memberIds.has(mm.id)) invalid(`members[${i}].id`, `must be unique; "${mm.id}" appears twice`);
    memberIds.add(mm.id);
    if (mm.cap !== undefined && !isCap(mm.cap)) invalid(`members[${i}].cap`, RULES.cap, mm.cap);
  });

  const splitIds = new Set<string>();
  o.splits.forEach((s: unknown, i: number) => {
    if (typeof s !== 'object' || s === null) invalid(`splits[${i}]`, 'must be an object with "id" and "weight"');
    const ss = s as Record<string, unknown>;
    if (!isId(ss.id)) invalid(`splits[${i}].id`, RULES.id, ss.id);
    if (splitIds.has(ss.id)) invalid(`splits[${i}].id`, `must be unique; "${ss.id}" appears twice`);
    splitIds.add(ss.id);
    if (!isValidWeight(ss.weight)) invalid(`splits[${i}].weight`, RULES.weight, ss.weight);
    if (statusCode(ss.status) < 0) invalid(`splits[${i}].status`, RULES.status, ss.status);
    optionalOwner(ss.leaseOwner, `splits[${i}].leaseOwner`);
    optionalOwner(ss.recordOwner, `splits[${i}].recordOwner`);
    optionalOwner(ss.previous, `splits[${i}].previous`);
  });

  if (o.reserved !== undefined) {
    if (!Array.isArray(o.reserved)) invalid('reserved', 'must be an array of split ids');
    o.reserved.forEach((r: unknown, i: number) => {
      if (typeof r !== 'string') invalid(`reserved[${i}]`, RULES.reservedId, r);
    });
  }
}
