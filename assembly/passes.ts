/**
 * The three passes of src/assignment/reference.ts over the sorted pool,
 * expression by expression: scaled units (units.ts), sticky (lease owner,
 * then previous, then record owner), fill (least-loaded free member), and
 * improve (donor keeping the most → lightest free member, the move rule of
 * `chooseMove`, backstop max(4096, 8 × assigned)). Floating-point operations
 * are the reference's, in the reference's order; any reordering can change
 * a tie and therefore the output.
 *
 * Each member's held list is an array of ascending pool positions in a bump
 * arena; a list that outgrows its capacity moves to the arena's top.
 */
import { bindHeapKeys, DONORS, fillBegin, fillEnd, fillRemoveTop, fillTop, fillUpdateTop, packedBegin, packedEnd, packedRemoveTop, packedTop, packedUpdateTop, FREE, heapHas, heapPush, heapRemove, heapSize, heapTop, heapUpdate, initHeaps, keeps } from './heap';
import {
  F_ASSIGNED_TOTAL, F_HEAVIEST, FLAG_POOL, H_ASSIGNED, H_ASSIGNEE, H_BACKSTOP_HIT, H_CAP, H_FLAGS,
  H_HANDLE_MAP, H_LEASE, H_LOAD, H_MEMBERS, H_MOVES, H_ORDER, H_ORDER_LEN, H_POOL, H_PREVIOUS,
  H_PERMUTED, H_QUEUED, H_RECORD, H_ROWS, H_SHIFT, H_UNITS_N, H_WEIGHT, STATUS_NO_MEMORY, STATUS_OK,
} from './layout';
import { commit, ensure, scratchReset, scratchTop, setFloat, setWord, take, word } from './memory';
import { effective, packRows } from './sort';

const TWO_53: f64 = 9007199254740992;
/** Highest arena address: growth past it fails rather than wrapping u32 offsets. */
const ARENA_LIMIT: u64 = 0xffff0000;

let gCount: usize = 0;
let gCap: usize = 0;
let gLoad: usize = 0;
let gW: usize = 0;
let gOwner: usize = 0;
/** How many candidates the move rule looks at for one the donor does not hold (reference.ts MOVE_SCAN). */
const MOVE_SCAN: i32 = 64;
/** Per pool position: the member holding the split (its live lease owner), or -1. */
let gLeaseOf: usize = 0;
let gListPtr: usize = 0;
let gListLen: usize = 0;
let gListCap: usize = 0;
let arenaTop: usize = 0;
let outOfMemory = false;

@inline function i32At(p: usize, i: i32): i32 {
  return load<i32>(p + (<usize>i << 2));
}

@inline function i32Put(p: usize, i: i32, v: i32): void {
  store<i32>(p + (<usize>i << 2), v);
}

@inline function f64At(p: usize, i: i32): f64 {
  return load<f64>(p + (<usize>i << 3));
}

@inline function f64Put(p: usize, i: i32, v: f64): void {
  store<f64>(p + (<usize>i << 3), v);
}

@inline function isFree(j: i32): bool {
  return j >= 0 && i32At(gCount, j) < i32At(gCap, j);
}

@inline function assign(i: i32, to: i32): void {
  i32Put(gOwner, i, to);
  i32Put(gCount, to, i32At(gCount, to) + 1);
  f64Put(gLoad, to, f64At(gLoad, to) + f64At(gW, i));
}

@inline function member(mapP: usize, handle: i32): i32 {
  return handle < 0 ? -1 : i32At(mapP, handle);
}

/**
 * The move rule: index in the donor's list of the heaviest split with w ≤ room, else the last;
 * one the donor does not hold before one it holds (reference.ts chooseMove, decision 0057).
 */
function chooseMove(list: usize, len: i32, room: f64, from: i32): i32 {
  let lo = 0;
  let hi = len;
  while (lo < hi) {
    const mid = <i32>(<u32>(lo + hi) >>> 1);
    if (f64At(gW, i32At(list, mid)) <= room) hi = mid;
    else lo = mid + 1;
  }
  if (lo < len) {
    for (let k = lo; k < len && k < lo + MOVE_SCAN; k++) if (i32At(gLeaseOf, i32At(list, k)) != from) return k;
    return lo;
  }
  const lightest = f64At(gW, i32At(list, len - 1));
  for (let k = len - 1; k >= 0 && k > len - 1 - MOVE_SCAN && f64At(gW, i32At(list, k)) == lightest; k--) {
    if (i32At(gLeaseOf, i32At(list, k)) != from) return k;
  }
  return len - 1;
}

