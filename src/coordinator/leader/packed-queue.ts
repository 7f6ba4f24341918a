/**
 * PackedQueue: promotion, the leader's write of a packed job (decision 0037)
 * that takes the splits a publication is about to name out of their pages
 * (folding completed ones back is packed-fold.ts's; seeding, seeding.ts's).
 * Every transaction is protocol/packed-txns.ts's; this file picks what to
 * send, reads the pages it copies descriptors from, and applies what landed
 * to the view.
 *
 * Invariants:
 * - A publication names a packed split only once its record exists:
 *   `promote` is awaited before the assignment writes, and a promotion that
 *   loses (a stale folded revision, leadership gone) makes the step
 *   incomplete, so nothing is published on it.
 * - A split whose folded bit is set is never promoted (and the transaction
 *   compares its page's folded revision as of the bits checked, so neither a
 *   stale view nor a record that changes while the pages are read can).
 * - A promotion waits for the fold-back transaction in flight, if any: it
 *   moves folded records the promotion compares.
 * - Nothing is promoted once the job has its verdict.
 */
import { SplitfleetError } from '../../errors.js';
import { foldedKey, queueKey } from '../../protocol/keys.js';
import { FoldedBits, foldedBitsOf } from '../../protocol/packed.js';
import { PROMOTE_OPS_PER_SPLIT, promoteTxn, type PromotedSplit } from '../../protocol/packed-txns.js';
import { decodeRecord, readable, type QueueRecord } from '../../protocol/records.js';
import type { Json } from '../../protocol/record-types.js';
import type { Compare, Store, Txn, TxnResult } from '../../store/store.js';
import { rideTxn } from '../../protocol/txns.js';
import type { Logger } from '../log.js';
import type { LeaderView } from './leader-view.js';
import { PackedPages } from './packed-pages.js';
import { nextTurn } from '../../next-turn.js';

/** Decoded pages kept for promotion (a page is ~1,024 splits; promotions come in the fleet's free lanes). */
const PAGE_CACHE = 256;
/** Pages read at once while promoting. */
const PAGE_READS = 16;

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

export interface PackedQueueContext {
  store: Store;
  prefix: string;
  fp: string;
  /** The leadership guard of the current term. */
  guard: () => Compare;
  leading: () => boolean;
  log: Logger;
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
  /** The rider rode in the last promotion (decision 0085): whether that transaction landed. Absent: it did not ride. */
  rider?: 'landed' | 'lost';
}

export class PackedQueue {
  private readonly pages = new Map<string, CachedPage>();

  constructor(
    private readonly ctx: PackedQueueContext,
    /** The fold-backs (packed-fold.ts): a promotion waits for the one in flight. */
    private readonly folds: { readonly inFlight: Promise<unknown> | undefined },
  ) {}

  /**
   * Promotes those of `ids` (a decision's assigned splits) that have no record of their own.
   * `rider` (the publication's first transaction) is joined to the last promotion transaction
   * when the two fit in one request (decision 0085): both sets of compares, both sets of ops,
   * so the publication lands with the records it names or not at all.
   */
  async promote(view: LeaderView, ids: Iterable<string>, rider?: Txn): Promise<Promotion> {
    const packed = view.packed;
    const out: Promotion = { complete: true, revision: 0, promoted: 0 };
    if (!packed) return out;
    // A finished job promotes nothing (as it seeds nothing again, defect 34): a leader elected in it before
    // it stops would give a split whose folded record was lost a record nobody will ever run.
    if (view.plan?.rec.verdict !== undefined) return { ...out, complete: false };
    // A fold-back in flight moves folded records this promotion is about to compare: wait for it to land
    // (its own write is applied to the view), or the promotion compares a stale revision and loses
    // (0.14 lost promotions a split on a one-lane fleet, each a re-read of a page and its folded record).
    // Only the batch in flight: a run of fold-backs goes on while completions keep coming (at 1M, 200/s),
    // and waiting for the whole run starved promotions (0.3 decisions a second).
    const inFlight = this.folds.inFlight;
    if (inFlight) await inFlight.catch(() => undefined);
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
      const promotion = promoteTxn(this.ctx.prefix, this.ctx.fp, this.ctx.guard(), [...pages.values()], splits);
      const res = await this.send(promotion, start >= wanted.length ? rider : undefined, out);
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
   * Sends one promotion, joined with `rider` when they fit in one request (decision 0085), and
   * says on `out` how the rider went. A joined transaction that lost is sent again as the
   * promotion alone: which part lost is unknown, and the promotion's own loss is handled as
   * it was before it carried a rider.
   */
  private async send(promotion: Txn, rider: Txn | undefined, out: Promotion): Promise<TxnResult> {
    const joined = rider ? rideTxn(promotion, rider, this.ctx.store.limits) : undefined;
    if (!joined) return this.ctx.store.txn(promotion);
    out.rider = 'lost'; // until it lands (an unknown outcome leaves it so)
    const res = await this.ctx.store.txn(joined);
    if (res.won) {
      out.rider = 'landed';
      return res;
    }
    return this.ctx.store.txn(promotion);
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
      const read = readable(() => {
        const folded = decodeRecord('folded', key, kv.value, this.ctx.fp);
        const rec = page ? decodeRecord('queue', pageKey, page.value, this.ctx.fp) : undefined;
        // A record of an earlier page under this number marks none of this page's (decision 0091).
        return { bits: rec ? foldedBitsOf(folded, rec.generation) : FoldedBits.decode(folded.bits), ids: rec?.ids ?? [] };
      });
      if (read === undefined) continue;
      const { bits, ids } = read;
      this.ctx.log.warn({ page: `${p.bucket}.${p.page}` }, 'a folded record was newer than the leader view\'s; read it again');
      view.ownFolded(p.bucket, p.page, bits, kv.modRevision, ids.filter((_, slot) => bits.has(slot)));
      healed = true;
    }
    return healed;
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

