/**
 * The head of a large pool's queue (decision 0047): the claimable rows that
 * sort first in pool order, kept sorted as rows are added, reweighted,
 * completed and released, so that a decision slice (decision-slice.ts) never
 * needs the whole pool sorted. Before it, each split a seeding leader added
 * dropped the pool's cached order, and every decision while seeding sorted
 * the whole pool on a thread (10M: a 130 ms copy into the thread, a 107 ms
 * keep of its sort, ~1.2 GiB of engine memory).
 *
 * Invariant, once built: every claimable row whose order key is at or before
 * `bound` (null: no bound) has a current entry in the head (`list` or
 * `pending`); `list` is in pool order. A row is added to the head when it
 * becomes claimable at or before the bound; rows that stop being claimable
 * are dropped at the next merge; a row whose key changes leaves first
 * (`rowChanging`) and comes back by the rule (`rowSettled`). When the head
 * runs low, a refill scans the pool in steps of rows (`step`) for the next
 * `fill` rows after the bound, keeping the best in a bounded heap; changes
 * to rows the scan has passed are offered to the heap as they happen, and a
 * key change of a row in the heap restarts the scan (rare: weights change
 * only when a plan restates them). The heap's worst row is the new bound:
 * every row the heap let go sorts after it.
 *
 * Pool order: the hand-out order (hand-out-order.ts): effective weight
 * descending (0 counts as 1), then the 64-bit hash key ascending (hi, then
 * lo), then the id.
 *
 * Pure: no I/O, no clock; the caller decides when to step.
 */
import { LAYOUT } from './layout.js';
import { effectiveWeight, handOutOrderByKey } from './hand-out-order.js';
import { jsStringOrder } from '../js-order.js';

/** What the head reads of its pool's rows (the pool's current columns: they are replaced as it grows). */
export interface QueueRows {
  readonly weight: Float64Array;
  /** [lo, hi] at 2r. */
  readonly key: Uint32Array;
  readonly flags: Uint8Array;
  readonly rowCount: number;
  idAt(row: number): string | undefined;
}

/** An order key held apart from its row (the row may change after). */
interface Bound { w: number; hi: number; lo: number; id: string }

interface Refill {
  /** Rows after this key are wanted (null: from the start, the head's first build). */
  from: Bound | null;
  /** Rows below this one have been scanned. */
  cursor: number;
  /** Max-heap in pool order of the best rows found so far, at most `fill`. */
  heap: number[];
  fill: number;
}

const POOL = LAYOUT.FLAG_POOL;
const IN_HEAD = 1;
const IN_HEAP = 2;
/** How many rows a refill looks for: at least `minFill`, and `perNeed` times what a slice can take. */
export interface FillRule { minFill: number; perNeed: number }
/**
 * 8k rows, or four slices' worth for a fleet of many lanes: a refill every
 * ~4k completions (a scan of the pool in steps, a step per decision), and a
 * merge of pending rows sorts at most this many (≈ 3 ms; 52k pending rows of
 * an early seeding took 48 ms to sort at once).
 */
export const FILL: FillRule = { minFill: 8_192, perNeed: 4 };
/** Rows a refill scans per step: 64k, 160 steps at 10M (steps of 256k held a 1M leader 45–65 ms at load 5). */
export const STEP_ROWS = 1 << 16;
/** …and offers to its heap at most, a sift each: a first build's first step offered ~17k, 52–61 ms at 10M (decision 0047). */
export const STEP_OFFERS = 1 << 12;

const ew = effectiveWeight;

export class QueueHead {
  private list = new Uint32Array(1024);
  private len = 0;
  private pending: number[] = [];
  /** Rows whose entries in `list` (or `pending`) predate a key change. */
  private stale = new Set<number>();
  /** Some row of the head stopped being claimable, or went stale, since the last merge. */
  private changed = false;
  private mark = new Uint8Array(0);
  private bound: Bound | null = null;
  private built = false;
  private refill: Refill | null = null;
  /** The `fill` of the last refill: the head is cut back to it when it grows past twice that. */
  private fill: number;

