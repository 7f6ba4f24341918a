/**
 * The WASM engine against the reference, output for output: the assignment
 * (keys and lists in the same order) and every stat but computeMs, on
 * fast-check inputs, seeded large inputs, the columnar path (including after
 * incremental updates) and invalid inputs. Also checks that codec.ts and
 * assembly/layout.ts agree. Content keys and forced key collisions are in
 * wasm-collisions.test.ts.
 *
 * Needs build/engine.wasm: built here when missing or older than assembly/.
 * A failing property prints its seed; replay with { seed, path } in fc.assert.
 */
import fc from 'fast-check';
import { beforeAll, describe, expect, it } from 'vitest';
import { LAYOUT } from '../../../src/assignment/codec.js';
import { desiredAssignment } from '../../../src/assignment/engine.js';
import { referenceAssignment } from '../../../src/assignment/reference.js';
import type { AssignmentInput, SplitInput } from '../../../src/assignment/types.js';
import { columnarAssignment, engineLayout, forgetWasmMemo, wasmAssignment } from '../../../src/assignment/wasm.js';
import { assignmentInput, mulberry32, settle, shuffleInput } from './generators.js';
import { buildEngineIfStale, expectColumnarSame, expectIdentical, expectSameAsReference, outcome, poolOf } from './wasm-compare.js';

beforeAll(buildEngineIfStale, 120_000);

describe('layout', () => {
  it('codec.ts mirrors assembly/layout.ts name for name', () => {
    const exported = engineLayout();
    expect(exported).toEqual({ ...LAYOUT });
  });
});

