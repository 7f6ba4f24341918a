/**
 * Ordering the pool: weight descending, then content key ascending (hi,
 * then lo), by LSD radix sorts; and duplicate-key detection.
 *
 * Invariants: every sort here is exact for its key; ties it cannot break
 * (equal weight and equal 64-bit key) are counted and left adjacent for the
 * JS side to order by id. Pure: no imports beyond the layout.
 */
import {
  FLAG_LIVE, H_COLLISIONS, H_DUPLICATES, H_FLAGS, H_KEY, H_LEASE, H_ORDER, H_ORDER_LEN, H_PERMUTED, H_PREVIOUS, H_RECORD,
  H_ROWS, H_WEIGHT, STATUS_NO_MEMORY, STATUS_OK,
} from './layout';
import { commit, scratchReset, setWord, take, word } from './memory';

const DIGIT_BITS: u64 = 11;
const DIGIT_MASK: u64 = 0x7ff;
export const BUCKETS: usize = 2048;
export const DIGITS: i32 = 6;

/** The effective weight (0 counts as 1), as in src/assignment/hand-out-order.ts. */
@inline export function effective(w: f64): f64 {
  return w == 0 ? 1 : w;
}

@inline function keyOf(keyP: usize, row: u32): u64 {
  return load<u64>(keyP + (<usize>row << 3));
}

/**
 * The digits of keys[0, n) >> low that are not constant over them (bit d:
 * digit d), with each such digit's histogram counted in `hist` and turned
 * into bucket starts. 0 when the keys agree above `low` (hist untouched).
 */
function digitStarts(kP: usize, n: i32, hist: usize, low: u64): i32 {
  let or: u64 = 0;
  let and: u64 = ~(<u64>0);
  for (let i = 0; i < n; i++) {
    const k = load<u64>(kP + (<usize>i << 3)) >> low;
    or |= k;
    and &= k;
  }
  const diff = or ^ and;
  let active = 0;
  for (let d = 0; d < DIGITS; d++) {
    if (((diff >> (<u64>d * DIGIT_BITS)) & DIGIT_MASK) != 0) active |= 1 << d;
  }
  if (active == 0) return 0;
  memory.fill(hist, 0, BUCKETS * 4 * <usize>DIGITS);
  for (let i = 0; i < n; i++) {
    const k = load<u64>(kP + (<usize>i << 3)) >> low;
    for (let d = 0; d < DIGITS; d++) {
      if ((active & (1 << d)) == 0) continue;
      const h = hist + ((<usize>d * BUCKETS + <usize>((k >> (<u64>d * DIGIT_BITS)) & DIGIT_MASK)) << 2);
      store<u32>(h, load<u32>(h) + 1);
    }
  }
  for (let d = 0; d < DIGITS; d++) {
    if ((active & (1 << d)) == 0) continue;
    const h0 = hist + ((<usize>d * BUCKETS) << 2);
    let sum: u32 = 0;
    for (let b: usize = 0; b < BUCKETS; b++) {
      const c = load<u32>(h0 + (b << 2));
      store<u32>(h0 + (b << 2), sum);
      sum += c;
    }
  }
  return active;
}

/**
 * LSD radix sort of (u64 key, u32 value) pairs ascending by key, 11-bit
 * digits, skipping digits that are constant over the input. Stable. Sorts
 * [kA, vA) using [kB, vB) as the other buffer; returns true when the result
 * ended up in B.
 */
export function radix(kA: usize, vA: usize, kB: usize, vB: usize, n: i32, hist: usize): bool {
  if (n < 2) return false;
  const active = digitStarts(kA, n, hist, 0);
  let sK = kA, sV = vA, dK = kB, dV = vB;
  let inB = false;
  for (let d = 0; d < DIGITS; d++) {
    if ((active & (1 << d)) == 0) continue;
    const h0 = hist + ((<usize>d * BUCKETS) << 2);
    const shift = <u64>d * DIGIT_BITS;
    for (let i = 0; i < n; i++) {
      const k = load<u64>(sK + (<usize>i << 3));
      const h = h0 + (<usize>((k >> shift) & DIGIT_MASK) << 2);
      const p = load<u32>(h);
      store<u32>(h, p + 1);
      store<u64>(dK + (<usize>p << 3), k);
      store<u32>(dV + (<usize>p << 2), load<u32>(sV + (<usize>i << 2)));
    }
    const tK = sK; sK = dK; dK = tK;
    const tV = sV; sV = dV; dV = tV;
    inB = !inB;
  }
  return inB;
}

