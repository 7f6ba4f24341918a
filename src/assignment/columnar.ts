/**
 * `ColumnarPool`: the decision input a leader keeps incrementally as watch
 * events arrive (rows, owner handles, a cached sorted order), written into
 * engine memory by `write` and handed to a pool thread by `snapshot`.
 * Pure: no I/O, no clock; it never touches `WebAssembly`.
 */
import { hashInto, seedState } from '../hash.js';
import { I32_MAX, LAYOUT as L, type EngineMemory } from './layout.js';
import { memberTable, type MemberTable } from './members.js';
import type { AssignmentInput, AssignmentStats } from './types.js';
import { invalid, isId, isValidWeight, RULES, statusCode, validateAssignmentInput } from './validate.js';
import { STATUS_NAMES } from './wire.js';

/** A decision on a `ColumnarPool`. */
export interface ColumnarDecision {
  /** Member ids in canonical order; `assignee` holds indices into this. */
  readonly members: readonly string[];
  /** Per pool row (`ColumnarPool.rowOf`): member index, or −1 (queued, not claimable, or no split). */
  readonly assignee: Int32Array;
  readonly stats: AssignmentStats;
}

/** What `ColumnarPool.write` leaves behind for the engine call. */
export interface WrittenPool {
  members: MemberTable;
  /** True when ORDER holds the cached sorted rows; false when the engine must sort. */
  sorted: boolean;
}

/** @internal A `ColumnarPool`'s decision state in transferable buffers (`ColumnarPool.snapshot`). */
export interface ColumnarSnapshot {
  seed: string;
  defaultCap: number | undefined;
  members: { id: string; cap?: number }[];
  handleIds: string[];
  rows: number;
  epoch: number;
  /** The cached order (then the columns below are in that order), or null (then they are per row). */
  order: Uint32Array<ArrayBuffer> | null;
  weight: Float64Array<ArrayBuffer>;
  lease: Int32Array<ArrayBuffer>;
  prev: Int32Array<ArrayBuffer>;
  rec: Int32Array<ArrayBuffer>;
  flags: Uint8Array<ArrayBuffer>;
  /** Without an order: two key words per row, and row r's id is idChars[idOff[r], idOff[r+1]). */
  key: Uint32Array<ArrayBuffer> | null;
  idChars: string | null;
  idOff: Uint32Array<ArrayBuffer> | null;
}

/** @internal A cached order, each row's position in it (−1: none) and the columns in that order. */
export interface SortedState {
  order: Uint32Array;
  pos: Int32Array;
  sorted: { weight: Float64Array; lease: Int32Array; prev: Int32Array; rec: Int32Array; flags: Uint8Array };
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
  private readonly rowById = new Map<string, number>();
  private ids: (string | undefined)[] = [];
  private freeRows: number[] = [];
  private rows = 0;
  private chars = 0;
  private weight = new Float64Array(16);
  private key = new Uint32Array(32);
  private lease = new Int32Array(16);
  private prev = new Int32Array(16);
  private rec = new Int32Array(16);
  private flags = new Uint8Array(16);
  private status = new Uint8Array(16);
  private reserved = new Set<string>();
  private readonly handles = new Map<string, number>();
  private readonly handleIds: string[] = [];
  private members: { id: string; cap?: number }[] = [];
  private table: MemberTable | null = null;
  /** The cached sorted order of the live rows, each row's position in it (−1: none), and the columns in that order. */
  private order: Uint32Array | null = null;
  private pos: Int32Array = new Int32Array(0);
  private sorted: { weight: Float64Array; lease: Int32Array; prev: Int32Array; rec: Int32Array; flags: Uint8Array } | null = null;
  /** Rows changed since the last snapshot taken without a cached order (null: not logging). */
  private touched: number[] | null = null;
  /** Rebuilt from a snapshot without ids (see `snapshot`). */
  private idless = false;
  /** Bumped whenever the cached order is dropped (a thread's sort is adopted only if it still matches). */
  private epoch = 0;

