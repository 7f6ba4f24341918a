/**
 * The JS mirror of assembly/layout.ts (a unit test compares the two) and
 * typed views of the engine's memory. Numbers only; it never touches
 * `WebAssembly` (wasm.ts owns the module and implements `EngineMemory`).
 */
import type { IdArena } from './id-arena.js';
/** Mirror of assembly/layout.ts, name for name. */
export const LAYOUT = {
  LAYOUT_VERSION: 1,
  H_ROWS: 0, H_MEMBERS: 1, H_HANDLES: 2, H_CHARS: 3, H_WEIGHT: 4, H_KEY: 5, H_LEASE: 6,
  H_PREVIOUS: 7, H_RECORD: 8, H_FLAGS: 9, H_HANDLE_MAP: 10, H_CAP: 11, H_ORDER: 12,
  H_ORDER_LEN: 13, H_ASSIGNEE: 14, H_LOAD: 15, H_STR_OFF: 16, H_STR: 17, H_OUT_ROWS: 18,
  H_OUT_OFF: 19, H_NARROW: 20, H_POOL: 21, H_ASSIGNED: 22, H_QUEUED: 23, H_MOVES: 24,
  H_BACKSTOP_HIT: 25, H_COLLISIONS: 26, H_DUPLICATES: 27, H_SHIFT: 28, H_BY_RANK: 29, H_PERMUTED: 30, H_UNITS_N: 31, H_WORDS: 32,
  F_OFFSET: 128, F_ASSIGNED_TOTAL: 0, F_HEAVIEST: 1, F_WORDS: 4, HEADER_BYTES: 160,
  FLAG_LIVE: 1, FLAG_POOL: 2,
  STATUS_OK: 0, STATUS_NO_MEMORY: -1, STATUS_BAD_SIZE: -2,
} as const;

/** Caps above this are written as this (an i32 column). */
export const I32_MAX = 0x7fffffff;
const L = LAYOUT;

/** Typed views of the engine's memory; stale once the memory grows. */
export class EngineViews {
  private readonly words: Uint32Array;
  private readonly floats: Float64Array;

  constructor(
    readonly buffer: ArrayBuffer,
    header: number,
  ) {
    this.words = new Uint32Array(buffer, header, L.H_WORDS);
    this.floats = new Float64Array(buffer, header + L.F_OFFSET, L.F_WORDS);
  }

  word(slot: number): number {
    return this.words[slot]!;
  }

  setWord(slot: number, v: number): void {
    this.words[slot] = v;
  }

  float(slot: number): number {
    return this.floats[slot]!;
  }

  f64(slot: number, length: number): Float64Array {
    return new Float64Array(this.buffer, this.words[slot]!, length);
  }

  u32(slot: number, length: number): Uint32Array {
    return new Uint32Array(this.buffer, this.words[slot]!, length);
  }

  i32(slot: number, length: number): Int32Array {
    return new Int32Array(this.buffer, this.words[slot]!, length);
  }

  u16(slot: number, length: number): Uint16Array {
    return new Uint16Array(this.buffer, this.words[slot]!, length);
  }

  u8(slot: number, length: number): Uint8Array {
    return new Uint8Array(this.buffer, this.words[slot]!, length);
  }
}

/** The engine's memory as the codec needs it (implemented by wasm.ts). */
export interface EngineMemory {
  /** Lays out columns for these sizes (may grow memory) and returns fresh views. */
  reserve(rows: number, members: number, handles: number, chars: number): EngineViews;
  /** Moves STR above the columns with room for `chars` units; returns fresh views. */
  reserveChars(chars: number): EngineViews;
  /** Views of the current memory. */
  views(): EngineViews;
  /**
   * KEY for rows [from, ROWS), hash.ts `hashInto` of each row's code units
   * in STR under `state` (`seedState(seed)`). STR and STR_OFF must be written.
   */
  hashKeys(state: number, from: number): void;
}


/**
 * Writes the id code units (STR, STR_OFF) of the rows [0, rows) for which
 * `include(r)` holds, straight from the arena (no string per id; any other
 * row gets an empty id), and NARROW: 1 when every unit the arena holds is
 * below 256 (0 is always correct, only slower).
 */
export function writeArenaIds(v: EngineViews, rows: number, arena: IdArena, include: (r: number) => boolean): void {
  const strOff = v.u32(LAYOUT.H_STR_OFF, rows + 1);
  const str = v.u16(LAYOUT.H_STR, arena.unitCount);
  let p = 0;
  for (let r = 0; r < rows; r++) {
    strOff[r] = p;
    if (include(r)) p += arena.copyUnits(r, str, p);
  }
  strOff[rows] = p;
  v.setWord(LAYOUT.H_NARROW, arena.narrow ? 1 : 0);
}

