/**
 * Each member's split list in id order, JS string order (UTF-16 code units,
 * a proper prefix first): per call (`sortOutput`), or from an id order of
 * all rows kept between calls (`rankRows`, then `sortOutputByRank`).
 *
 * Ids are compared by a 64-bit window of the code units after the ids'
 * common prefix (8 units of 8 bits when all are narrow, else 4 of 16; a
 * missing unit is 0); windows that differ order as the ids do, and equal
 * windows fall back to a full comparison. Pure: no imports beyond the layout.
 */
import {
  FLAG_LIVE, H_ASSIGNEE, H_BY_RANK, H_FLAGS, H_MEMBERS, H_NARROW, H_OUT_OFF, H_OUT_ROWS, H_ROWS,
  H_STR, H_STR_OFF, STATUS_NO_MEMORY,
} from './layout';
import { commit, scratchReset, take, word } from './memory';
import { BUCKETS, DIGITS, radix } from './sort';

let gStr: usize = 0;
let gOff: usize = 0;
let gPrefix: i32 = 0;

/** JS string order of rows a and b, comparing code units from `gPrefix`. */
function compareIds(a: u32, b: u32): i32 {
  const sa = load<u32>(gOff + (<usize>a << 2));
  const la = <i32>(load<u32>(gOff + (<usize>(a + 1) << 2)) - sa);
  const sb = load<u32>(gOff + (<usize>b << 2));
  const lb = <i32>(load<u32>(gOff + (<usize>(b + 1) << 2)) - sb);
  const n = la < lb ? la : lb;
  const pa = gStr + (<usize>sa << 1), pb = gStr + (<usize>sb << 1);
  for (let i = gPrefix; i < n; i++) {
    const ca = load<u16>(pa + (<usize>i << 1));
    const cb = load<u16>(pb + (<usize>i << 1));
    if (ca != cb) return ca < cb ? -1 : 1;
  }
  return la - lb;
}

/**
 * The next code units after the common prefix, packed big-endian into a u64
 * (8 units of 8 bits when every unit is narrow, else 4 of 16), missing units
 * as 0. Windows that differ order as the ids do; equal windows fall back to
 * `compareIds`.
 */
function windowOf(row: u32, narrow: bool): u64 {
  const s = load<u32>(gOff + (<usize>row << 2));
  const len = <i32>(load<u32>(gOff + (<usize>(row + 1) << 2)) - s);
  const p = gStr + (<usize>s << 1);
  const units = narrow ? 8 : 4;
  const bits: u64 = narrow ? 8 : 16;
  let k: u64 = 0;
  for (let t = 0; t < units; t++) {
    const i = gPrefix + t;
    const u: u64 = i < len ? <u64>load<u16>(p + (<usize>i << 1)) : 0;
    k = (k << bits) | u;
  }
  return k;
}

@inline function before(wa: u64, ra: u32, wb: u64, rb: u32): bool {
  return wa != wb ? wa < wb : compareIds(ra, rb) < 0;
}

function insertionPairs(wP: usize, rP: usize, s: i32, e: i32): void {
  for (let i = s + 1; i < e; i++) {
    const w = load<u64>(wP + (<usize>i << 3));
    const r = load<u32>(rP + (<usize>i << 2));
    let j = i - 1;
    while (j >= s) {
      const wj = load<u64>(wP + (<usize>j << 3));
      const rj = load<u32>(rP + (<usize>j << 2));
      if (!before(w, r, wj, rj)) break;
      store<u64>(wP + (<usize>(j + 1) << 3), wj);
      store<u32>(rP + (<usize>(j + 1) << 2), rj);
      j--;
    }
    store<u64>(wP + (<usize>(j + 1) << 3), w);
    store<u32>(rP + (<usize>(j + 1) << 2), r);
  }
}

