/**
 * The invariants of work-assignment.md ("Invariants"), one property test per
 * invariant under the spec's own name, run against every engine in ENGINES;
 * then the properties the spec implies (input order, settled fleets, the
 * backstop, the seed, awkward ids).
 *
 * Local optimality is checked exactly, in the engines' documented balancing
 * units (src/assignment/units.ts) with BigInt arithmetic.
 *
 * A failure prints fast-check's seed and path; replay with
 * `test.prop(..., { seed, path })` on the failing property.
 */
import { fc, test } from '@fast-check/vitest';
import { describe, expect } from 'vitest';
import { DEFAULT_CAP, type AssignmentInput, type AssignmentResult } from '../../../src/assignment/types.js';
import { scaleWeight, TWO_53, weightShift } from '../../../src/assignment/units.js';
import { effectiveWeight } from '../../../src/assignment/hand-out-order.js';
import { decide, ENGINES } from './engines.js';
import { assignmentInput, buildInput, pileUpInput, settle, shuffleInput } from './generators.js';

const RUNS = { numRuns: 200 };

/** The result without its wall time, with key order kept: equal strings ⇔ identical decisions. */
function canon(r: AssignmentResult): string {
  const { computeMs: _ms, ...stats } = r.stats;
  return JSON.stringify({ assignment: r.assignment, stats });
}

function canonAssignment(r: AssignmentResult): string {
  return JSON.stringify(r.assignment);
}

function capOf(input: AssignmentInput): Map<string, number> {
  return new Map(input.members.map((m) => [m.id, m.cap ?? input.defaultCap ?? DEFAULT_CAP]));
}

function claimable(input: AssignmentInput): AssignmentInput['splits'] {
  const reserved = new Set(input.reserved ?? []);
  return input.splits.filter((s) => (s.status ?? 'runnable') === 'runnable' && !reserved.has(s.id));
}

/** Every member appears, and nothing else; each list strictly ascending in JS string order. */
function checkShape(input: AssignmentInput, r: AssignmentResult): void {
  const keys = Object.keys(r.assignment);
  expect([...keys].sort()).toEqual(input.members.map((m) => m.id).sort());
  for (const k of keys) {
    const ids = r.assignment[k]!;
    expect(Array.isArray(ids), `assignment[${JSON.stringify(k)}] is an array`).toBe(true);
    for (let i = 1; i < ids.length; i++) {
      if (!(ids[i - 1]! < ids[i]!)) throw new Error(`assignment[${JSON.stringify(k)}] is not strictly sorted at ${i}`);
    }
  }
}

function checkNoSplitTwice(r: AssignmentResult): void {
  const seen = new Map<string, string>();
  for (const [member, ids] of Object.entries(r.assignment)) {
    for (const id of ids) {
      const other = seen.get(id);
      if (other !== undefined) throw new Error(`split ${JSON.stringify(id)} is assigned to both ${other} and ${member}`);
      seen.set(id, member);
    }
  }
}

/** Only claimable splits; caps respected; every claimable split assigned unless every lane is full. */
function checkTotal(input: AssignmentInput, r: AssignmentResult): void {
  checkShape(input, r);
  const caps = capOf(input);
  const pool = new Set(claimable(input).map((s) => s.id));
  let assigned = 0;
  let everyLaneFull = true;
  for (const [member, ids] of Object.entries(r.assignment)) {
    for (const id of ids) {
      if (!pool.has(id)) throw new Error(`${member} is assigned ${JSON.stringify(id)}, which is not claimable`);
    }
    const cap = caps.get(member)!;
    if (ids.length > cap) throw new Error(`${member} holds ${ids.length} splits over its cap ${cap}`);
    if (ids.length < cap) everyLaneFull = false;
    assigned += ids.length;
  }
  if (assigned < pool.size && !everyLaneFull) {
    throw new Error(`${pool.size - assigned} claimable splits are queued while a lane is free`);
  }
  expect(r.stats.assigned).toBe(assigned);
  expect(r.stats.queued).toBe(pool.size - assigned);
}

/**
 * No split s on a member `from` can move to a member `to` ≠ from with a free
 * lane and reduce imbalance: never load(from) > load(to) + w(s), in the
 * engines' scaled units, compared exactly with BigInt.
 */
