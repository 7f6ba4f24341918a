/**
 * The leader's assignment records, by instance, with an index of the split
 * ids they name: whether any record names a split is one lookup. Why: a
 * packed job's fold pass (packed-queue.ts) asks it of every completed split,
 * and built a set of every named id for each pass (~460 MB in 30 s of a 1M
 * fleet's steady state, 15% of all the leader allocated).
 *
 * Every change goes through `set`, `delete` or `clear`, which keep the index.
 */
import type { AssignRecord } from '../../protocol/records.js';
import type { Seen } from '../views/seen.js';

/** The records as their readers see them: read-only, with the index. */
export interface NamedAssignments extends ReadonlyMap<string, Seen<AssignRecord>> {
  /** Whether some record names split `id`. */
  names(id: string): boolean;
}

export class AssignRecords extends Map<string, Seen<AssignRecord>> implements NamedAssignments {
  /** Records naming each split id (one, except while a move is published). */
  private readonly named = new Map<string, number>();

  constructor(entries?: Iterable<readonly [string, Seen<AssignRecord>]>) {
    // Not through super(entries): Map's constructor would call `set` before `named` exists.
    super();
    if (entries !== undefined) for (const [instance, seen] of entries) this.set(instance, seen);
  }

  override set(instance: string, seen: Seen<AssignRecord>): this {
    this.forget(super.get(instance));
    super.set(instance, seen);
    for (const id of seen.rec.splits) this.named.set(id, (this.named.get(id) ?? 0) + 1);
    return this;
  }

  override delete(instance: string): boolean {
    this.forget(super.get(instance));
    return super.delete(instance);
  }

  override clear(): void {
    this.named.clear();
    super.clear();
  }

  /** Whether some record names split `id`. */
  names(id: string): boolean {
    return this.named.has(id);
  }

  private forget(seen: Seen<AssignRecord> | undefined): void {
    if (seen === undefined) return;
    for (const id of seen.rec.splits) {
      const n = this.named.get(id)! - 1;
      if (n === 0) this.named.delete(id);
      else this.named.set(id, n);
    }
  }
}