describe('wasm engine equals the reference', () => {
  it('on generated inputs (1,000 cases)', () => {
    fc.assert(fc.property(assignmentInput(), (input) => void expectSameAsReference(input)), { numRuns: 1000 });
  });

  it('on the settled, shuffled and re-settled versions of generated inputs', () => {
    fc.assert(
      fc.property(assignmentInput(), fc.nat(), (input, seed) => {
        const first = expectSameAsReference(input);
        if (first === null) return;
        const settled = settle(input, first.assignment);
        expectSameAsReference(settled);
        expectSameAsReference(shuffleInput(settled, seed));
        // A member leaves and a new one joins.
        expectSameAsReference({ ...settled, members: [...settled.members.slice(1), { id: 'joiner', cap: 3 }] });
      }),
      { numRuns: 200 },
    );
  });

  it('when consecutive calls share ids, weights or nothing (what the engine keeps between calls)', () => {
    fc.assert(
      fc.property(assignmentInput(), fc.nat(), (input, seed) => {
        const first = expectSameAsReference(input);
        if (first === null) return;
        const rand = mulberry32(seed);
        const settled = settle(input, first.assignment);
        const variants: AssignmentInput[] = [
          input, // the same input again: keys, order and id order reused
          settled, // same ids and weights, new owners
          { ...settled, splits: settled.splits.map((s) => (rand() < 0.2 ? { ...s, weight: Math.floor(rand() * 100) } : s)) },
          { ...settled, reserved: settled.splits.filter(() => rand() < 0.2).map((s) => s.id) },
          { ...settled, splits: settled.splits.map((s) => (rand() < 0.2 ? { ...s, status: 'completed' as const } : s)) },
          { ...settled, splits: settled.splits.map((s, i) => (i === settled.splits.length >> 1 ? { ...s, id: `${s.id}-renamed` } : s)) },
          // An id repeated where the memo had another: the duplicate must still be refused.
          { ...settled, splits: settled.splits.map((s, i, all) => (i === all.length - 1 && i > 0 ? { ...s, id: all[0]!.id } : s)) },
          // Same member ids, other caps or default cap; then the members in another order.
          { ...settled, members: settled.members.map((mm, i) => (i % 2 === 0 ? { id: mm.id, cap: 1 + (mm.cap ?? 2) } : mm)) },
          { ...settled, defaultCap: (settled.defaultCap ?? 8) + 1 },
          { ...settled, members: [...settled.members].reverse() },
          settled,
          settled, // unchanged: the last decision is reused
          // One owner of one split changed, all else repeated: the last decision must not be reused.
          { ...settled, splits: settled.splits.map((s, i) => (i === 0 ? { ...s, leaseOwner: null } : s)) },
          { ...settled, splits: settled.splits.map((s, i) => (i === 0 ? { ...s, leaseOwner: null, previous: settled.members.at(-1)?.id ?? null } : s)) },
          { ...settled, splits: settled.splits.map((s, i) => (i === 0 ? { ...s, leaseOwner: null, previous: null, recordOwner: settled.members.at(-1)?.id ?? null } : s)) },
          settled,
          // Only the lease owner, then (no lease, no previous) only the record owner, of one split names another member.
          { ...settled, splits: settled.splits.map((s, i) => (i === 0 ? { ...s, leaseOwner: settled.members.at(-1)?.id ?? null } : s)) },
          settled,
          { ...settled, splits: settled.splits.map((s, i) => (i === 0 ? { ...s, leaseOwner: null, previous: null, recordOwner: settled.members.at(-1)?.id ?? null } : s)) },
          { ...settled, splits: settled.splits.map((s, i) => (i === 0 ? { ...s, leaseOwner: null, previous: null, recordOwner: settled.members[0]?.id ?? null } : s)) },
          settled,
          // A member leaves while some splits are withheld, then they return.
          { ...settled, members: settled.members.slice(1), reserved: settled.splits.filter((_, i) => i % 3 === 0).map((s) => s.id) },
          { ...settled, members: settled.members.slice(1) },
          input,
          input,
        ];
        for (const v of variants) {
          expectSameAsReference(v);
          // What the caller does with a result must not reach the next one.
          const again = outcome(() => wasmAssignment(v));
          if (again.ok) for (const list of Object.values(again.result.assignment)) list.splice(0, list.length, 'junk');
        }
      }),
      { numRuns: 150 },
    );
  });

  it('sees a change in any step of a long input (the read is compared with the last one a step at a time)', () => {
    const input = largeInput(5, 10_000, 40, 0.1);
    const settled = settle(input, expectSameAsReference(input)!.assignment);
    for (const at of [0, 4095, 4096, 8191, 8192, 9999]) {
      expectSameAsReference(settled);
      expectSameAsReference(settled); // unchanged: the last decision is reused
      // A completed split leaves the output: reusing the last decision would show.
      expectSameAsReference({ ...settled, splits: settled.splits.map((s, i) => (i === at ? { ...s, status: 'completed' as const } : s)) });
    }
  });

  it('keeps every result it returned intact while later calls write over the memo (other ids, seeds and lengths)', () => {
    // The engine writes a call's ids over the last call's list when they differ (marshal.ts):
    // no result, and no later decision, may see that list change under it.
    forgetWasmMemo();
    const a = largeInput(11, 3_000, 20, 0.2);
    const b = { ...largeInput(12, 2_000, 15, 0.2), seed: 'other seed' };
    const c = largeInput(13, 5_000, 25, 0.2);
    const aSettled = settle(a, referenceAssignment(a).assignment);
    // Same seed and length, other ids: one renamed, then the same ids in another order.
    const aRenamed = { ...a, splits: a.splits.map((s, i) => (i === 1_500 ? { ...s, id: `${s.id}-renamed` } : s)) };
    const sequence = [
      a, b, b, c, { ...a, seed: 'a again' }, aSettled, aSettled, aRenamed, shuffleInput(aSettled, 5), b,
      { ...c, splits: c.splits.slice(0, 4_000) }, a,
    ];
    const kept = sequence.map((input) => ({ input, got: wasmAssignment(input), copy: '' }));
    for (const k of kept) k.copy = JSON.stringify(k.got);
    for (const k of kept) {
      expect(JSON.stringify(k.got)).toBe(k.copy);
      expectIdentical(k.got, referenceAssignment(k.input));
    }
    // Every later call still decides as the reference does (the memo's lists were left consistent).
    for (const input of sequence) expectSameAsReference(input);
  });

  it('is the default engine of desiredAssignment', () => {
    const input: AssignmentInput = { seed: 's', members: [{ id: 'a' }], splits: [{ id: 'x', weight: 3 }] };
    const result = desiredAssignment(input);
    expect(result.assignment).toEqual({ a: ['x'] });
    expect(result.stats.computeMs).toBeGreaterThanOrEqual(0);
  });

  it('refuses bad input with the reference validator errors', () => {
    const ok = (): AssignmentInput => ({
      seed: 's', members: [{ id: 'a', cap: 2 }, { id: 'b' }],
      splits: [{ id: 'x', weight: 1 }, { id: 'y', weight: 2, status: 'completed' }], reserved: ['x'],
    });
    const bad: unknown[] = [
      null, [], 'x', {}, { seed: 1, members: [], splits: [] }, { ...ok(), defaultCap: 0 },
      { ...ok(), members: 'a' }, { ...ok(), splits: {} }, { ...ok(), members: [{ id: 'a' }, { id: 'a' }] },
      { ...ok(), members: [null] }, { ...ok(), members: [{ id: '' }] }, { ...ok(), members: [{ id: 'a', cap: 1.5 }] },
      { ...ok(), splits: [{ id: 'x', weight: 1 }, { id: 'x', weight: 2 }] },
      { ...ok(), splits: [{ id: 'x', weight: 1, status: 'done' }, { id: 'x', weight: 2 }] },
      { ...ok(), splits: [{ id: 'z', weight: 1, status: 'completed' }, { id: 'x', weight: 2 }, { id: 'z', weight: 3 }] },
      { ...ok(), splits: [{ id: 'x', weight: -1 }] }, { ...ok(), splits: [{ id: 'x', weight: 2 ** 53 }] },
      { ...ok(), splits: [{ id: 'x', weight: 1.5 }] }, { ...ok(), splits: [{ id: 'x', weight: '1' }] },
      { ...ok(), splits: [{ id: 'x', weight: 1, status: null }] }, { ...ok(), splits: [{ id: 'x', weight: 1, leaseOwner: 3 }] },
      { ...ok(), splits: [{ id: 'x', weight: 1, previous: {} }] }, { ...ok(), splits: [{ id: 'x', weight: 1, recordOwner: false }] },
      { ...ok(), splits: [7] }, { ...ok(), splits: [{ weight: 1 }] }, { ...ok(), reserved: 'x' }, { ...ok(), reserved: [1] },
      { ...ok(), splits: [{ id: 'x', weight: NaN }] }, { ...ok(), splits: [{ id: 'x', weight: Infinity }] },
      { ...ok(), splits: [{ id: 'x', weight: 10n }] }, { ...ok(), members: [{ id: 'a', cap: 2n }] }, { ...ok(), defaultCap: NaN },
    ];
    for (const input of bad) {
      const want = outcome(() => referenceAssignment(input as AssignmentInput));
      expect(want.ok).toBe(false);
      expect(outcome(() => wasmAssignment(input as AssignmentInput))).toEqual(want);
    }
  });
});

