/**
 * The WASM assignment engine's exports: numbers in, numbers out. The JS side
 * (src/assignment/codec.ts, wasm.ts) calls, in order:
 *   reserve(rows, members, handles, chars)  lay out the columns (layout.ts);
 *   [reserveChars(chars)]                   room for ids learnt after the rows;
 *   [hashKeys(state, from)]                 content keys from the ids' code units;
 *   [countDuplicateKeys()]                  validation helper for object input;
 *   sortOrder(mask) | JS writes ORDER       the pool's order;
 *   [permuteByOrder()]                      the row columns rewritten in that order;
 *   decide()                                the three passes;
 *   [sortOutput()]                          each member's rows in id order;
 *   [rankRows()] / [sortOutputByRank()]     the same from a kept id order.
 * Every call may grow memory; the caller re-creates its views afterwards.
 * Never imports src/; no runtime allocation (all memory is laid out here).
 */
import {
  H_ASSIGNEE, H_BY_RANK, H_CAP, H_PERMUTED, H_UNITS_N, H_CHARS, H_FLAGS, H_HANDLE_MAP, H_HANDLES, H_KEY, H_LEASE, H_LOAD, H_MEMBERS,
  H_ORDER, H_ORDER_LEN, H_OUT_OFF, H_OUT_ROWS, H_PREVIOUS, H_RECORD, H_ROWS, H_STR, H_STR_OFF,
  H_WEIGHT, STATUS_BAD_SIZE, STATUS_NO_MEMORY, STATUS_OK,
} from './layout';
import { align8, ensure, HDR, scratchBase, setScratchBase, setWord } from './memory';

export {
  LAYOUT_VERSION, H_ROWS, H_MEMBERS, H_HANDLES, H_CHARS, H_WEIGHT, H_KEY, H_LEASE, H_PREVIOUS,
  H_RECORD, H_FLAGS, H_HANDLE_MAP, H_CAP, H_ORDER, H_ORDER_LEN, H_ASSIGNEE, H_LOAD, H_STR_OFF,
  H_STR, H_OUT_ROWS, H_OUT_OFF, H_NARROW, H_POOL, H_ASSIGNED, H_QUEUED, H_MOVES, H_BACKSTOP_HIT,
  H_COLLISIONS, H_DUPLICATES, H_SHIFT, H_BY_RANK, H_PERMUTED, H_UNITS_N, H_WORDS, F_OFFSET, F_ASSIGNED_TOTAL, F_HEAVIEST, F_WORDS,
  HEADER_BYTES, FLAG_LIVE, FLAG_POOL, STATUS_OK, STATUS_NO_MEMORY, STATUS_BAD_SIZE,
} from './layout';
export { countDuplicateKeys, permuteByOrder, sortOrder } from './sort';
export { hashKeys } from './hash';
export { rankRows, sortOutput, sortOutputByRank } from './output';
export { decide } from './passes';

/** Byte offset of the header block. */
export function header(): usize {
  return HDR;
}

/**
 * Largest row / member / handle count and id length total accepted: with
 * them, columns (≈ 60 B a row), ids and every phase's scratch stay below
 * 4 GiB, so no offset computed in u32 can wrap.
 */
const MAX_COUNT: u64 = 1 << 24;
const MAX_CHARS: u64 = 1 << 28;

/**
 * Lays out the columns for `rows` rows, `members` members, `handles` owner
 * handles and `chars` u16 code units of ids, growing memory as needed, and
 * writes their offsets into the header. Clears ORDER_LEN. Contents of the
 * columns are unspecified until the caller writes them.
 */
export function reserve(rows: i32, members: i32, handles: i32, chars: i32): i32 {
  if (rows < 0 || members < 0 || handles < 0 || chars < 0) return STATUS_BAD_SIZE;
  if (<u64>rows > MAX_COUNT || <u64>members > MAX_COUNT || <u64>handles > MAX_COUNT || <u64>chars > MAX_CHARS) {
    return STATUS_BAD_SIZE;
  }
  const R = <usize>rows, m = <usize>members, H = <usize>handles;
  let p = align8(__heap_base);
  setWord(H_WEIGHT, <u32>p); p += R << 3;
  setWord(H_KEY, <u32>p); p += R << 3;
  setWord(H_LOAD, <u32>p); p += m << 3;
  setWord(H_LEASE, <u32>p); p += R << 2;
  setWord(H_PREVIOUS, <u32>p); p += R << 2;
  setWord(H_RECORD, <u32>p); p += R << 2;
  setWord(H_HANDLE_MAP, <u32>p); p += H << 2;
  setWord(H_CAP, <u32>p); p += m << 2;
  setWord(H_ORDER, <u32>p); p += R << 2;
  setWord(H_ASSIGNEE, <u32>p); p += R << 2;
  setWord(H_STR_OFF, <u32>p); p += (R + 1) << 2;
  setWord(H_OUT_ROWS, <u32>p); p += R << 2;
  setWord(H_BY_RANK, <u32>p); p += R << 2;
  setWord(H_OUT_OFF, <u32>p); p += (m + 1) << 2;
  setWord(H_FLAGS, <u32>p); p += R;
  p = align8(p);
  setWord(H_STR, <u32>p); p += <usize>chars << 1;
  setScratchBase(p);
  if (!ensure(align8(p))) return STATUS_NO_MEMORY;
  setWord(H_ROWS, <u32>rows);
  setWord(H_MEMBERS, <u32>members);
  setWord(H_HANDLES, <u32>handles);
  setWord(H_CHARS, <u32>chars);
  setWord(H_ORDER_LEN, 0);
  setWord(H_PERMUTED, 0);
  setWord(H_UNITS_N, 0);
  return STATUS_OK;
}

/**
 * Replaces STR with room for `chars` code units placed above the columns
 * (for a caller that learns the count only after writing the rows). Column
 * offsets are unchanged; the scratch region moves up.
 */
export function reserveChars(chars: i32): i32 {
  if (chars < 0 || <u64>chars > MAX_CHARS) return STATUS_BAD_SIZE;
  const p = scratchBase();
  setWord(H_STR, <u32>p);
  setWord(H_CHARS, <u32>chars);
  const end = align8(p + (<usize>chars << 1));
  setScratchBase(end);
  return ensure(end) ? STATUS_OK : STATUS_NO_MEMORY;
}
