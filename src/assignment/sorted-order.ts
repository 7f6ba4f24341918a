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

import type { SnapshotBuffers } from './snapshot-buffers.js';

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

/** Past this many logged changes the log is given up: the thread's sort is not adopted. */
const MAX_LOGGED = 1 << 20;
/** Past this many logged positions the position log restarts: a snapshot set behind it is copied whole. */
const MAX_POSITIONS = 1 << 16;

export class SortedOrder {
  order: Uint32Array | null = null;
  sorted: RowColumns | null = null;
  /** Bumped whenever the cached order is dropped. */
  epoch = 0;
  private pos: Int32Array = new Int32Array(0);
  /** Rows changed since the last snapshot taken without a cached order (null: not logging). */
  private touched: number[] | null = null;
  /**
   * Positions of the cached order written by `set` since it was kept (with
   * repeats), from version `logBase` on: what a snapshot set that already
   * holds this order catches up from (`copyInto`).
   */
  private positions: number[] = [];
  private logBase = 0;

  /** Row r's value in column `c` is now `v`: mirrored into the order, or logged. */
  set(c: keyof RowColumns, r: number, v: number): void {
    if (this.sorted !== null) {
      // Rows past `pos` came after the order was kept: none is in it (a new row drops the order anyway).
      const k = r < this.pos.length ? this.pos[r]! : -1;
      this.sorted[c][k] = v;
      if (this.positions.length >= MAX_POSITIONS) this.restartPositions();
      this.positions.push(k);
    } else {
      this.touch(r);
    }
  }

  drop(): void {
    this.epoch++;
    this.order = null;
    this.sorted = null;
    this.restartPositions();
  }

  /**
   * The cached order and its columns in `into`'s shared buffers: patched at
   * the positions changed since, when `into` already holds this very order
   * and the log reaches back to it; else copied whole (new buffers sized for
   * `roomRows`). Either way `into` then mirrors the order as it is now.
   */
  copyInto(into: SnapshotBuffers, roomRows = 0): { order: Uint32Array; sorted: RowColumns } {
    const order = this.order!;
    const s = this.sorted!;
    const m = into.mirror;
    const version = this.logBase + this.positions.length;
    into.mirror = null;
    if (m !== null && m.order === order && m.version >= this.logBase) {
      const from = m.version - this.logBase;
      const log = this.positions;
      const o = into.patch('order', order, log, log.length);
      const w = into.patch('weight', s.weight, log, from), l = into.patch('lease', s.lease, log, from), p = into.patch('prev', s.prev, log, from);
      const r = into.patch('rec', s.rec, log, from), f = into.patch('flags', s.flags, log, from);
      if (o !== null && w !== null && l !== null && p !== null && r !== null && f !== null) {
        into.mirror = { order, version };
        return { order: o, sorted: { weight: w, lease: l, prev: p, rec: r, flags: f } };
      }
    }
    const sorted = {
      weight: into.copy('weight', s.weight, roomRows), lease: into.copy('lease', s.lease, roomRows), prev: into.copy('prev', s.prev, roomRows),
      rec: into.copy('rec', s.rec, roomRows), flags: into.copy('flags', s.flags, roomRows),
    };
    const copied = into.copy('order', order, roomRows);
    into.mirror = { order, version };
    return { order: copied, sorted };
  }

  /**
   * Keeps copies of `order` (the engine's) and of `sorted`, the columns laid
   * out in it (the engine's PERMUTED columns: entry k is row order[k]'s);
   * `rows` is the pool's rows in use. Why not its capacity: a leader that
   * reserved 10M rows to seed kept an order of a few thousand in a 40 MB
   * array filled at each decision (163 ms of its loop in one turn).
   */
  keep(order: Uint32Array, sorted: RowColumns, rows: number): void {
    const n = order.length;
    this.restartPositions();
    this.order = order.slice();
    const pos = (this.pos = new Int32Array(rows).fill(-1));
    for (let k = 0; k < n; k++) pos[order[k]!] = k;
    this.sorted = {
      weight: sorted.weight.slice(0, n), lease: sorted.lease.slice(0, n), prev: sorted.prev.slice(0, n),
      rec: sorted.rec.slice(0, n), flags: sorted.flags.slice(0, n),
    };
  }

  /** A snapshot without an order is being taken: log changes from here (an open log is kept for an earlier snapshot). */
  openLog(): void {
    if (this.order === null && this.touched === null) this.touched = [];
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
    this.restartPositions();
    this.order = state.order;
    this.pos = state.pos;
    this.sorted = state.sorted;
    for (const r of touched) {
      const k = r < this.pos.length ? this.pos[r]! : -1;
      if (k < 0) continue;
      for (const c of COLUMNS) this.sorted[c][k] = rows[c][r]!;
    }
  }

  /** A cached order restored from a snapshot (positions are not needed to decide). */
  restore(epoch: number, order: Uint32Array, sorted: RowColumns): void {
    this.restartPositions();
    this.epoch = epoch;
    this.order = order;
    this.sorted = sorted;
  }

  state(): SortedState | null {
    if (this.order === null || this.sorted === null) return null;
    return { order: this.order, pos: this.pos, sorted: this.sorted };
  }

  /** No snapshot set can catch up from before here (a new order, or a log grown too long). */
  private restartPositions(): void {
    this.logBase += this.positions.length;
    this.positions = [];
  }

  private touch(r: number): void {
    const t = this.touched;
    if (t === null) return;
    if (t.length >= MAX_LOGGED) this.touched = null;
    else t.push(r);
  }
}
