/**
 * Linear memory: the static header, the column region laid out by `reserve`,
 * and a scratch region above it that each phase reuses from its start. The
 * engine never frees; it grows memory when a phase needs more and keeps it.
 * Every growth invalidates the JS side's views (codec.ts re-creates them
 * after each call). Pure: no imports, no clock.
 */
import { F_OFFSET, HEADER_BYTES } from './layout';

/** The header block (layout.ts): u32 words then f64 words. */
export const HDR: usize = memory.data(HEADER_BYTES, 16);

@inline export function word(slot: i32): u32 {
  return load<u32>(HDR + (<usize>slot << 2));
}

@inline export function setWord(slot: i32, v: u32): void {
  store<u32>(HDR + (<usize>slot << 2), v);
}

@inline export function setFloat(slot: i32, v: f64): void {
  store<f64>(HDR + <usize>F_OFFSET + (<usize>slot << 3), v);
}

@inline export function align8(p: usize): usize {
  return (p + 7) & ~(<usize>7);
}

/** Start of the scratch region (end of the columns). */
let base: usize = 0;
/** Bump pointer inside the scratch region. */
let top: usize = 0;

export function setScratchBase(p: usize): void {
  base = align8(p);
  top = base;
}

export function scratchBase(): usize {
  return base;
}

/** Starts a phase's scratch allocation from the bottom of the region. */
export function scratchReset(): void {
  top = base;
}

/** Reserves `bytes` of scratch (8-aligned); call `commit` before touching it. */
export function take(bytes: usize): usize {
  const p = top;
  top = align8(top + bytes);
  return p;
}

/** The current scratch top: where a phase's growable arena starts. */
export function scratchTop(): usize {
  return top;
}

/** Grows memory to cover everything taken so far. */
export function commit(): bool {
  return ensure(top);
}

/** Grows memory so that [0, end) is addressable; false when it cannot. */
export function ensure(end: usize): bool {
  const have = (<usize>memory.size()) << 16;
  if (end <= have) return true;
  let pages = <i32>((end - have + 0xffff) >>> 16);
  // Amortise repeated growth of the arena: at least 1/8 more than now.
  const extra = <i32>(have >>> 19);
  const want = pages > extra ? pages : extra;
  if (memory.grow(want) >= 0) return true;
  return memory.grow(pages) >= 0;
}
