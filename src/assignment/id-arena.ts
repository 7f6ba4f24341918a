/**
 * `IdArena`: the split ids of a `ColumnarPool`, one per row, packed in one
 * code-unit buffer with an open-addressing index, instead of a JS string per
 * split in a `Map` (issue 30, item 2; decision 0043). At 1M splits the Map
 * and its strings were ~2M heap objects that every major GC of the leader
 * marked while its loop stood still; here they are five typed arrays.
 *
 * Invariants:
 * - A row holds at most one id and an id at most one row; ids are non-empty.
 * - `rowOf(idAt(r)) === r` for every live row r.
 * - Units are one byte each while every id is Latin-1, two once any is not
 *   (the buffer widens once; it never narrows).
 * - Removed ids' units are garbage until a compaction rewrites the live ones
 *   in row order (when garbage outweighs them): appends stay amortised O(1).
 *
 * Pure: no I/O, no clock.
 */
import { grown } from './grown.js';

/** Slot value of an empty index slot (a row is stored as row + 1). */
const EMPTY = 0;
/** Index slots in a 4 KiB page. */
const SLOTS_PER_PAGE = 1024;

/** FNV-1a over an id's code units: the index's hash (the pool's seeded key is another matter). */
function hashUnits(id: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < id.length; i++) h = Math.imul(h ^ id.charCodeAt(i), 0x01000193);
  return h >>> 0;
}

export class IdArena {
  /** Code units of every id ever added since the last compaction, live or not. */
  private units: Uint8Array | Uint16Array = new Uint8Array(1024);
  private used = 0;
  /** Units of live ids (the rest of `used` is garbage). */
  private liveUnits = 0;
  /** Per row: where its id starts in `units`, its length (0: no id), its index hash. */
  private start = new Uint32Array(16);
  private len = new Uint32Array(16);
  private hash = new Uint32Array(16);
  /** Open addressing, linear probing, row + 1 per slot; at most half full. */
  private slots = new Int32Array(32);
  private count = 0;
  /** Rows above the highest ever set are free; `rows` bounds the scans. */
  private rows = 0;
  /** A lazily built index (an arena adopted from a snapshot is indexed only when asked). */
  private indexed = true;
  /** Slots of `slots` below this have had their page touched since it was allocated (`touchIndex`). */
  private touchedSlots = 0;

  /**
   * Touches the next `pages` pages (4 KiB) of the index not touched since it
   * was allocated; true once every page is. Why: the system maps a new
   * array's memory a page at a time as it is first touched, and lookups
   * touch the index at random, a page each. In an index reserved for 10M
   * ids (128 MiB) the first 2k lookups took 65–75 ms (a 10M seeding's first
   * turns); touched in order beforehand, a turn at a time, none pays more
   * than its `pages` (~8 ms for 256 on the bench machine).
   */
  touchIndex(pages: number): boolean {
    const slots = this.slots;
    const end = Math.min(slots.length, this.touchedSlots + pages * SLOTS_PER_PAGE);
    for (let i = this.touchedSlots; i < end; i += SLOTS_PER_PAGE) slots[i] = slots[i]!;
    this.touchedSlots = end;
    return end >= slots.length;
  }

  /** Ids held. */
  get size(): number {
    return this.count;
  }

  /** Code units of the live ids (what a decision's id buffer needs). */
  get unitCount(): number {
    return this.liveUnits;
  }

  /** True while every id held is Latin-1 (one byte a unit). */
  get narrow(): boolean {
    return this.units instanceof Uint8Array;
  }

  /** The row holding `id`, or −1. */
  rowOf(id: string): number {
    if (!this.indexed) this.reindex(this.slots.length);
    const mask = this.slots.length - 1;
    for (let s = hashUnits(id) & mask; ; s = (s + 1) & mask) {
      const v = this.slots[s]!;
      if (v === EMPTY) return -1;
      if (this.equals(v - 1, id)) return v - 1;
    }
  }

  /** Whether `row` holds an id. */
  has(row: number): boolean {
    return row < this.rows && this.len[row]! > 0;
  }