/** Sorts pairs [s, e) of (window, row) by id, using (tW, tR) as the merge buffer. */
function sortSegment(wP: usize, rP: usize, tW: usize, tR: usize, s: i32, e: i32): void {
  let sorted = true;
  for (let i = s + 1; i < e; i++) {
    const a = i - 1;
    if (before(load<u64>(wP + (<usize>i << 3)), load<u32>(rP + (<usize>i << 2)),
      load<u64>(wP + (<usize>a << 3)), load<u32>(rP + (<usize>a << 2)))) {
      sorted = false;
      break;
    }
  }
  if (sorted) return;
  const BLOCK = 16;
  for (let b = s; b < e; b += BLOCK) insertionPairs(wP, rP, b, b + BLOCK < e ? b + BLOCK : e);
  let srcW = wP, srcR = rP, dstW = tW, dstR = tR;
  for (let width = BLOCK; width < e - s; width <<= 1) {
    for (let lo = s; lo < e; lo += width << 1) {
      const mid = lo + width < e ? lo + width : e;
      const hi = lo + (width << 1) < e ? lo + (width << 1) : e;
      let i = lo, j = mid, k = lo;
      while (i < mid && j < hi) {
        const wi = load<u64>(srcW + (<usize>i << 3)), ri = load<u32>(srcR + (<usize>i << 2));
        const wj = load<u64>(srcW + (<usize>j << 3)), rj = load<u32>(srcR + (<usize>j << 2));
        if (before(wj, rj, wi, ri)) {
          store<u64>(dstW + (<usize>k << 3), wj); store<u32>(dstR + (<usize>k << 2), rj); j++;
        } else {
          store<u64>(dstW + (<usize>k << 3), wi); store<u32>(dstR + (<usize>k << 2), ri); i++;
        }
        k++;
      }
      if (i < mid) {
        memory.copy(dstW + (<usize>k << 3), srcW + (<usize>i << 3), <usize>(mid - i) << 3);
        memory.copy(dstR + (<usize>k << 2), srcR + (<usize>i << 2), <usize>(mid - i) << 2);
      } else if (j < hi) {
        memory.copy(dstW + (<usize>k << 3), srcW + (<usize>j << 3), <usize>(hi - j) << 3);
        memory.copy(dstR + (<usize>k << 2), srcR + (<usize>j << 2), <usize>(hi - j) << 2);
      }
    }
    const xW = srcW; srcW = dstW; dstW = xW;
    const xR = srcR; srcR = dstR; dstR = xR;
  }
  if (srcR != rP) memory.copy(rP + (<usize>s << 2), srcR + (<usize>s << 2), <usize>(e - s) << 2);
}

/**
 * Groups the assigned rows (ASSIGNEE ≥ 0) by member into OUT_ROWS, each
 * group in id order, with OUT_OFF[j]..OUT_OFF[j+1] delimiting member j's.
 * Returns the number of assigned rows, or a negative status.
 *
 * Why one function: the counting pass, the two scatters and the per-group
 * sort share the column pointers, the prefix and the group offsets as wasm
 * locals in one hot loop nest over every assigned row; split, they would
 * pass through globals or memory on each call, and the steps only make sense
 * in this order.
 */
