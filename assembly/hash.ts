/**
 * Content keys in the engine: src/hash.ts `hashInto` over the code units in
 * STR, so that the JS side copies an id's units once and never walks it a
 * second time to hash it (the two walks were ~70 ms per 1M ids; see
 * BENCHMARKS.md, issue 14, fourth pass). `i32.mul` wraps exactly as
 * `Math.imul` does, so every key is hash.ts's, bit for bit (held so by a
 * property test against hash.ts). Pure: no imports beyond the layout.
 */
import { H_KEY, H_ROWS, H_STR, H_STR_OFF } from './layout';
import { word } from './memory';

/**
 * Writes KEY[r] = (lo, hi) for rows [from, ROWS) from their code units
 * (STR_OFF[r] .. STR_OFF[r + 1] in STR), under the seed state `state`
 * (hash.ts `seedState`). Returns the number of rows hashed.
 */
export function hashKeys(state: u32, from: i32): i32 {
  const R = <i32>word(H_ROWS);
  const keyP = <usize>word(H_KEY);
  const offP = <usize>word(H_STR_OFF);
  const strP = <usize>word(H_STR);
  if (from < 0) from = 0;
  let s = load<u32>(offP + (<usize>from << 2));
  for (let r = from; r < R; r++) {
    const e = load<u32>(offP + (<usize>(r + 1) << 2));
    let h1: u32 = 0xdeadbeef ^ state;
    let h2: u32 = 0x41c6ce57 ^ state;
    for (let i = s; i < e; i++) {
      const ch = <u32>load<u16>(strP + (<usize>i << 1));
      h1 = (h1 ^ ch) * 2654435761;
      h2 = (h2 ^ ch) * 1597334677;
    }
    h1 = (h1 ^ (h1 >>> 16)) * 2246822507;
    h1 ^= (h2 ^ (h2 >>> 13)) * 3266489909;
    h2 = (h2 ^ (h2 >>> 16)) * 2246822507;
    h2 ^= (h1 ^ (h1 >>> 13)) * 3266489909;
    const k = keyP + (<usize>r << 3);
    store<u32>(k, h1);
    store<u32>(k, h2, 4);
    s = e;
  }
  return R > from ? R - from : 0;
}
