/**
 * Named but unclaimed: a split the leader has named for a live member that
 * has a free lane, still unclaimed after several reconcile intervals. A
 * member with a free lane claims what it is named at once (heaviest first),
 * so one that does not (its claims refused by the store's permissions, a
 * record it cannot read, a wedged worker) holds part of the job still while
 * the rest moves: health says so (issue 49, "partial stalls").
 *
 * Pure: the leader's view and the time come in; a look costs one pass over
 * the assignment records, so the leader looks on a timer, not per change.
 */
import type { AssignRecord, LeaseRecord, SplitStatus, WorkerRecord } from '../../protocol/records.js';
import type { Seen } from '../views/seen.js';

/** Reconcile intervals a split may stay named and unclaimed at a member with a free lane before it is reported. */
export const UNCLAIMED_INTERVALS = 3;

/** What a look reads of the leader's view. */
export interface UnclaimedView {
  readonly workers: ReadonlyMap<string, Seen<WorkerRecord>>;
  readonly assigns: ReadonlyMap<string, Seen<AssignRecord>>;
  readonly leases: ReadonlyMap<string, Seen<LeaseRecord>>;
  /** Failed splits' backoffs, due times by split id (wall ms): a waiting split is not claimable yet. */
  readonly notBefore: ReadonlyMap<string, number>;
  statusOf(id: string): SplitStatus | undefined;
}

export class UnclaimedWatch {
  /** Since when (`now` of the look that first saw it) each split has been named and unclaimed at a member with a free lane. */
  private readonly since = new Map<string, { member: string; at: number }>();

  /**
   * One look at `now` (the leader's clock; `wallNow` for backoffs): the reason to report when
   * some split has been named and unclaimed at a member with a free lane for `limitMs` or more,
   * else undefined. The oldest such split is named, with its member and how many there are.
   */
  look(view: UnclaimedView, now: number, wallNow: number, limitMs: number): string | undefined {
    const held = new Map<string, number>();
    for (const l of view.leases.values()) held.set(l.rec.owner, (held.get(l.rec.owner) ?? 0) + 1);
    const seen = new Set<string>();
    for (const [member, assign] of view.assigns) {
      const worker = view.workers.get(member);
      if (!worker || (held.get(member) ?? 0) >= worker.rec.maxInFlight) continue; // gone, or every lane busy: prefetch waits
      for (const id of assign.rec.splits) {
        if (view.leases.has(id) || view.statusOf(id) !== 'runnable' || (view.notBefore.get(id) ?? 0) > wallNow) continue;
        seen.add(id);
        const known = this.since.get(id);
        if (!known || known.member !== member) this.since.set(id, { member, at: now });
      }
    }
    for (const id of this.since.keys()) if (!seen.has(id)) this.since.delete(id);
    let oldest: [string, { member: string; at: number }] | undefined;
    let count = 0;
    for (const entry of this.since) {
      if (now - entry[1].at < limitMs) continue;
      count++;
      if (!oldest || entry[1].at < oldest[1].at || (entry[1].at === oldest[1].at && entry[0] < oldest[0])) oldest = entry;
    }
    if (!oldest) return undefined;
    const [id, { member }] = oldest;
    return `${count} split${count === 1 ? '' : 's'} named but not claimed for over ${Math.round(limitMs / 1000)} s by a member with a free lane (${JSON.stringify(id)} at ${JSON.stringify(member)}: its claims fail, or it cannot read the split's records)`;
  }

  clear(): void {
    this.since.clear();
  }
}
