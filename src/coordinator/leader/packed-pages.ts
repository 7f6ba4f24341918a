/**
 * PackedPages: what the leader view knows of a packed job's queue (decision
 * 0037) beyond the pool's columns: the pages listed (bucket, page), each
 * page's folded bits and their record's revision, where each split lives
 * (page and slot, by pool row), and which splits have a record of their own.
 *
 * Invariants:
 * - A location is `pageIndex << 10 | slot`, the page index dense over the
 *   pages this view knows; a split's location never changes (pages are
 *   immutable). A split out of the pool (parked) keeps its location and
 *   weight here until it is a row again.
 * - `keyed` holds exactly the splits whose `split.{id}` the view has seen
 *   and not seen deleted, with that record's revision: sparse (the promoted
 *   splits not yet folded back).
 * - A folded page's revision only grows.
 * - A page's bits come only from folded records naming its generation, or
 *   none (decision 0091); a record of another generation counts for its
 *   revision (promotions compare it) and sets no bit.
 *
 * No I/O: LeaderRecords feeds it; the packed queue (packed-queue.ts) reads it.
 */
import { grown } from '../../assignment/front-door.js';
import { FoldedBits, foldedRecordApplies } from '../../protocol/packed.js';

const SLOT_BITS = 10;
const SLOT_MASK = (1 << SLOT_BITS) - 1;

/** Where a split lives: its page (bucket, page number, the page's index in this view) and its slot. */
export interface SplitLocation {
  bucket: number;
  page: number;
  pageIndex: number;
  slot: number;
}

export class PackedPages {
  private readonly buckets: number[] = [];
  private readonly pageNumbers: number[] = [];
  /** Each page's `generation` (the term that seeded it): what a folded record must name to set its bits. */
  private readonly generations: number[] = [];
  private readonly indexOf = new Map<string, number>();
  private readonly folded: (FoldedBits | undefined)[] = [];
  private readonly foldedRevision: number[] = [];
  /** Folded records seen before their page (the listing sorts `folded` before `queue`). */
  private readonly early = new Map<string, { bits: FoldedBits; modRevision: number; pageGeneration: number | undefined }>();
  /** The next page number of each bucket (one past the highest page known). */
  private readonly nextPages = new Map<number, number>();
  /**
   * Location + 1 by pool row; 0 where the row is not a packed split. Why not
   * the location with a sentinel: memory a new typed array gets is zeroed by
   * the system as it is first touched, where a sentinel is written at once
   * (a 10M seeding's reserve held the leader's loop 110–140 ms filling it).
   */
  private byRow = new Uint32Array(16);
  /** Rows below this may hold a location (the rest of `byRow` is zero): what a growth copies, a clear fills. */
  private rowsSet = 0;
  /** Splits out of the pool (parked), with what their row held. */
  private readonly parked = new Map<string, { location: number; weight: number }>();
  /** Splits with a record of their own (promoted, not folded back): the record's revision. */
  readonly keyed = new Map<string, number>();
  /**
   * Keyed splits last placed as completed: what a fold-back looks at, so it
   * costs the completions since the last one, not every promoted split (800 a
   * fleet of 200 × 4, scanned 100 times a second). A superset: the fold-back
   * checks each again and drops those that are not.
   */
  readonly foldable = new Set<string>();

  get pageCount(): number {
    return this.buckets.length;
  }

  /** The page's index in this view, registering it (a page listed, or one seeding wrote), seeded in `generation`. */
  addPage(bucket: number, page: number, generation: number): number {
    const name = `${bucket}.${page}`;
    let i = this.indexOf.get(name);
    if (i !== undefined) return i;
    i = this.buckets.length;
    this.buckets.push(bucket);
    this.pageNumbers.push(page);
    this.generations.push(generation);
    this.indexOf.set(name, i);
    const early = this.early.get(name);
    this.early.delete(name);
    this.folded.push(early && foldedRecordApplies(early.pageGeneration, generation) ? early.bits : undefined);
    this.foldedRevision.push(early?.modRevision ?? 0);
    if (page >= (this.nextPages.get(bucket) ?? 0)) this.nextPages.set(bucket, page + 1);
    return i;
  }

  hasPage(bucket: number, page: number): boolean {
    return this.indexOf.has(`${bucket}.${page}`);
  }

  /** The number seeding gives bucket `bucket`'s next page. */
  nextPage(bucket: number): number {
    return this.nextPages.get(bucket) ?? 0;
  }

  /**
   * A folded record of page (bucket, page) at `modRevision`, for the page of `pageGeneration`
   * (undefined: an older build's record, for whichever page); ignored unless newer than the one
   * held. Returns the page's index when it is known and changed.
   */
  setFolded(bucket: number, page: number, bits: FoldedBits, modRevision: number, pageGeneration: number | undefined): number | undefined {
    const i = this.indexOf.get(`${bucket}.${page}`);
    if (i === undefined) {
      const name = `${bucket}.${page}`;
      if ((this.early.get(name)?.modRevision ?? 0) < modRevision) this.early.set(name, { bits, modRevision, pageGeneration });
      this.takePageNumber(bucket, page);
      return undefined;
    }
    if (this.foldedRevision[i]! >= modRevision) return undefined;
    this.folded[i] = foldedRecordApplies(pageGeneration, this.generations[i]!) ? bits : undefined;
    this.foldedRevision[i] = modRevision;
    return i;
  }

