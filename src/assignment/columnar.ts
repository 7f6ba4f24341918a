/**
 * `ColumnarPool`: the decision input a leader keeps incrementally as watch
 * events arrive (rows, owner handles, a cached sorted order), written into
 * engine memory by `write` and handed to a pool thread by `snapshot`.
 * Pure: no I/O, no clock; it never touches `WebAssembly`.
 */
import { hashInto, seedState } from '../hash.js';
import { IdArena } from './id-arena.js';
import { I32_MAX, LAYOUT as L, writeArenaIds, type EngineMemory } from './layout.js';
import { memberTable, type MemberTable } from './members.js';
import type { AssignmentInput } from './types.js';
import { isValidWeight, STATUS_NAMES, type SplitStatus } from '../split-model.js';
import { invalid, isId, RULES, statusCode, validateAssignmentInput } from './validate.js';
import { OwnerHandles } from './handles.js';
import { SortedOrder, type RowColumns, type SortedState } from './sorted-order.js';
import { grown } from './grown.js';
import { effectiveWeight } from './hand-out-order.js';
import { QueueHead, type FillRule } from './queue-head.js';
import type { SnapshotBuffers } from './snapshot-buffers.js';
import type { SliceSource } from './slice-source.js';
import type { ColumnarDecision, ColumnarSnapshot } from './wire.js';

export type { SortedState } from './sorted-order.js';

export type { ColumnarDecision, ColumnarSnapshot } from './wire.js';

/** What `ColumnarPool.write` leaves behind for the engine call. */
export interface WrittenPool {
  members: MemberTable;
  /** True when ORDER holds the cached sorted rows; false when the engine must sort. */
  sorted: boolean;
}

/**
 * The decision input kept incrementally as watch events arrive. Each split
 * has a row (reused after removal); its content key is hashed once, and the
 * sorted order of rows is cached between decisions and dropped only when a
 * split is added or its effective weight changes. Owner, status, reserve and
 * membership changes keep it: the engine filters the cached order.
 * Equivalent to `toInput()` given to `desiredAssignment`, output for output.
 */
export class ColumnarPool {
  private readonly state: number;
  /** Row ↔ id, packed (id-arena.ts): no JS string or Map entry per split (decision 0043). */
  private ids = new IdArena();
  private freeRows: number[] = [];
  private rows = 0;
  // ArrayBufferLike: a pool rebuilt from a snapshot (fromSnapshot) reads a pool's shared buffers in place.
  private weight: Float64Array = new Float64Array(16);
  private key: Uint32Array = new Uint32Array(32);
  private lease: Int32Array = new Int32Array(16);
  private prev: Int32Array = new Int32Array(16);
  private rec: Int32Array = new Int32Array(16);
  private flags: Uint8Array = new Uint8Array(16);
  private status = new Uint8Array(16);
  private reserved = new Set<string>();
  /** Rows with an owner hint (lease, previous or record owner) and the claimable rows' count: what a slice reads (decision-slice.ts). */
  private readonly hinted = new Set<number>();
  private claimableRows = 0;
  /** @internal (decision-slice.ts) A slice's whole-pool claimable count, for the engine's weight units (0: this pool's own). */
  unitsCount = 0;
  private readonly handles = new OwnerHandles();
  private members: { id: string; cap?: number }[] = [];
  private table: MemberTable | null = null;
  /** The cached sorted order of the live rows and the columns in it (sorted-order.ts). */
  private readonly cache = new SortedOrder();
  /** Rebuilt from a snapshot without ids (see `snapshot`). */
  private idless = false;
  /** The queue's head in pool order, kept from a large pool's first slice decision on (queue-head.ts). */
  private head: QueueHead | null = null;

  constructor(
    readonly seed: string,
    readonly options: { defaultCap?: number } = {},
  ) {
    validateAssignmentInput({ seed, defaultCap: options.defaultCap, members: [], splits: [] });
    this.state = seedState(seed);
  }

  /** Number of splits held. */
  get size(): number {
    return this.ids.size;
  }

  /** Rows in use (the length of a decision's `assignee`). */
  get rowCount(): number {
    return this.rows;
  }

