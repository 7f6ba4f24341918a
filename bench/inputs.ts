/**
 * The bench's inputs: a fleet of `m` members and `n` splits with equal,
 * lognormal or giant-laden weights, in the four scenarios of the issue
 * (cold, settled, joined, left). Deterministic (mulberry32); no engine calls
 * except `settledFrom`, which takes the cold decision it is given.
 */
import { ColumnarPool } from '../src/assignment/codec.js';
import type { AssignmentInput, SplitInput } from '../src/assignment/types.js';
import { prng } from '../src/prng.js';

export type Weights = 'equal' | 'lognormal' | 'giants';
/**
 * How the caller built its split objects (issue 14: the engine's speed must
 * not depend on it). `literal`: { id, weight, leaseOwner, recordOwner,
 * previous } written out; `spread`: { ...s, leaseOwner, recordOwner,
 * previous } from the cold split (how most JavaScript builds them; on Node
 * 20's V8 each such object gets a hidden class of its own, on Node 22 and
 * later they share one: decision 0022); `class`: instances of a class; `extra`: literals with
 * two more fields; `reordered`: literals with the fields in another order.
 */
export type Shape = 'literal' | 'spread' | 'class' | 'extra' | 'reordered';
export const SHAPES: readonly Shape[] = ['literal', 'spread', 'class', 'extra', 'reordered'];
export type Scenario = 'cold' | 'settled' | 'joined' | 'left';
export const GiB = 2 ** 30;

/** The project's one seeded PRNG (src/prng.ts). */
export const rng = prng;

/** Lane budget that lets every split be held: 1.25 × ceil(n/m), at least 8. */
export const capFor = (n: number, m: number): number => Math.max(8, Math.ceil(1.25 * Math.ceil(n / m)));

export function coldInput(n: number, m: number, weights: Weights, seed = 1): AssignmentInput {
  const r = rng(seed);
  const lognormal = (): number => {
    const u = r() || 1e-9;
    return Math.max(1, Math.round(Math.exp(16 + Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * r()))));
  };
  const weight = (): number => {
    if (weights === 'equal') return 1000;
    if (weights === 'giants' && r() < 0.05) return Math.round((2 + 6 * r()) * GiB);
    return lognormal();
  };
  const cap = capFor(n, m);
  const members = Array.from({ length: m }, (_, j) => ({ id: `m-${j}`, cap }));
  const splits: SplitInput[] = Array.from({ length: n }, (_, i) => ({ id: `s-${i}`, weight: weight() }));
  return { seed: 'bench', members, splits };
}

class HeldSplit implements SplitInput {
  constructor(
    readonly id: string,
    readonly weight: number,
    readonly leaseOwner: string | null,
    readonly recordOwner: string | null,
    readonly previous: string | null,
  ) {}
}

/** One split with these owners, built the way `shape` says. */
export function shaped(shape: Shape, s: SplitInput, lo: string | null, ro: string | null, pr: string | null): SplitInput {
  switch (shape) {
    case 'literal':
      return { id: s.id, weight: s.weight, leaseOwner: lo, recordOwner: ro, previous: pr };
    case 'spread':
      return { ...s, leaseOwner: lo, recordOwner: ro, previous: pr };
    case 'class':
      return new HeldSplit(s.id, s.weight, lo, ro, pr);
    case 'extra':
      return { id: s.id, weight: s.weight, leaseOwner: lo, recordOwner: ro, previous: pr, path: `data/${s.id}.parquet`, bytes: s.weight } as SplitInput;
    case 'reordered':
      return { previous: pr, recordOwner: ro, leaseOwner: lo, weight: s.weight, id: s.id };
  }
}

/** Every split held by its assignee in `decision` (lease, record and previous agree), built as `shape`. */
export function settledFrom(cold: AssignmentInput, decision: Record<string, readonly string[]>, shape: Shape = 'literal'): AssignmentInput {
  const owner = new Map<string, string>();
  for (const [mm, ids] of Object.entries(decision)) for (const id of ids) owner.set(id, mm);
  return {
    ...cold,
    splits: cold.splits.map((s) => {
      const o = owner.get(s.id) ?? null;
      return shaped(shape, s, o, o, o);
    }),
  };
}

/** The cold input with its splits rebuilt as `shape` (no owners). */
export function coldShaped(cold: AssignmentInput, shape: Shape): AssignmentInput {
  return { ...cold, splits: cold.splits.map((s) => shaped(shape, s, null, null, null)) };
}

/** One member added to a settled fleet. */
export function joinedFrom(settled: AssignmentInput): AssignmentInput {
  const cap = settled.members[0]?.cap;
  return { ...settled, members: [...settled.members, cap === undefined ? { id: 'm-joined' } : { id: 'm-joined', cap }] };
}

/** Member m-0 gone; its splits' leases expired after its delay (record and previous still name it; not reserved). */
export function leftFrom(settled: AssignmentInput, shape: Shape = 'literal'): AssignmentInput {
  return {
    ...settled,
    members: settled.members.filter((mm) => mm.id !== 'm-0'),
    splits: settled.splits.map((s) =>
      s.leaseOwner === 'm-0' ? shaped(shape, s, null, s.recordOwner ?? null, s.previous ?? null) : s),
  };
}

/** `input` as a `ColumnarPool` (the leader's form): every split with its weight and owners, the members. */
export function columnarFrom(input: AssignmentInput): ColumnarPool {
  const cp = new ColumnarPool(input.seed, input.defaultCap === undefined ? {} : { defaultCap: input.defaultCap });
  cp.setMembers(input.members);
  for (const s of input.splits) {
    cp.upsertSplit(s.id, s.weight);
    cp.setLeaseOwner(s.id, s.leaseOwner ?? null);
    cp.setRecordOwner(s.id, s.recordOwner ?? null);
    cp.setPrevious(s.id, s.previous ?? null);
  }
  return cp;
}