  constructor(
    private readonly rows: QueueRows,
    private readonly rule: FillRule = FILL,
  ) {
    this.fill = rule.minFill;
  }

  /** Whether a refill is under way. */
  get refilling(): boolean {
    return this.refill !== null;
  }

  /** Whether the head has been built (its first refill finished). */
  get ready(): boolean {
    return this.built;
  }

  /** Starts the head's first build, if it is neither built nor being built. */
  begin(): void {
    if (!this.built && this.refill === null) this.startRefill(0);
  }

  /** Rows held in the head (after the next merge, each claimable). */
  get size(): number {
    return this.len + this.pending.length;
  }

  /** Row r's order key is about to change, or r is leaving the pool. */
  rowChanging(r: number): void {
    const m = this.mark[r] ?? 0;
    if ((m & IN_HEAD) !== 0) {
      this.mark[r] = m & ~IN_HEAD;
      this.stale.add(r);
      this.changed = true;
    }
    // A heap ordered by a key that changed under it: scan again (weights change only when a plan restates them).
    if ((m & IN_HEAP) !== 0 && this.refill !== null) this.restartRefill();
  }

  /** Row r's key and flags are current: it joins the head or the refill's heap if the rule says so. */
  rowSettled(r: number): void {
    if (r >= this.mark.length) this.grow(r + 1);
    const m = this.mark[r]!;
    if ((this.rows.flags[r]! & POOL) === 0) {
      if ((m & IN_HEAD) !== 0) this.changed = true;
      return;
    }
    if ((m & (IN_HEAD | IN_HEAP)) !== 0) return;
    if (this.built && (this.bound === null || this.compareToBound(r, this.bound) <= 0)) {
      this.mark[r] = m | IN_HEAD;
      // Merged a fill at a time: a seeding that adds many rows before the bound never sorts them all at once.
      if (this.pending.push(r) >= this.fill) this.merge();
      return;
    }
    const f = this.refill;
    if (f !== null && r < f.cursor && (f.from === null || this.compareToBound(r, f.from) > 0)) this.offer(f, r);
  }

  /** Room for rows below `n`. */
  grow(n: number): void {
    if (n <= this.mark.length) return;
    const next = new Uint8Array(Math.max(n, 2 * this.mark.length));
    next.set(this.mark);
    this.mark = next;
  }

  /**
   * The first `lanes` claimable rows of the pool in order that are not in
   * `skip` (the hinted rows, taken apart), or null when the head cannot say
   * yet (not built, or it ran out before the bound): step a refill, then ask
   * again. Starts a refill when the head is not built or runs low; `need` is
   * the rows a slice can take (lanes and hinted rows), which sizes it.
   */
  pick(lanes: number, skip: ReadonlySet<number>): number[] | null {
    const need = lanes + skip.size;
    if (!this.built) {
      if (this.refill === null) this.startRefill(need);
      return null;
    }
    this.merge();
    const flags = this.rows.flags;
    const picked: number[] = [];
    let k = 0;
    for (; k < this.len && picked.length < lanes; k++) {
      const r = this.list[k]!;
      if ((flags[r]! & POOL) !== 0 && !skip.has(r)) picked.push(r);
    }
    const short = picked.length < lanes && this.bound !== null;
    // Running low: look for the next rows now, a step per decision, before a decision has to wait for them.
    if (this.refill === null && this.bound !== null && (short || this.len < Math.max(2 * need, this.fill >> 1))) this.startRefill(need);
    return short ? null : picked;
  }