function checkNoImprovingMove(input: AssignmentInput, r: AssignmentResult): void {
  expect(r.stats.backstopHit).toBe(false);
  const pool = claimable(input);
  const heaviest = pool.reduce((mx, s) => Math.max(mx, effectiveWeight(s.weight)), 1);
  const k = weightShift(pool.length, heaviest);
  const unit = new Map(pool.map((s) => [s.id, BigInt(scaleWeight(effectiveWeight(s.weight), k))]));
  let total = 0n;
  for (const u of unit.values()) total += u;
  expect(total <= BigInt(TWO_53)).toBe(true);

  const caps = capOf(input);
  const members = Object.entries(r.assignment).map(([id, ids]) => ({
    id,
    ids,
    load: ids.reduce((sum, s) => sum + unit.get(s)!, 0n),
    free: ids.length < caps.get(id)!,
  }));
  // The two lightest members with a free lane: the best receiver for every
  // donor (the second serves the donor that is itself the lightest).
  const receivers = members.filter((m) => m.free).sort((a, b) => (a.load < b.load ? -1 : a.load > b.load ? 1 : 0));
  for (const from of members) {
    const to = receivers[0] === from ? receivers[1] : receivers[0];
    if (to === undefined) continue;
    for (const s of from.ids) {
      const w = unit.get(s)!;
      if (from.load > to.load + w) {
        throw new Error(
          `improving move left: ${JSON.stringify(s)} (w=${w}) from ${from.id} (load ${from.load}) to ${to.id} (load ${to.load}), shift ${k}`,
        );
      }
    }
  }
}

function checkAll(input: AssignmentInput, r: AssignmentResult): void {
  checkTotal(input, r);
  checkNoSplitTwice(r);
  checkNoImprovingMove(input, r);
}