  /** The id held in `row`, if any (a new string each call: callers on hot paths keep it). */
  idAt(row: number): string | undefined {
    if (!this.has(row)) return undefined;
    const s = this.start[row]!;
    const n = this.len[row]!;
    // Short ids (nearly all) in one call; long ones in chunks under the argument limit.
    if (n <= 4096) return String.fromCharCode.apply(null, this.units.subarray(s, s + n) as unknown as number[]);
    let out = '';
    for (let k = 0; k < n; k += 4096) out += String.fromCharCode.apply(null, this.units.subarray(s + k, s + Math.min(n, k + 4096)) as unknown as number[]);
    return out;
  }

  /** Puts `id` in the free `row`; the caller has checked that `id` is held by no row. */
  add(row: number, id: string): void {
    if (id.length === 0) throw new RangeError('IdArena.add: an id is never empty');
    if (this.has(row)) throw new RangeError(`IdArena.add: row ${row} holds an id already`);
    this.growRows(row + 1);
    if (row >= this.rows) this.rows = row + 1;
    this.append(row, id);
    const h = hashUnits(id);
    this.hash[row] = h;
    this.count++;
    if (2 * this.count > this.slots.length) this.reindex(2 * this.slots.length);
    else if (this.indexed) this.insert(row, h);
  }

  /** Frees `row`; false when it held no id. */
  remove(row: number): boolean {
    if (!this.has(row)) return false;
    if (this.indexed) this.unindex(row);
    this.liveUnits -= this.len[row]!;
    this.len[row] = 0;
    this.count--;
    return true;
  }

  /** Copies row `row`'s units into `dst` at `at` (engine memory or a snapshot's buffer); returns how many. */
  copyUnits(row: number, dst: Uint16Array, at: number): number {
    if (!this.has(row)) return 0;
    const s = this.start[row]!;
    const n = this.len[row]!;
    dst.set(this.units.subarray(s, s + n), at);
    return n;
  }

  /**
   * Makes room for `rows` rows at once (a leader about to seed a plan of that
   * many), the index included: doubling it re-inserts every id, and its last
   * doubling at 1M held the loop for 17 ms (2 ms with the room reserved).
   */
  reserveRows(rows: number): void {
    if (this.indexed && 2 * rows > this.slots.length) {
      let size = this.slots.length;
      while (size < 2 * rows) size *= 2;
      this.reindex(size);
    }
    this.growRows(rows);
  }

  /**
   * An arena holding row r's id as `units[off[r], off[r+1])` (empty: none),
   * for a pool rebuilt from a snapshot; indexed on its first `rowOf`.
   */
  static fromUnits(units: Uint16Array, off: Uint32Array, rows: number): IdArena {
    const a = new IdArena();
    a.units = units;
    a.used = off[rows]!;
    a.growRows(rows);
    a.rows = rows;
    for (let r = 0; r < rows; r++) {
      const n = off[r + 1]! - off[r]!;
      a.start[r] = off[r]!;
      a.len[r] = n;
      if (n > 0) a.count++;
    }
    a.liveUnits = a.used;
    a.indexed = false;
    return a;
  }

  /** Room for `rows` rows in the per-row columns (doubling). */
  private growRows(rows: number): void {
    if (rows <= this.start.length) return;
    let size = this.start.length;
    while (size < rows) size *= 2;
    // Rows past `rows` never held an id.
    this.start = grown(this.start, size, this.rows);
    this.len = grown(this.len, size, this.rows);
    this.hash = grown(this.hash, size, this.rows);
  }

  private equals(row: number, id: string): boolean {
    const n = this.len[row]!;
    if (n !== id.length) return false;
    const u = this.units;
    const s = this.start[row]!;
    for (let k = 0; k < n; k++) if (u[s + k] !== id.charCodeAt(k)) return false;
    return true;
  }