  /**
   * Scans up to `budget` rows of a refill under way, stopping after the row
   * that makes `offers` offers to its heap; finishes the refill when the scan
   * has passed every row. True when no refill is left under way.
   */
  step(budget = STEP_ROWS, offers = STEP_OFFERS): boolean {
    const f = this.refill;
    if (f === null) return true;
    const { weight, key, flags } = this.rows;
    const end = Math.min(this.rows.rowCount, f.cursor + budget);
    this.grow(end);
    const mark = this.mark;
    const heap = f.heap;
    const from = f.from;
    const fw = from === null ? Infinity : from.w;
    let r = f.cursor;
    let offered = 0;
    // Weights first, read from local columns: a call per row made a step of 256k rows cost ~10 ms more at 10M.
    for (; r < end && offered < offers; r++) {
      if ((flags[r]! & POOL) === 0 || (mark[r]! & (IN_HEAD | IN_HEAP)) !== 0) continue;
      const wr = ew(weight[r]!);
      // Heavier than the bound sorts before it (in the head already); a tie is settled by the key.
      if (wr > fw || (wr === fw && this.compareToBound(r, from!) <= 0)) continue;
      if (heap.length >= f.fill) {
        // Most rows lose to the heap's worst at the weight: decided without a call.
        const top = heap[0]!;
        const wt = ew(weight[top]!);
        if (wr < wt) continue;
        if (wr === wt && (key[2 * r + 1]! > key[2 * top + 1]! || (key[2 * r + 1] === key[2 * top + 1] && this.compareRows(r, top) > 0))) continue;
      }
      this.offer(f, r);
      offered++;
    }
    f.cursor = r;
    if (r < this.rows.rowCount) return false;
    this.finishRefill(f);
    return true;
  }

  private startRefill(need: number): void {
    // At least `need`: a head cut back to its fill still holds a slice's rows (else cuts and refills could undo each other).
    this.fill = Math.max(1, need, this.rule.minFill, this.rule.perNeed * need);
    this.refill = { from: this.built ? this.bound : null, cursor: 0, heap: [], fill: this.fill };
  }

  private restartRefill(): void {
    const f = this.refill!;
    for (const r of f.heap) this.mark[r]! &= ~IN_HEAP;
    f.heap = [];
    f.cursor = 0;
  }

  private finishRefill(f: Refill): void {
    this.refill = null;
    const heap = f.heap;
    // A full heap let rows go, each after its worst row: that row is the new bound. Else every claimable row is in.
    const bound = heap.length >= f.fill ? this.boundOf(heap[0]!) : null;
    const flags = this.rows.flags;
    const found: number[] = [];
    for (const r of heap) {
      this.mark[r]! &= ~IN_HEAP;
      if ((flags[r]! & POOL) !== 0 && (this.mark[r]! & IN_HEAD) === 0) found.push(r);
    }
    found.sort((a, b) => this.compareRows(a, b));
    this.built = true;
    this.fold();
    // Every row found sorts after every row in the head (after the old bound): appended as they are.
    this.reserveList(this.len + found.length);
    for (const r of found) {
      this.list[this.len++] = r;
      this.mark[r]! |= IN_HEAD;
    }
    this.bound = bound;
    this.cutBack();
  }

  private merge(): void {
    this.fold();
    this.cutBack();
  }

  /** Folds pending rows in and drops rows no longer claimable or stale. */
  private fold(): void {
    if (this.pending.length === 0 && !this.changed) return;
    const flags = this.rows.flags;
    const mark = this.mark;
    const stale = this.stale;
    let kept = 0;
    for (let k = 0; k < this.len; k++) {
      const r = this.list[k]!;
      if (stale.has(r)) continue;
      if ((flags[r]! & POOL) === 0) {
        mark[r]! &= ~IN_HEAD;
        continue;
      }
      this.list[kept++] = r;
    }
    this.len = kept;
    const add: number[] = [];
    for (const r of this.pending) {
      // Current and once: a pending row that went stale came back (marked again) or left (unmarked).
      if ((mark[r]! & IN_HEAD) === 0 || (stale.has(r) && add.includes(r))) continue;
      if ((flags[r]! & POOL) === 0) {
        mark[r]! &= ~IN_HEAD;
        continue;
      }
      add.push(r);
    }
    this.pending = [];
    stale.clear();
    this.changed = false;
    if (add.length > 0) this.mergeSorted(add.sort((a, b) => this.compareRows(a, b)));
  }

