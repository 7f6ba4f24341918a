/**
 * The members of a decision in canonical order, kept between calls and
 * reused while members, caps and seed repeat. Pure.
 */
import { hashInto, seedState } from '../hash.js';
import { DEFAULT_CAP } from './types.js';
import { jsStringOrder } from '../js-order.js';

/**
 * The members of a decision in canonical order (reference.ts
 * `canonicalMembers`: by content key, then id), with their effective caps,
 * an id → index map, and the order by id in which results are written.
 * Kept between calls and reused while the members, caps and seed repeat.
 */
export interface MemberTable {
  seed: string;
  /** As given (input order) with effective caps: what reuse is checked against. */
  given: string[];
  givenCaps: number[];
  /** Canonical order. */
  ids: string[];
  /** givenAt[j]: where canonical member j is in `given`. */
  givenAt: Uint32Array;
  caps: number[];
  index: Map<string, number>;
  /** The member ids in JS string order: whatever the seed, the next table patches it (`idOrderAfter`). */
  idOrder: string[];
  /** Member indices by id in JS string order. */
  byId: number[];
}

/** The member table of `input`, or `prior` when it has the same members, caps and seed. */
export function memberTable(
  input: { seed: string; defaultCap?: number; members: readonly { id: string; cap?: number }[] },
  prior: MemberTable | null,
): MemberTable {
  const defaultCap = input.defaultCap ?? DEFAULT_CAP;
  const ms = input.members;
  if (prior !== null && prior.seed === input.seed && prior.given.length === ms.length) {
    let i = 0;
    while (i < ms.length && ms[i]!.id === prior.given[i] && (ms[i]!.cap ?? defaultCap) === prior.givenCaps[i]) i++;
    if (i === ms.length) return prior;
  }
  const given = ms.map((mm) => mm.id);
  const givenCaps = ms.map((mm) => mm.cap ?? defaultCap);
  const order = canonicalOrder(input.seed, given);
  const ids = Array.from(order, (g) => given[g]!);
  const index = new Map<string, number>();
  for (let j = 0; j < ids.length; j++) index.set(ids[j]!, j);
  const idOrder = prior === null ? ids.slice().sort() : idOrderAfter(prior, ids, index);
  return {
    seed: input.seed, given, givenCaps, ids, givenAt: order, caps: Array.from(order, (g) => givenCaps[g]!), index, idOrder,
    byId: idOrder.map((id) => index.get(id)!),
  };
}

/**
 * Positions of `ids` in canonical order: by 64-bit content key (high word,
 * then low), equal keys by id, as reference.ts `canonicalMembers` sorts them.
 * Why not that sort: a comparator sort of 10k members took 7–11 ms, and a
 * table is built again whenever a member joins or leaves. An LSD radix sort
 * over the key's bytes (passes whose byte never varies skipped) takes a
 * few; equal keys, which two distinct ids have about once in 10^10 tables
 * of 10k, are then put in id order.
 */
export function canonicalOrder(seed: string, ids: readonly string[]): Uint32Array {
  const state = seedState(seed);
  const keys = new Uint32Array(2 * ids.length);
  for (let i = 0; i < ids.length; i++) hashInto(state, ids[i]!, keys, 2 * i);
  return keyedOrder(keys, ids);
}

/** @internal (tests) Positions of `ids` by key (keys[2i] low word, keys[2i + 1] high), equal keys by id. */
export function keyedOrder(keys: Uint32Array, ids: readonly string[]): Uint32Array {
  const n = ids.length;
  let order = new Uint32Array(n);
  let other = new Uint32Array(n);
  for (let i = 0; i < n; i++) order[i] = i;
  const count = new Uint32Array(256);
  // Least significant byte first: the low word's four, then the high word's.
  for (let pass = 0; pass < 8 && n > 1; pass++) {
    const word = pass >> 2;
    const shift = (pass & 3) << 3;
    count.fill(0);
    for (let i = 0; i < n; i++) count[(keys[2 * i + word]! >>> shift) & 255]!++;
    if (count[(keys[word]! >>> shift) & 255] === n) continue;
    let sum = 0;
    for (let d = 0; d < 256; d++) {
      const c = count[d]!;
      count[d] = sum;
      sum += c;
    }
    for (let i = 0; i < n; i++) {
      const g = order[i]!;
      other[count[(keys[2 * g + word]! >>> shift) & 255]!++] = g;
    }
    [order, other] = [other, order];
  }
  for (let s = 0; s < n; ) {
    let e = s + 1;
    const lo = keys[2 * order[s]!]!, hi = keys[2 * order[s]! + 1]!;
    while (e < n && keys[2 * order[e]!] === lo && keys[2 * order[e]! + 1] === hi) e++;
    if (e - s > 1) order.subarray(s, e).sort((a, b) => jsStringOrder(ids[a]!, ids[b]!));
    s = e;
  }
  return order;
}

/**
 * The member ids in JS string order, from `prior`'s: those that stayed, in
 * the order they had, merged with those that joined. Why: sorting 10k ids
 * took ~8 ms, and a member joining or leaving changes a few.
 */
function idOrderAfter(prior: MemberTable, ids: readonly string[], index: ReadonlyMap<string, number>): string[] {
  const stayed = prior.idOrder.filter((id) => index.has(id));
  if (stayed.length === ids.length) return stayed;
  const joined = ids.filter((id) => !prior.index.has(id));
  if (joined.length > stayed.length) return ids.slice().sort();
  joined.sort();
  const out = new Array<string>(ids.length);
  let a = 0, b = 0, k = 0;
  while (a < stayed.length && b < joined.length) out[k++] = stayed[a]! < joined[b]! ? stayed[a++]! : joined[b++]!;
  while (a < stayed.length) out[k++] = stayed[a++]!;
  while (b < joined.length) out[k++] = joined[b++]!;
  return out;
}
