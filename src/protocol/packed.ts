/**
 * The packed queue's arithmetic (decision 0037): which bucket a split lives
 * in, how many buckets a job gets, how a bucket's new splits are cut into
 * pages, and the folded bitset of a page.
 *
 * Invariants:
 * - A split's bucket is a function of the job's fingerprint hash and its id
 *   only (`bucketOf`), so any reader finds a split's pages from its id
 *   without listing the job.
 * - A page holds at most PAGE_SPLITS splits and encodes under the byte limit
 *   it is cut for; splits keep their order within a bucket.
 * - A folded bit, once set, is never cleared by anything this build writes.
 * - A folded record's bits apply only to the page of the generation it names
 *   (`foldedBitsOf`, decision 0091): a page number given again after its page
 *   and folded record were lost starts with no bits, whatever record is put back.
 *
 * Pure: no I/O, no clock.
 */
import { SplitfleetError } from '../errors.js';
import { hashInto, seedState } from '../hash.js';
import { MAX_BUCKETS, utf8ByteLength } from './keys.js';
import { PAGE_SPLITS } from './record-schemas.js';
import type { FoldedRecord, Json } from './record-types.js';

export { PAGE_SPLITS };

/** Splits per bucket a new job aims at: under a page's 1,024, so most buckets stay one page. */
const SPLITS_PER_BUCKET = 768;
/** What a page's record costs beyond its splits (stamp, bucket, page, generation, brackets). */
const PAGE_OVERHEAD_BYTES = 256;

const scratch = new Uint32Array(2);

/** The bucket of split `id` in a job of `buckets` buckets (a power of two), seeded by the job's fingerprint hash `fp`. */
export function bucketOf(fp: string, id: string, buckets: number): number {
  hashInto(seedState(fp), id, scratch, 0);
  return scratch[0]! & (buckets - 1);
}

/** A bucket function for one job, its seed state computed once (seeding calls it per split). */
export function bucketing(fp: string, buckets: number): (id: string) => number {
  const state = seedState(fp);
  return (id) => {
    hashInto(state, id, scratch, 0);
    return scratch[0]! & (buckets - 1);
  };
}

/** The bucket count of a new packed job whose first plan has `splits` splits: a power of two, 1 to MAX_BUCKETS. */
export function bucketsFor(splits: number): number {
  let b = 1;
  while (b < MAX_BUCKETS && b * SPLITS_PER_BUCKET < splits) b *= 2;
  return b;
}

/** One split as a page holds it. */
export interface PageSplit {
  readonly id: string;
  readonly weight: number;
  readonly descriptor?: Json | undefined;
}

/**
 * UTF-8 bytes of `JSON.stringify(s)`: its length and two quotes when every
 * character is printable ASCII that JSON does not escape (most ids), else
 * measured on the encoding. Seeding calls it per split (10M at a time), and
 * the stringify and its garbage were a tenth of a 10M seeding's CPU.
 */
export function jsonStringBytes(s: string): number {
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x20 || c === 0x22 || c === 0x5c || c > 0x7e) return utf8ByteLength(JSON.stringify(s));
  }
  return s.length + 2;
}

/** Powers of ten up to 10^15: every safe integer has at most 16 digits. */
const POW10 = Array.from({ length: 16 }, (_, k) => 10 ** k);

/**
 * Characters of `JSON.stringify(w)`. Counted, not converted, for a safe
 * integer (every weight a plan holds): converting 10M weights to strings was
 * most of the 5 s `cutPages` took in a 10M seeding.
 */
export function jsonNumberLength(w: number): number {
  if (!Number.isSafeInteger(w) || w < 0) return JSON.stringify(w).length;
  let d = 1;
  while (d < 16 && w >= POW10[d]!) d++;
  return d;
}