/** Large seeded inputs: skewed weights, giants past 2^53 in total, mixed caps, departed owners. */
function largeInput(seed: number, splitCount: number, memberCount: number, departedShare: number, allMax = false): AssignmentInput {
  const rand = mulberry32(seed);
  const members = Array.from({ length: memberCount }, (_, i) => {
    const x = rand();
    return x < 0.1 ? { id: `m-${i}` } : { id: `m-${i}`, cap: x < 0.2 ? 1 : x < 0.6 ? 50 + Math.floor(rand() * 100) : 1000 };
  });
  const splits: SplitInput[] = Array.from({ length: splitCount }, (_, i) => {
    const x = rand();
    const weight = allMax ? Number.MAX_SAFE_INTEGER - Math.floor(rand() * 2 ** 40)
      : x < 0.001 ? Number.MAX_SAFE_INTEGER - Math.floor(rand() * 100)
      : x < 0.02 ? Math.floor(rand() * 16 * 2 ** 30)
      : x < 0.1 ? 0
      : Math.round(Math.exp(10 + 4 * rand() * rand()));
    const s: SplitInput = { id: `split/${(i * 7919) % splitCount}`, weight };
    const y = rand();
    if (y < departedShare) s.leaseOwner = `gone-${Math.floor(rand() * 50)}`;
    else if (y < departedShare + 0.3) s.leaseOwner = `m-${Math.floor(rand() * memberCount)}`;
    if (rand() < 0.2) s.previous = `m-${Math.floor(rand() * memberCount)}`;
    if (rand() < 0.1) s.recordOwner = rand() < 0.5 ? `gone-${Math.floor(rand() * 50)}` : `m-${Math.floor(rand() * memberCount)}`;
    if (rand() < 0.01) s.status = 'completed';
    return s;
  });
  return { seed: `job-${seed}`, defaultCap: 100, members, splits, reserved: splits.filter(() => rand() < 0.01).map((s) => s.id) };
}

describe('ids that order only past their first characters', () => {
  it.each([
    ['narrow', ['a', 'b', 'c'], () => ''],
    // Units that differ only in their high byte, past the shared part.
    ['wide', ['é', 'ü', '😀'], (r: () => number) => String.fromCharCode(0x41 + 0x100 * Math.floor(1 + r() * 200))],
  ])('%s ids with long shared middles, prefixes of each other and NULs', (_, groups, unit) => {
    const rand = mulberry32(groups.length);
    // Inserted against their order, so input order never happens to be id order.
    const ids = new Set<string>(groups[0] === 'a' ? ['xy', 'x\u0000\u0000a'] : ['x\ud800', 'x\uffff', 'xy', 'x\u0000\u0000a']);
    for (let k = 24; k >= 0; k--) ids.add(`x${'\u0000'.repeat(k)}`).add(`p${'\u0000'.repeat(k)}`);
    while (ids.size < 3_000) {
      ids.add(`${groups[Math.floor(rand() * groups.length)]}/shared-middle/${unit(rand)}${Math.floor(rand() * 1e6)}`);
    }
    const members = Array.from({ length: 7 }, (_, i) => ({ id: `m${i}`, cap: 200 + i }));
    const input: AssignmentInput = { seed: 'ids', members, splits: [...ids].map((id) => ({ id, weight: Math.floor(rand() * 50) })) };
    forgetWasmMemo();
    const first = expectSameAsReference(input)!;
    expectSameAsReference(input); // ids kept: the id order comes from rankRows
    expectSameAsReference(settle(input, first.assignment));
    expectColumnarSame(poolOf(input));
  });
});