/**
 * LSD radix sort of u64 keys ascending by their bits from `low` up; the
 * bits below ride along unsorted (the sort is stable, so keys that agree
 * above `low` keep their order). Sorts [kA, kA + 8n) using kB; returns true
 * when the result ended up in kB. The packed form of `radix`: one array, one
 * store a key per pass.
 */
function radixAbove(kA: usize, kB: usize, n: i32, hist: usize, low: u64): bool {
  if (n < 2) return false;
  const active = digitStarts(kA, n, hist, low);
  let src = kA, dst = kB;
  let inB = false;
  for (let d = 0; d < DIGITS; d++) {
    if ((active & (1 << d)) == 0) continue;
    const h0 = hist + ((<usize>d * BUCKETS) << 2);
    const shift = low + <u64>d * DIGIT_BITS;
    for (let i = 0; i < n; i++) {
      const k = load<u64>(src + (<usize>i << 3));
      const h = h0 + (<usize>((k >> shift) & DIGIT_MASK) << 2);
      const p = load<u32>(h);
      store<u32>(h, p + 1);
      store<u64>(dst + (<usize>p << 3), k);
    }
    const t = src; src = dst; dst = t;
    inB = !inB;
  }
  return inB;
}

/** Insertion sort of rows [p, p + n) by content key. */
function insertionByKey(keyP: usize, p: usize, n: i32): void {
  for (let i = 1; i < n; i++) {
    const x = load<u32>(p + (<usize>i << 2));
    const kx = keyOf(keyP, x);
    let j = i - 1;
    while (j >= 0) {
      const y = load<u32>(p + (<usize>j << 2));
      if (keyOf(keyP, y) <= kx) break;
      store<u32>(p + (<usize>(j + 1) << 2), y);
      j--;
    }
    store<u32>(p + (<usize>(j + 1) << 2), x);
  }
}

/**
 * Sorts the rows whose flags intersect `mask` into ORDER: weight descending,
 * then key ascending. Returns the number of adjacent pairs with equal weight
 * and equal key (the JS side orders those by id), or a negative status.
 *
 * Why one function: the weight sort, the key sort of each equal-weight run
 * and the collision count share the scratch buffers and column pointers as
 * wasm locals in the pool's hottest loops (the weight sort is most of this
 * phase at 1M rows); split, they would go through globals or memory.
 */