  /** The row of split `id`, or −1. */
  rowOf(id: string): number {
    return typeof id === 'string' ? this.ids.rowOf(id) : -1;
  }

  /** The split held in `row`, if any (a new string each call: read it once per row). */
  idAt(row: number): string | undefined {
    return this.ids.idAt(row);
  }

  /** @internal (coordinator/leader/split-columns.ts) The weight of the split held in `row`, if any: the leader's columns read it here (one weight column). */
  weightAt(row: number): number | undefined {
    return this.ids.has(row) ? this.weight[row] : undefined;
  }

  /** @internal (coordinator/leader/split-columns.ts) The status of the split held in `row`, if any. */
  statusAt(row: number): SplitStatus | undefined {
    return this.ids.has(row) ? STATUS_NAMES[this.status[row]!] : undefined;
  }

  /** Adds a split or updates its weight and status. */
  upsertSplit(id: string, weight: number, status: 'runnable' | 'completed' | 'quarantined' = 'runnable'): void {
    if (!isId(id)) invalid('upsertSplit', `id ${RULES.id}`, id);
    if (!isValidWeight(weight)) invalid('upsertSplit', `weight of "${id}" ${RULES.weight}`, weight);
    const code = statusCode(status);
    if (code < 0) invalid('upsertSplit', `status of "${id}" ${RULES.status}`, status);
    let r = this.ids.rowOf(id);
    if (r < 0) {
      r = this.freeRows.pop() ?? this.newRow();
      this.head?.rowChanging(r);
      this.ids.add(r, id);
      hashInto(this.state, id, this.key, 2 * r);
      this.lease[r] = this.prev[r] = this.rec[r] = -1;
      this.hinted.delete(r);
      this.weight[r] = weight;
      this.cache.drop();
    } else if (effectiveWeight(this.weight[r]!) !== effectiveWeight(weight)) {
      this.head?.rowChanging(r);
      this.cache.drop();
    }
    this.weight[r] = weight;
    this.cache.set('weight', r, weight);
    this.status[r] = code;
    this.refreshFlag(r, id);
  }

  /** Forgets a split; false when it was not held. */
  removeSplit(id: string): boolean {
    const r = this.rowOf(id);
    if (r < 0) return false;
    this.head?.rowChanging(r);
    this.ids.remove(r);
    if ((this.flags[r]! & L.FLAG_POOL) !== 0) this.claimableRows--;
    this.hinted.delete(r);
    this.flags[r] = 0;
    this.cache.set('flags', r, 0);
    this.freeRows.push(r);
    return true;
  }

  /** The member named by the split's live lease key (null: none); false when the split is unknown. */
  setLeaseOwner(id: string, member: string | null): boolean {
    return this.setOwner('lease', id, member);
  }

  /** The `owner` field of the split's record (null: none); false when the split is unknown. */
  setRecordOwner(id: string, member: string | null): boolean {
    return this.setOwner('rec', id, member);
  }

  /** The member whose published assignment named the split (null: none); false when unknown. */
  setPrevious(id: string, member: string | null): boolean {
    return this.setOwner('prev', id, member);
  }

  /** The live members and their lane budgets (validated as `AssignmentInput.members`). */
  setMembers(members: readonly { id: string; cap?: number }[]): void {
    const copy = members.map((mm) => (mm.cap === undefined ? { id: mm.id } : { id: mm.id, cap: mm.cap }));
    validateAssignmentInput({ seed: this.seed, defaultCap: this.options.defaultCap, members: copy, splits: [] });
    this.members = copy;
  }

  /** The split ids withheld from the next decisions (the rebalance delay). */
  setReserved(ids: Iterable<string>): void {
    const next = new Set<string>();
    for (const id of ids) {
      if (typeof id !== 'string') invalid('setReserved', 'ids must be split id strings', id);
      next.add(id);
    }
    const before = this.reserved;
    this.reserved = next;
    for (const id of before) if (!next.has(id)) this.refreshId(id);
    for (const id of next) if (!before.has(id)) this.refreshId(id);
  }

  /** The member `decision` gives split `id`, or null. */
  assigneeOf(decision: ColumnarDecision, id: string): string | null {
    const r = this.rowOf(id);
    const j = r < 0 ? -1 : (decision.assignee[r] ?? -1);
    return j < 0 ? null : decision.members[j]!;
  }

