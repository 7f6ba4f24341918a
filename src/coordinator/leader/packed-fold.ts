/**
 * FoldBack: a packed job's completed splits folded back into their queue
 * pages (decision 0037), so the store keeps records of its own only for the
 * splits that are assigned, held or departed. Every transaction is
 * protocol/packed-txns.ts's (`foldTxn`); this file picks what to send and
 * when, reads the final progress it keeps, and applies what landed to the
 * view.
 *
 * Invariants:
 * - A fold-back takes only completed splits that have a record, no live
 *   lease and no assignment record naming them, and only while no
 *   publication of this leader's is in flight or unseen by its view (one
 *   decided before a completion may name the split); one fold-back is in
 *   flight at a time (two on one page would race on its folded record).
 * - It is sent whenever candidates wait and nothing holds it back: waiting
 *   for a batch was tried and reverted (decision 0076).
 * - A fold-back keeps what it deletes (decision 0069): each folded split's
 *   final progress, read just before and compared at that revision, goes
 *   into the fold-back's `result.{generation}.{seq}` record in the same
 *   transaction. A split whose progress cannot be read, or is too large for
 *   a fold-back, is not folded: it keeps its keys.
 */
import { cutFoldBatch, resultEntry } from '../../protocol/fold-results.js';
import { foldedKey, progressKey } from '../../protocol/keys.js';
import { FOLD_FIXED_OPS, FOLD_OPS_PER_SPLIT, foldTxn, type FoldedSplit, type FoldedWrite } from '../../protocol/packed-txns.js';
import { decodeRecord, readable, type ResultEntry } from '../../protocol/records.js';
import { op, type Compare, type KeyValue, type Store } from '../../store/store.js';
import type { Logger } from '../log.js';
import type { LeaderView } from './leader-view.js';
import { PackedPages } from './packed-pages.js';

/** A split a fold-back may take: its id, its place in its page, its record's revision as the view holds it. */
interface FoldCandidate {
  readonly id: string;
  readonly location: number;
  readonly revision: number;
}

export interface FoldBackContext {
  store: Store;
  prefix: string;
  fp: string;
  /** The leadership guard of the current term. */
  guard: () => Compare;
  /** The current term's generation (undefined: not leading): a fold-back's results record is named by it. */
  generation: () => number | undefined;
  leading: () => boolean;
  log: Logger;
}

export class FoldBack {
  /** The fold-back run in flight, if any (one at a time). */
  private folding: Promise<void> | undefined;
  /** The one fold-back transaction in flight, if any: what a promotion waits for (not the whole run of batches). */
  private foldTxn: Promise<unknown> | undefined;
  /**
   * Fold candidates' progress records as last read (undefined: none), kept until their fold-back is
   * sent: see withResults. Bounded by the candidates of one batch, and dropped with the term's queue.
   */
  private readonly progressRead = new Map<string, KeyValue | undefined>();
  /** The generation the fold-backs are numbered under, and the next number: `result.{generation}.{seq}` is unique. */
  private resultsOf = { generation: -1, seq: 0 };

  constructor(private readonly ctx: FoldBackContext) {}

  /** The fold-back transaction in flight, if any (a promotion waits for it: packed-queue.ts). */
  get inFlight(): Promise<unknown> | undefined {
    return this.foldTxn;
  }

  /** Folds completed splits back into their pages, a batch at a time, one batch in flight; in the background. */
  fold(view: LeaderView, settled: () => boolean, onDone: (e?: unknown) => void): void {
    if (this.folding || !view.packed || !this.ctx.leading() || !settled()) return;
    const folding = this.rewriteForgotten(view).then(() => this.foldAll(view, settled));
    this.folding = folding;
    void folding.then(() => onDone(), onDone).finally(() => {
      if (this.folding === folding) this.folding = undefined;
    });
  }

  /** How many splits one fold-back transaction carries. */
  private batchLimit(): number {
    return Math.max(1, Math.floor((this.ctx.store.limits.maxOpsPerTxn - FOLD_FIXED_OPS) / FOLD_OPS_PER_SPLIT));
  }

  /**
   * Folded records deleted while this view held their bits (PackedPages.forgetFolded): written back
   * where still absent, so the completions the store forgot are not run again. (A leader that never
   * saw them, after a change of leader, cannot: those splits run again, at least once as ever.)
   */
  private async rewriteForgotten(view: LeaderView): Promise<void> {
    const packed = view.packed!;
    for (const pageIndex of [...packed.forgotten]) {
      if (!this.ctx.leading()) return;
      const { bucket, page } = packed.describe(PackedPages.location(pageIndex, 0));
      const folded = packed.foldedOf(pageIndex);
      packed.forgotten.delete(pageIndex);
      if (folded.modRevision !== 0) continue; // put back meanwhile: the view has its bits
      const write = { bucket, page, modRevision: 0, bits: folded.bits, pageGeneration: folded.pageGeneration };
      const res = await this.ctx.store.txn(foldTxn(this.ctx.prefix, this.ctx.fp, this.ctx.guard(), [write], []));
      if (!res.won) continue; // put back by another hand, or leadership gone: the watch says which
      this.ctx.log.warn({ page: foldedKey(this.ctx.prefix, bucket, page), completions: folded.bits.count }, 'a folded record was deleted; wrote back the completions this leader had seen');
      view.ownFolded(bucket, page, folded.bits, res.revision, []);
    }
  }

