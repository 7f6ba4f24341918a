/**
 * Two indexed binary heaps over member indices, mirroring
 * src/assignment/heap.ts operation for operation (same sift order, same
 * tie-breaks), so the engine visits members exactly as the reference does:
 *   FREE   — lightest first: load ascending, then index ascending;
 *   DONORS — keeps most first: load − w(lightest held) descending, then index.
 * Keys are read live from the arrays bound with `bindHeapKeys`.
 */

export const FREE: i32 = 0;
export const DONORS: i32 = 1;

let gLoad: usize = 0;
let gW: usize = 0;
let gListPtr: usize = 0;
let gListLen: usize = 0;

let fHeap: usize = 0;
let fPos: usize = 0;
let fN: i32 = 0;
let dHeap: usize = 0;
let dPos: usize = 0;
let dN: i32 = 0;

export function bindHeapKeys(load: usize, w: usize, listPtr: usize, listLen: usize): void {
  gLoad = load;
  gW = w;
  gListPtr = listPtr;
  gListLen = listLen;
}

/** Sets up both heaps empty over m members (pos filled with −1). */
export function initHeaps(freeHeap: usize, freePos: usize, donorHeap: usize, donorPos: usize, m: i32): void {
  fHeap = freeHeap;
  fPos = freePos;
  dHeap = donorHeap;
  dPos = donorPos;
  fN = 0;
  dN = 0;
  memory.fill(freePos, 0xff, <usize>m << 2);
  memory.fill(donorPos, 0xff, <usize>m << 2);
}

@inline function loadOf(j: i32): f64 {
  return load<f64>(gLoad + (<usize>j << 3));
}

/** load(j) − w(last of j's held list): what j keeps after giving its lightest split. */
@inline export function keeps(j: i32): f64 {
  const len = load<i32>(gListLen + (<usize>j << 2));
  const list = <usize>load<u32>(gListPtr + (<usize>j << 2));
  const last = load<u32>(list + (<usize>(len - 1) << 2));
  return loadOf(j) - load<f64>(gW + (<usize>last << 3));
}

@inline function before(kind: i32, a: i32, b: i32): bool {
  if (kind == FREE) {
    const la = loadOf(a);
    const lb = loadOf(b);
    return la < lb || (la == lb && a < b);
  }
  const ka = keeps(a);
  const kb = keeps(b);
  return ka > kb || (ka == kb && a < b);
}

@inline function heapOf(kind: i32): usize {
  return kind == FREE ? fHeap : dHeap;
}

@inline function posOf(kind: i32): usize {
  return kind == FREE ? fPos : dPos;
}

@inline export function heapSize(kind: i32): i32 {
  return kind == FREE ? fN : dN;
}

@inline function setSize(kind: i32, n: i32): void {
  if (kind == FREE) fN = n;
  else dN = n;
}

@inline function at(p: usize, i: i32): i32 {
  return load<i32>(p + (<usize>i << 2));
}

@inline function put(p: usize, i: i32, v: i32): void {
  store<i32>(p + (<usize>i << 2), v);
}

export function heapHas(kind: i32, x: i32): bool {
  return at(posOf(kind), x) >= 0;
}

/** The first member, or −1 when empty. */
export function heapTop(kind: i32): i32 {
  return heapSize(kind) > 0 ? at(heapOf(kind), 0) : -1;
}

function up(kind: i32, i: i32): void {
  const h = heapOf(kind);
  const pos = posOf(kind);
  const x = at(h, i);
  while (i > 0) {
    const p = (i - 1) >> 1;
    const y = at(h, p);
    if (!before(kind, x, y)) break;
    put(h, i, y);
    put(pos, y, i);
    i = p;
  }
  put(h, i, x);
  put(pos, x, i);
}