  /** The same state as the object form. */
  toInput(): AssignmentInput {
    const owner = (h: number): string | null => (h < 0 ? null : this.handles.ids[h]!);
    const splits = [];
    for (let r = 0; r < this.rows; r++) {
      const id = this.ids.idAt(r);
      if (id === undefined) continue;
      splits.push({
        id, weight: this.weight[r]!, status: STATUS_NAMES[this.status[r]!]!,
        leaseOwner: owner(this.lease[r]!), recordOwner: owner(this.rec[r]!), previous: owner(this.prev[r]!),
      });
    }
    const input: AssignmentInput = { seed: this.seed, members: this.members.map((mm) => ({ ...mm })), splits, reserved: [...this.reserved] };
    if (this.options.defaultCap !== undefined) input.defaultCap = this.options.defaultCap;
    return input;
  }

  /**
   * @internal (wasm.ts) Writes the columns into engine memory: rows, owner
   * handles with their handle → member map, caps, the cached order when
   * there is one (else the keys, for the engine to sort), and with `withIds`
   * the claimable rows' ids.
   */
  write(mem: EngineMemory, withIds: boolean): WrittenPool {
    const table = (this.table = memberTable({ seed: this.seed, defaultCap: this.options.defaultCap, members: this.members }, this.table));
    const R = this.rows;
    const m = table.ids.length;
    const H = this.handles.ids.length;
    const v = mem.reserve(R, m, H, withIds ? this.ids.unitCount : 0);
    const cap = v.i32(L.H_CAP, m);
    for (let j = 0; j < m; j++) cap[j] = Math.min(table.caps[j]!, I32_MAX);
    if (this.unitsCount > 0) v.setWord(L.H_UNITS_N, this.unitsCount);
    const map = v.i32(L.H_HANDLE_MAP, H);
    for (let h = 0; h < H; h++) map[h] = table.index.get(this.handles.ids[h]!) ?? -1;
    const { order, sorted } = this.cache;
    if (order !== null && sorted !== null) {
      // The cached order, and the columns in it: the engine reads them in sequence.
      const n = order.length;
      const p = sorted;
      v.u32(L.H_ORDER, n).set(order);
      v.setWord(L.H_ORDER_LEN, n);
      v.f64(L.H_WEIGHT, n).set(p.weight);
      v.i32(L.H_LEASE, n).set(p.lease);
      v.i32(L.H_PREVIOUS, n).set(p.prev);
      v.i32(L.H_RECORD, n).set(p.rec);
      v.u8(L.H_FLAGS, n).set(p.flags);
      v.setWord(L.H_PERMUTED, 1);
    } else {
      v.f64(L.H_WEIGHT, R).set(this.weight.subarray(0, R));
      v.i32(L.H_LEASE, R).set(this.lease.subarray(0, R));
      v.i32(L.H_PREVIOUS, R).set(this.prev.subarray(0, R));
      v.i32(L.H_RECORD, R).set(this.rec.subarray(0, R));
      v.u8(L.H_FLAGS, R).set(this.flags.subarray(0, R));
      v.u32(L.H_KEY, 2 * R).set(this.key.subarray(0, 2 * R));
    }
    // Only claimable rows' ids: the engine reads ids to order colliding keys of the pool.
    if (withIds) writeArenaIds(v, R, this.ids, (r) => (this.flags[r]! & L.FLAG_POOL) !== 0);
    return { members: table, sorted: sorted !== null };
  }

