/**
 * The members of a decision in canonical order, kept between calls and
 * reused while members, caps and seed repeat. Pure.
 */
import { canonicalMembers } from './reference.js';
import { DEFAULT_CAP } from './types.js';

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
  caps: number[];
  index: Map<string, number>;
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
  const canon = canonicalMembers({ seed: input.seed, defaultCap: input.defaultCap, members: ms.slice(), splits: [] });
  const ids = canon.map((c) => c.id);
  const byId = ids.map((_, j) => j).sort((a, b) => (ids[a]! < ids[b]! ? -1 : ids[a]! > ids[b]! ? 1 : 0));
  return {
    seed: input.seed,
    given: ms.map((mm) => mm.id),
    givenCaps: ms.map((mm) => mm.cap ?? defaultCap),
    ids,
    caps: canon.map((c) => c.cap),
    index: new Map(ids.map((id, j) => [id, j])),
    byId,
  };
}