  constructor(
    readonly seed: string,
    readonly options: { defaultCap?: number } = {},
  ) {
    validateAssignmentInput({ seed, defaultCap: options.defaultCap, members: [], splits: [] });
    this.state = seedState(seed);
  }

  /** Number of splits held. */
  get size(): number {
    return this.rowById.size;
  }

  /** Rows in use (the length of a decision's `assignee`). */
  get rowCount(): number {
    return this.rows;
  }

  /** The row of split `id`, or −1. */
  rowOf(id: string): number {
    return this.rowById.get(id) ?? -1;
  }

  /** The split held in `row`, if any. */
  idAt(row: number): string | undefined {
    return this.ids[row];
  }

  /** Adds a split or updates its weight and status. */
  upsertSplit(id: string, weight: number, status: 'runnable' | 'completed' | 'quarantined' = 'runnable'): void {
    if (!isId(id)) invalid('upsertSplit', `id ${RULES.id}`, id);
    if (!isValidWeight(weight)) invalid('upsertSplit', `weight of "${id}" ${RULES.weight}`, weight);
    const code = statusCode(status);
    if (code < 0) invalid('upsertSplit', `status of "${id}" ${RULES.status}`, status);
    let r = this.rowById.get(id);
    if (r === undefined) {
      r = this.freeRows.pop() ?? this.newRow();
      this.rowById.set(id, r);
      this.ids[r] = id;
      this.chars += id.length;
      hashInto(this.state, id, this.key, 2 * r);
      this.lease[r] = this.prev[r] = this.rec[r] = -1;
      this.weight[r] = weight;
      this.dropOrder();
    } else if ((this.weight[r] === 0 ? 1 : this.weight[r]) !== (weight === 0 ? 1 : weight)) {
      this.dropOrder();
    }
    this.weight[r] = weight;
    if (this.sorted !== null) this.sorted.weight[this.pos[r]!] = weight;
    else this.touch(r);
    this.status[r] = code;
    this.refreshFlag(r);
  }

  /** Forgets a split; false when it was not held. */
  removeSplit(id: string): boolean {
    const r = this.rowById.get(id);
    if (r === undefined) return false;
    this.rowById.delete(id);
    this.ids[r] = undefined;
    this.chars -= id.length;
    this.flags[r] = 0;
    if (this.sorted !== null) this.sorted.flags[this.pos[r]!] = 0;
    else this.touch(r);
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
    const r = this.rowById.get(id);
    const j = r === undefined ? -1 : (decision.assignee[r] ?? -1);
    return j < 0 ? null : decision.members[j]!;
  }