  /**
   * A head grown past twice its fill is cut back to it; the rows cut sort
   * after the new bound. Called just after `fold` (nothing pending); never
   * while a refill extends the head from the bound (the rows cut would fall
   * between the two bounds).
   */
  private cutBack(): void {
    if (this.refill !== null || this.len <= 2 * this.fill) return;
    for (let k = this.fill; k < this.len; k++) this.mark[this.list[k]!]! &= ~IN_HEAD;
    this.len = this.fill;
    this.bound = this.boundOf(this.list[this.len - 1]!);
  }

  /** Merges sorted rows `add` into the sorted list, from the back. */
  private mergeSorted(add: number[]): void {
    const n = this.len + add.length;
    this.reserveList(n);
    const list = this.list;
    let i = this.len - 1, j = add.length - 1;
    for (let k = n - 1; j >= 0; k--) {
      if (i >= 0 && this.compareRows(list[i]!, add[j]!) > 0) list[k] = list[i--]!;
      else list[k] = add[j--]!;
    }
    this.len = n;
  }

  private reserveList(n: number): void {
    if (n <= this.list.length) return;
    const next = new Uint32Array(Math.max(n, 2 * this.list.length));
    next.set(this.list.subarray(0, this.len));
    this.list = next;
  }

  private offer(f: Refill, r: number): void {
    const heap = f.heap;
    this.mark[r]! |= IN_HEAP;
    if (heap.length < f.fill) {
      heap.push(r);
      this.siftUp(heap, heap.length - 1);
      return;
    }
    if (this.compareRows(r, heap[0]!) >= 0) {
      this.mark[r]! &= ~IN_HEAP;
      return;
    }
    this.mark[heap[0]!]! &= ~IN_HEAP;
    heap[0] = r;
    this.siftDown(heap, 0);
  }

  private siftUp(h: number[], k: number): void {
    const x = h[k]!;
    while (k > 0) {
      const p = (k - 1) >> 1;
      if (this.compareRows(h[p]!, x) >= 0) break;
      h[k] = h[p]!;
      k = p;
    }
    h[k] = x;
  }

  private siftDown(h: number[], k: number): void {
    const x = h[k]!;
    const n = h.length;
    for (;;) {
      let c = 2 * k + 1;
      if (c >= n) break;
      if (c + 1 < n && this.compareRows(h[c + 1]!, h[c]!) > 0) c++;
      if (this.compareRows(h[c]!, x) <= 0) break;
      h[k] = h[c]!;
      k = c;
    }
    h[k] = x;
  }

  private boundOf(r: number): Bound {
    return { w: ew(this.rows.weight[r]!), hi: this.rows.key[2 * r + 1]!, lo: this.rows.key[2 * r]!, id: this.rows.idAt(r)! };
  }

  /** Rows a and b in pool order (negative: a first). */
  private compareRows(a: number, b: number): number {
    const { weight, key } = this.rows;
    // Ids only on an exact tie of weight and key: reading an id costs a string.
    return handOutOrderByKey(weight[a]!, key[2 * a + 1]!, key[2 * a]!, weight[b]!, key[2 * b + 1]!, key[2 * b]!)
      || jsStringOrder(this.rows.idAt(a)!, this.rows.idAt(b)!);
  }

  /** Row r against a bound in pool order (negative: r first). */
  private compareToBound(r: number, b: Bound): number {
    const { weight, key } = this.rows;
    return handOutOrderByKey(weight[r]!, key[2 * r + 1]!, key[2 * r]!, b.w, b.hi, b.lo) || jsStringOrder(this.rows.idAt(r)!, b.id);
  }
}