describe.each(ENGINES)('engine %s', (engine) => {
  describe('spec invariants', () => {
    test.prop([assignmentInput()], RUNS)('assignment_is_deterministic', (input) => {
      const before = JSON.stringify(input);
      const a = decide(engine, structuredClone(input));
      const b = decide(engine, structuredClone(input));
      const c = decide(engine, input);
      expect(canon(b)).toBe(canon(a));
      expect(canon(c)).toBe(canon(a));
      expect(JSON.stringify(input)).toBe(before);
    });

    test.prop([assignmentInput()], RUNS)('no_split_is_assigned_twice', (input) => {
      checkNoSplitTwice(decide(engine, input));
    });

    test.prop([assignmentInput()], RUNS)('assignment_is_stable_under_unchanged_input', (input) => {
      const first = decide(engine, input);
      const again = decide(engine, settle(input, first.assignment));
      expect(canonAssignment(again)).toBe(canonAssignment(first));
    });

    test.prop([assignmentInput()], RUNS)('assignment_admits_no_improving_move', (input) => {
      checkNoImprovingMove(input, decide(engine, input));
    });

    test.prop([assignmentInput()], RUNS)('assignment_is_total_over_the_claimable_pool', (input) => {
      checkTotal(input, decide(engine, input));
    });
  });

  describe('implied properties', () => {
    test.prop([assignmentInput(), fc.integer({ min: 0, max: 0xffffffff })], RUNS)(
      'shuffling members, splits and reserved ids does not change the output',
      (input, order) => {
        expect(canon(decide(engine, shuffleInput(input, order)))).toBe(canon(decide(engine, input)));
      },
    );

    test.prop([assignmentInput()], RUNS)('a settled fleet keeps exactly its ownership with 0 moves', (input) => {
      const first = decide(engine, input);
      const settled = decide(engine, settle(input, first.assignment));
      expect(canonAssignment(settled)).toBe(canonAssignment(first));
      expect(settled.stats.improvingMoves).toBe(0);
    });

    test.prop([fc.oneof(assignmentInput(), pileUpInput())], RUNS)(
      'the backstop never binds: improvingMoves < max(4096, 8 × assigned)',
      (input) => {
        const r = decide(engine, input);
        expect(r.stats.backstopHit).toBe(false);
        expect(r.stats.improvingMoves).toBeLessThan(Math.max(4096, 8 * r.stats.assigned));
      },
    );

    test.prop([pileUpInput()], RUNS)('a pile-up on one member is spread and locally optimal', (input) => {
      checkAll(input, decide(engine, input));
    });

    test.prop([fc.integer({ min: 1, max: 8 }), fc.integer({ min: 1, max: 3 }), fc.integer({ min: 1, max: 3 }), fc.string({ maxLength: 8 })], RUNS)(
      'a member joining a prefetching fleet takes named splits before held ones (decision 0057)',
      (members, holds, named, seed) => {
        // Each member holds `holds` splits (its live lease) and is named `named` more (prefetch),
        // all of one weight; a newcomer joins. Moving a named split costs nothing, a held one a drain.
        const cap = holds + named;
        const splits: AssignmentInput['splits'] = [];
        const ids = Array.from({ length: members }, (_, j) => `m-${j}`);
        for (const id of ids) {
          for (let k = 0; k < holds; k++) splits.push({ id: `${id}-held-${k}`, weight: 1, leaseOwner: id, recordOwner: id, previous: id });
          for (let k = 0; k < named; k++) splits.push({ id: `${id}-named-${k}`, weight: 1, previous: id });
        }
        const input: AssignmentInput = { seed, members: [...ids, 'newcomer'].map((id) => ({ id, cap })), splits };
        const r = decide(engine, input);
        checkAll(input, r);
        const at = new Map(Object.entries(r.assignment).flatMap(([m, list]) => list.map((id) => [id, m] as const)));
        // A member gives up a split it holds only once none of its named ones is left to give.
        for (const id of ids) {
          const heldMoved = splits.filter((s) => s.leaseOwner === id && at.get(s.id) !== id).map((s) => s.id);
          const namedKept = splits.filter((s) => s.previous === id && !s.leaseOwner && at.get(s.id) === id).map((s) => s.id);
          expect(heldMoved.length === 0 || namedKept.length === 0, `${id} gave ${heldMoved.join(',')} and kept ${namedKept.join(',')}`).toBe(true);
        }
        expect(r.assignment['newcomer']!.length).toBeGreaterThan(0);
      },
    );

    test.prop([assignmentInput(), fc.string({ maxLength: 12 })], RUNS)(
      'any seed gives a valid, locally optimal assignment',
      (input, seed) => {
        const reseeded = { ...input, seed };
        checkAll(reseeded, decide(engine, reseeded));
      },
    );
  });

  describe('examples', () => {
    test('a hand-settled balanced fleet yields its current ownership and 0 moves', () => {
      // Loads 10 / 10 / 9: a move would need load(from) > load(to) + w, and
      // every split weighs ≥ 2, so nothing is admissible.
      const held: Record<string, [string, number][]> = {
        a: [['a1', 5], ['a2', 5]],
        b: [['b1', 4], ['b2', 4], ['b3', 2]],
        c: [['c1', 3], ['c2', 3], ['c3', 3]],
      };
      const input: AssignmentInput = {
        seed: 'job',
        members: Object.keys(held).map((id) => ({ id, cap: 4 })),
        splits: Object.entries(held).flatMap(([m, ss]) =>
          ss.map(([id, weight]) => ({ id, weight, leaseOwner: m, recordOwner: m, previous: m })),
        ),
      };
      const r = decide(engine, input);
      expect(r.assignment).toEqual({ a: ['a1', 'a2'], b: ['b1', 'b2', 'b3'], c: ['c1', 'c2', 'c3'] });
      expect(r.stats.improvingMoves).toBe(0);
    });

    test('the seed changes tie-breaks, never the balance', () => {
      const input = (seed: string): AssignmentInput => ({
        seed,
        members: ['p', 'q', 'r', 's'].map((id) => ({ id })),
        splits: Array.from({ length: 6 }, (_, i) => ({ id: `s${i}`, weight: 10 })),
      });
      const outcomes = new Set<string>();
      for (let i = 0; i < 16; i++) {
        const r = decide(engine, input(`seed-${i}`));
        checkAll(input(`seed-${i}`), r);
        const counts = Object.values(r.assignment).map((ids) => ids.length).sort();
        expect(counts).toEqual([1, 1, 2, 2]);
        outcomes.add(canonAssignment(r));
      }
      expect(outcomes.size).toBeGreaterThan(1);
    });

    test('ids such as __proto__ and constructor are ordinary ids', () => {
      const input: AssignmentInput = {
        seed: '__proto__',
        members: [{ id: '__proto__', cap: 2 }, { id: 'constructor', cap: 2 }, { id: 'toString', cap: 2 }],
        splits: [
          { id: '__proto__', weight: 5, leaseOwner: '__proto__' },
          { id: 'constructor', weight: 5, leaseOwner: '__proto__' },
          { id: 'hasOwnProperty', weight: 5, previous: 'constructor' },
          { id: 'valueOf', weight: 5, recordOwner: 'toString' },
          { id: 'toString', weight: 5 },
        ],
        reserved: ['toString'],
      };
      const r = decide(engine, input);
      checkAll(input, r);
      expect(Object.getPrototypeOf(r.assignment)).toBe(Object.prototype);
      expect(Object.keys(r.assignment)).toEqual(['__proto__', 'constructor', 'toString']);
      expect(Object.getOwnPropertyDescriptor(r.assignment, '__proto__')?.value).toEqual(['__proto__', 'constructor']);
      expect(r.assignment['constructor']).toEqual(['hasOwnProperty']);
      expect(r.assignment['toString']).toEqual(['valueOf']);
      expect(JSON.parse(JSON.stringify(r.assignment))).toEqual(r.assignment);
    });

    // Found by assignment_is_stable_under_unchanged_input (shrunk). When a
    // move changes two members' keys, the improving pass repairs its indexed
    // heaps one member at a time while the other's key is already stale; the
    // free-lane heap then keeps `m0`/`m2`/`m5` (load 1) below a heavier top, the
    // termination test reads the wrong top and stops with `__proto__` at
    // 8 + 1 against 1: an improving move left, and the settled re-run moves it.
    test('regression: the pass does not stop while a lighter member has a free lane (6 members, 7 splits)', () => {
      const input: AssignmentInput = {
        seed: '',
        members: [{ id: 'm3', cap: 2 }, { id: 'm5' }, { id: 'constructor' }, { id: '__proto__' }, { id: 'm2' }, { id: 'm0' }],
        splits: [
          { id: 's0', weight: 8, leaseOwner: 'm3' },
          { id: 's20', weight: 0 },
          { id: 's25', weight: 0 },
          { id: 's8', weight: 0 },
          { id: 's18', weight: 0 },
          { id: 's12', weight: 8, leaseOwner: 'm3' },
          { id: 's9', weight: 9, leaseOwner: 'constructor' },
        ],
      };
      const first = decide(engine, input);
      checkAll(input, first);
      expect(canonAssignment(decide(engine, settle(input, first.assignment)))).toBe(canonAssignment(first));
    });

    // Found by this suite: spreading a pile-up whose weights span 1 … 2^53 over
    // few members takes 5,992 moves (3.0 × assigned), past the old bound of
    // max(4096, 2 × assigned); the bound is now 8 × assigned.
    test('the backstop does not bind on a 2,000-split pile-up with weights from 1 to 2^53 over 4 members', () => {
      const input = buildInput({
        seed: 's', members: 4, splits: 2000, weights: 'mixed', equalWeight: 0, caps: 'roomy',
        ownership: 'pile', doneRate: 0, reservedRate: 0, awkward: false, prng: 16,
      });
      const r = decide(engine, input);
      expect(r.stats.backstopHit).toBe(false);
      checkAll(input, r);
    });

    test('an empty fleet assigns nothing and queues the claimable pool', () => {
      const r = decide(engine, { seed: '', members: [], splits: [{ id: 'a', weight: 1 }, { id: 'b', weight: 0, status: 'completed' }] });
      expect(r.assignment).toEqual({});
      expect(r.stats).toMatchObject({ assigned: 0, queued: 1, improvingMoves: 0, backstopHit: false, imbalance: 1 });
    });
  });
});