  /** The same state as the object form. */
  toInput(): AssignmentInput {
    const owner = (h: number): string | null => (h < 0 ? null : this.handleIds[h]!);
    const splits = [];
    for (let r = 0; r < this.rows; r++) {
      const id = this.ids[r];
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
    const H = this.handleIds.length;
    const v = mem.reserve(R, m, H, withIds ? this.chars : 0);
    const cap = v.i32(L.H_CAP, m);
    for (let j = 0; j < m; j++) cap[j] = Math.min(table.caps[j]!, I32_MAX);
    const map = v.i32(L.H_HANDLE_MAP, H);
    for (let h = 0; h < H; h++) map[h] = table.index.get(this.handleIds[h]!) ?? -1;
    if (this.order !== null && this.sorted !== null) {
      // The cached order, and the columns in it: the engine reads them in sequence.
      const n = this.order.length;
      const p = this.sorted;
      v.u32(L.H_ORDER, n).set(this.order);
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
    if (withIds) {
      const strOff = v.u32(L.H_STR_OFF, R + 1);
      const str = v.u16(L.H_STR, this.chars);
      let p = 0;
      let units = 0;
      for (let r = 0; r < R; r++) {
        strOff[r] = p;
        const id = this.ids[r];
        if (id === undefined || (this.flags[r]! & L.FLAG_POOL) === 0) continue;
        for (let k = 0; k < id.length; k++) {
          const c = id.charCodeAt(k);
          units |= c;
          str[p++] = c;
        }
      }
      strOff[R] = p;
      v.setWord(L.H_NARROW, units < 256 ? 1 : 0);
    }
    return { members: table, sorted: this.sorted !== null };
  }

  /**
   * @internal (pool.ts) The numeric state a decision needs, copied into fresh
   * buffers the caller may transfer: with a cached order, that order and the
   * columns in it; without, the row columns and keys. Ids go along only with
   * `withIds`: the sort needs them only to order rows whose 64-bit keys
   * collide (about one 1M-split job in 10^7), and joining 1M ids held the
   * caller's loop for ~200 ms; a thread that meets a collision asks again.
   */
  snapshot(withIds = false): ColumnarSnapshot {
    const R = this.rows;
    // Rows changed from here on are replayed onto a thread's sorted columns (adoptSorted).
    // Kept, not reset, when one is already open: a thread's earlier snapshot may still be adopted.
    if (this.order === null && this.touched === null) this.touched = [];
    const base = {
      seed: this.seed, defaultCap: this.options.defaultCap, members: this.members.map((mm) => ({ ...mm })),
      handleIds: this.handleIds.slice(), rows: R, epoch: this.epoch,
    };
    if (this.order !== null && this.sorted !== null) {
      const p = this.sorted;
      return {
        ...base, order: this.order.slice(), weight: p.weight.slice(), lease: p.lease.slice(), prev: p.prev.slice(),
        rec: p.rec.slice(), flags: p.flags.slice(), key: null, idChars: null, idOff: null,
      };
    }
    let idChars: string | null = null;
    let idOff: Uint32Array<ArrayBuffer> | null = null;
    if (withIds) {
      idOff = new Uint32Array(R + 1);
      const parts: string[] = [];
      let at = 0;
      for (let r = 0; r < R; r++) {
        idOff[r] = at;
        const id = this.ids[r];
        if (id !== undefined) {
          parts.push(id);
          at += id.length;
        }
      }
      idOff[R] = at;
      idChars = parts.join('');
    }
    return {
      ...base, order: null, weight: this.weight.slice(0, R), lease: this.lease.slice(0, R), prev: this.prev.slice(0, R),
      rec: this.rec.slice(0, R), flags: this.flags.slice(0, R), key: this.key.slice(0, 2 * R), idChars, idOff,
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
    p.epoch = s.epoch;
    if (s.order !== null) {
      p.order = s.order;
      p.sorted = { weight: s.weight, lease: s.lease, prev: s.prev, rec: s.rec, flags: s.flags };
    } else {
      p.weight = s.weight;
      p.lease = s.lease;
      p.prev = s.prev;
      p.rec = s.rec;
      p.flags = s.flags;
      p.key = s.key!;
      const off = s.idOff;
      const chars = s.idChars;
      if (off === null || chars === null) p.idless = true;
      else for (let r = 0; r < s.rows; r++) if (off[r + 1]! > off[r]!) p.ids[r] = chars.slice(off[r]!, off[r + 1]!);
    }
    return p;
  }

  /** @internal (pool.ts, thread.ts) The cached sorted order of the live rows, if any. */
  cachedOrder(): Uint32Array | null {
    return this.order;
  }

  /** @internal (pool.ts) Keeps a thread's sort of a snapshot taken at `epoch`, if nothing has dropped the order since. */
  adoptOrder(epoch: number, order: Uint32Array): void {
    if (this.epoch === epoch && this.order === null) this.keepOrder(order);
    this.touched = null;
  }

  /**
   * @internal (pool.ts) Keeps a thread's sort of the snapshot taken at
   * `epoch` with the columns it laid out in that order (`ColumnarPool.sortedState`
   * on the thread's copy), if nothing has dropped the order since, then
   * replays the rows changed since the snapshot. O(changes) on the caller:
   * gathering 1M rows into sorted order here held its loop for 250–450 ms.
   */
  adoptSorted(epoch: number, state: SortedState): void {
    const touched = this.touched;
    this.touched = null;
    if (this.epoch !== epoch || this.order !== null || touched === null) return;
    this.order = state.order;
    this.pos = state.pos;
    this.sorted = state.sorted;
    for (const r of touched) {
      const k = this.pos[r]!;
      if (k < 0) continue;
      this.sorted.weight[k] = this.weight[r]!;
      this.sorted.lease[k] = this.lease[r]!;
      this.sorted.prev[k] = this.prev[r]!;
      this.sorted.rec[k] = this.rec[r]!;
      this.sorted.flags[k] = this.flags[r]!;
    }
  }

  /** @internal (thread.ts) The cached order with each row's position and the columns in it (buffers to transfer). */
  sortedState(): SortedState | null {
    if (this.order === null || this.sorted === null) return null;
    return { order: this.order, pos: this.pos, sorted: this.sorted };
  }

  /** Logs a changed row while a thread sorts a snapshot (bounded: past it, the thread's sort is not adopted). */
  private touch(r: number): void {
    const t = this.touched;
    if (t === null) return;
    if (t.length >= 1 << 20) this.touched = null;
    else t.push(r);
  }

  /** @internal (wasm.ts) Keeps the engine's sorted order of the live rows for later decisions. */
  keepOrder(order: Uint32Array): void {
    const n = order.length;
    this.order = order.slice();
    this.pos = new Int32Array(this.weight.length).fill(-1);
    const p = {
      weight: new Float64Array(n), lease: new Int32Array(n), prev: new Int32Array(n), rec: new Int32Array(n), flags: new Uint8Array(n),
    };
    for (let k = 0; k < n; k++) {
      const r = order[k]!;
      this.pos[r] = k;
      p.weight[k] = this.weight[r]!;
      p.lease[k] = this.lease[r]!;
      p.prev[k] = this.prev[r]!;
      p.rec[k] = this.rec[r]!;
      p.flags[k] = this.flags[r]!;
    }
    this.sorted = p;
  }

  private dropOrder(): void {
    this.epoch++;
    this.order = null;
    this.sorted = null;
  }

  private newRow(): number {
    const r = this.rows++;
    if (r >= this.weight.length) {
      const size = 2 * this.weight.length;
      const grow = <T extends Float64Array | Int32Array | Uint32Array | Uint8Array>(a: T, n: number): T => {
        const b = new (a.constructor as new (n: number) => T)(n);
        b.set(a);
        return b;
      };
      this.weight = grow(this.weight, size);
      this.key = grow(this.key, 2 * size);
      this.lease = grow(this.lease, size);
      this.prev = grow(this.prev, size);
      this.rec = grow(this.rec, size);
      this.flags = grow(this.flags, size);
      this.status = grow(this.status, size);
    }
    return r;
  }

  private setOwner(which: 'lease' | 'prev' | 'rec', id: string, member: string | null): boolean {
    const r = this.rowById.get(id);
    if (r === undefined) return false;
    const h = this.handle(member);
    this[which][r] = h;
    if (this.sorted !== null) this.sorted[which][this.pos[r]!] = h;
    else this.touch(r);
    return true;
  }

  private handle(member: string | null | undefined): number {
    if (member === null || member === undefined) return -1;
    if (typeof member !== 'string') invalid('owner', RULES.owner, member);
    let h = this.handles.get(member);
    if (h === undefined) {
      h = this.handleIds.length;
      this.handles.set(member, h);
      this.handleIds.push(member);
    }
    return h;
  }

  private refreshId(id: string): void {
    const r = this.rowById.get(id);
    if (r !== undefined) this.refreshFlag(r);
  }

  private refreshFlag(r: number): void {
    const claimable = this.status[r] === 0 && !this.reserved.has(this.ids[r]!);
    this.flags[r] = L.FLAG_LIVE | (claimable ? L.FLAG_POOL : 0);
    if (this.sorted !== null) this.sorted.flags[this.pos[r]!] = this.flags[r]!;
    else this.touch(r);
  }
}