export function sortOrder(mask: i32): i32 {
  const R = <i32>word(H_ROWS);
  const weightP = <usize>word(H_WEIGHT);
  const keyP = <usize>word(H_KEY);
  const flagsP = <usize>word(H_FLAGS);
  const orderP = <usize>word(H_ORDER);
  scratchReset();
  const aK = take(<usize>R << 3), aV = take(<usize>R << 2);
  const bK = take(<usize>R << 3), bV = take(<usize>R << 2);
  const cK = take(<usize>R << 3), cV = take(<usize>R << 2);
  const hist = take(BUCKETS * 4 * <usize>DIGITS);
  if (!commit()) return STATUS_NO_MEMORY;

  let L = 0;
  let or: u64 = 0;
  let and: u64 = ~(<u64>0);
  for (let r = 0; r < R; r++) {
    if ((<i32>load<u8>(flagsP + <usize>r) & mask) == 0) continue;
    // Weights are integers ≤ 2^53, so the u64 value orders them; ~ makes it descending.
    const w = effective(load<f64>(weightP + (<usize>r << 3)));
    const k = ~(<u64>w);
    store<u64>(aK + (<usize>L << 3), k);
    store<u32>(aV + (<usize>L << 2), <u32>r);
    or |= k;
    and &= k;
    L++;
  }
  // The bits in which the keys differ, and the bits a row takes.
  const keyBits = <u64>(64 - clz(or ^ and));
  const rowBits = <u64>(R > 1 ? 32 - clz(<u32>(R - 1)) : 1);
  let sK: usize, sV: usize, tK: usize, tV: usize;
  if (keyBits + rowBits <= 64) {
    // Packed: (the keys' varying bits, row) in one u64, sorted above the row
    // bits. Why: half the stores of the (key, value) sort, to half as many
    // places at once (the weight sort is most of this phase at 1M). Rows go
    // in ascending, so equal weights keep row order as the stable sort did.
    const keyMask: u64 = keyBits == 64 ? ~(<u64>0) : ((<u64>1 << keyBits) - 1);
    for (let i = 0; i < L; i++) {
      const at = aK + (<usize>i << 3);
      store<u64>(at, ((load<u64>(at) & keyMask) << rowBits) | <u64>load<u32>(aV + (<usize>i << 2)));
    }
    const inB = radixAbove(aK, bK, L, hist, rowBits);
    const packed = inB ? bK : aK;
    sK = inB ? aK : bK;
    sV = aV;
    const rowMask: u64 = (<u64>1 << rowBits) - 1;
    for (let i = 0; i < L; i++) {
      const p = load<u64>(packed + (<usize>i << 3));
      store<u64>(sK + (<usize>i << 3), p >> rowBits);
      store<u32>(sV + (<usize>i << 2), <u32>(p & rowMask));
    }
    tK = packed;
    tV = bV;
  } else {
    const inB = radix(aK, aV, bK, bV, L, hist);
    sK = inB ? bK : aK; sV = inB ? bV : aV;
    tK = inB ? aK : bK; tV = inB ? aV : bV;
  }

  // Runs of equal weight: order by key.
  let i = 0;
  while (i < L) {
    const wi = load<u64>(sK + (<usize>i << 3));
    let j = i + 1;
    while (j < L && load<u64>(sK + (<usize>j << 3)) == wi) j++;
    const len = j - i;
    const runV = sV + (<usize>i << 2);
    if (len > 24) {
      for (let t = 0; t < len; t++) {
        const row = load<u32>(runV + (<usize>t << 2));
        store<u64>(tK + (<usize>t << 3), keyOf(keyP, row));
        store<u32>(tV + (<usize>t << 2), row);
      }
      const r2 = radix(tK, tV, cK, cV, len, hist);
      memory.copy(runV, r2 ? cV : tV, <usize>len << 2);
    } else if (len > 1) {
      insertionByKey(keyP, runV, len);
    }
    i = j;
  }

  let collisions = 0;
  for (let k = 0; k < L; k++) {
    const row = load<u32>(sV + (<usize>k << 2));
    store<u32>(orderP + (<usize>k << 2), row);
    if (k > 0 && load<u64>(sK + (<usize>k << 3)) == load<u64>(sK + (<usize>(k - 1) << 3))) {
      if (keyOf(keyP, row) == keyOf(keyP, load<u32>(sV + (<usize>(k - 1) << 2)))) collisions++;
    }
  }
  setWord(H_ORDER_LEN, <u32>L);
  setWord(H_COLLISIONS, <u32>collisions);
  return collisions;
}

/**
 * Packs each row's WEIGHT, LEASE, PREVIOUS, RECORD and FLAGS into a 32-byte
 * record at `packed` + 32 × row (f64 at 0, i32 at 8, 12, 16, u8 at 20), in
 * one sequential pass: a later gather in pool order then touches one cache
 * line a row instead of five (`decide`, `permuteByOrder`).
 */
export function packRows(packed: usize): void {
  const R = <i32>word(H_ROWS);
  const weightP = <usize>word(H_WEIGHT);
  const leaseP = <usize>word(H_LEASE);
  const prevP = <usize>word(H_PREVIOUS);
  const recP = <usize>word(H_RECORD);
  const flagsP = <usize>word(H_FLAGS);
  for (let r = 0; r < R; r++) {
    const rec = packed + (<usize>r << 5);
    store<f64>(rec, load<f64>(weightP + (<usize>r << 3)));
    store<i32>(rec, load<i32>(leaseP + (<usize>r << 2)), 8);
    store<i32>(rec, load<i32>(prevP + (<usize>r << 2)), 12);
    store<i32>(rec, load<i32>(recP + (<usize>r << 2)), 16);
    store<u8>(rec, load<u8>(flagsP + <usize>r), 20);
  }
}

/**
 * Rewrites WEIGHT, LEASE, PREVIOUS, RECORD and FLAGS in ORDER's order (entry
 * k then describes row ORDER[k], for k < ORDER_LEN) and sets PERMUTED, so
 * that `decide` reads them in sequence and a caller can keep them as its
 * sorted columns (columnar.ts) instead of gathering them in JS (the rows
 * packed first, `packRows`). Anything that reads these
 * columns by row (`countDuplicateKeys`, `rankRows`) must run before.
 */
