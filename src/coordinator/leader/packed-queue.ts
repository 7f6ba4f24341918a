/**
 * PackedQueue: the leader's writes of a packed job (decision 0037) besides
 * seeding: promoting the splits a publication is about to name out of their
 * pages, and folding completed splits back into them. Every transaction is
 * protocol/packed-txns.ts's; this file picks what to send, reads the pages
 * it copies descriptors from, and applies what landed to the view.
 *
 * Invariants:
 * - A publication names a packed split only once its record exists:
 *   `promote` is awaited before the assignment writes, and a promotion that
 *   loses (a stale folded revision, leadership gone) makes the step
 *   incomplete, so nothing is published on it.
 * - A split whose folded bit is set is never promoted (and the transaction
 *   compares its page's folded revision as of the bits checked, so neither a
 *   stale view nor a record that changes while the pages are read can).
 * - Fold-back takes only completed splits that have a record, no live lease
 *   and no assignment record naming them, and only while no publication of
 *   this leader's is in flight or unseen by its view (one decided before a
 *   completion may name the split); one fold-back is in flight at a time
 *   (two on one page would race on its folded record).
 * - A fold-back keeps what it deletes (decision 0069): each folded split's
 *   final progress, read just before and compared at that revision, goes
 *   into the fold-back's `result.{generation}.{seq}` record in the same
 *   transaction. A split whose progress cannot be read, or is too large for
 *   a fold-back, is not folded: it keeps its keys.
 */
import { SplitfleetError } from '../../errors.js';
import type { Clock } from '../../clock.js';
import { foldDelay } from '../../protocol/fold-pacing.js';
import { cutFoldBatch, resultEntry } from '../../protocol/fold-results.js';
import { foldedKey, progressKey, queueKey } from '../../protocol/keys.js';
import { FoldedBits } from '../../protocol/packed.js';
import { FOLD_FIXED_OPS, FOLD_OPS_PER_SPLIT, foldTxn, PROMOTE_OPS_PER_SPLIT, promoteTxn, type FoldedSplit, type FoldedWrite, type PromotedSplit } from '../../protocol/packed-txns.js';
import { decodeRecord, type QueueRecord, type ResultEntry } from '../../protocol/records.js';
import { op } from '../../store/store.js';
import type { Json } from '../../protocol/record-types.js';
import type { Compare, KeyValue, Store } from '../../store/store.js';
import type { Logger } from '../log.js';
import type { LeaderView } from './leader-view.js';
import { PackedPages } from './packed-pages.js';
import { nextTurn } from '../../next-turn.js';

/** Decoded pages kept for promotion (a page is ~1,024 splits; promotions come in the fleet's free lanes). */
const PAGE_CACHE = 256;
/** Pages read at once while promoting. */
const PAGE_READS = 16;


/** `decode()`, or undefined when a record it decodes is unreadable (INVALID_RECORD). */
function readable<T>(decode: () => T): T | undefined {
  try {
    return decode();
  } catch (e) {
    if (e instanceof SplitfleetError && e.code === 'INVALID_RECORD') return undefined;
    throw e;
  }
}

/**
 * What promotion copies from a page, kept without its ids: a cached page's
 * 1,024 id strings would live in the old generation and be churned as the
 * cache turns over (~80 pages a second at 1M), lengthening the leader's GC
 * pauses. The rare path that needs the ids (a lost promotion) reads the page again.
 */
interface CachedPage {
  readonly generation: number;
  readonly weights: Float64Array;
  /** Null when every descriptor is null (the common case: no array kept). */
  readonly descriptors: readonly Json[] | null;
}

function cachedPage(rec: QueueRecord): CachedPage {
  const descriptors = rec.descriptors.some((d) => d !== null) ? rec.descriptors : null;
  return { generation: rec.generation, weights: Float64Array.from(rec.weights), descriptors };
}

/** A split a fold-back may take: its id, its place in its page, its record's revision as the view holds it. */
interface FoldCandidate {
  readonly id: string;
  readonly location: number;
  readonly revision: number;
}

export interface PackedQueueContext {
  store: Store;
  prefix: string;
  fp: string;
  /** The leadership guard of the current term. */
  guard: () => Compare;
  /** The current term's generation (undefined: not leading): a fold-back's results record is named by it. */
  generation: () => number | undefined;
  leading: () => boolean;
  log: Logger;
  /** Measures how long completed splits have waited for their fold-back (fold-pacing.ts). */
  clock: Clock;
}

export interface Promotion {
  /** False when a split could not be promoted: publish nothing on this decision. */
  complete: boolean;
  /** The revision of the last promotion that landed (0: none). */
  revision: number;
  promoted: number;
  /**
   * A promotion lost and a folded record the view had wrong was read again
   * (the view now says so): deciding again at once will not lose the same way.
   */
  healed?: boolean;
}

export class PackedQueue {
  private readonly pages = new Map<string, CachedPage>();
  /** The fold-back in flight, if any (one at a time). */
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
  /** When the candidates now waiting began to wait (clock ms); undefined while none waits. */
  private waitingSince: number | undefined;

  constructor(private readonly ctx: PackedQueueContext) {}