  private async foldAll(view: LeaderView, settled: () => boolean): Promise<void> {
    for (;;) {
      // Leading, and no publication of ours unseen or in flight (one may name a split completed since its decision).
      if (!this.ctx.leading() || !settled()) return;
      const candidates = this.foldCandidates(view);
      if (candidates.length === 0) return;
      const batch = await this.withResults(view, candidates);
      if (batch === undefined) return;
      if (batch.length === 0) continue; // every candidate was left with its keys: the next ones
      if (!this.ctx.leading() || !settled()) return;
      const generation = this.ctx.generation();
      if (generation === undefined) return;
      if (this.resultsOf.generation !== generation) this.resultsOf = { generation, seq: 0 };
      const seq = this.resultsOf.seq++;
      const packed = view.packed!;
      const byPage = new Map<number, { ids: string[]; slots: number[] }>();
      const splits: FoldedSplit[] = [];
      const entries: ResultEntry[] = [];
      for (const { id, location, revision, progressRevision, entry } of batch) {
        const where = packed.describe(location);
        let p = byPage.get(where.pageIndex);
        if (!p) byPage.set(where.pageIndex, (p = { ids: [], slots: [] }));
        p.ids.push(id);
        p.slots.push(where.slot);
        splits.push({ id, splitRevision: revision, progressRevision });
        entries.push(entry);
      }
      const writes: (FoldedWrite & { ids: string[] })[] = [...byPage].map(([pageIndex, p]) => {
        const { bucket, page } = packed.describe(PackedPages.location(pageIndex, 0));
        const folded = packed.foldedOf(pageIndex);
        return { bucket, page, pageIndex, modRevision: folded.modRevision, bits: folded.bits.with(p.slots), pageGeneration: folded.pageGeneration, ids: p.ids };
      });
      const sent = this.ctx.store.txn(foldTxn(this.ctx.prefix, this.ctx.fp, this.ctx.guard(), writes, splits, { generation, seq, entries }));
      this.foldTxn = sent;
      let res;
      try {
        res = await sent;
      } finally {
        if (this.foldTxn === sent) this.foldTxn = undefined;
      }
      // Read again next time: a progress compare may be what lost.
      for (const s of splits) this.progressRead.delete(s.id);
      if (!res.won) return; // a record moved, or leadership went: the next change tries again
      for (const w of writes) view.ownFolded(w.bucket, w.page, w.bits, res.revision, w.ids);
      // Their records are gone at res.revision: not candidates again while the watch brings the deletions.
      for (const s of splits) packed.foldable.delete(s.id);
    }
  }

  /**
   * The candidates' final progress (decision 0069), read in one request, and the part of them one
   * fold-back can carry. A split whose progress record cannot be read, or whose progress cannot fit
   * a fold-back, leaves the candidates for this term and keeps its keys (its record still says it
   * is completed, and readers find its progress there). Undefined when leadership went meanwhile.
   */
  private async withResults(view: LeaderView, candidates: readonly FoldCandidate[]): Promise<(FoldCandidate & { progressRevision: number; entry: ResultEntry })[] | undefined> {
    const { store, prefix, fp } = this.ctx;
    // Only what no earlier attempt read: on a real store the read takes a round trip, during which a
    // publication often starts, and the fold-back then waits for the next quiet moment; read again
    // each time, a busy job never folded (found on etcd). A cached read that went stale loses the
    // fold-back's progress compare, and is read again (foldAll drops it).
    const unread = candidates.filter((c) => !this.progressRead.has(c.id));
    if (unread.length > 0) {
      const read = await store.txn({ compares: [], success: unread.map((c) => op.get(progressKey(prefix, c.id))) });
      if (!this.ctx.leading()) return undefined;
      for (const [i, c] of unread.entries()) this.progressRead.set(c.id, read.reads[i]);
    }
    const packed = view.packed!;
    const withEntries: (FoldCandidate & { progressRevision: number; entry: ResultEntry })[] = [];
    for (const c of candidates) {
      const kv = this.progressRead.get(c.id);
      const progress = kv === undefined ? undefined : readable(() => decodeRecord('progress', kv.key, kv.value, fp));
      if (kv !== undefined && progress === undefined) {
        packed.foldable.delete(c.id);
        this.progressRead.delete(c.id);
        this.ctx.log.warn({ split: c.id, key: kv.key }, 'a completed split\'s progress record cannot be read; it keeps its keys instead of being folded back');
        continue;
      }
      withEntries.push({ ...c, progressRevision: kv?.modRevision ?? 0, entry: resultEntry(c.id, progress) });
    }
    const cut = cutFoldBatch(prefix, withEntries.map((c) => c.entry), store.limits.maxRequestBytes);
    for (const id of cut.tooLarge) {
      this.progressRead.delete(id);
      packed.foldable.delete(id);
      this.ctx.log.warn({ split: id }, 'a completed split\'s final progress is too large for a fold-back; it keeps its keys instead of being folded back');
    }
    const tooLarge = new Set(cut.tooLarge);
    return withEntries.slice(0, cut.take).filter((c) => !tooLarge.has(c.id));
  }

  /** Completed splits with a record, no live lease and no assignment naming them: the next fold-back's batch. */
  private foldCandidates(view: LeaderView): FoldCandidate[] {
    const packed = view.packed!;
    const limit = this.batchLimit();
    const out: FoldCandidate[] = [];
    for (const id of packed.foldable) {
      if (out.length >= limit) break;
      const revision = packed.keyed.get(id);
      if (revision === undefined || view.statusOf(id) !== 'completed') {
        packed.foldable.delete(id);
        continue;
      }
      if (view.leases.has(id)) continue;
      if (view.assigns.names(id)) continue;
      const location = view.locationOf(id);
      // A parked split (a record of it unreadable) is not folded: its record says nothing certain.
      if (location === undefined || view.parked.has(id)) continue;
      out.push({ id, location, revision });
    }
    return out;
  }
}
