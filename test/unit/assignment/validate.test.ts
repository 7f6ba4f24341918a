/**
 * validateAssignmentInput: every refusal rule, each with a message that names
 * the field and states the rule; and the boundary values it must accept.
 * The engines run the same validation before deciding anything.
 */
import { describe, expect, test } from 'vitest';
import { validateAssignmentInput } from '../../../src/assignment/validate.js';
import { isValidWeight } from '../../../src/split-model.js';
import { isSplitfleetError } from '../../../src/errors.js';
import { decide, ENGINES } from './engines.js';

const MAX = Number.MAX_SAFE_INTEGER;

/** A valid input with `patch` applied to a copy (a function may mutate it). */
function input(patch: (o: Record<string, any>) => void = () => {}): unknown {
  const o: Record<string, any> = {
    seed: 'job',
    defaultCap: 4,
    members: [{ id: 'a', cap: 2 }, { id: 'b' }],
    splits: [
      { id: 's0', weight: 10 },
      { id: 's1', weight: 0, status: 'completed' },
      { id: 's2', weight: 7, leaseOwner: 'a', recordOwner: null, previous: 'gone' },
      { id: 's3', weight: 3 },
    ],
    reserved: ['s0'],
  };
  patch(o);
  return o;
}

/** The refusal message of `bad`, after checking it is an INVALID_INPUT SplitfleetError. */
function refusal(bad: unknown): string {
  try {
    validateAssignmentInput(bad);
  } catch (e) {
    expect(isSplitfleetError(e, 'INVALID_INPUT'), String(e)).toBe(true);
    expect((e as Error).message).not.toContain('\n');
    return (e as Error).message;
  }
  throw new Error('accepted an invalid input');
}

const weightRule = `splits[3].weight: must be an integer 0 ≤ weight ≤ ${MAX}`;

/** [case, input, expected message prefix (field: rule)] */
const REFUSALS: [string, unknown, string][] = [
  ['input is null', null, 'input: must be a JSON object with "members" and "splits"'],
  ['input is an array', [], 'input: must be a JSON object'],
  ['input is a string', 'members', 'input: must be a JSON object'],
  ['seed missing', input((o) => delete o.seed), 'seed: must be a string (the job fingerprint)'],
  ['seed a number', input((o) => (o.seed = 7)), 'seed: must be a string'],
  ['defaultCap 0', input((o) => (o.defaultCap = 0)), 'defaultCap: must be an integer ≥ 1 (got 0)'],
  ['defaultCap fractional', input((o) => (o.defaultCap = 1.5)), 'defaultCap: must be an integer ≥ 1 (got 1.5)'],
  ['defaultCap a string', input((o) => (o.defaultCap = '8')), 'defaultCap: must be an integer ≥ 1 (got "8")'],
  ['members missing', input((o) => delete o.members), 'members: is required and must be an array'],
  ['members an object', input((o) => (o.members = {})), 'members: is required and must be an array'],
  ['splits missing', input((o) => delete o.splits), 'splits: is required and must be an array'],
  ['splits null', input((o) => (o.splits = null)), 'splits: is required and must be an array'],
  ['member not an object', input((o) => (o.members[1] = 'b')), 'members[1]: must be an object with an "id"'],
  ['member id missing', input((o) => delete o.members[1].id), 'members[1].id: must be a non-empty string'],
  ['member id empty', input((o) => (o.members[1].id = '')), 'members[1].id: must be a non-empty string (got "")'],
  ['member id a number', input((o) => (o.members[1].id = 1)), 'members[1].id: must be a non-empty string (got 1)'],
  ['member id duplicated', input((o) => (o.members[1].id = 'a')), 'members[1].id: must be unique; "a" appears twice'],
  ['cap 0', input((o) => (o.members[0].cap = 0)), 'members[0].cap: must be an integer ≥ 1 (got 0)'],
  ['cap negative', input((o) => (o.members[0].cap = -3)), 'members[0].cap: must be an integer ≥ 1 (got -3)'],
  ['cap fractional', input((o) => (o.members[0].cap = 2.5)), 'members[0].cap: must be an integer ≥ 1 (got 2.5)'],
  ['cap a string', input((o) => (o.members[0].cap = '2')), 'members[0].cap: must be an integer ≥ 1 (got "2")'],
  ['cap null', input((o) => (o.members[0].cap = null)), 'members[0].cap: must be an integer ≥ 1 (got null)'],
  ['cap past 2^53', input((o) => (o.members[0].cap = 2 ** 53)), 'members[0].cap: must be an integer ≥ 1'],
  ['split not an object', input((o) => (o.splits[3] = 7)), 'splits[3]: must be an object with "id" and "weight"'],
  ['split id missing', input((o) => delete o.splits[3].id), 'splits[3].id: must be a non-empty string'],
  ['split id empty', input((o) => (o.splits[3].id = '')), 'splits[3].id: must be a non-empty string'],
  ['split id duplicated', input((o) => (o.splits[3].id = 's0')), 'splits[3].id: must be unique; "s0" appears twice'],
  ['weight missing', input((o) => delete o.splits[3].weight), weightRule],
  ['weight negative', input((o) => (o.splits[3].weight = -1)), `${weightRule} (got -1)`],
  ['weight fractional', input((o) => (o.splits[3].weight = 2.5)), `${weightRule} (got 2.5)`],
  ['weight a string', input((o) => (o.splits[3].weight = '3')), `${weightRule} (got "3")`],
  ['weight null', input((o) => (o.splits[3].weight = null)), `${weightRule} (got null)`],
  ['weight NaN', input((o) => (o.splits[3].weight = NaN)), weightRule],
  ['weight Infinity', input((o) => (o.splits[3].weight = Infinity)), weightRule],
  ['weight 2^53', input((o) => (o.splits[3].weight = 2 ** 53)), `${weightRule} (got 9007199254740992)`],
  ['status unknown', input((o) => (o.splits[3].status = 'done')), 'splits[3].status: must be one of runnable, completed, quarantined (got "done")'],
  ['status null', input((o) => (o.splits[3].status = null)), 'splits[3].status: must be one of runnable, completed, quarantined'],
  ['leaseOwner a number', input((o) => (o.splits[3].leaseOwner = 1)), 'splits[3].leaseOwner: must be a member id string or null (got 1)'],
  ['recordOwner an object', input((o) => (o.splits[3].recordOwner = {})), 'splits[3].recordOwner: must be a member id string or null'],
  ['previous a boolean', input((o) => (o.splits[3].previous = false)), 'splits[3].previous: must be a member id string or null (got false)'],
  ['reserved a string', input((o) => (o.reserved = 's0')), 'reserved: must be an array of split ids'],
  ['reserved entry a number', input((o) => (o.reserved = ['s0', 3])), 'reserved[1]: must be a split id string (got 3)'],
];

