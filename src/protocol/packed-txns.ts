/**
 * The packed queue's transactions (decision 0037), as data: seeding a page,
 * promoting splits out of their pages before a publication names them, and
 * folding completed splits back into their pages. The leader
 * (coordinator/leader/packed-queue.ts, seeding.ts) sends what it is given.
 *
 * Invariants:
 * - Every one carries the term's leadership guard.
 * - A page is created only where absent and never rewritten.
 * - A promotion creates a split's `split` only where absent and only while
 *   its page's folded record is at the revision the leader read (0: absent):
 *   a folded split can never be promoted again, so a claim can never
 *   resurrect a completed split. Its `spec` is put whether or not one is
 *   left (a record deleted by hand leaves its spec): it is the page's copy,
 *   the same bytes each time.
 * - A fold-back compares each split record at the revision the leader read
 *   (a completed record: nothing moves a completed split but an operator),
 *   its lease absent, and its page's folded record at the revision read; it
 *   sets the bits and deletes the split's keys in the same revision.
 * - A fold-back that keeps results (decision 0069) also compares each split's
 *   progress record at the revision its results were read from (0: none), and
 *   creates their `result.{generation}.{seq}` record where absent, in the
 *   same revision: what it deletes from `progress.{id}` is what it keeps.
 *
 * Pure: no I/O.
 */
import { SplitfleetError } from '../errors.js';
import { initialSplitRecord } from './claims.js';
import { foldedKey, leaseKey, progressKey, queueKey, resultKey, specKey, splitKey } from './keys.js';
import type { FoldedBits, PageSplit } from './packed.js';
import { encodeRecord, SCHEMA_VERSION, type QueueRecord, type ResultEntry } from './records.js';
import { cmp, op, type Compare, type Op, type Txn } from '../store/store.js';

/** A page of one bucket, as seeding writes it. */
export interface QueuePage {
  readonly bucket: number;
  readonly page: number;
  readonly splits: readonly PageSplit[];
}

/** The put of a queue page's record (the plan `generation` that seeded it). `maxBytes` bounds it (RECORD_TOO_LARGE). */
export function queuePagePut(prefix: string, fp: string, generation: number, p: QueuePage, maxBytes: number): Op {
  const rec: QueueRecord = {
    v: SCHEMA_VERSION, fp, bucket: p.bucket, page: p.page, generation,
    ids: p.splits.map((s) => s.id), weights: p.splits.map((s) => s.weight), descriptors: p.splits.map((s) => s.descriptor ?? null),
  };
  return op.put(queueKey(prefix, p.bucket, p.page), encodeRecord('queue', rec, { maxBytes }));
}

/** A folded page as the leader read it: its bits and its record's revision (0: absent). */
export interface FoldedPage {
  readonly bucket: number;
  readonly page: number;
  readonly modRevision: number;
}

/** One split to promote: what its spec holds (copied from its page). */
export interface PromotedSplit extends PageSplit {
  readonly generation: number;
}

/** The puts one promoted split costs (its record's compare, and its page's shared by the page's splits, are fewer). */
export const PROMOTE_OPS_PER_SPLIT = 2;

/**
 * Promotion: leadership ∧ every page's folded record at the revision read ∧
 * each split's record absent → its spec (copied from the page) and an
 * initial split record.
 */
export function promoteTxn(prefix: string, fp: string, leadership: Compare, pages: readonly FoldedPage[], splits: readonly PromotedSplit[]): Txn {
  const compares: Compare[] = [leadership, ...pages.map((p) => cmp.modRevision(foldedKey(prefix, p.bucket, p.page), p.modRevision))];
  const success: Op[] = [];
  for (const s of splits) {
    const spec = specKey(prefix, s.id);
    const split = splitKey(prefix, s.id);
    compares.push(cmp.absent(split));
    success.push(
      op.put(spec, encodeRecord('spec', { v: SCHEMA_VERSION, fp, id: s.id, weight: s.weight, descriptor: s.descriptor ?? null, generation: s.generation })),
      op.put(split, encodeRecord('split', initialSplitRecord(s.id, fp))),
    );
  }
  return { compares, success };
}

/** A page's folded record after a fold-back: the bits as read with the new ones set, for the page of `pageGeneration` (decision 0091). */
export interface FoldedWrite extends FoldedPage {
  readonly bits: FoldedBits;
  readonly pageGeneration: number;
}

/** One completed split to fold back: its record's revision as read, and its progress record's when results are kept (0: none). */
export interface FoldedSplit {
  readonly id: string;
  readonly splitRevision: number;
  readonly progressRevision?: number;
}

/** The compares (or ops) one folded split costs, at most: its record's, its lease's, its progress's, its page's (shared). */
export const FOLD_OPS_PER_SPLIT = 4;
/** The compares a fold-back costs besides its splits': leadership, and the results record's absence. */
export const FOLD_FIXED_OPS = 2;

/** The results a fold-back keeps (decision 0069): its key's numbers and one entry per folded split. */
export interface FoldResults {
  /** The leader's generation and the fold-back's number within it: `result.{generation}.{seq}`. */
  readonly generation: number;
  readonly seq: number;
  readonly entries: readonly ResultEntry[];
}

/**
 * Fold-back: leadership ∧ every page's folded record at the revision read ∧
 * each split record at the revision read ∧ its lease absent (∧, with
 * `results`, its progress record at the revision read and the results record
 * absent) → the pages' folded records with their bits set, each split's
 * `split`, `spec` and `progress` deleted (and the results record created).
 * `results` must hold exactly `splits`' ids (INVALID_INPUT otherwise: a
 * results record naming a split the fold-back keeps, or missing one it
 * deletes, would be a lie the store keeps).
 */
export function foldTxn(prefix: string, fp: string, leadership: Compare, pages: readonly FoldedWrite[], splits: readonly FoldedSplit[], results?: FoldResults): Txn {
  const compares: Compare[] = [leadership];
  const success: Op[] = [];
  if (results !== undefined) {
    const ids = new Set(splits.map((s) => s.id));
    if (results.entries.length !== splits.length || !results.entries.every((e) => ids.has(e.id))) {
      throw new SplitfleetError('INVALID_INPUT', `results ${results.generation}.${results.seq}: entries must name exactly the folded splits (${splits.length}), once each`);
    }
    if (splits.length > 0) {
      const key = resultKey(prefix, results.generation, results.seq);
      compares.push(cmp.absent(key));
      success.push(op.put(key, encodeRecord('result', { v: SCHEMA_VERSION, fp, generation: results.generation, seq: results.seq, splits: [...results.entries] })));
    }
  }
  for (const p of pages) {
    const key = foldedKey(prefix, p.bucket, p.page);
    compares.push(cmp.modRevision(key, p.modRevision));
    success.push(op.put(key, encodeRecord('folded', { v: SCHEMA_VERSION, fp, bucket: p.bucket, page: p.page, bits: p.bits.encode(), pageGeneration: p.pageGeneration })));
  }
  for (const s of splits) {
    // No live lease key: one put by hand without a lease is no holder (protocol/ephemeral.ts).
    compares.push(cmp.modRevision(splitKey(prefix, s.id), s.splitRevision), cmp.noLease(leaseKey(prefix, s.id)));
    // The progress its results hold is the one deleted here (0 also matches a split that committed none).
    if (results !== undefined) compares.push(cmp.modRevision(progressKey(prefix, s.id), s.progressRevision ?? 0));
    success.push(op.delete(splitKey(prefix, s.id)), op.delete(specKey(prefix, s.id)), op.delete(progressKey(prefix, s.id)));
  }
  return { compares, success };
}
