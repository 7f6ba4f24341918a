/**
 * SplitColumns: the leader view's dense half, one row per split of the
 * `ColumnarPool` the engine decides on (whose weight and status columns are
 * the only ones: this file reads them there), and the halves of splits seen
 * before their other half. Every count and weight by status is kept
 * incrementally, so nothing here is ever recounted over the split count.
 *
 * Invariants:
 * - A split is a pool row once both its spec (weight) and its record
 *   (status) are known and none of its records is a problem; else its
 *   halves wait in `specOnly` / `recordOnly`.
 * - A parked split (a record of it cannot be read) is never a row; its
 *   readable record still counts in the status counts.
 * - A new row gets the record owner and lease owner the view knows
 *   (the sparse maps it is given), so the engine sees them at once.
 * - A split's halves change only through the named events below (`specSeen`,
 *   `recordSeen`, …), each changing the half it names: the one `place` that
 *   moves them is private (the architecture test keeps callers off it).
 *
 * No I/O and no decisions: the LeaderView feeds it from listings and watches.
 */
import { ColumnarPool } from '../../assignment/front-door.js';
import type { LeaseRecord, SplitStatus } from '../../protocol/records.js';
import type { Seen } from '../views/seen.js';
import { IdWeights } from './id-weights.js';
import { PackedPages } from './packed-pages.js';
import { isResidualId } from '../../protocol/residual-ids.js';

/** The most splits a listing reserves room for ahead of them (beyond, the columns grow as they arrive). */
const MAX_LISTING_RESERVE = 1 << 22;

export type StatusTally = { runnable: number; completed: number; quarantined: number };

export class SplitColumns {
  /** The engine's input, one row per split (weights, status, owners; members and reserve set per decision). */
  readonly pool: ColumnarPool;
  /** Counts of split records by status, kept incrementally. */
  readonly statusCounts: StatusTally = { runnable: 0, completed: 0, quarantined: 0 };
  /** Summed weight of the pool's rows by status, kept incrementally (the backlog metric's weights). */
  readonly statusWeights: StatusTally = { runnable: 0, completed: 0, quarantined: 0 };
  /** Halves seen before their other half (seeding writes both in one transaction, so these are brief). */
  private readonly specOnly = new IdWeights();
  private readonly recordOnly = new Map<string, SplitStatus>();
  /** Splits set aside because a record of theirs cannot be read: kind → problem. Never in the pool. */
  private readonly problems = new Map<string, Map<string, string>>();
  /** A packed job's pages and locations (decision 0037); undefined for the `keys` layout. */
  packed: PackedPages | undefined;

  constructor(
    seed: string,
    private readonly owners: ReadonlyMap<string, string>,
    private readonly leases: ReadonlyMap<string, Seen<LeaseRecord>>,
  ) {
    this.pool = new ColumnarPool(seed);
  }

  /** Splits set aside because a record of theirs cannot be read, with the problems. */
  get parked(): ReadonlyMap<string, ReadonlyMap<string, string>> {
    return this.problems;
  }

  /** Split records known (with or without a spec). */
  get splitCount(): number {
    return this.statusCounts.runnable + this.statusCounts.completed + this.statusCounts.quarantined;
  }

  /** Specs known (in the pool, waiting for their record, or a packed split's parked with its page's). */
  get specCount(): number {
    return this.pool.size + this.specOnly.size + (this.packed?.parkedCount ?? 0);
  }

  hasSpec(id: string): boolean {
    return this.pool.rowOf(id) >= 0 || this.specOnly.has(id) || this.packed?.parkedOf(id) !== undefined;
  }

  /** The job is packed: splits come from queue pages, not specs (called once the plan says so). */
  usePacked(): PackedPages {
    return (this.packed ??= new PackedPages());
  }

  /** Where packed split `id` lives, if its page is known. */
  locationOf(id: string): number | undefined {
    const r = this.pool.rowOf(id);
    return r >= 0 ? this.packed?.locationAt(r) : this.packed?.parkedOf(id)?.location;
  }

  /**
   * A packed split's status when it has no record of its own: completed when
   * its page's folded bit is set, else queued (runnable).
   */
  private packedDefault(location: number): SplitStatus {
    return this.packed!.isFolded(location) ? 'completed' : 'runnable';
  }