export function permuteByOrder(): i32 {
  const L = <i32>word(H_ORDER_LEN);
  const weightP = <usize>word(H_WEIGHT);
  const leaseP = <usize>word(H_LEASE);
  const prevP = <usize>word(H_PREVIOUS);
  const recP = <usize>word(H_RECORD);
  const flagsP = <usize>word(H_FLAGS);
  const orderP = <usize>word(H_ORDER);
  scratchReset();
  const packed = take(<usize>word(H_ROWS) << 5);
  if (!commit()) return STATUS_NO_MEMORY;
  packRows(packed);
  for (let k = 0; k < L; k++) {
    const rec = packed + (<usize>load<u32>(orderP + (<usize>k << 2)) << 5);
    store<f64>(weightP + (<usize>k << 3), load<f64>(rec));
    store<i32>(leaseP + (<usize>k << 2), load<i32>(rec, 8));
    store<i32>(prevP + (<usize>k << 2), load<i32>(rec, 12));
    store<i32>(recP + (<usize>k << 2), load<i32>(rec, 16));
    store<u8>(flagsP + <usize>k, load<u8>(rec, 20));
  }
  setWord(H_PERMUTED, 1);
  return STATUS_OK;
}

/** Bits of a key's top that pick its partition in `countDuplicateKeys`. */
const PART_BITS: i32 = 8;

/**
 * Counts rows flagged LIVE whose content key equals an earlier live row's.
 * Equal ids give equal keys, so zero means the ids are unique; a positive
 * count sends the JS side to the exact check. Why partitioned: one open-
 * addressing table over 1M keys is 16 MB, and every probe missed the cache
 * (~55 ms per 1M). The keys are first scattered by their top bits into 256
 * runs (sequential reads, 256 write cursors), then each run, ~4k keys at
 * 1M, is checked in a table of its own that stays in cache.
 */
export function countDuplicateKeys(): i32 {
  const R = <i32>word(H_ROWS);
  const keyP = <usize>word(H_KEY);
  const flagsP = <usize>word(H_FLAGS);
  const P: i32 = 1 << PART_BITS;
  scratchReset();
  const begin = take(<usize>(P + 1) << 2);
  const cursor = take(<usize>P << 2);
  const runs = take(<usize>R << 3);
  if (!commit()) return STATUS_NO_MEMORY;
  memory.fill(begin, 0, <usize>(P + 1) << 2);
  let zeros = 0;
  for (let r = 0; r < R; r++) {
    if ((<i32>load<u8>(flagsP + <usize>r) & FLAG_LIVE) == 0) continue;
    const k = keyOf(keyP, <u32>r);
    if (k == 0) {
      zeros++;
      continue;
    }
    const at = begin + ((<usize>(k >> (64 - PART_BITS)) + 1) << 2);
    store<u32>(at, load<u32>(at) + 1);
  }
  let most: u32 = 0;
  for (let b = 0; b < P; b++) {
    const count = load<u32>(begin + (<usize>(b + 1) << 2));
    if (count > most) most = count;
    const from = load<u32>(begin + (<usize>b << 2));
    store<u32>(begin + (<usize>(b + 1) << 2), from + count);
    store<u32>(cursor + (<usize>b << 2), from);
  }
  for (let r = 0; r < R; r++) {
    if ((<i32>load<u8>(flagsP + <usize>r) & FLAG_LIVE) == 0) continue;
    const k = keyOf(keyP, <u32>r);
    if (k == 0) continue;
    const at = cursor + (<usize>(k >> (64 - PART_BITS)) << 2);
    const i = load<u32>(at);
    store<u64>(runs + (<usize>i << 3), k);
    store<u32>(at, i + 1);
  }
  let room: usize = 16;
  while (room < (<usize>most << 1)) room <<= 1;
  const table = take(room << 3);
  if (!commit()) return STATUS_NO_MEMORY;
  let dups = 0;
  for (let b = 0; b < P; b++) {
    const from = load<u32>(begin + (<usize>b << 2));
    const to = load<u32>(begin + (<usize>(b + 1) << 2));
    let size: usize = 16;
    while (size < (<usize>(to - from) << 1)) size <<= 1;
    const mask = size - 1;
    memory.fill(table, 0, size << 3);
    for (let i = from; i < to; i++) {
      const k = load<u64>(runs + (<usize>i << 3));
      // The top bits are the run's own: the slot comes from the low ones.
      let s = <usize>(k ^ (k >> 29)) & mask;
      for (;;) {
        const t = load<u64>(table + (s << 3));
        if (t == 0) {
          store<u64>(table + (s << 3), k);
          break;
        }
        if (t == k) {
          dups++;
          break;
        }
        s = (s + 1) & mask;
      }
    }
  }
  if (zeros > 1) dups += zeros - 1;
  setWord(H_DUPLICATES, <u32>dups);
  return dups;
}
