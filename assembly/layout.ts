/**
 * The engine's buffer layout: header slots, flags and status codes, written
 * once here and mirrored once in src/assignment/codec.ts (a unit test reads
 * these back from the compiled module's exports and compares them).
 *
 * The header is a static block of u32 words followed by f64 words. Column
 * pointers in it are byte offsets into linear memory, set by `reserve` and
 * stable until the next `reserve`. Per-row columns (R rows):
 *   WEIGHT f64 (raw weight), KEY u32×2 (content key lo, hi), LEASE / PREVIOUS /
 *   RECORD i32 (owner handle, −1 none), FLAGS u8, ORDER u32 (sorted rows),
 *   ASSIGNEE i32 (member index, −1 queued / not in pool), STR_OFF u32 (R+1
 *   offsets into STR, u16 code units), OUT_ROWS u32 (assigned rows grouped by
 *   member, each group in id order), BY_RANK u32 (live rows in id order).
 * Per-member columns (m members, canonical order): CAP i32, LOAD f64,
 * OUT_OFF u32 (m+1). HANDLE_MAP i32 (H): owner handle → member index or −1.
 */

/** Bumped whenever anything below changes meaning. */
export const LAYOUT_VERSION: i32 = 1;

// Header words (u32), inputs.
export const H_ROWS: i32 = 0;
export const H_MEMBERS: i32 = 1;
export const H_HANDLES: i32 = 2;
export const H_CHARS: i32 = 3;
export const H_WEIGHT: i32 = 4;
export const H_KEY: i32 = 5;
export const H_LEASE: i32 = 6;
export const H_PREVIOUS: i32 = 7;
export const H_RECORD: i32 = 8;
export const H_FLAGS: i32 = 9;
export const H_HANDLE_MAP: i32 = 10;
export const H_CAP: i32 = 11;
export const H_ORDER: i32 = 12;
export const H_ORDER_LEN: i32 = 13;
export const H_ASSIGNEE: i32 = 14;
export const H_LOAD: i32 = 15;
export const H_STR_OFF: i32 = 16;
export const H_STR: i32 = 17;
export const H_OUT_ROWS: i32 = 18;
export const H_OUT_OFF: i32 = 19;
/** Input: 1 when every code unit in STR is below 256. */
export const H_NARROW: i32 = 20;
// Header words (u32), results.
export const H_POOL: i32 = 21;
export const H_ASSIGNED: i32 = 22;
export const H_QUEUED: i32 = 23;
export const H_MOVES: i32 = 24;
export const H_BACKSTOP_HIT: i32 = 25;
export const H_COLLISIONS: i32 = 26;
export const H_DUPLICATES: i32 = 27;
export const H_SHIFT: i32 = 28;
/** ptr u32[R]: the live rows in id order (`rankRows`), input of `sortOutputByRank`. */
export const H_BY_RANK: i32 = 29;
/**
 * Input: 1 when WEIGHT, LEASE, PREVIOUS, RECORD and FLAGS are written in
 * ORDER's order (entry k describes row ORDER[k]) rather than by row; the
 * caller writes them so, or `permuteByOrder` rewrites them so.
 */
export const H_PERMUTED: i32 = 30;
/**
 * The claimable count the weight units' shift is computed for, when above
 * the pool's own (0 otherwise): a decision slice's pool carries its whole
 * pool's, so both balance in the same units (decision 0045). Cleared by reserve.
 */
export const H_UNITS_N: i32 = 31;
export const H_WORDS: i32 = 32;

// f64 words, after the u32 words.
export const F_OFFSET: i32 = 128; // = H_WORDS * 4
/** Sum of the assigned splits' effective weights, in pool order. */
export const F_ASSIGNED_TOTAL: i32 = 0;
/** Heaviest assigned effective weight. */
export const F_HEAVIEST: i32 = 1;
export const F_WORDS: i32 = 4;
export const HEADER_BYTES: i32 = 160; // = F_OFFSET + F_WORDS * 8

// Row flags.
/** The row holds a split. */
export const FLAG_LIVE: i32 = 1;
/** The split is claimable: runnable and not reserved. */
export const FLAG_POOL: i32 = 2;

// Status codes returned by the exports.
export const STATUS_OK: i32 = 0;
export const STATUS_NO_MEMORY: i32 = -1;
export const STATUS_BAD_SIZE: i32 = -2;