export function sortOutput(): i32 {
  const R = <i32>word(H_ROWS);
  const m = <i32>word(H_MEMBERS);
  const assigneeP = <usize>word(H_ASSIGNEE);
  const outRows = <usize>word(H_OUT_ROWS);
  const outOff = <usize>word(H_OUT_OFF);
  gStr = <usize>word(H_STR);
  gOff = <usize>word(H_STR_OFF);
  const narrow = word(H_NARROW) != 0;
  scratchReset();
  const cursor = take(<usize>m << 2);
  const winA = take(<usize>R << 3), winB = take(<usize>R << 3), rowB = take(<usize>R << 2);
  if (!commit()) return STATUS_NO_MEMORY;

  // Rows in order (sequential reads): counts per member, and the longest
  // prefix common to every assigned id.
  memory.fill(cursor, 0, <usize>m << 2);
  let A = 0;
  let first: i32 = -1;
  let prefix = 0;
  let fp: usize = 0;
  for (let r = 0; r < R; r++) {
    const a = load<i32>(assigneeP + (<usize>r << 2));
    if (a < 0) continue;
    const c = cursor + (<usize>a << 2);
    store<u32>(c, load<u32>(c) + 1);
    A++;
    const s = load<u32>(gOff + (<usize>r << 2));
    const len = <i32>(load<u32>(gOff + (<usize>(r + 1) << 2)) - s);
    const p = gStr + (<usize>s << 1);
    if (first < 0) {
      first = r;
      prefix = len;
      fp = p;
      continue;
    }
    const n = len < prefix ? len : prefix;
    let i = 0;
    while (i < n && load<u16>(p + (<usize>i << 1)) == load<u16>(fp + (<usize>i << 1))) i++;
    prefix = i;
  }
  gPrefix = prefix;
  let sum: u32 = 0;
  for (let j = 0; j < m; j++) {
    const c = load<u32>(cursor + (<usize>j << 2));
    store<u32>(outOff + (<usize>j << 2), sum);
    store<u32>(cursor + (<usize>j << 2), sum);
    sum += c;
  }
  store<u32>(outOff + (<usize>m << 2), sum);
  // Each (window, row) to its member's group, in two scatters. Why: one
  // scatter into m groups writes to 2m places at once (10k members: 20k
  // streams over 12 MB, a TLB miss per store); members in runs of 2^S
  // share a coarse bucket, which occupies one range of OUT_ROWS. First, rows
  // in order (sequential id reads for the window) into ≤ 256 coarse
  // buckets, each row tagged with its member's low S bits (rows < 2^24);
  // then each bucket, in order, into its members' groups, which lie within
  // the bucket's range and stay in cache. Both are stable: each group's
  // rows are in row order, as one scatter left them.
  let S = 0;
  while (S < 8 && ((m - 1) >> (S + 8)) > 0) S++;
  const C = ((m - 1) >> S) + 1;
  const coarse = take(<usize>C << 2);
  if (!commit()) return STATUS_NO_MEMORY;
  for (let c = 0; c < C; c++) store<u32>(coarse + (<usize>c << 2), load<u32>(outOff + (<usize>(c << S) << 2)));
  const lowMask = (1 << S) - 1;
  for (let r = 0; r < R; r++) {
    const a = load<i32>(assigneeP + (<usize>r << 2));
    if (a < 0) continue;
    const c = coarse + (<usize>(a >> S) << 2);
    const q = load<u32>(c);
    store<u32>(c, q + 1);
    store<u32>(rowB + (<usize>q << 2), <u32>r | (<u32>(a & lowMask) << 24));
    store<u64>(winB + (<usize>q << 3), windowOf(<u32>r, narrow));
  }
  for (let c = 0; c < C; c++) {
    const from = load<u32>(outOff + (<usize>(c << S) << 2));
    const last = (c + 1) << S;
    const to = load<u32>(outOff + (<usize>(last < m ? last : m) << 2));
    const first = c << S;
    for (let q = from; q < to; q++) {
      const x = load<u32>(rowB + (<usize>q << 2));
      const cur = cursor + (<usize>(first + <i32>(x >>> 24)) << 2);
      const p = load<u32>(cur);
      store<u32>(cur, p + 1);
      store<u32>(outRows + (<usize>p << 2), x & 0xffffff);
      store<u64>(winA + (<usize>p << 3), load<u64>(winB + (<usize>q << 3)));
    }
  }
  for (let j = 0; j < m; j++) {
    const s = <i32>load<u32>(outOff + (<usize>j << 2));
    const e = <i32>load<u32>(outOff + (<usize>(j + 1) << 2));
    if (e - s > 1) sortSegment(winA, outRows, winB, rowB, s, e);
  }
  return A;
}

/**
 * All live rows in id order into BY_RANK: by window (radix), then runs of
 * equal windows by full comparison. Ids never change for a row, so a caller
 * may keep this and pass it to `sortOutputByRank` on later decisions.
 */