function down(kind: i32, i: i32): void {
  const h = heapOf(kind);
  const pos = posOf(kind);
  const n = heapSize(kind);
  const x = at(h, i);
  for (;;) {
    let c = 2 * i + 1;
    if (c >= n) break;
    if (c + 1 < n && before(kind, at(h, c + 1), at(h, c))) c++;
    const y = at(h, c);
    if (!before(kind, y, x)) break;
    put(h, i, y);
    put(pos, y, i);
    i = c;
  }
  put(h, i, x);
  put(pos, x, i);
}

export function heapPush(kind: i32, x: i32): void {
  const n = heapSize(kind);
  put(heapOf(kind), n, x);
  put(posOf(kind), x, n);
  setSize(kind, n + 1);
  up(kind, n);
}

export function heapRemove(kind: i32, x: i32): void {
  const h = heapOf(kind);
  const pos = posOf(kind);
  const i = at(pos, x);
  put(pos, x, -1);
  const n = heapSize(kind) - 1;
  setSize(kind, n);
  if (i == n) return;
  const last = at(h, n);
  put(h, i, last);
  put(pos, last, i);
  up(kind, i);
  down(kind, at(pos, last));
}

/** Restores order after x's key changed (either direction). */
export function heapUpdate(kind: i32, x: i32): void {
  const pos = posOf(kind);
  up(kind, at(pos, x));
  down(kind, at(pos, x));
}

// ---- The fill pass's FREE heap, with keys stored inline -----------------
// During fill the only key that changes is the top's (it just received a
// split), and it is re-sifted at once, so a copy of each load beside its
// member in the heap slot gives the very comparisons `down` makes on live
// loads, with fewer cache misses. Slots are 16 bytes: load f64, member i32.
// Positions are not needed while only the top moves; `fillEnd` writes the
// heap array and positions back, so the improve pass continues on the very
// heap the reference has at that point.

let fSlots: usize = 0;

@inline function slotKey(i: i32): f64 {
  return load<f64>(fSlots + (<usize>i << 4));
}

@inline function slotMember(i: i32): i32 {
  return load<i32>(fSlots + (<usize>i << 4), 8);
}

@inline function setSlot(i: i32, key: f64, x: i32): void {
  const p = fSlots + (<usize>i << 4);
  store<f64>(p, key);
  store<i32>(p, x, 8);
}

/**
 * Starts the fill on FREE as built by its pushes; `slots` holds 16 bytes per
 * member plus 64. Slot 0 sits 16 bytes past a 32-byte boundary, so two
 * siblings (2i+1, 2i+2) always share a cache line.
 */
export function fillBegin(slots: usize): void {
  fSlots = ((slots + 31) & ~(<usize>31)) + 16;
  for (let i = 0; i < fN; i++) {
    const x = at(fHeap, i);
    setSlot(i, loadOf(x), x);
  }
}

/** Back to FREE's own arrays: heap order and positions. */
export function fillEnd(): void {
  for (let i = 0; i < fN; i++) {
    const x = slotMember(i);
    put(fHeap, i, x);
    put(fPos, x, i);
  }
}

/** The member on top during the fill. */
@inline export function fillTop(): i32 {
  return slotMember(0);
}

/**
 * down(0) as the reference's heap does it, computed bottom-up (Floyd): the
 * lighter-child path to a leaf, every element on it moved up one slot, then
 * x sinks back up to where the reference's down would have stopped. Along
 * that path each element is lighter than the next, so both stop at the same
 * slot and leave the same array, with half the comparisons.
 */
function fillDown(i: i32): void {
  const n = fN;
  const x = slotMember(i);
  const kx = slotKey(i);
  for (;;) {
    let c = 2 * i + 1;
    if (c >= n) break;
    let y = slotMember(c);
    let ky = slotKey(c);
    if (c + 1 < n) {
      const z = slotMember(c + 1);
      const kz = slotKey(c + 1);
      if (kz < ky || (kz == ky && z < y)) {
        c++;
        y = z;
        ky = kz;
      }
    }
    setSlot(i, ky, y);
    i = c;
  }
  while (i > 0) {
    const p = (i - 1) >> 1;
    const y = slotMember(p);
    const ky = slotKey(p);
    if (!(kx < ky || (kx == ky && x < y))) break;
    setSlot(i, ky, y);
    i = p;
  }
  setSlot(i, kx, x);
}

