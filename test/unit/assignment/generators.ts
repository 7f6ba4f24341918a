/**
 * fast-check arbitraries for `AssignmentInput`, shared by the property tests
 * and the engines' differential tests.
 *
 * Two shapes, mixed by `assignmentInput()`:
 * - `smallAssignmentInput()` is structural (≤ 8 members, ≤ 30 splits): every
 *   field is its own arbitrary, so a failure shrinks to a readable case;
 * - `largeAssignmentInput()` draws a small `InputRecipe` (sizes, weight, cap,
 *   ownership and status modes, a PRNG seed) and expands it with mulberry32
 *   into up to 60 members and 2,000 splits. Generation stays fast (no
 *   per-split arbitrary), the recipe shrinks by size, and a failure prints
 *   `buildInput({...recipe})`, which rebuilds the same input.
 *
 * Covered: 0–60 members; 0–2,000 splits; caps from 1 up, missing caps with or
 * without a `defaultCap`; reserved ids (known and unknown); lease owner,
 * record owner and previous assignee that are members, non-members, null or
 * absent; completed and quarantined splits; equal, zero, tiny, byte-sized,
 * multi-GiB and near-Number.MAX_SAFE_INTEGER weights (totals past 2^53);
 * ids such as `__proto__` and `constructor`.
 *
 * Generators only: nothing here calls an engine.
 */
import { prng } from '../../../src/prng.js';
import fc from 'fast-check';
import type { AssignmentInput, MemberInput, SplitInput, SplitStatus } from '../../../src/assignment/types.js';

export const MAX = Number.MAX_SAFE_INTEGER;
export const GiB = 2 ** 30;

/** Ids that break code using plain objects as maps, or that sort unusually. */
export const AWKWARD_IDS: readonly string[] = [
  '__proto__', 'constructor', 'toString', 'hasOwnProperty', 'valueOf', 'prototype', 'é', '😀', 'a b', 'Z',
];

/** The project's one seeded PRNG (src/prng.ts, mulberry32), under the name these tests use. */
export const mulberry32 = prng;

// ---------------------------------------------------------------------------
// Small, structural inputs.

const SMALL_MEMBERS = ['m0', 'm1', 'm2', 'm3', 'm4', 'm5', '__proto__', 'constructor'];
const SMALL_SPLITS = [...Array.from({ length: 28 }, (_, i) => `s${i}`), '__proto__', 'toString'];

const smallWeight: fc.Arbitrary<number> = fc.oneof(
  { weight: 4, arbitrary: fc.constantFrom(0, 1, 2, 3, 5, 8) },
  { weight: 3, arbitrary: fc.integer({ min: 0, max: 100 }) },
  { weight: 1, arbitrary: fc.constantFrom(MAX, MAX - 1, 2 ** 52, 2 ** 52 + 1, 5 * GiB) },
  { weight: 1, arbitrary: fc.integer({ min: 2 ** 52, max: MAX }) },
);

const owner: fc.Arbitrary<string | null> = fc.oneof(
  fc.constantFrom(...SMALL_MEMBERS),
  fc.constantFrom(null, 'gone', 'gone-2'),
);

const status: fc.Arbitrary<SplitStatus> = fc.oneof(
  { weight: 6, arbitrary: fc.constant('runnable' as const) },
  { weight: 1, arbitrary: fc.constant('completed' as const) },
  { weight: 1, arbitrary: fc.constant('quarantined' as const) },
);

/** Structural inputs: ≤ 8 members, ≤ 30 splits, caps 1–6; shrinks well. */
export function smallAssignmentInput(): fc.Arbitrary<AssignmentInput> {
  const member = fc.record(
    { id: fc.constantFrom(...SMALL_MEMBERS), cap: fc.integer({ min: 1, max: 6 }) },
    { requiredKeys: ['id'] },
  );
  const split = fc.record(
    {
      id: fc.constantFrom(...SMALL_SPLITS),
      weight: smallWeight,
      status,
      leaseOwner: owner,
      recordOwner: owner,
      previous: owner,
    },
    { requiredKeys: ['id', 'weight'] },
  );
  return fc.record(
    {
      seed: fc.string({ maxLength: 6 }),
      defaultCap: fc.integer({ min: 1, max: 6 }),
      members: fc.uniqueArray(member, { selector: (m) => m.id, maxLength: SMALL_MEMBERS.length }),
      splits: fc.uniqueArray(split, { selector: (s) => s.id, maxLength: SMALL_SPLITS.length }),
      reserved: fc.array(fc.constantFrom(...SMALL_SPLITS, 'ghost'), { maxLength: 4 }),
    },
    { requiredKeys: ['seed', 'members', 'splits'] },
  );
}

// ---------------------------------------------------------------------------
// Large inputs, expanded from a recipe.