/** What one split adds to a page's encoding, in UTF-8 bytes (an upper bound: quotes, commas, the weight's digits). */
export function pageSplitBytes(s: PageSplit): number {
  const d = s.descriptor ?? null;
  return jsonStringBytes(s.id) + jsonNumberLength(s.weight) + (d === null ? 4 : utf8ByteLength(JSON.stringify(d))) + 3;
}

/**
 * Cuts one bucket's splits (in order) into pages of at most PAGE_SPLITS splits
 * whose records encode in at most `maxBytes`; returns each page's [start, end).
 * A split that cannot fit a page alone is refused (RECORD_TOO_LARGE names it).
 */
export function cutPages(splits: readonly PageSplit[], maxBytes: number): [start: number, end: number][] {
  const pages: [number, number][] = [];
  let start = 0;
  let bytes = PAGE_OVERHEAD_BYTES;
  for (let i = 0; i < splits.length; i++) {
    const b = pageSplitBytes(splits[i]!);
    if (PAGE_OVERHEAD_BYTES + b > maxBytes) {
      throw new SplitfleetError('RECORD_TOO_LARGE', `split ${JSON.stringify(splits[i]!.id)}: its id, weight and descriptor take ${b} bytes, over a queue page's limit of ${maxBytes - PAGE_OVERHEAD_BYTES}`);
    }
    if (i > start && (i - start >= PAGE_SPLITS || bytes + b > maxBytes)) {
      pages.push([start, i]);
      start = i;
      bytes = PAGE_OVERHEAD_BYTES;
    }
    bytes += b;
  }
  if (splits.length > start) pages.push([start, splits.length]);
  return pages;
}

/** A page's folded bitset: bit `slot` set when the page's split at `slot` is folded back as completed. */
export class FoldedBits {
  private constructor(private readonly bytes: Uint8Array) {}

  static empty(): FoldedBits {
    return new FoldedBits(new Uint8Array(PAGE_SPLITS / 8));
  }

  /** From a folded record's `bits` (validated by its schema: base64 of at most PAGE_SPLITS / 8 bytes). */
  static decode(bits: string): FoldedBits {
    const out = new Uint8Array(PAGE_SPLITS / 8);
    out.set(Buffer.from(bits, 'base64').subarray(0, out.length));
    return new FoldedBits(out);
  }

  has(slot: number): boolean {
    return (this.bytes[slot >> 3]! & (1 << (slot & 7))) !== 0;
  }

  /** A copy with `slots` set (the record being written; this one stays as read). */
  with(slots: Iterable<number>): FoldedBits {
    const next = new FoldedBits(this.bytes.slice());
    for (const s of slots) next.bytes[s >> 3] = next.bytes[s >> 3]! | (1 << (s & 7));
    return next;
  }

  /** How many bits are set. */
  get count(): number {
    let n = 0;
    for (const b of this.bytes) for (let v = b; v !== 0; v &= v - 1) n++;
    return n;
  }

  /** The record's `bits`: base64, trailing zero bytes dropped. */
  encode(): string {
    let end = this.bytes.length;
    while (end > 0 && this.bytes[end - 1] === 0) end--;
    return Buffer.from(this.bytes.subarray(0, end)).toString('base64');
  }
}

/**
 * Whether a folded record naming `recordGeneration` sets bits on a page seeded in `pageGeneration`
 * (decision 0091): when it names that generation, or none (an older build's record); a record of an
 * earlier page under the same number, put back after the number was given again, sets none.
 */
export function foldedRecordApplies(recordGeneration: number | undefined, pageGeneration: number): boolean {
  return recordGeneration === undefined || recordGeneration === pageGeneration;
}

/** The bits folded record `rec` sets on the page of generation `pageGeneration` now under its key (`foldedRecordApplies`). */
export function foldedBitsOf(rec: Pick<FoldedRecord, 'bits' | 'pageGeneration'>, pageGeneration: number): FoldedBits {
  return foldedRecordApplies(rec.pageGeneration, pageGeneration) ? FoldedBits.decode(rec.bits) : FoldedBits.empty();
}