/** update(top) after the top's load became `load` (up from the root is a no-op). */
export function fillUpdateTop(load: f64): void {
  store<f64>(fSlots, load);
  fillDown(0);
}

/** remove(top), as heapRemove does it for the root. */
export function fillRemoveTop(): void {
  put(fPos, slotMember(0), -1);
  const n = fN - 1;
  fN = n;
  if (n == 0) return;
  setSlot(0, slotKey(n), slotMember(n));
  fillDown(0);
}

// ---- The same, with packed keys -----------------------------------------
// Loads are integers, so (load << bits) | member, with 2^bits ≥ m, orders as
// (load, member) does whenever every load < 2^(63 − bits): one integer
// comparison per step and 8-byte slots. The fill uses this when the pool's
// total (which bounds every load) allows, the f64 slots above otherwise.
let uSlots: usize = 0;
let uBits: u64 = 0;

export function packedBegin(slots: usize, bits: i32): void {
  uSlots = slots;
  uBits = <u64>bits;
  for (let i = 0; i < fN; i++) {
    const x = at(fHeap, i);
    store<u64>(uSlots + (<usize>i << 3), (<u64>loadOf(x) << uBits) | <u64>x);
  }
}

export function packedEnd(): void {
  const mask = ((<u64>1) << uBits) - 1;
  for (let i = 0; i < fN; i++) {
    const x = <i32>(load<u64>(uSlots + (<usize>i << 3)) & mask);
    put(fHeap, i, x);
    put(fPos, x, i);
  }
}

@inline export function packedTop(): i32 {
  return <i32>(load<u64>(uSlots) & (((<u64>1) << uBits) - 1));
}

@inline function slotAt(i: i32): u64 {
  return load<u64>(uSlots + (<usize>i << 3));
}

@inline function setSlotAt(i: i32, v: u64): void {
  store<u64>(uSlots + (<usize>i << 3), v);
}

function packedDown(i: i32): void {
  const n = fN;
  const x = slotAt(i);
  // Two levels a step while all four grandchildren exist: every load of the
  // step depends only on i, so they overlap; the choices are selects.
  for (;;) {
    const g = 4 * i + 3;
    if (g + 3 >= n) break;
    const a = slotAt(2 * i + 1), b = slotAt(2 * i + 2);
    const g0 = slotAt(g), g1 = slotAt(g + 1), g2 = slotAt(g + 2), g3 = slotAt(g + 3);
    const r = b < a;
    const c = 2 * i + 1 + <i32>r;
    const x0 = select<u64>(g2, g0, r), x1 = select<u64>(g3, g1, r);
    const r2 = x1 < x0;
    setSlotAt(i, select<u64>(b, a, r));
    setSlotAt(c, select<u64>(x1, x0, r2));
    i = 2 * c + 1 + <i32>r2;
  }
  for (;;) {
    let c = 2 * i + 1;
    if (c >= n) break;
    let a = slotAt(c);
    if (c + 1 < n) {
      const b = slotAt(c + 1);
      const right = b < a;
      c += <i32>right;
      a = select<u64>(b, a, right);
    }
    setSlotAt(i, a);
    i = c;
  }
  while (i > 0) {
    const p = (i - 1) >> 1;
    const y = slotAt(p);
    if (!(x < y)) break;
    setSlotAt(i, y);
    i = p;
  }
  setSlotAt(i, x);
}

export function packedUpdateTop(load: f64, member: i32): void {
  store<u64>(uSlots, (<u64>load << uBits) | <u64>member);
  packedDown(0);
}

export function packedRemoveTop(member: i32): void {
  put(fPos, member, -1);
  const n = fN - 1;
  fN = n;
  if (n == 0) return;
  store<u64>(uSlots, load<u64>(uSlots + (<usize>n << 3)));
  packedDown(0);
}
