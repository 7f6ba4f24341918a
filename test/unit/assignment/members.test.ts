/**
 * The member table (members.ts) against the reference's canonical order:
 * the radix order over content keys equals reference.ts `canonicalMembers`,
 * equal keys go in id order, and a table patched from a prior one (members
 * that joined and left, another seed) equals one built from nothing.
 * A failing property prints its seed; replay with { seed, path } in fc.assert.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { compareKeyed } from '../../../src/hash.js';
import { keyedOrder, memberTable, type MemberTable } from '../../../src/assignment/members.js';
import { canonicalMembers } from '../../../src/assignment/reference.js';

/** Member ids: short ones that share prefixes, and any UTF-16 (lone surrogates included). */
const memberId = fc.oneof(fc.stringMatching(/^[ab]{0,4}$/), fc.string({ unit: 'binary', maxLength: 6 }), fc.string({ unit: 'grapheme', maxLength: 3 }));
const memberIds = fc.uniqueArray(memberId, { maxLength: 40 });
const members = (ids: readonly string[]): { id: string; cap?: number }[] => ids.map((id, i) => (i % 3 === 0 ? { id } : { id, cap: i % 5 }));

/** What memberTable must hold for `ids`, `seed`: the reference's order and caps, and the id order. */
function expectTable(t: MemberTable, seed: string, given: { id: string; cap?: number }[]): void {
  const canon = canonicalMembers({ seed, members: given.slice(), splits: [] });
  expect(t.ids).toEqual(canon.map((c) => c.id));
  expect(t.caps).toEqual(canon.map((c) => c.cap));
  const sorted = t.ids.slice().sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  expect(t.idOrder).toEqual(sorted);
  expect(t.byId.map((j) => t.ids[j])).toEqual(sorted);
  t.ids.forEach((id, j) => expect(t.index.get(id)).toBe(j));
  expect(Array.from(t.givenAt, (g) => given[g]!.id)).toEqual(t.ids);
}

describe('member table', () => {
  it('orders members as the reference does', () => {
    fc.assert(fc.property(memberIds, fc.string({ maxLength: 4 }), (ids, seed) => {
      const given = members(ids);
      expectTable(memberTable({ seed, members: given }, null), seed, given);
    }), { numRuns: 300 });
  });

  it('orders equal keys by id', () => {
    // Keys from a tiny range, so that most are shared: the radix passes and the id order of equal keys.
    const keyed = fc.uniqueArray(memberId, { minLength: 1, maxLength: 60 }).chain((ids) =>
      fc.tuple(fc.constant(ids), fc.array(fc.tuple(fc.nat(3), fc.constantFrom(0, 1, 0x80000000, 0xffffffff)), { minLength: ids.length, maxLength: ids.length })));
    fc.assert(fc.property(keyed, ([ids, pairs]) => {
      const keys = new Uint32Array(2 * ids.length);
      pairs.forEach(([lo, hi], i) => {
        keys[2 * i] = lo === 3 ? 0xfffffffe : lo << 8;
        keys[2 * i + 1] = hi;
      });
      const expected = ids.map((_, i) => i).sort((a, b) => compareKeyed(keys[2 * a]!, keys[2 * a + 1]!, ids[a]!, keys[2 * b]!, keys[2 * b + 1]!, ids[b]!));
      expect(Array.from(keyedOrder(keys, ids))).toEqual(expected);
    }), { numRuns: 300 });
  });

  it('patched from a prior table, equals one built from nothing', () => {
    // Steps over one universe of ids, so that members stay, leave and join (the merge), or mostly change (a sort).
    const steps = memberIds.chain((universe) => fc.array(fc.tuple(fc.shuffledSubarray(universe), fc.constantFrom('s', 't')), { minLength: 2, maxLength: 6 }));
    fc.assert(fc.property(steps, (chain) => {
      let prior: MemberTable | null = null;
      for (const [ids, seed] of chain) {
        const given = members(ids);
        prior = memberTable({ seed, members: given }, prior);
        expectTable(prior, seed, given);
      }
    }), { numRuns: 300 });
  });

  it('keeps the prior table when members, caps and seed repeat', () => {
    const given = members(['b', 'a', 'c']);
    const t = memberTable({ seed: 's', members: given }, null);
    expect(memberTable({ seed: 's', members: members(['b', 'a', 'c']) }, t)).toBe(t);
    expect(memberTable({ seed: 's', members: [...members(['b', 'a']), { id: 'c', cap: 9 }] }, t)).not.toBe(t);
  });
});