export type WeightMode = 'tiny' | 'equal' | 'bytes' | 'giants' | 'nearMax' | 'allMax' | 'mixed';
export type CapMode = 'default' | 'defaulted' | 'hetero' | 'ones' | 'roomy';
export type OwnershipMode = 'cold' | 'scattered' | 'coherent' | 'pile';

export interface InputRecipe {
  seed: string;
  members: number;
  splits: number;
  weights: WeightMode;
  /** The weight of every split in 'equal' mode. */
  equalWeight: number;
  caps: CapMode;
  ownership: OwnershipMode;
  /** Fraction of splits completed or quarantined. */
  doneRate: number;
  /** Fraction of split ids reserved (plus a few unknown ids). */
  reservedRate: number;
  /** Mix AWKWARD_IDS into member and split ids. */
  awkward: boolean;
  /** Seeds the PRNG that expands the recipe. */
  prng: number;
}

/** Recipes; sizes are biased small but reach 60 members × 2,000 splits. */
export function inputRecipe(): fc.Arbitrary<InputRecipe> {
  return fc.record({
    seed: fc.string({ maxLength: 12 }),
    members: fc.oneof(fc.integer({ min: 0, max: 6 }), fc.integer({ min: 0, max: 60 })),
    splits: fc.oneof(
      { weight: 3, arbitrary: fc.integer({ min: 0, max: 40 }) },
      { weight: 2, arbitrary: fc.integer({ min: 0, max: 400 }) },
      { weight: 1, arbitrary: fc.integer({ min: 0, max: 2000 }) },
    ),
    weights: fc.constantFrom<WeightMode>('tiny', 'equal', 'bytes', 'giants', 'nearMax', 'allMax', 'mixed'),
    equalWeight: fc.constantFrom(0, 1, 7, 2 ** 20, MAX),
    caps: fc.constantFrom<CapMode>('default', 'defaulted', 'hetero', 'ones', 'roomy'),
    ownership: fc.constantFrom<OwnershipMode>('cold', 'scattered', 'coherent', 'pile'),
    doneRate: fc.constantFrom(0, 0, 0.05, 0.3),
    reservedRate: fc.constantFrom(0, 0, 0.05, 0.3),
    awkward: fc.boolean(),
    prng: fc.integer({ min: 0, max: 0xffffffff }),
  });
}

/** Inputs of up to 60 members and 2,000 splits, expanded from `inputRecipe()`. */
export function largeAssignmentInput(): fc.Arbitrary<AssignmentInput> {
  return inputRecipe().map(buildInput);
}

/** Any input: structural small ones and recipe-built large ones. */
export function assignmentInput(): fc.Arbitrary<AssignmentInput> {
  return fc.oneof({ weight: 1, arbitrary: smallAssignmentInput() }, { weight: 2, arbitrary: largeAssignmentInput() });
}

/**
 * The improving pass's worst case: every split leased to one member whose cap
 * holds them all, everyone else empty.
 */
export function pileUpInput(): fc.Arbitrary<AssignmentInput> {
  return inputRecipe().map((r) =>
    buildInput({ ...r, members: Math.max(r.members, 2), ownership: 'pile', caps: 'roomy', reservedRate: 0 }),
  );
}