describe('validateAssignmentInput', () => {
  test.each(REFUSALS)('refuses %s', (_name, bad, expected) => {
    expect(refusal(bad).startsWith(expected), `"${refusal(bad)}" should start with "${expected}"`).toBe(true);
  });

  test('names the first broken rule, in input order', () => {
    const bad = input((o) => {
      o.splits[1].weight = -1;
      o.splits[2].status = 'nope';
    });
    expect(refusal(bad)).toMatch(/^splits\[1\]\.weight: /);
  });

  test('accepts the boundaries', () => {
    const ok = input((o) => {
      o.defaultCap = 1;
      o.members.push({ id: '__proto__', cap: MAX }, { id: 'constructor', cap: 1 });
      o.splits.push(
        { id: 'zero', weight: 0 },
        { id: 'max', weight: MAX, status: 'runnable', leaseOwner: null, recordOwner: null, previous: null },
        { id: 'q', weight: 1, status: 'quarantined', leaseOwner: 'not-a-member' },
        { id: 'a', weight: 1 }, // a split id may equal a member id
      );
      o.reserved = ['unknown', 's0', 's0'];
    });
    expect(() => validateAssignmentInput(ok)).not.toThrow();
    expect(() => validateAssignmentInput({ seed: '', members: [], splits: [] })).not.toThrow();
  });

  test('shows non-finite and BigInt values as they are, and stays a SplitfleetError', () => {
    expect(() => validateAssignmentInput({ seed: '', members: [], splits: [{ id: 'a', weight: Infinity }] })).toThrow(
      /splits\[0\]\.weight: .*\(got Infinity\)/,
    );
    expect(() => validateAssignmentInput({ seed: '', members: [], splits: [{ id: 'a', weight: NaN }] })).toThrow(/\(got NaN\)/);
    let caught: unknown;
    try {
      validateAssignmentInput({ seed: '', members: [{ id: 'm', cap: 3n as unknown as number }], splits: [] });
    } catch (e) {
      caught = e;
    }
    expect(isSplitfleetError(caught, 'INVALID_INPUT')).toBe(true);
    expect((caught as Error).message).toBe('members[0].cap: must be an integer ≥ 1 (got 3n)');
  });

  test('isValidWeight is exactly the integers 0 … Number.MAX_SAFE_INTEGER', () => {
    for (const w of [0, 1, 2 ** 52, MAX]) expect(isValidWeight(w)).toBe(true);
    for (const w of [-1, -0.5, 0.5, MAX + 1, NaN, Infinity, -Infinity, '1', null, undefined, 1n]) {
      expect(isValidWeight(w)).toBe(false);
    }
  });
});

describe.each(ENGINES)('engine %s refuses before deciding', (engine) => {
  test.each(REFUSALS.filter(([, bad]) => typeof bad === 'object' && bad !== null && !Array.isArray(bad)))(
    'refuses %s',
    (_name, bad, expected) => {
      let caught: unknown;
      try {
        decide(engine, bad as never);
      } catch (e) {
        caught = e;
      }
      expect(isSplitfleetError(caught, 'INVALID_INPUT'), String(caught)).toBe(true);
      expect((caught as Error).message.startsWith(expected)).toBe(true);
    },
  );
});