export function rankRows(): i32 {
  const R = <i32>word(H_ROWS);
  const flagsP = <usize>word(H_FLAGS);
  const byRank = <usize>word(H_BY_RANK);
  gStr = <usize>word(H_STR);
  gOff = <usize>word(H_STR_OFF);
  const narrow = word(H_NARROW) != 0;
  scratchReset();
  const aK = take(<usize>R << 3), aV = take(<usize>R << 2);
  const bK = take(<usize>R << 3), bV = take(<usize>R << 2);
  const hist = take(BUCKETS * 4 * <usize>DIGITS);
  if (!commit()) return STATUS_NO_MEMORY;

  let L = 0;
  let prefix = 0;
  let fp: usize = 0;
  for (let r = 0; r < R; r++) {
    if ((<i32>load<u8>(flagsP + <usize>r) & FLAG_LIVE) == 0) continue;
    const s = load<u32>(gOff + (<usize>r << 2));
    const len = <i32>(load<u32>(gOff + (<usize>(r + 1) << 2)) - s);
    const p = gStr + (<usize>s << 1);
    if (L == 0) {
      prefix = len;
      fp = p;
    } else {
      const n = len < prefix ? len : prefix;
      let i = 0;
      while (i < n && load<u16>(p + (<usize>i << 1)) == load<u16>(fp + (<usize>i << 1))) i++;
      prefix = i;
    }
    store<u32>(aV + (<usize>L << 2), <u32>r);
    L++;
  }
  gPrefix = prefix;
  for (let k = 0; k < L; k++) store<u64>(aK + (<usize>k << 3), windowOf(load<u32>(aV + (<usize>k << 2)), narrow));
  const inB = radix(aK, aV, bK, bV, L, hist);
  const sK = inB ? bK : aK, sV = inB ? bV : aV;
  const tK = inB ? aK : bK, tV = inB ? aV : bV;
  let i = 0;
  while (i < L) {
    const wi = load<u64>(sK + (<usize>i << 3));
    let j = i + 1;
    while (j < L && load<u64>(sK + (<usize>j << 3)) == wi) j++;
    if (j - i > 1) sortSegment(sK, sV, tK, tV, i, j);
    i = j;
  }
  memory.copy(byRank, sV, <usize>L << 2);
  return L;
}

/**
 * `sortOutput` from BY_RANK (every live row, in id order): one counting pass,
 * each member's group comes out in id order. Returns the assigned count.
 */
export function sortOutputByRank(): i32 {
  const R = <i32>word(H_ROWS);
  const m = <i32>word(H_MEMBERS);
  const assigneeP = <usize>word(H_ASSIGNEE);
  const outRows = <usize>word(H_OUT_ROWS);
  const outOff = <usize>word(H_OUT_OFF);
  const byRank = <usize>word(H_BY_RANK);
  const flagsP = <usize>word(H_FLAGS);
  scratchReset();
  const cursor = take(<usize>m << 2);
  if (!commit()) return STATUS_NO_MEMORY;
  memory.fill(cursor, 0, <usize>m << 2);
  let live = 0;
  for (let r = 0; r < R; r++) {
    if ((<i32>load<u8>(flagsP + <usize>r) & FLAG_LIVE) != 0) live++;
    const a = load<i32>(assigneeP + (<usize>r << 2));
    if (a < 0) continue;
    const c = cursor + (<usize>a << 2);
    store<u32>(c, load<u32>(c) + 1);
  }
  let sum: u32 = 0;
  for (let j = 0; j < m; j++) {
    const c = load<u32>(cursor + (<usize>j << 2));
    store<u32>(outOff + (<usize>j << 2), sum);
    store<u32>(cursor + (<usize>j << 2), sum);
    sum += c;
  }
  store<u32>(outOff + (<usize>m << 2), sum);
  // One scatter (a u32 a row). Two, as in sortOutput, measured slower here
  // (12–15 → 16–22 ms at 1M × 10k): this loop's cost is the random ASSIGNEE read.
  for (let k = 0; k < live; k++) {
    const r = load<u32>(byRank + (<usize>k << 2));
    const a = load<i32>(assigneeP + (<usize>r << 2));
    if (a < 0) continue;
    const c = cursor + (<usize>a << 2);
    const p = load<u32>(c);
    store<u32>(c, p + 1);
    store<u32>(outRows + (<usize>p << 2), r);
  }
  return <i32>sum;
}