  private append(row: number, id: string): void {
    const n = id.length;
    let wide = false;
    for (let k = 0; k < n; k++) if (id.charCodeAt(k) > 0xff) wide = true;
    if (wide && this.units instanceof Uint8Array) this.units = Uint16Array.from(this.units);
    if (this.used + n > this.units.length) this.makeRoom(n);
    const u = this.units;
    const at = this.used;
    for (let k = 0; k < n; k++) u[at + k] = id.charCodeAt(k);
    this.start[row] = at;
    this.len[row] = n;
    this.used += n;
    this.liveUnits += n;
  }

  /**
   * Room for `units` code units in all (the ids a plan is about to add), so
   * the buffer does not double under them: at 10M ids a doubling copies
   * ~200 MB, and held a seeding leader's loop for 190 ms.
   */
  reserveUnits(units: number): void {
    if (units > this.units.length) this.makeRoom(units - this.used);
  }

  /** Room for `n` more units: compacts when garbage outweighs the live units, else doubles. */
  private makeRoom(n: number): void {
    const compacting = this.used - this.liveUnits > this.liveUnits;
    const need = (compacting ? this.liveUnits : this.used) + n;
    let size = this.units.length;
    while (size < need) size *= 2;
    if (compacting) return this.compact(size);
    const b = new (this.units.constructor as new (n: number) => Uint8Array | Uint16Array)(size);
    b.set(this.units.subarray(0, this.used));
    this.units = b;
  }

  /** Rewrites the live ids in row order into a buffer of `size` units. */
  private compact(size: number): void {
    const from = this.units;
    const to = new (from.constructor as new (n: number) => Uint8Array | Uint16Array)(size);
    let at = 0;
    for (let r = 0; r < this.rows; r++) {
      const n = this.len[r]!;
      if (n === 0) continue;
      const s = this.start[r]!;
      to.set(from.subarray(s, s + n), at);
      this.start[r] = at;
      at += n;
    }
    this.units = to;
    this.used = at;
  }

  private insert(row: number, h: number): void {
    const mask = this.slots.length - 1;
    let s = h & mask;
    while (this.slots[s] !== EMPTY) s = (s + 1) & mask;
    this.slots[s] = row + 1;
  }

  /** Removes `row` from the index, shifting the probe run behind it back (no tombstones). */
  private unindex(row: number): void {
    const slots = this.slots;
    const mask = slots.length - 1;
    let s = this.hash[row]! & mask;
    while (slots[s] !== row + 1) s = (s + 1) & mask;
    let hole = s;
    for (let t = (s + 1) & mask; slots[t] !== EMPTY; t = (t + 1) & mask) {
      const home = this.hash[slots[t]! - 1]! & mask;
      // The entry at t may move into the hole unless its home lies cyclically in (hole, t].
      const between = hole <= t ? home > hole && home <= t : home > hole || home <= t;
      if (!between) {
        slots[hole] = slots[t]!;
        hole = t;
      }
    }
    slots[hole] = EMPTY;
  }

  private reindex(size: number): void {
    while (2 * this.count > size) size *= 2;
    if (!this.indexed) {
      for (let r = 0; r < this.rows; r++) {
        if (this.len[r]! === 0) continue;
        let h = 0x811c9dc5;
        const s = this.start[r]!;
        for (let k = 0; k < this.len[r]!; k++) h = Math.imul(h ^ this.units[s + k]!, 0x01000193);
        this.hash[r] = h >>> 0;
      }
    }
    this.slots = new Int32Array(size);
    this.touchedSlots = 0;
    this.indexed = true;
    for (let r = 0; r < this.rows; r++) if (this.len[r]! > 0) this.insert(r, this.hash[r]!);
  }

  /** The units of rows [0, rows), row by row, and each row's offset into them (rows + 1 offsets): one buffer to move, no string per id. */
  rowUnits(rows: number): { idUnits: Uint16Array<ArrayBuffer>; idOff: Uint32Array<ArrayBuffer> } {
    const idOff = new Uint32Array(rows + 1);
    const idUnits = new Uint16Array(this.unitCount);
    let at = 0;
    for (let r = 0; r < rows; r++) {
      idOff[r] = at;
      at += this.copyUnits(r, idUnits, at);
    }
    idOff[rows] = at;
    return { idUnits, idOff };
  }
}