  /** Promotes those of `ids` (a decision's assigned splits) that have no record of their own. */
  async promote(view: LeaderView, ids: Iterable<string>): Promise<Promotion> {
    const packed = view.packed;
    const out: Promotion = { complete: true, revision: 0, promoted: 0 };
    if (!packed) return out;
    // A fold-back in flight moves folded records this promotion is about to compare: wait for it to land
    // (its own write is applied to the view), or the promotion compares a stale revision and loses
    // (0.14 lost promotions a split on a one-lane fleet, each a re-read of a page and its folded record).
    // Only the batch in flight: a run of fold-backs goes on while completions keep coming (at 1M, 200/s),
    // and waiting for the whole run starved promotions (0.3 decisions a second).
    if (this.foldTxn) await this.foldTxn.catch(() => undefined);
    const wanted: { id: string; location: number }[] = [];
    // Each page's folded revision as of the bits checked here: the compare must hold the bits this loop read,
    // not a newer record the view applies while the pages are read below (a folded split promoted again).
    const checkedAt = new Map<number, number>();
    for (const id of ids) {
      if (packed.keyed.has(id)) continue;
      const location = view.locationOf(id);
      if (location === undefined) { out.complete = false; continue; }
      if (packed.isFolded(location)) {
        // The view held it queued: now completed, so deciding again at once will not name it. Waiting for
        // the view to move instead could wait forever in a quiet fleet (a folded record repaired by hand).
        if (view.foundFolded(id)) out.healed = true;
        out.complete = false;
        continue;
      }
      const pageIndex = packed.describe(location).pageIndex;
      if (!checkedAt.has(pageIndex)) checkedAt.set(pageIndex, packed.foldedOf(pageIndex).modRevision);
      wanted.push({ id, location });
    }
    if (wanted.length === 0) return out;
    const { pages: records, damaged } = await this.readPages(packed, wanted.map((w) => w.location));
    if (damaged.size > 0) {
      // A page deleted or overwritten since the listing costs the splits it holds, not the publication:
      // those wanted here are parked with the reason (decided again at once without them), and the
      // backstop reads the page again (a repaired page brings them back).
      for (const [pageIndex, { key, problem }] of damaged) {
        const ids = wanted.filter((w) => packed.describe(w.location).pageIndex === pageIndex).map((w) => w.id);
        this.ctx.log.error({ page: key, splits: ids.length, err: problem }, 'a queue page cannot be read while promoting its splits; they are parked until it reads again');
        view.pageDamaged(key, ids, problem);
      }
      out.complete = false;
      out.healed = true;
      return out;
    }
    const { store } = this.ctx;
    const perTxn = Math.max(1, Math.floor((store.limits.maxOpsPerTxn - 1) / (PROMOTE_OPS_PER_SPLIT + 1)));
    const maxBytes = store.limits.maxRequestBytes - 8192;
    for (let start = 0; start < wanted.length && out.complete;) {
      const pages = new Map<number, { bucket: number; page: number; modRevision: number }>();
      const splits: PromotedSplit[] = [];
      let bytes = 0;
      for (; start < wanted.length && splits.length < perTxn; start++) {
        const { id, location } = wanted[start]!;
        const where = packed.describe(location);
        const rec = records.get(where.pageIndex)!;
        const descriptor = rec.descriptors?.[where.slot] ?? null;
        const size = JSON.stringify(descriptor).length * 3 + id.length * 9 + 512;
        if (splits.length > 0 && bytes + size > maxBytes) break;
        bytes += size;
        if (!pages.has(where.pageIndex)) pages.set(where.pageIndex, { bucket: where.bucket, page: where.page, modRevision: checkedAt.get(where.pageIndex)! });
        splits.push({ id, weight: rec.weights[where.slot]!, descriptor, generation: rec.generation });
      }
      const res = await store.txn(promoteTxn(this.ctx.prefix, this.ctx.fp, this.ctx.guard(), [...pages.values()], splits));
      if (!res.won) {
        out.complete = false;
        out.healed = await this.refreshFolded(view, [...pages.values()]);
        break;
      }
      out.revision = res.revision;
      out.promoted += splits.length;
      // Its record exists from this revision on: the next decision must not promote it again.
      for (const s of splits) packed.keyed.set(s.id, res.revision);
    }
    return out;
  }

  /**
   * Reads the folded records of `pages` again after a promotion lost on one; a newer one than the
   * view's is applied with the page's ids, so its folded splits read as completed. True if any was.
   */
  private async refreshFolded(view: LeaderView, pages: readonly { bucket: number; page: number; modRevision: number }[]): Promise<boolean> {
    let healed = false;
    for (const p of pages) {
      const key = foldedKey(this.ctx.prefix, p.bucket, p.page);
      const kv = await this.ctx.store.get(key);
      if (!kv || kv.modRevision <= p.modRevision) continue;
      const pageKey = queueKey(this.ctx.prefix, p.bucket, p.page);
      const page = await this.ctx.store.get(pageKey);
      // Either record unreadable (a foreign write; the view has reported it): its page's splits stay unpromoted
      // (their compare holds the revision the view read) until it is readable again.
      const read = readable(() => ({
        bits: FoldedBits.decode(decodeRecord('folded', key, kv.value, this.ctx.fp).bits),
        ids: page ? decodeRecord('queue', pageKey, page.value, this.ctx.fp).ids : [],
      }));
      if (read === undefined) continue;
      const { bits, ids } = read;
      this.ctx.log.warn({ page: `${p.bucket}.${p.page}` }, 'a folded record was newer than the leader view\'s; read it again');
      view.ownFolded(p.bucket, p.page, bits, kv.modRevision, ids.filter((_, slot) => bits.has(slot)));
      healed = true;
    }
    return healed;
  }