  /**
   * @internal (pool.ts) The numeric state a decision needs, copied into fresh
   * buffers the caller may transfer: with a cached order, that order and the
   * columns in it; without, the row columns and keys. Ids go along only with
   * `withIds`: the sort needs them only to order rows whose 64-bit keys
   * collide (about one 1M-split job in 10^7), and joining 1M ids held the
   * caller's loop for ~200 ms; a thread that meets a collision asks again.
   */
  snapshot(withIds = false, into: SnapshotBuffers | null = null): ColumnarSnapshot {
    const R = this.rows;
    // Rows reserved (a leader seeding a plan reserves them all): kept buffers are sized for them at once.
    const capacity = this.weight.length;
    // Into the kept shared buffers when given (the caller releases it after the decision), else fresh ones to transfer.
    const copy = <C extends Float64Array | Int32Array | Uint32Array | Uint8Array>(name: string, src: C): C =>
      (into !== null ? into.copy(name, src, Math.ceil((src.length * capacity) / Math.max(1, R))) : src.slice()) as C;
    // Rows changed from here on are replayed onto a thread's sorted columns (adoptSorted).
    // Kept, not reset, when one is already open: a thread's earlier snapshot may still be adopted.
    this.cache.openLog();
    const base = {
      seed: this.seed, defaultCap: this.options.defaultCap, members: this.members.map((mm) => ({ ...mm })),
      handleIds: this.handles.ids.slice(), rows: R, epoch: this.cache.epoch,
    };
    const { order, sorted } = this.cache;
    if (order !== null && sorted !== null) {
      // Into kept buffers: patched where the order's columns changed since that set's last snapshot (O(changes)).
      const c = into !== null ? this.cache.copyInto(into, capacity) : {
        order: order.slice(), sorted: { weight: sorted.weight.slice(), lease: sorted.lease.slice(), prev: sorted.prev.slice(), rec: sorted.rec.slice(), flags: sorted.flags.slice() },
      };
      const p = c.sorted;
      return { ...base, order: c.order, weight: p.weight, lease: p.lease, prev: p.prev, rec: p.rec, flags: p.flags, key: null, idUnits: null, idOff: null };
    }
    // The row columns go into the set's buffers: they no longer hold a copy of the cached order.
    if (into !== null) into.mirror = null;
    // The arena's units, row by row: one buffer to move, no string per id (decision 0043).
    const { idUnits, idOff } = withIds ? this.ids.rowUnits(R) : { idUnits: null, idOff: null };
    return {
      ...base, order: null, weight: copy('weight', this.weight.subarray(0, R)), lease: copy('lease', this.lease.subarray(0, R)),
      prev: copy('prev', this.prev.subarray(0, R)), rec: copy('rec', this.rec.subarray(0, R)), flags: copy('flags', this.flags.subarray(0, R)),
      key: copy('key', this.key.subarray(0, 2 * R)), idUnits, idOff,
    };
  }

  /** @internal (wasm.ts) False for a pool rebuilt from a snapshot sent without ids (it cannot order key collisions). */
  hasIds(): boolean {
    return !this.idless;
  }

  /** @internal (thread.ts) A pool holding `s`, enough to decide on (not to be updated). */
  static fromSnapshot(s: ColumnarSnapshot): ColumnarPool {
    const p = new ColumnarPool(s.seed, s.defaultCap === undefined ? {} : { defaultCap: s.defaultCap });
    p.members = s.members;
    for (const id of s.handleIds) p.handle(id);
    p.rows = s.rows;
    p.cache.epoch = s.epoch;
    if (s.order !== null) {
      p.cache.restore(s.epoch, s.order, { weight: s.weight, lease: s.lease, prev: s.prev, rec: s.rec, flags: s.flags });
    } else {
      p.weight = s.weight;
      p.lease = s.lease;
      p.prev = s.prev;
      p.rec = s.rec;
      p.flags = s.flags;
      p.key = s.key!;
      if (s.idOff === null || s.idUnits === null) p.idless = true;
      else p.ids = IdArena.fromUnits(s.idUnits as Uint16Array, s.idOff as Uint32Array, s.rows);
    }
    return p;
  }

  /** @internal (decision-slice.ts) What a decision's slice reads: the queue's head, the columns, the sparse hints, the claimable count. */
  sliceSource(): SliceSource {
    return {
      seed: this.seed, defaultCap: this.options.defaultCap, members: this.members, flags: this.flags, weight: this.weight,
      lease: this.lease, prev: this.prev, rec: this.rec, handleIds: this.handles.ids, hinted: this.hinted, claimable: this.claimableRows,
      head: this.head,
    };
  }

