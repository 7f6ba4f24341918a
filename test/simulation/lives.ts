/**
 * A split's lives, for the simulation auditor (auditor.ts): what the hostile
 * writer's deletions (hostile.ts) allow the fleet, and nothing more.
 *
 * A split whose `split.{id}` the writer deleted is created again (a keys job
 * seeds it again, a packed job promotes it again), and so is one whose queue
 * page or folded record it deleted and that a leader then ran again
 * (substrate.md, "Hostile records": what the store forgot is run again, at
 * least once). Each such creation starts a new **life**: its epochs start
 * again at 0, so a tenancy is named by split, life and epoch, and a unit or a
 * handler's exit belongs to the tenancy of its epoch and process claimed last
 * before it. A creation starts a life only when a deletion named the split
 * after the life before began (the packed checker's `rerun`,
 * test/support/packed-invariants.ts, which both layouts feed); any other
 * creation of a split that had records stays the violation it was.
 *
 * Allowed from the deletion on, for that split only:
 * - the shared checkers' comparisons across a life's start (an epoch back to
 *   0, a progress record's epoch or value below the last life's) and, across
 *   the writer's deletion of `progress.{id}`, committed progress going back;
 * - duplicates beyond the commit interval's bound, up to the committed units
 *   the deletion made the store forget (`forgotten`).
 *
 * Pure: no I/O, no clock.
 */
import type { Problem } from '../support/invariants.js';
import type { Tenancy } from './auditor.js';

/** A tenancy's key in the maps of units and exits: split, life, epoch. */
export const tenancyKey = (id: string, life: number, epoch: number): string => `${id}\u0000${life}\u0000${epoch}`;

export class Lives {
  /** Per split, the revisions at which a new life began (the first life begins with its seeding: not listed). */
  private readonly starts = new Map<string, number[]>();
  /** Per split, the revisions at which the writer deleted its progress record. */
  private readonly progressDeletions = new Map<string, number[]>();
  /** Per split, the highest progress committed since the store last forgot some (a position, as the auditor's `at`). */
  private readonly best = new Map<string, number>();
  /** Per split, the committed units the writer's deletions made the store forget: they may run again. */
  readonly forgotten = new Map<string, number>();

  /** The life split `id` is in (0: its first). */
  life(id: string): number {
    return this.starts.get(id)?.length ?? 0;
  }

  /**
   * Split `id` created at `rev` when it had records before: a new life if a deletion named it at
   * `rerunFrom` (undefined: none) after the current life began. Returns whether it is one.
   */
  created(id: string, rev: number, rerunFrom: number | undefined): boolean {
    const starts = this.starts.get(id) ?? [];
    if (rerunFrom === undefined || rerunFrom >= rev || rerunFrom <= (starts.at(-1) ?? 0)) return false;
    starts.push(rev);
    this.starts.set(id, starts);
    return true;
  }

  /** A commit of split `id` at position `p`. */
  committed(id: string, p: number): void {
    this.best.set(id, Math.max(this.best.get(id) ?? p, p));
  }

  /** The store no longer holds committed progress past `now` for split `id` (a deletion, a new life): those units may run again. */
  forget(id: string, now: number): void {
    const best = this.best.get(id);
    if (best === undefined || best <= now) return;
    this.forgotten.set(id, (this.forgotten.get(id) ?? 0) + best - now);
    this.best.set(id, now);
  }

  /** The writer deleted `progress.{id}` at `rev`. */
  progressDeleted(id: string, rev: number): void {
    this.progressDeletions.set(id, [...(this.progressDeletions.get(id) ?? []), rev]);
  }

  /**
   * Whether a shared checker's problem (test/support/invariants.ts) compares a split's records across a life's
   * start (every rule of a split's record or progress), or its progress across the writer's deletion of it.
   */
  excuses(p: Problem): boolean {
    const [a, b] = [p.revisions[0], p.revisions[p.revisions.length - 1]];
    if (a === undefined || b === undefined || a === b) return false;
    const across = (revs: readonly number[] | undefined, upTo: boolean) => (revs ?? []).some((r) => r > a && (upTo ? r <= b : r < b));
    switch (p.rule) {
      case 'epoch-moved':
      case 'owner-changed-without-claim':
      case 'claim-without-owner':
      case 'progress-epoch-regressed':
        return across(this.starts.get(p.split), true);
      case 'progress-regressed':
        return across(this.starts.get(p.split), true) || across(this.progressDeletions.get(p.split), false);
      default:
        return false;
    }
  }
}

/**
 * The tenancy of split `id` at `epoch` that process `proc` was in at time `t`: of those it claimed at that
 * epoch (one per life), the last claimed at or before `t`; the only one when there is one. With `unit`
 * (a unit processed at `t`), the last of those that could process it (past its resume point): a life
 * claimed in the same virtual millisecond as the previous life's last unit did not process that unit.
 */
export function tenancyAt(tenancies: readonly Tenancy[] | undefined, epoch: number, proc: string, t: number, unit?: number): Tenancy | undefined {
  const mine = (tenancies ?? []).filter((x) => x.epoch === epoch && x.proc === proc);
  if (mine.length <= 1) return mine[0];
  const before = mine.filter((x) => x.at <= t);
  return (unit !== undefined ? before.filter((x) => unit > x.resume).at(-1) : undefined) ?? before.at(-1) ?? mine[0];
}
