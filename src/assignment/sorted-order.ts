/**
 * The sorted order a `ColumnarPool` caches between decisions: the live rows
 * in pool order, each row's position in it, and the row columns laid out in
 * that order (so the engine reads them in sequence). While no order is
 * cached, it logs the rows changed since a snapshot, so that a thread's sort
 * of that snapshot can be adopted and the changes replayed onto it.
 *
 * Invariants: `sorted` holds, at position k, row `order[k]`'s current
 * values (every change of a row's column goes through `set`); `epoch` grows
 * whenever the order is dropped, and a thread's sort is adopted only at the
 * epoch its snapshot was taken. Pure; columnar.ts owns the rows.
 */

/** A pool's row columns, per row or (in `sorted`) per order position. */
export interface RowColumns {
  weight: Float64Array;
  lease: Int32Array;
  prev: Int32Array;
  rec: Int32Array;
  flags: Uint8Array;
}

/** @internal A cached order, each row's position in it (−1: none) and the columns in that order. */
export interface SortedState {
  order: Uint32Array;
  pos: Int32Array;
  sorted: RowColumns;
}

const COLUMNS = ['weight', 'lease', 'prev', 'rec', 'flags'] as const;

/** to[k] = from[order[k]] (small, so that V8 inlines it at each call site, with that site's one array type). */
function gather(to: Float64Array | Int32Array | Uint8Array, from: Float64Array | Int32Array | Uint8Array, order: Uint32Array): void {
  for (let k = 0; k < order.length; k++) to[k] = from[order[k]!]!;
}

/** Past this many logged changes the log is given up: the thread's sort is not adopted. */
const MAX_LOGGED = 1 << 20;

export class SortedOrder {
  order: Uint32Array | null = null;
  sorted: RowColumns | null = null;
  /** Bumped whenever the cached order is dropped. */
  epoch = 0;
  private pos: Int32Array = new Int32Array(0);
  /** Rows changed since the last snapshot taken without a cached order (null: not logging). */
  private touched: number[] | null = null;

  /** Row r's value in column `c` is now `v`: mirrored into the order, or logged. */
  set(c: keyof RowColumns, r: number, v: number): void {
    if (this.sorted !== null) this.sorted[c][this.pos[r]!] = v;
    else this.touch(r);
  }

  drop(): void {
    this.epoch++;
    this.order = null;
    this.sorted = null;
  }

  /** Keeps `order` (the engine's), laying `rows` out in it; `capacity` is the pool's row capacity. */
  keep(order: Uint32Array, rows: RowColumns, capacity: number): void {
    const n = order.length;
    this.order = order.slice();
    this.pos = new Int32Array(capacity).fill(-1);
    const p: RowColumns = {
      weight: new Float64Array(n), lease: new Int32Array(n), prev: new Int32Array(n), rec: new Int32Array(n), flags: new Uint8Array(n),
    };
    // Column by column, each a monomorphic gather: a loop over COLUMNS made every load and store a
    // keyed access on one of three array types (megamorphic), ~1 s per 1M rows against ~30 ms.
    const pos = this.pos;
    for (let k = 0; k < n; k++) pos[order[k]!] = k;
    gather(p.weight, rows.weight, order);
    gather(p.lease, rows.lease, order);
    gather(p.prev, rows.prev, order);
    gather(p.rec, rows.rec, order);
    gather(p.flags, rows.flags, order);
    this.sorted = p;
  }

  /** A snapshot without an order is being taken: log changes from here (an open log is kept for an earlier snapshot). */
  openLog(): void {
    if (this.order === null && this.touched === null) this.touched = [];
  }

  /** A thread's sort of the snapshot taken at `epoch`, kept if nothing has dropped the order since. */
  adoptOrder(epoch: number, order: Uint32Array, rows: RowColumns, capacity: number): void {
    if (this.epoch === epoch && this.order === null) this.keep(order, rows, capacity);
    this.touched = null;
  }

  /**
   * A thread's sort with the columns it laid out, kept if nothing has dropped
   * the order since; then the rows changed since the snapshot are replayed
   * from `rows`. O(changes): gathering 1M rows here held the caller's loop
   * for 250–450 ms.
   */
  adoptSorted(epoch: number, state: SortedState, rows: RowColumns): void {
    const touched = this.touched;
    this.touched = null;
    if (this.epoch !== epoch || this.order !== null || touched === null) return;
    this.order = state.order;
    this.pos = state.pos;
    this.sorted = state.sorted;
    for (const r of touched) {
      const k = this.pos[r]!;
      if (k < 0) continue;
      for (const c of COLUMNS) this.sorted[c][k] = rows[c][r]!;
    }
  }

  /** A cached order restored from a snapshot (positions are not needed to decide). */
  restore(epoch: number, order: Uint32Array, sorted: RowColumns): void {
    this.epoch = epoch;
    this.order = order;
    this.sorted = sorted;
  }

  state(): SortedState | null {
    if (this.order === null || this.sorted === null) return null;
    return { order: this.order, pos: this.pos, sorted: this.sorted };
  }

  private touch(r: number): void {
    const t = this.touched;
    if (t === null) return;
    if (t.length >= MAX_LOGGED) this.touched = null;
    else t.push(r);
  }
}