  /**
   * @internal (decision-slice.ts, decide.ts) The queue's head, kept from the
   * first call on: a large pool's slice decisions read it, and its refills
   * are stepped by the caller.
   */
  queueHead(rule?: FillRule): QueueHead {
    if (this.head === null) {
      const pool = this;
      this.head = new QueueHead({
        get weight() { return pool.weight; }, get key() { return pool.key; }, get flags() { return pool.flags; },
        get rowCount() { return pool.rows; }, idAt: (r) => pool.ids.idAt(r),
      }, rule);
      this.head.grow(this.weight.length);
    }
    return this.head;
  }

  /** @internal (pool.ts, thread.ts) The cached sorted order of the live rows, if any. */
  cachedOrder(): Uint32Array | null {
    return this.cache.order;
  }

  /**
   * @internal (pool.ts) Keeps a thread's sort of the snapshot taken at
   * `epoch` with the columns it laid out in that order (`sortedState` on the
   * thread's copy), if nothing has dropped the order since, then replays the
   * rows changed since the snapshot (sorted-order.ts).
   */
  adoptSorted(epoch: number, state: SortedState): void {
    this.cache.adoptSorted(epoch, state, this.columns());
  }

  /** @internal (thread.ts) The cached order with each row's position and the columns in it (buffers to transfer). */
  sortedState(): SortedState | null {
    return this.cache.state();
  }

  /** @internal (wasm.ts) Keeps copies of the engine's sorted order of the live rows and of the columns in it, for later decisions. */
  keepOrder(order: Uint32Array, sorted: RowColumns): void {
    this.cache.keep(order, sorted, this.rows);
  }

  private columns(): RowColumns {
    return { weight: this.weight, lease: this.lease, prev: this.prev, rec: this.rec, flags: this.flags };
  }

  /**
   * Makes room for `rows` rows at once (a leader about to seed a plan of that
   * many): growing by doubling copies every column each time, and at 1M rows
   * one such copy held the leader's loop for tens of milliseconds.
   */
  reserve(rows: number, unitsPerRow = 0): void {
    if (rows > this.weight.length) this.growTo(rows);
    this.ids.reserveRows(rows);
    if (unitsPerRow > 0) this.ids.reserveUnits(Math.ceil(rows * unitsPerRow));
  }

  /** Touches up to `pages` more pages of the id index reserved (IdArena `touchIndex`); true once all are. */
  touchIndex(pages: number): boolean {
    return this.ids.touchIndex(pages);
  }

  private newRow(): number {
    const r = this.rows++;
    if (r >= this.weight.length) this.growTo(2 * this.weight.length);
    return r;
  }

  private growTo(size: number): void {
    // Rows past `rows` were never handed out: nothing there to keep.
    const used = this.rows;
    this.weight = grown(this.weight, size, used);
    this.key = grown(this.key, 2 * size, 2 * used);
    this.lease = grown(this.lease, size, used);
    this.prev = grown(this.prev, size, used);
    this.rec = grown(this.rec, size, used);
    this.flags = grown(this.flags, size, used);
    this.status = grown(this.status, size, used);
    this.head?.grow(size);
  }

  private setOwner(which: 'lease' | 'prev' | 'rec', id: string, member: string | null): boolean {
    const r = this.rowOf(id);
    if (r < 0) return false;
    const h = this.handle(member);
    this[which][r] = h;
    this.cache.set(which, r, h);
    if (h >= 0 || this.lease[r]! >= 0 || this.prev[r]! >= 0 || this.rec[r]! >= 0) this.hinted.add(r);
    else this.hinted.delete(r);
    return true;
  }

  private handle(member: string | null | undefined): number {
    if (member === null || member === undefined) return -1;
    if (typeof member !== 'string') invalid('owner', RULES.owner, member);
    return this.handles.of(member);
  }

  private refreshId(id: string): void {
    const r = this.rowOf(id);
    if (r >= 0) this.refreshFlag(r, id);
  }

  private refreshFlag(r: number, id: string): void {
    const claimable = this.status[r] === 0 && !this.reserved.has(id);
    if (((this.flags[r]! & L.FLAG_POOL) !== 0) !== claimable) this.claimableRows += claimable ? 1 : -1;
    this.flags[r] = L.FLAG_LIVE | (claimable ? L.FLAG_POOL : 0);
    this.cache.set('flags', r, this.flags[r]!);
    this.head?.rowSettled(r);
  }
}