  /**
   * A folded record of page (bucket, page) exists, readable or not: while its page is not (yet, or any
   * more: deleted by hand) in view, seeding must not give that number to a new page, whose slots the
   * record's bits would then mark folded (splits lost). An unreadable record counts: repaired, its
   * bits would apply all the same.
   */
  takePageNumber(bucket: number, page: number): void {
    if (page >= (this.nextPages.get(bucket) ?? 0)) this.nextPages.set(bucket, page + 1);
  }

  /**
   * The folded record of a known page was deleted (by hand, a bad restore): its revision is 0 (absent)
   * from now on, so promotions compare it as absent; the bits stay as this view last saw them, for the
   * leader to write back (`forgotten`). Undefined for a page this view does not know.
   */
  forgetFolded(bucket: number, page: number): number | undefined {
    const i = this.indexOf.get(`${bucket}.${page}`);
    if (i === undefined) return undefined;
    this.foldedRevision[i] = 0;
    if (this.folded[i]?.count) this.forgotten.add(i);
    return i;
  }

  /** Pages whose folded record was deleted while this view held its bits: the leader writes them back. */
  readonly forgotten = new Set<number>();

  /** Whether the split at `location` is folded back. */
  isFolded(location: number): boolean {
    return this.folded[location >>> SLOT_BITS]?.has(location & SLOT_MASK) ?? false;
  }

  /**
   * Page `pageIndex`'s folded bits (empty when it has no folded record of its generation), that
   * record's revision (0: absent) and the page's generation (what a folded record written for it names).
   */
  foldedOf(pageIndex: number): { bits: FoldedBits; modRevision: number; pageGeneration: number } {
    return { bits: this.folded[pageIndex] ?? FoldedBits.empty(), modRevision: this.foldedRevision[pageIndex] ?? 0, pageGeneration: this.generations[pageIndex]! };
  }

  static location(pageIndex: number, slot: number): number {
    return ((pageIndex << SLOT_BITS) | slot) >>> 0;
  }

  describe(location: number): SplitLocation {
    const pageIndex = location >>> SLOT_BITS;
    return { bucket: this.buckets[pageIndex]!, page: this.pageNumbers[pageIndex]!, pageIndex, slot: location & SLOT_MASK };
  }

  /** The location of the split at pool row `row`, if it is a packed split. */
  locationAt(row: number): number | undefined {
    const l = row < this.byRow.length ? this.byRow[row]! : 0;
    return l === 0 ? undefined : l - 1;
  }

  setRow(row: number, location: number): void {
    if (row >= this.byRow.length) this.grow(Math.max(row + 1, this.byRow.length * 2));
    this.byRow[row] = location + 1;
    if (row >= this.rowsSet) this.rowsSet = row + 1;
  }

  /** Room for `rows` pool rows at once. */
  reserve(rows: number): void {
    if (rows > this.byRow.length) this.grow(rows);
  }

  private grow(rows: number): void {
    this.byRow = grown(this.byRow, rows, this.rowsSet);
  }

  /** Split `id` leaves the pool (parked): keep what its row held. */
  park(id: string, row: number, weight: number): void {
    const location = this.locationAt(row);
    if (location === undefined) return;
    this.parked.set(id, { location, weight });
    this.byRow[row] = 0;
  }

  /** Split `id`, parked, is a row again: its location and weight, if it was parked here. */
  unpark(id: string): { location: number; weight: number } | undefined {
    const p = this.parked.get(id);
    this.parked.delete(id);
    return p;
  }

  /** Split `id`, known from its page but not a row (parked): its location and weight. */
  parkAt(id: string, location: number, weight: number): void {
    this.parked.set(id, { location, weight });
  }

  /** Splits known from their pages but out of the pool (parked). */
  get parkedCount(): number {
    return this.parked.size;
  }

  parkedOf(id: string): { location: number; weight: number } | undefined {
    return this.parked.get(id);
  }

  /** Split `id` is placed with `status` (split-columns.ts): a keyed split completed is a fold-back candidate. */
  noteStatus(id: string, status: string | undefined): void {
    if (status === 'completed' && this.keyed.has(id)) this.foldable.add(id);
    else this.foldable.delete(id);
  }

  clear(): void {
    this.forgotten.clear();
    this.foldable.clear();
    this.buckets.length = this.pageNumbers.length = this.generations.length = this.folded.length = this.foldedRevision.length = 0;
    this.indexOf.clear();
    this.early.clear();
    this.nextPages.clear();
    this.byRow.fill(0, 0, this.rowsSet);
    this.rowsSet = 0;
    this.parked.clear();
    this.keyed.clear();
  }
}