function lowerIndex(list: usize, len: i32, x: i32): i32 {
  let lo = 0;
  let hi = len;
  while (lo < hi) {
    const mid = <i32>(<u32>(lo + hi) >>> 1);
    if (i32At(list, mid) < x) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** Moves pool position `pick`, at index `at` of from's list, into to's list. */
function moveSplit(from: i32, to: i32, at: i32, pick: i32): void {
  const src = <usize>load<u32>(gListPtr + (<usize>from << 2));
  const srcLen = i32At(gListLen, from);
  memory.copy(src + (<usize>at << 2), src + (<usize>(at + 1) << 2), <usize>(srcLen - at - 1) << 2);
  i32Put(gListLen, from, srcLen - 1);

  let dst = <usize>load<u32>(gListPtr + (<usize>to << 2));
  const dstLen = i32At(gListLen, to);
  const cap = i32At(gListCap, to);
  if (dstLen == cap) {
    const grown = cap * 2 + 4;
    const fresh = arenaTop;
    if (<u64>arenaTop + (<u64>grown << 2) > ARENA_LIMIT) {
      outOfMemory = true;
      return;
    }
    arenaTop += <usize>grown << 2;
    if (!ensure(arenaTop)) {
      outOfMemory = true;
      return;
    }
    memory.copy(fresh, dst, <usize>dstLen << 2);
    dst = fresh;
    store<u32>(gListPtr + (<usize>to << 2), <u32>dst);
    i32Put(gListCap, to, grown);
  }
  const k = lowerIndex(dst, dstLen, pick);
  memory.copy(dst + (<usize>(k + 1) << 2), dst + (<usize>k << 2), <usize>(dstLen - k) << 2);
  i32Put(dst, k, pick);
  i32Put(gListLen, to, dstLen + 1);
}

/**
 * Decides the assignment of the pool rows listed (sorted) in ORDER. Writes
 * ASSIGNEE per row, LOAD per member (effective weights) and the stats words.
 *
 * Why one function: the three passes share a dozen column pointers, counts
 * and the scale as locals that AssemblyScript keeps in wasm locals; split
 * into functions, they would go through globals or long argument lists on
 * the hottest path of the engine, and the passes must keep the reference's
 * order of operations (a tie moves with any reordering). The passes are
 * marked by `// Pass n` comments inside.
 */
export function decide(): i32 {
  const R = <i32>word(H_ROWS);
  const m = <i32>word(H_MEMBERS);
  const L = <i32>word(H_ORDER_LEN);
  const weightP = <usize>word(H_WEIGHT);
  const flagsP = <usize>word(H_FLAGS);
  const orderP = <usize>word(H_ORDER);
  const leaseP = <usize>word(H_LEASE);
  const prevP = <usize>word(H_PREVIOUS);
  const recP = <usize>word(H_RECORD);
  const mapP = <usize>word(H_HANDLE_MAP);
  const assigneeP = <usize>word(H_ASSIGNEE);
  const realLoad = <usize>word(H_LOAD);
  gCap = <usize>word(H_CAP);

  // Columns are read at the order position when the caller wrote them
  // permuted (sequential reads). Otherwise at the row, in pool order: a
  // gather, so each row's five columns are first packed into one 32-byte
  // record (one sequential pass) and the gather touches one cache line a row
  // instead of five (at 1M rows: decide 146 → see BENCHMARKS.md); then the
  // records are gathered in pool order by a loop of their own (below).
  const permuted = word(H_PERMUTED) != 0;
  scratchReset();
  const prow = take(<usize>L << 2);
  const pPrev = take(<usize>L << 2);
  const pRec = take(<usize>L << 2);
  const packed: usize = permuted ? 0 : take(<usize>R << 5);
  const inOrder: usize = permuted ? 0 : take(<usize>L << 5);
  const wEff = take(<usize>L << 3);
  gW = take(<usize>L << 3);
  gOwner = take(<usize>L << 2);
  gLeaseOf = take(<usize>L << 2);
  gCount = take(<usize>m << 2);
  gLoad = take(<usize>m << 3);
  const fHeap = take(<usize>m << 2), fPos = take(<usize>m << 2), fSlots = take((<usize>m << 4) + 64);
  const dHeap = take(<usize>m << 2), dPos = take(<usize>m << 2);
  gListPtr = take(<usize>m << 2);
  gListLen = take(<usize>m << 2);
  gListCap = take(<usize>m << 2);
  if (!commit()) return STATUS_NO_MEMORY;
  memory.fill(gCount, 0, <usize>m << 2);
  memory.fill(gLoad, 0, <usize>m << 3);
  if (!permuted) {
    packRows(packed);
    // The gather on its own, before the pass that uses it: a loop that does
    // nothing but copy keeps many cache misses in flight, where the pass's
    // longer body kept few (decide at 1M cold: ~155 → ~110 ms, load ~2).
    for (let k = 0; k < L; k++) {
      const from = packed + (<usize>load<u32>(orderP + (<usize>k << 2)) << 5);
      const to = inOrder + (<usize>k << 5);
      store<u64>(to, load<u64>(from));
      store<u64>(to, load<u64>(from, 8), 8);
      store<u64>(to, load<u64>(from, 16), 16);
    }
  }

  // The claimable pool in order, with pass 1 (sticky to the live lease
  // owner) folded in: it needs only counts, and loads are added below.
  // Loads are sums of scaled weights, integers ≤ 2^53 (units.ts), so they
  // are exact in f64 whatever the order of the additions.
  let n = 0;
  for (let k = 0; k < L; k++) {
    const row = load<u32>(orderP + (<usize>k << 2));
    let flags: i32, w: f64, lease: i32, prevH: i32, recH: i32;
    if (permuted) {
      flags = <i32>load<u8>(flagsP + <usize>k);
      w = load<f64>(weightP + (<usize>k << 3));
      lease = load<i32>(leaseP + (<usize>k << 2));
      prevH = load<i32>(prevP + (<usize>k << 2));
      recH = load<i32>(recP + (<usize>k << 2));
    } else {
      const rec = inOrder + (<usize>k << 5);
      flags = <i32>load<u8>(rec, 20);
      w = load<f64>(rec);
      lease = load<i32>(rec, 8);
      prevH = load<i32>(rec, 12);
      recH = load<i32>(rec, 16);
    }
    if ((flags & FLAG_POOL) == 0) continue;
    store<u32>(prow + (<usize>n << 2), row);
    i32Put(pPrev, n, prevH);
    i32Put(pRec, n, recH);
    f64Put(wEff, n, effective(w));
    const j = member(mapP, lease);
    i32Put(gLeaseOf, n, j);
    if (isFree(j)) {
      i32Put(gOwner, n, j);
      i32Put(gCount, j, i32At(gCount, j) + 1);
    } else {
      i32Put(gOwner, n, -1);
    }
    n++;
  }

  // Balancing units (units.ts weightShift / scaleWeight), for the whole pool's count when this is its slice.
  const maxWeight = n > 0 ? f64At(wEff, 0) : 1;
  const unitsN: i32 = <i32>word(H_UNITS_N) > n ? <i32>word(H_UNITS_N) : n;
  let shift = 0;
  let scale: f64 = 1;
  while (<f64>unitsN * Math.ceil(maxWeight / scale) > TWO_53) {
    shift++;
    scale *= 2;
  }
  let pow: f64 = 1;
  for (let s = 0; s < shift; s++) pow *= 2;
  if (shift == 0) gW = wEff; // the units are the weights themselves

  // Pass 1's loads, then the rest of pass 1: previous assignee, record owner.
  let poolTotal: f64 = 0; // every load is at most this (exact: ≤ 2^53)
  for (let i = 0; i < n; i++) {
    let w = f64At(wEff, i);
    if (shift != 0) {
      w = Math.ceil(w / pow);
      f64Put(gW, i, w);
    }
    poolTotal += w;
    const j = i32At(gOwner, i);
    if (j != -1) {
      f64Put(gLoad, j, f64At(gLoad, j) + w);
      continue;
    }
    const c0 = member(mapP, i32At(pPrev, i));
    if (isFree(c0)) {
      assign(i, c0);
      continue;
    }
    const c1 = member(mapP, i32At(pRec, i));
    if (isFree(c1)) assign(i, c1);
  }

  // Pass 2, fill.
  bindHeapKeys(gLoad, gW, gListPtr, gListLen);
  initHeaps(fHeap, fPos, dHeap, dPos, m);
  for (let j = 0; j < m; j++) if (isFree(j)) heapPush(FREE, j);
  let bits = 1;
  while ((1 << bits) < m) bits++;
  if (poolTotal < <f64>((<u64>1) << <u64>(63 - bits))) {
    packedBegin(fSlots, bits);
    for (let i = 0; i < n && heapSize(FREE) > 0; i++) {
      if (i32At(gOwner, i) != -1) continue;
      const to = packedTop();
      assign(i, to);
      if (isFree(to)) packedUpdateTop(f64At(gLoad, to), to);
      else packedRemoveTop(to);
    }
    packedEnd();
  } else {
    fillBegin(fSlots);
    for (let i = 0; i < n && heapSize(FREE) > 0; i++) {
      if (i32At(gOwner, i) != -1) continue;
      const to = fillTop();
      assign(i, to);
      if (isFree(to)) fillUpdateTop(f64At(gLoad, to));
      else fillRemoveTop();
    }
    fillEnd();
  }

  // Pass 3, improve. Held lists: ascending pool positions.
  arenaTop = scratchTop();
  for (let j = 0; j < m; j++) {
    const c = i32At(gCount, j);
    const cap = c + (c >> 2) + 4;
    store<u32>(gListPtr + (<usize>j << 2), <u32>arenaTop);
    i32Put(gListLen, j, 0);
    i32Put(gListCap, j, cap);
    arenaTop += <usize>cap << 2;
  }
  if (!ensure(arenaTop)) return STATUS_NO_MEMORY;
  let assigned = 0;
  let total: f64 = 0;
  for (let i = 0; i < n; i++) {
    const j = i32At(gOwner, i);
    if (j == -1) continue;
    const list = <usize>load<u32>(gListPtr + (<usize>j << 2));
    const len = i32At(gListLen, j);
    i32Put(list, len, i);
    i32Put(gListLen, j, len + 1);
    assigned++;
    total += f64At(gW, i);
  }
  const mean: f64 = m > 0 ? total / <f64>m : 0;
  for (let j = 0; j < m; j++) if (i32At(gListLen, j) > 0) heapPush(DONORS, j);

  const backstop = assigned * 8 > 4096 ? assigned * 8 : 4096;
  let moves = 0;
  let backstopHit = false;
  outOfMemory = false;
  while (heapSize(FREE) > 0 && heapSize(DONORS) > 0) {
    const to = heapTop(FREE);
    const from = heapTop(DONORS);
    if (!(keeps(from) > f64At(gLoad, to))) break;
    if (moves == backstop) {
      backstopHit = true;
      break;
    }
    const list = <usize>load<u32>(gListPtr + (<usize>from << 2));
    const at = chooseMove(list, i32At(gListLen, from),
      Math.min(f64At(gLoad, from) - mean, mean - f64At(gLoad, to)), from);
    const pick = i32At(list, at);
    // Both members' keys change: out of both heaps first, back in after (as reference.ts).
    heapRemove(FREE, to);
    if (heapHas(FREE, from)) heapRemove(FREE, from);
    heapRemove(DONORS, from);
    if (heapHas(DONORS, to)) heapRemove(DONORS, to);
    moveSplit(from, to, at, pick);
    if (outOfMemory) return STATUS_NO_MEMORY;
    f64Put(gLoad, from, f64At(gLoad, from) - f64At(gW, pick));
    f64Put(gLoad, to, f64At(gLoad, to) + f64At(gW, pick));
    i32Put(gCount, from, i32At(gCount, from) - 1);
    i32Put(gCount, to, i32At(gCount, to) + 1);
    i32Put(gOwner, pick, to);
    moves++;
    if (i32At(gListLen, from) > 0) heapPush(DONORS, from);
    heapPush(DONORS, to);
    heapPush(FREE, from);
    if (isFree(to)) heapPush(FREE, to);
  }

  // Output: assignee per row; loads and totals in effective weights, pool order.
  memory.fill(assigneeP, 0xff, <usize>R << 2);
  memory.fill(realLoad, 0, <usize>m << 3);
  let assignedTotal: f64 = 0;
  let heaviest: f64 = 0;
  for (let i = 0; i < n; i++) {
    const j = i32At(gOwner, i);
    if (j == -1) continue;
    const w = f64At(wEff, i);
    i32Put(assigneeP, <i32>load<u32>(prow + (<usize>i << 2)), j);
    f64Put(realLoad, j, f64At(realLoad, j) + w);
    assignedTotal += w;
    if (w > heaviest) heaviest = w;
  }
  setWord(H_POOL, <u32>n);
  setWord(H_ASSIGNED, <u32>assigned);
  setWord(H_QUEUED, <u32>(n - assigned));
  setWord(H_MOVES, <u32>moves);
  setWord(H_BACKSTOP_HIT, backstopHit ? 1 : 0);
  setWord(H_SHIFT, <u32>shift);
  setFloat(F_ASSIGNED_TOTAL, assignedTotal);
  setFloat(F_HEAVIEST, heaviest);
  return STATUS_OK;
}