  /**
   * Split `id` as a queue page holds it (weight, location): a row with the
   * status its record says, else its page's default. A second page naming
   * an id already known is ignored (ids are unique per job; seeding never
   * writes one twice).
   */
  placePacked(id: string, weight: number, location: number): void {
    const packed = this.packed!;
    if (this.pool.rowOf(id) >= 0 || packed.parkedOf(id) !== undefined) return;
    const status = this.recordOnly.get(id) ?? this.packedDefault(location);
    this.place(id, weight, status);
    const r = this.pool.rowOf(id);
    if (r >= 0) packed.setRow(r, location);
    else {
      // Out of the pool (a record of it unreadable): its page's weight and place wait here, and its spec,
      // if one came first, no longer does (counted once: specCount, the plan's planned count).
      packed.parkAt(id, location, weight);
      this.specOnly.delete(id);
    }
  }

  statusOf(id: string): SplitStatus | undefined {
    const r = this.pool.rowOf(id);
    return r >= 0 ? this.pool.statusAt(r) : this.recordOnly.get(id);
  }

  weightOf(id: string): number | undefined {
    const r = this.pool.rowOf(id);
    return r >= 0 ? this.pool.weightAt(r) : this.packed?.parkedOf(id)?.weight ?? this.specOnly.get(id);
  }

  /** Splits with a spec but no split record, none of whose records is a problem (deleted by hand). */
  unrecorded(limit: number): string[] {
    const out: string[] = [];
    for (const id of this.specOnly.keys()) {
      if (out.length >= limit) break;
      if (!this.recordOnly.has(id) && !this.problems.has(id)) out.push(id);
    }
    return out;
  }

  /**
   * A packed job's splits with a readable record of their own and no known page (not residuals, whose
   * spec is their weight): their page was deleted after they were promoted, and no listing has brought
   * it back. A pass over the records waiting for their other half (few: seeding writes both at once).
   */
  pageless(): number {
    const packed = this.packed;
    if (!packed) return 0;
    let n = 0;
    for (const id of this.recordOnly.keys()) if (!this.problems.has(id) && packed.parkedOf(id) === undefined && !isResidualId(id)) n++;
    return n;
  }

  /**
   * A keys job's runnable splits that have a record and no spec (ids; a packed job's specs are
   * copies, so none): after a complete listing, a spec that is missing (deleted while no leader ran).
   */
  runnableWithoutSpec(): string[] {
    if (this.packed) return [];
    const out: string[] = [];
    for (const [id, status] of this.recordOnly) if (status === 'runnable' && !this.problems.has(id)) out.push(id);
    return out;
  }

  /** A record of split `id` cannot be read: it is parked until a readable value or a deletion replaces it. */
  setProblem(id: string, kind: string, problem: string): void {
    let p = this.problems.get(id);
    if (!p) this.problems.set(id, (p = new Map()));
    p.set(kind, problem);
  }

  clearProblem(id: string, kind: string): void {
    this.problems.get(id)?.delete(kind);
  }

  // What the leader saw of a split, one event each: each changes the half it names and keeps the other as known.

  /** Split `id`'s spec was read with `weight`, or is gone or unreadable (undefined). */
  specSeen(id: string, weight: number | undefined): void {
    this.place(id, weight, this.statusOf(id));
  }

  /** A divided split's part weight (decision 0063) stands for its spec's weight in the decisions and totals. */
  partWeightSeen(id: string, weight: number): void {
    this.specSeen(id, weight);
  }

  /** Split `id`'s record (`split.{id}`) was read with `status`, or is unreadable (undefined). */
  recordSeen(id: string, status: SplitStatus | undefined): void {
    this.place(id, this.weightOf(id), status);
  }

  /** Split `id`'s record was deleted: a packed split is what its page says again (folded or queued), a keys split has no status. */
  recordForgotten(id: string): void {
    const location = this.locationOf(id);
    this.recordSeen(id, location !== undefined ? this.packedDefault(location) : undefined);
  }

  /** A packed split with no record of its own takes the status its page's folded bit at `location` gives. */
  pageStatusSeen(id: string, location: number): void {
    this.recordSeen(id, this.packedDefault(location));
  }

