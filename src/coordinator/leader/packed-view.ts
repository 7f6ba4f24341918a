/**
 * PackedView: how the leader view applies a packed job's own kinds (decision
 * 0037): queue pages (listed once per term, or applied as seeding lands
 * them) become pool rows with their locations; folded records set their
 * page's bits; the leader's own fold-backs complete their splits.
 *
 * Invariants:
 * - An unreadable page is reported and its splits stay unknown (the job
 *   never reads as done, nor is seeded, while one is) until the leader's
 *   backstop reads it again; an unreadable folded record leaves
 *   the bits as last read (promotion compares the record's revision, so
 *   nothing folded is promoted on them), and its page's number taken.
 * - `folded` sorts before `plan`: folded records a listing brings before
 *   the plan are held, then applied if the plan says packed, or counted as
 *   unknown keys if not.
 *
 * No I/O: LeaderRecords (leader-records.ts) feeds it.
 */
import { storeFailure, type SplitfleetError } from '../../errors.js';
import { parseKey } from '../../protocol/keys.js';
import { FoldedBits } from '../../protocol/packed.js';
import { decodeRecord, type FoldedRecord, type QueueRecord } from '../../protocol/records.js';
import { PackedPages } from './packed-pages.js';
import type { SplitColumns } from './split-columns.js';

export class PackedView {
  /** Queue pages that could not be read, by key: pages are not watched, so the backstop reads them again. */
  readonly unreadable = new Set<string>();
  /** Folded records listed before the plan record (which sorts after them). */
  private readonly early: [key: string, value: string, modRevision: number][] = [];

  constructor(
    private readonly prefix: string,
    private readonly fp: string,
    private readonly columns: SplitColumns,
    private readonly planKnown: () => boolean,
    private readonly onUnreadable: (key: string, error: SplitfleetError) => void,
    private readonly unknownKey: () => void,
  ) {}

  /** A queue page listed: its splits become rows (true), or it is reported unreadable. */
  putPage(key: string, value: string): boolean {
    if (!this.columns.packed) {
      this.unknownKey(); // a page under a `keys` job: nothing of this job's
      return false;
    }
    let rec: QueueRecord;
    try {
      rec = decodeRecord('queue', key, value, this.fp);
    } catch (e) {
      this.unreadable.add(key);
      this.onUnreadable(key, storeFailure(e));
      return false;
    }
    this.unreadable.delete(key);
    this.applyPage(rec.bucket, rec.page, rec.generation, rec.ids, rec.weights);
    return true;
  }

  /** A queue page's splits as rows (a page listed, or one seeding just wrote), seeded in `generation`. */
  applyPage(bucket: number, page: number, generation: number, ids: readonly string[], weights: readonly number[]): void {
    const packed = this.columns.packed!;
    const index = packed.addPage(bucket, page, generation);
    for (let i = 0; i < ids.length; i++) {
      const id = ids[i]!;
      const location = PackedPages.location(index, i);
      // Parked because this page could not be read while promoting it (LeaderView.pageDamaged): back.
      if (this.columns.parked.get(id)?.has('queue')) {
        this.columns.clearProblem(id, 'queue');
        this.columns.pageReread(id, weights[i]!, location);
        continue;
      }
      this.columns.placePacked(id, weights[i]!, location);
    }
  }

  /** A folded record at `modRevision`: true when it changed a known page's bits. */
  putFolded(key: string, value: string, modRevision: number): boolean {
    const packed = this.columns.packed;
    if (!packed) {
      if (!this.planKnown()) this.early.push([key, value, modRevision]);
      else this.unknownKey();
      return false;
    }
    let rec: FoldedRecord;
    try {
      rec = decodeRecord('folded', key, value, this.fp);
    } catch (e) {
      // Its key still names its page: that number stays taken (PackedPages.takePageNumber).
      const k = parseKey(this.prefix, key);
      if (k.kind === 'folded') packed.takePageNumber(k.bucket, k.page);
      this.onUnreadable(key, storeFailure(e));
      return false;
    }
    return packed.setFolded(rec.bucket, rec.page, FoldedBits.decode(rec.bits), modRevision, rec.pageGeneration) !== undefined;
  }

  /** The plan record was just read: the folded records held for it, applied (packed) or returned as a count of unknown keys. */
  planSeen(): number {
    const early = this.early.splice(0);
    if (!this.columns.packed) return early.length;
    for (const [key, value, modRevision] of early) this.putFolded(key, value, modRevision);
    return 0;
  }

  /**
   * The leader's own fold-back landed at `revision`: the page's bits, and the
   * folded splits whose record's deletion has already been applied (it may
   * arrive before or after this) are completed.
   */
  applyFolded(bucket: number, page: number, bits: FoldedBits, revision: number, ids: readonly string[]): void {
    const packed = this.columns.packed!;
    packed.setFolded(bucket, page, bits, revision, undefined); // written for the page in view
    for (const id of ids) {
      const location = this.columns.locationOf(id);
      if (packed.keyed.has(id) || location === undefined) continue;
      this.columns.pageStatusSeen(id, location);
    }
  }

  clear(): void {
    this.unreadable.clear();
    this.early.length = 0;
  }
}