describe('large seeded inputs', () => {
  it.each([
    [1, 200_000, 2_000, 0.5, false],
    [2, 50_000, 300, 0.5, false],
    [3, 20_000, 2_000, 0.1, false],
    // Loads near 2^53 with > 1,024 members: the fill's f64 heap slots, not packed keys.
    [4, 20_000, 2_000, 0.3, true],
  ])('seed %i: %i splits × %i members, departed share %f, all near MAX_SAFE_INTEGER %s; then settled', (seed, n, m, departed, allMax) => {
    const input = largeInput(seed, n, m, departed, allMax);
    const first = expectSameAsReference(input)!;
    expect(first.stats.assigned).toBeGreaterThan(0);
    expectSameAsReference(settle(input, first.assignment));
  });
});

describe('columnar path', () => {
  it('equals the object path on generated inputs', () => {
    fc.assert(fc.property(assignmentInput(), (input) => {
      if (!outcome(() => referenceAssignment(input)).ok) return;
      expectColumnarSame(poolOf(input));
    }), { numRuns: 300 });
  });

  it('equals the object path after incremental updates', () => {
    fc.assert(fc.property(assignmentInput(), fc.integer({ min: 0, max: 0xffffffff }), (input, seed) => {
      if (!outcome(() => referenceAssignment(input)).ok) return;
      const rand = mulberry32(seed);
      const pool = poolOf(input);
      const ids = input.splits.map((s) => s.id);
      let members = input.members.map((mm) => ({ ...mm }));
      const someMember = (): string | null => (members.length > 0 && rand() < 0.8 ? members[Math.floor(rand() * members.length)]!.id : rand() < 0.5 ? 'gone' : null);
      for (let round = 0; round < 4; round++) {
        const decision = columnarAssignment(pool);
        expectColumnarSame(pool);
        // The fleet follows the decision, then things change.
        for (const id of ids) {
          if (pool.rowOf(id) < 0) continue;
          const to = pool.assigneeOf(decision, id);
          pool.setLeaseOwner(id, to);
          pool.setPrevious(id, to);
          if (rand() < 0.5) pool.setRecordOwner(id, to);
        }
        for (let k = 0; k < 1 + Math.floor(rand() * 6); k++) {
          const id = ids.length > 0 ? ids[Math.floor(rand() * ids.length)]! : 'none';
          const x = rand();
          if (x < 0.15) pool.setLeaseOwner(id, someMember());
          else if (x < 0.25) pool.upsertSplit(`new-${round}-${k}`, Math.floor(rand() * 1000), 'runnable') ;
          else if (x < 0.35) pool.removeSplit(id);
          else if (x < 0.45 && pool.rowOf(id) >= 0) pool.upsertSplit(id, rand() < 0.5 ? 0 : Math.floor(rand() * 2 ** 40), 'runnable');
          else if (x < 0.55 && pool.rowOf(id) >= 0) pool.upsertSplit(id, pool.toInput().splits.find((s) => s.id === id)!.weight, rand() < 0.5 ? 'completed' : 'runnable');
          else if (x < 0.65) members = [...members, { id: `joiner-${round}-${k}`, cap: 1 + Math.floor(rand() * 10) }];
          else if (x < 0.75) members = members.filter((_, i) => i !== Math.floor(rand() * members.length));
          else if (x < 0.85) pool.setReserved(ids.filter(() => rand() < 0.1));
          else pool.setPrevious(id, someMember());
        }
        pool.setMembers(members);
        if (rand() < 0.3) pool.upsertSplit(`late-${round}`, 5, 'runnable');
      }
      expectColumnarSame(pool);
    }), { numRuns: 150 });
  });

  it('keeps the sorted order across owner changes and re-sorts on weight changes', () => {
    const input = largeInput(9, 5_000, 40, 0.3);
    const pool = poolOf(input);
    expectColumnarSame(pool);
    pool.setLeaseOwner(input.splits[0]!.id, 'm-3');
    pool.setMembers(input.members.slice(3));
    expectColumnarSame(pool);
    pool.upsertSplit(input.splits[1]!.id, 123456789);
    expectColumnarSame(pool);
  });
});