  /**
   * Folds completed splits back into their pages, a batch at a time, one batch in flight; in the
   * background, once a batch is worth sending (fold-pacing.ts, decision 0076) or `now`. Returns in
   * how many ms to ask again when candidates wait for that (the caller's timer), else undefined.
   */
  fold(view: LeaderView, settled: () => boolean, onDone: (e?: unknown) => void, now = false): number | undefined {
    if (this.folding || !view.packed || !this.ctx.leading() || !settled()) return undefined;
    // Folded records deleted by hand are written back at once, paced or not (rewriteForgotten).
    if (!now && view.packed.forgotten.size === 0) {
      const candidates = this.foldCandidates(view).length;
      const now = this.ctx.clock.now();
      if (candidates === 0) this.waitingSince = undefined;
      else this.waitingSince ??= now;
      const delay = foldDelay({ candidates, fullBatch: this.batchLimit(), quiet: view.leases.size === 0 && view.assigns.namedCount === 0, waitedMs: now - (this.waitingSince ?? now) });
      if (delay !== 0) return delay;
    }
    this.waitingSince = undefined;
    const folding = this.rewriteForgotten(view).then(() => this.foldAll(view, settled));
    this.folding = folding;
    void folding.then(() => onDone(), onDone).finally(() => {
      if (this.folding === folding) this.folding = undefined;
    });
    return undefined;
  }

  /** A fold-back run is in flight. */
  get isFolding(): boolean {
    return this.folding !== undefined;
  }

  /** Whether completed splits wait for a fold-back (the verdict's last fold, leader.ts). */
  hasCandidates(view: LeaderView): boolean {
    return view.packed !== undefined && this.foldCandidates(view).length > 0;
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
      const write = { bucket, page, modRevision: 0, bits: folded.bits };
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
        return { bucket, page, pageIndex, modRevision: folded.modRevision, bits: folded.bits.with(p.slots), ids: p.ids };
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

  /**
   * The decoded pages holding `locations`, by page index: from the cache, else read (a few at a
   * time). A page gone or unreadable (deleted or overwritten by hand after the listing) is in
   * `damaged` with why, by page index; the others are read as usual.
   */
  private async readPages(packed: PackedPages, locations: readonly number[]): Promise<{ pages: Map<number, CachedPage>; damaged: Map<number, { key: string; problem: string }> }> {
    const out = new Map<number, CachedPage>();
    const damaged = new Map<number, { key: string; problem: string }>();
    const missing = new Map<number, { pageIndex: number; bucket: number; page: number }>();
    for (const l of locations) {
      const where = packed.describe(l);
      if (out.has(where.pageIndex) || missing.has(where.pageIndex)) continue;
      const cached = this.pages.get(`${where.bucket}.${where.page}`);
      if (cached) out.set(where.pageIndex, cached);
      else missing.set(where.pageIndex, where);
    }
    const toRead = [...missing.values()];
    for (let i = 0; i < toRead.length; i += PAGE_READS) {
      const batch = toRead.slice(i, i + PAGE_READS);
      const read = await Promise.all(batch.map(async (m) => {
        const key = queueKey(this.ctx.prefix, m.bucket, m.page);
        const kv = await this.ctx.store.get(key);
        return { key, value: kv?.value };
      }));
      // One page decoded a turn, in turn: replies arrive together, and a yield per reply would queue every
      // decode for the same check phase (a fleet's promotions held the loop 30-50 ms that way).
      for (const [k, m] of batch.entries()) {
        await nextTurn();
        const { key, value } = read[k]!;
        if (value === undefined) {
          damaged.set(m.pageIndex, { key, problem: `queue page ${key} is gone (deleted by hand, or restored from an older backup)` });
          continue;
        }
        let rec: CachedPage;
        try {
          rec = cachedPage(decodeRecord('queue', key, value, this.ctx.fp));
        } catch (e) {
          if (!(e instanceof SplitfleetError && e.code === 'INVALID_RECORD')) throw e;
          damaged.set(m.pageIndex, { key, problem: e.message });
          continue;
        }
        out.set(m.pageIndex, rec);
        this.remember(`${m.bucket}.${m.page}`, rec);
      }
    }
    return { pages: out, damaged };
  }

  private remember(name: string, rec: CachedPage): void {
    this.pages.delete(name);
    this.pages.set(name, rec);
    if (this.pages.size > PAGE_CACHE) this.pages.delete(this.pages.keys().next().value!);
  }
}