/** Expands a recipe into an input; the same recipe always builds the same input. */
export function buildInput(r: InputRecipe): AssignmentInput {
  const rand = mulberry32(r.prng);
  const int = (lo: number, hi: number): number => lo + Math.floor(rand() * (hi - lo + 1));
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rand() * xs.length)]!;
  const idsFor = (prefix: string, count: number): string[] => {
    const ids = Array.from({ length: count }, (_, i) => `${prefix}${i}`);
    if (r.awkward) for (let i = 0; i < Math.min(count, AWKWARD_IDS.length); i++) ids[int(0, count - 1)] = AWKWARD_IDS[i]!;
    return [...new Set(ids)];
  };

  const memberIds = idsFor('m-', r.members);
  const roomy = Math.max(1, 2 * Math.ceil(r.splits / Math.max(1, memberIds.length)));
  const defaultCap = r.caps === 'defaulted' || r.caps === 'hetero' ? int(1, 20) : undefined;
  const members: MemberInput[] = memberIds.map((id) => {
    switch (r.caps) {
      case 'default':
        return { id };
      case 'defaulted':
        return rand() < 0.5 ? { id } : { id, cap: int(1, 40) };
      case 'hetero':
        return rand() < 0.2 ? { id } : { id, cap: pick([1, 1, 2, 3, 5, 8, 13, 50, 1000]) };
      case 'ones':
        return { id, cap: 1 };
      case 'roomy':
        return { id, cap: roomy + int(0, 3) };
    }
  });

  const gone = ['gone-0', 'gone-1', 'gone-2'];
  const anyOwner = (): string | null | undefined => {
    const x = rand();
    if (x < 0.45 && memberIds.length > 0) return pick(memberIds);
    if (x < 0.6) return pick(gone);
    if (x < 0.75) return null;
    return undefined;
  };
  const pileOwner = memberIds[0];

  const splitIds = idsFor('s-', r.splits);
  const splits: SplitInput[] = splitIds.map((id) => {
    const s: SplitInput = { id, weight: weightFor(r, rand, int) };
    const d = rand();
    if (d < r.doneRate / 2) s.status = 'completed';
    else if (d < r.doneRate) s.status = 'quarantined';
    else if (rand() < 0.3) s.status = 'runnable';
    const setOwners = (lease: string | null | undefined, record: string | null | undefined, prev: string | null | undefined): void => {
      if (lease !== undefined) s.leaseOwner = lease;
      if (record !== undefined) s.recordOwner = record;
      if (prev !== undefined) s.previous = prev;
    };
    switch (r.ownership) {
      case 'cold':
        if (rand() < 0.3) setOwners(null, null, null);
        break;
      case 'scattered':
        setOwners(anyOwner(), anyOwner(), anyOwner());
        break;
      case 'coherent': {
        const o = rand() < 0.8 ? anyOwner() : undefined;
        setOwners(o, rand() < 0.9 ? o : anyOwner(), rand() < 0.9 ? o : anyOwner());
        break;
      }
      case 'pile':
        setOwners(pileOwner ?? null, pileOwner ?? null, undefined);
        break;
    }
    return s;
  });
  if (r.ownership === 'pile' && members.length > 0) members[0] = { id: members[0]!.id, cap: Math.max(1, splits.length) };

  const input: AssignmentInput = { seed: r.seed, members, splits };
  if (defaultCap !== undefined) input.defaultCap = defaultCap;
  if (r.reservedRate > 0) {
    const reserved = splitIds.filter(() => rand() < r.reservedRate);
    reserved.push('ghost-0', 'ghost-1');
    if (reserved.length > 2) reserved.push(reserved[0]!);
    input.reserved = reserved;
  }
  // A failing property prints the recipe, not 2,000 splits (non-enumerable:
  // invisible to the engines, JSON, spread and structuredClone).
  Object.defineProperty(input, fc.toStringMethod, { value: () => `buildInput(${JSON.stringify(r)})` });
  return input;
}

function weightFor(r: InputRecipe, rand: () => number, int: (lo: number, hi: number) => number): number {
  const lognormalBytes = (): number => {
    const u = rand() || 1e-12;
    const z = Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * rand());
    return Math.min(MAX, Math.round(Math.exp(Math.log(64 * 2 ** 20) + z)));
  };
  switch (r.weights) {
    case 'tiny':
      return int(0, 20);
    case 'equal':
      return r.equalWeight;
    case 'bytes':
      return lognormalBytes();
    case 'giants':
      return rand() < 0.03 ? int(2 * GiB, 16 * GiB) : lognormalBytes();
    case 'nearMax':
      return rand() < 0.5 ? MAX - int(0, 1000) : int(0, 1_000_000);
    case 'allMax':
      return MAX - int(0, 3);
    case 'mixed': {
      const x = rand();
      if (x < 0.2) return 0;
      if (x < 0.5) return int(1, 20);
      if (x < 0.8) return lognormalBytes();
      if (x < 0.95) return int(2 * GiB, 16 * GiB);
      return MAX - int(0, 10);
    }
  }
}

// ---------------------------------------------------------------------------
// Input transformations.

/** The same input with members, splits and reserved ids in a shuffled order. */
export function shuffleInput(input: AssignmentInput, seed: number): AssignmentInput {
  const rand = mulberry32(seed);
  const shuffle = <T>(xs: readonly T[]): T[] => {
    const out = [...xs];
    for (let i = out.length - 1; i > 0; i--) {
      const j = Math.floor(rand() * (i + 1));
      [out[i], out[j]] = [out[j]!, out[i]!];
    }
    return out;
  };
  const out: AssignmentInput = { ...input, members: shuffle(input.members), splits: shuffle(input.splits) };
  if (input.reserved !== undefined) out.reserved = shuffle(input.reserved);
  return out;
}

/**
 * The input a leader sees once the fleet has converged on `assignment`: each
 * split's lease owner and previous assignee is the member that `assignment`
 * names (null for a split it does not name). Record owners are left as they were.
 */
export function settle(input: AssignmentInput, assignment: Record<string, readonly string[]>): AssignmentInput {
  const ownerOf = new Map<string, string>();
  for (const [member, ids] of Object.entries(assignment)) for (const id of ids) ownerOf.set(id, member);
  return {
    ...input,
    splits: input.splits.map((s) => {
      const o = ownerOf.get(s.id) ?? null;
      return { ...s, leaseOwner: o, previous: o };
    }),
  };
}