describe('the checks catch broken assignments', () => {
  const input: AssignmentInput = {
    seed: 'x',
    members: [{ id: 'a', cap: 2 }, { id: 'b', cap: 2 }],
    splits: [
      { id: 's1', weight: 5 },
      { id: 's2', weight: 5 },
      { id: 'done', weight: 1, status: 'completed' },
      { id: 'held', weight: 1 },
    ],
    reserved: ['held'],
  };
  const result = (assignment: Record<string, string[]>, assigned = 2, queued = 0): AssignmentResult => ({
    assignment,
    stats: { assigned, queued, improvingMoves: 0, backstopHit: false, maxLoad: 0, minLoad: 0, lowerBound: 0, imbalance: 1, computeMs: 0 },
  });

  test('a correct assignment passes', () => {
    expect(() => checkAll(input, result({ a: ['s1'], b: ['s2'] }))).not.toThrow();
  });
  test('an improving move left', () => {
    expect(() => checkNoImprovingMove(input, result({ a: ['s1', 's2'], b: [] }))).toThrow(/improving move left/);
  });
  test('a queue while a lane is free', () => {
    expect(() => checkTotal(input, result({ a: ['s1'], b: [] }, 1, 1))).toThrow(/queued while a lane is free/);
  });
  test('a completed, reserved or unknown split assigned', () => {
    for (const id of ['done', 'held', 'nope']) {
      expect(() => checkTotal(input, result({ a: [id, 's1'], b: ['s2'] }, 3))).toThrow(/not claimable/);
    }
  });
  test('a cap exceeded', () => {
    const tight = { ...input, members: [{ id: 'a', cap: 1 }, { id: 'b', cap: 2 }] };
    expect(() => checkTotal(tight, result({ a: ['s1', 's2'], b: [] }))).toThrow(/over its cap/);
  });
  test('a split assigned twice, a member missing, a list unsorted', () => {
    expect(() => checkNoSplitTwice(result({ a: ['s1'], b: ['s1'] }))).toThrow(/assigned to both/);
    expect(() => checkShape(input, result({ a: ['s1', 's2'] }))).toThrow();
    expect(() => checkShape(input, result({ a: ['s2', 's1'], b: [] }))).toThrow(/not strictly sorted/);
  });
});