  /** A packed split's page, unreadable while promoting it, was read again: its weight, and its record's status or else the page's. */
  pageReread(id: string, weight: number, location: number): void {
    this.place(id, weight, this.statusOf(id) ?? this.packedDefault(location));
  }

  /** Split `id`'s problems changed (a record of it became readable or not, its page could not be read): placed again, halves as known. */
  problemsChanged(id: string): void {
    this.place(id, this.weightOf(id), this.statusOf(id));
  }

  /**
   * Puts a split where its halves say: a pool row when its spec (`weight`)
   * and its record (`status`) are both known and none of its records is a
   * problem; else the halves wait. Status counts follow every readable
   * record, row or not. Private: callers name what they saw (the events above).
   */
  private place(id: string, weight: number | undefined, status: SplitStatus | undefined): void {
    this.packed?.noteStatus(id, status);
    const p = this.problems.get(id);
    if (p && p.size === 0) this.problems.delete(id);
    const r = this.pool.rowOf(id);
    const before = this.statusOf(id);
    if (before !== undefined) this.statusCounts[before]--;
    // A row's status and weight are the pool's (a row always has both).
    const rowWeight = r >= 0 ? this.pool.weightAt(r)! : 0;
    if (r >= 0 && before !== undefined) this.statusWeights[before] -= rowWeight;
    if (status !== undefined) this.statusCounts[status]++;
    if (weight !== undefined && status !== undefined && !this.problems.has(id)) {
      this.specOnly.delete(id);
      this.recordOnly.delete(id);
      if (r >= 0) {
        if (rowWeight !== weight || before !== status) this.pool.upsertSplit(id, weight, status);
        this.statusWeights[status] += weight;
        return;
      }
      this.pool.upsertSplit(id, weight, status);
      this.statusWeights[status] += weight;
      const back = this.packed?.unpark(id);
      if (back) this.packed!.setRow(this.pool.rowOf(id), back.location);
      const owner = this.owners.get(id);
      if (owner !== undefined) this.pool.setRecordOwner(id, owner);
      const lease = this.leases.get(id);
      if (lease) this.pool.setLeaseOwner(id, lease.rec.owner);
      return;
    }
    if (r >= 0) {
      this.packed?.park(id, r, rowWeight);
      this.pool.removeSplit(id);
      if (this.packed?.parkedOf(id)) weight = undefined; // a packed split's weight stays with its location
    }
    if (weight !== undefined && !this.packed?.parkedOf(id)) this.specOnly.set(id, weight);
    else this.specOnly.delete(id);
    if (status !== undefined) this.recordOnly.set(id, status);
    else this.recordOnly.delete(id);
  }

  /** Forgets every split (a fresh listing follows). */
  clear(): void {
    for (let r = 0; r < this.pool.rowCount; r++) {
      const id = this.pool.idAt(r);
      if (id !== undefined) this.pool.removeSplit(id);
    }
    this.specOnly.clear();
    this.recordOnly.clear();
    this.problems.clear();
    this.packed?.clear();
    this.statusCounts.runnable = this.statusCounts.completed = this.statusCounts.quarantined = 0;
    // The weights too, or a listing after a restart would count every split's weight twice.
    this.statusWeights.runnable = this.statusWeights.completed = this.statusWeights.quarantined = 0;
  }

  /** Room for `rows` splits at once, ids of about `unitsPerId` code units (seeding a plan of that many; see ColumnarPool.reserve). */
  reserve(rows: number, unitsPerId = 0): void {
    this.pool.reserve(rows, unitsPerId);
    this.packed?.reserve(rows);
  }

  /** Touches up to `pages` more pages of the id index (ColumnarPool `touchIndex`): true once all are. */
  touchIndex(pages: number): boolean {
    return this.pool.touchIndex(pages);
  }

  /**
   * Room for a listing of `splits` splits: its specs all arrive before any
   * record, so the halves waiting for theirs reach that many too.
   */
  reserveListing(splits: number): void {
    // A record's count, not a promise: bounded, so a hostile `planned` cannot make the leader allocate gigabytes.
    const n = Math.min(splits, MAX_LISTING_RESERVE);
    this.pool.reserve(n);
    // A packed job's splits arrive as whole rows (its pages): no halves wait.
    if (this.packed) this.packed.reserve(n);
    else this.specOnly.reserve(n);
  }
}
