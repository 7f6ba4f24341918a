/**
 * LeaderView: the whole job as the leader needs it, in a compact form
 * (substrate.md, "Who observes what"). Built when a term starts (a paged
 * listing that yields between pages), fed event by event from two range
 * watches that leave out `progress.{id}` (so progress commits never reach
 * the leader), and dropped when the term ends.
 *
 * What it keeps:
 * - per split, a row of the `ColumnarPool` the engine decides on (the
 *   interned id, the weight, the status), plus one status byte here;
 * - sparse maps of what only a few splits have: live lease keys, record
 *   owners, assignment records (each names at most a lane budget of splits);
 * - the members and the `plan`/`leader` records.
 * No descriptor, no progress and no per-split record object is kept.
 *
 * Invariants:
 * - A split joins the pool once both its spec and its record have been seen.
 * - Every record is decoded strictly; one this build cannot read is reported
 *   once through `onFatal`, and the view stops applying events.
 * - `resyncMembership()` (the leader's backstop) re-lists the sparse kinds
 *   (members, leases, assignments, plan, leader) and replaces them. The
 *   dense kinds (specs, split records) are listed again only when a watch
 *   cannot resume (docs/decisions/0008-the-leader-view.md).
 *
 * I/O: listings and two watches. No decisions are made here.
 */
import { ColumnarPool } from '../assignment/codec.js';
import { STATUS_CODES, STATUS_NAMES } from '../assignment/wire.js';
import type { Clock } from '../clock.js';
import { storeFailure, type SplitfleetError } from '../errors.js';
import { kindPrefix, parseKey, type KeyKind } from '../protocol/keys.js';
import {
  decodeRecord, type AssignRecord, type ControlRecord, type LeaderRecord, type LeaseRecord, type PlanRecord, type RecordTypes, type SplitStatus, type WorkerRecord,
} from '../protocol/records.js';
import type { KeyRange, KeyValue, Store, WatchEvent, WatchHandle } from '../store/store.js';
import { ChangeBatcher } from './batch.js';
import type { Seen } from './worker-view.js';

/** Keys per page of a listing; the view yields to the event loop between pages. */
export const PAGE_SIZE = 1000;

/** A row whose record is not known (outside STATUS_CODES, the one numbering of assignment/wire.ts). */
const NO_STATUS = 255;

/** What one batch of events changed, as far as a decision is concerned. */
export interface LeaderViewChange {
  kinds: Set<KeyKind>;
  /** A full listing was applied: treat everything as changed. */
  all: boolean;
}

/** Yields to the event loop, so that a long listing never holds it for more than a page. */
const yieldToLoop = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

export class LeaderView {
  plan: Seen<PlanRecord> | undefined;
  leader: Seen<LeaderRecord> | undefined;
  /** The operators' record (pause, evacuations); undefined when absent or unreadable (decision 0011). */
  control: Seen<ControlRecord> | undefined;
  readonly workers = new Map<string, Seen<WorkerRecord>>();
  readonly assigns = new Map<string, Seen<AssignRecord>>();
  /** Live lease keys, by split id (at most the fleet's lanes). */
  readonly leases = new Map<string, Seen<LeaseRecord>>();
  /** Record owners, by split id: only records whose `owner` is set. */
  readonly owners = new Map<string, string>();
  /** The engine's input, one row per split (weights, status, owners; members and reserve set per decision). */
  readonly pool: ColumnarPool;
  /** Counts of split records by status, kept incrementally. */
  readonly statusCounts = { runnable: 0, completed: 0, quarantined: 0 };
  /** Summed weight of the pool's rows by status, kept incrementally (the backlog metric's weights). */
  private readonly statusWeights = { runnable: 0, completed: 0, quarantined: 0 };
  /** Highest revision seen in the range holding `assign`, `leader`, `lease` and `plan`. */
  revision = 0;
  unknownKeys = 0;

  private status = new Uint8Array(1024).fill(NO_STATUS);
  /** Each row's weight (the pool keeps its own, privately; a status change re-states it). */
  private weights = new Float64Array(1024);
  /** Halves seen before their other half (seeding writes both in one transaction, so these are brief). */
  private readonly specOnly = new Map<string, number>();
  private readonly recordOnly = new Map<string, SplitStatus>();
  /** Splits set aside because a record of theirs cannot be read: kind → problem. Never in the pool. */
  private readonly problems = new Map<string, Map<string, string>>();
  /** The listing's revision: events of the sparse kinds at or below it are already in the maps. */
  private floor = 0;
  private handles: WatchHandle[] = [];
  private listeners: ((change: LeaderViewChange) => void)[] = [];
  private readonly batcher = new ChangeBatcher<LeaderViewChange>(
    (into, more) => {
      for (const k of more.kinds) into.kinds.add(k);
      into.all ||= more.all;
    },
    (batch) => {
      for (const l of this.listeners) l(batch);
    },
    () => this.failed || this.closed,
  );
  private failed = false;
  private closed = false;

  constructor(
    private readonly store: Store,
    readonly prefix: string,
    readonly fp: string,
    seed: string,
    private readonly onFatal: (error: SplitfleetError) => void,
    private readonly clock: Clock,
    /** A record that cannot be read (it costs only what it concerns; see `readable`). */
    private readonly onUnreadable: (key: string, error: SplitfleetError) => void = () => undefined,
  ) {
    this.pool = new ColumnarPool(seed);
  }

  /** Splits set aside because a record of theirs cannot be read, with the problems (for logs and the verdict). */
  get parked(): ReadonlyMap<string, ReadonlyMap<string, string>> {
    return this.problems;
  }

  /**
   * Splits with a spec but no split record, none of whose records is a
   * problem: a record deleted by hand (to get rid of an unreadable one, say).
   * The leader seeds them again.
   */
  unrecorded(limit: number): string[] {
    const out: string[] = [];
    for (const id of this.specOnly.keys()) {
      if (out.length >= limit) break;
      if (!this.recordOnly.has(id) && !this.problems.has(id)) out.push(id);
    }
    return out;
  }

  /** The two ranges the leader follows: everything of the job but `progress.{id}`. */
  private get ranges(): KeyRange[] {
    const progress = kindPrefix(this.prefix, 'progress');
    return [{ rangeEnd: progress }, { rangeStart: `${progress.slice(0, -1)}/` }];
  }

  /** Split records known (with or without a spec). */
  get splitCount(): number {
    return this.statusCounts.runnable + this.statusCounts.completed + this.statusCounts.quarantined;
  }

  onChange(listener: (change: LeaderViewChange) => void): void {
    this.listeners.push(listener);
  }

  /** Lists the job page by page at one revision, yielding between pages, then follows it. */
  async start(): Promise<void> {
    const revision = await this.list(this.ranges, undefined, (kv) => this.put(kv.key, kv.value, kv.modRevision, kv.lease));
    if (this.failed || this.closed) return;
    this.floor = revision;
    this.saw(revision);
    this.follow(revision + 1);
    this.notify({ kinds: new Set(), all: true });
  }

  /**
   * The backstop: re-lists members, leases, assignments, plan and leader,
   * and replaces what the view holds of them (anything not listed is gone).
   */
  async resyncMembership(): Promise<void> {
    if (this.failed || this.closed) return;
    const workers = new Map<string, Seen<WorkerRecord>>();
    const assigns = new Map<string, Seen<AssignRecord>>();
    const leases = new Map<string, Seen<LeaseRecord>>();
    let plan: Seen<PlanRecord> | undefined;
    let leader: Seen<LeaderRecord> | undefined;
    let control: Seen<ControlRecord> | undefined;
    const sparse = (['worker', 'assign', 'lease'] as const).map((k) => ({ rangeStart: kindPrefix(this.prefix, k), rangeEnd: `${kindPrefix(this.prefix, k).slice(0, -1)}/` }));
    const singles = ['leader', 'plan', 'control'].map((k) => ({ rangeStart: `${this.prefix}${k}`, rangeEnd: `${this.prefix}${k}\0` }));
    const revision = await this.list([...sparse, ...singles], undefined, (kv) => {
      const parsed = parseKey(this.prefix, kv.key);
      const seen = <R>(rec: R): Seen<R> => meta(rec, kv);
      const put = <K extends 'worker' | 'assign' | 'lease'>(kind: K, into: Map<string, Seen<RecordTypes[K]>>, id: string) => {
        const rec = this.readable(kind, kv.key, kv.value, kind === 'lease' ? id : undefined);
        if (rec) into.set(id, seen(rec));
      };
      switch (parsed.kind) {
        case 'worker': put('worker', workers, parsed.id); break;
        case 'assign': put('assign', assigns, parsed.id); break;
        case 'lease': put('lease', leases, parsed.id); break;
        case 'plan': plan = seen(decodeRecord('plan', kv.key, kv.value, this.fp)); break;
        case 'leader': leader = seen(decodeRecord('leader', kv.key, kv.value, this.fp)); break;
        case 'control': { const rec = this.readable('control', kv.key, kv.value); control = rec ? seen(rec) : undefined; break; }
        default: break;
      }
    });
    if (this.failed || this.closed || revision <= this.floor) return;
    // Events that raced the listing are newer or older per key; keep whichever is newer.
    const merge = <R>(mine: Map<string, Seen<R>>, listed: Map<string, Seen<R>>, apply: (id: string, s: Seen<R> | undefined) => void) => {
      for (const [id, s] of mine) if (!listed.has(id) && s.modRevision <= revision) apply(id, undefined);
      for (const [id, s] of listed) if ((mine.get(id)?.modRevision ?? 0) < s.modRevision) apply(id, s);
    };
    merge(this.workers, workers, (id, s) => (s ? this.workers.set(id, s) : this.workers.delete(id)));
    merge(this.assigns, assigns, (id, s) => (s ? this.assigns.set(id, s) : this.assigns.delete(id)));
    merge(this.leases, leases, (id, s) => this.setLease(id, s));
    if (plan && (this.plan?.modRevision ?? 0) < plan.modRevision) this.plan = plan;
    if (!leader && this.leader && this.leader.modRevision <= revision) this.leader = undefined;
    else if (leader && (this.leader?.modRevision ?? 0) < leader.modRevision) this.leader = leader;
    if (!control && this.control && this.control.modRevision <= revision) this.control = undefined;
    else if (control && (this.control?.modRevision ?? 0) < control.modRevision) this.control = control;
    this.floor = revision;
    // The listing covered every kind of the first range (assign, leader, lease, plan) up to it.
    this.saw(revision);
    this.notify({ kinds: new Set(['worker', 'assign', 'lease', 'plan', 'leader', 'control']), all: false });
  }

  /** Specs known (in the pool, or waiting for their record). */
  get specCount(): number {
    return this.pool.size + this.specOnly.size;
  }

  /** Whether split `id`'s spec has been seen. */
  hasSpec(id: string): boolean {
    return this.pool.rowOf(id) >= 0 || this.specOnly.has(id);
  }

  /** The status of split `id`, if its record has been seen. */
  statusOf(id: string): SplitStatus | undefined {
    const r = this.pool.rowOf(id);
    if (r >= 0 && this.status[r] !== NO_STATUS) return STATUS_NAMES[this.status[r]!];
    return this.recordOnly.get(id);
  }

  /**
   * The backlog by state, in splits and weight (the leader's metric). Held
   * splits are running while their holder's record names them (or it has no
   * record: it holds everything) and draining otherwise; queued is the rest
   * of the runnable ones. Costs the leases (sparse), not the split count.
   */
  backlog(): Record<'queued' | 'running' | 'draining' | 'completed' | 'quarantined', { splits: number; weight: number }> {
    const running = { splits: 0, weight: 0 };
    const draining = { splits: 0, weight: 0 };
    for (const [id, lease] of this.leases) {
      if (this.statusOf(id) !== 'runnable') continue;
      const splits = this.assigns.get(lease.rec.owner)?.rec.splits;
      const into = splits === undefined || sortedHas(splits, id) ? running : draining;
      into.splits++;
      into.weight += this.weightOf(id) ?? 0;
    }
    const w = this.statusWeights;
    const c = this.statusCounts;
    return {
      queued: { splits: Math.max(0, c.runnable - running.splits - draining.splits), weight: Math.max(0, w.runnable - running.weight - draining.weight) },
      running, draining,
      completed: { splits: c.completed, weight: w.completed },
      quarantined: { splits: c.quarantined, weight: w.quarantined },
    };
  }

  async close(): Promise<void> {
    this.closed = true;
    this.listeners = [];
    const hs = this.handles;
    this.handles = [];
    await Promise.all(hs.map((h) => h.close()));
  }

  // ---- listing and following --------------------------------------------------

  /** Lists `ranges` page by page, all at one revision; returns it. */
  private async list(ranges: KeyRange[], at: number | undefined, apply: (kv: KeyValue) => void): Promise<number> {
    let revision = at;
    for (const range of ranges) {
      let startAfter: string | undefined;
      for (;;) {
        const page = await this.store.list(this.prefix, {
          limit: PAGE_SIZE, ...range, ...(startAfter !== undefined ? { startAfter } : {}), ...(revision !== undefined ? { revision } : {}),
        });
        if (this.failed || this.closed) return revision ?? page.revision;
        revision ??= page.revision;
        try {
          for (const kv of page.kvs) apply(kv);
        } catch (e) {
          this.fail(storeFailure(e));
          return revision;
        }
        if (!page.more || page.kvs.length === 0) break;
        startAfter = page.kvs[page.kvs.length - 1]!.key;
        await yieldToLoop();
      }
    }
    return revision ?? 0;
  }

  private follow(fromRevision: number): void {
    this.ranges.forEach((range, i) => {
      const handle = this.store.watch(this.prefix, {
        ...range,
        fromRevision,
        onEvent: (e) => this.applyEvent(e, i === 0),
        onError: (e) => {
          if (this.failed || this.closed || !this.handles.includes(handle)) return;
          // A watch that cannot resume (compacted, say) leaves the view blind: start over.
          if (!e.retryable) this.fail(e);
          else void this.restart();
        },
      });
      handle.ready.catch(() => undefined);
      this.handles.push(handle);
    });
  }

  /** Replaces the view from a fresh listing (a watch stopped for good); retried while the store fails. */
  private async restart(): Promise<void> {
    const hs = this.handles;
    this.handles = [];
    await Promise.all(hs.map((h) => h.close()));
    if (this.failed || this.closed) return;
    this.plan = this.leader = undefined;
    this.workers.clear();
    this.assigns.clear();
    for (const id of [...this.leases.keys()]) this.setLease(id, undefined);
    for (const id of [...this.owners.keys()]) this.setOwner(id, '');
    for (let r = 0; r < this.pool.rowCount; r++) {
      const id = this.pool.idAt(r);
      if (id !== undefined) this.pool.removeSplit(id);
    }
    this.status.fill(NO_STATUS);
    this.specOnly.clear();
    this.recordOnly.clear();
    this.problems.clear();
    this.statusCounts.runnable = this.statusCounts.completed = this.statusCounts.quarantined = 0;
    try {
      await this.start();
    } catch (e) {
      const err = storeFailure(e);
      if (!err.retryable) this.fail(err);
      else this.clock.setTimer(500, () => void this.restart());
    }
  }

  private applyEvent(e: WatchEvent, firstRange: boolean): void {
    if (this.failed || this.closed) return;
    const before = this.revision;
    if (firstRange) this.saw(e.modRevision);
    try {
      const kind = e.type === 'put' ? this.put(e.key, e.value ?? '', e.modRevision, e.lease) : this.remove(e.key, e.modRevision);
      // A change already known (a backstop listing got there first) still moves the revision the
      // leader waits on before deciding again: say so, or it would wait for a change that came.
      if (kind) this.notify({ kinds: new Set([kind]), all: false });
      else if (this.revision > before) this.notify({ kinds: new Set(), all: false });
    } catch (err) {
      this.fail(storeFailure(err));
    }
  }

  // ---- applying records ---------------------------------------------------------

  private put(key: string, value: string, modRevision: number, lease: string | undefined): KeyKind | undefined {
    const parsed = parseKey(this.prefix, key);
    const kv = { modRevision, ...(lease !== undefined ? { lease } : {}) };
    switch (parsed.kind) {
      case 'unknown':
        this.unknownKeys++;
        return undefined;
      case 'progress':
        return undefined; // outside both ranges; a store that sends one anyway costs nothing more
      case 'plan':
        // The job's own records: one this build cannot read stops the leader (its caller fails).
        this.plan = meta(decodeRecord('plan', key, value, this.fp), kv);
        return 'plan';
      case 'leader':
        this.leader = meta(decodeRecord('leader', key, value, this.fp), kv);
        return 'leader';
      case 'publish':
        return undefined; // the leader's own fence: it tracks the revision itself (decision 0015)
      case 'control': {
        // Unreadable: as if absent (nothing paused or evacuated), reported; an operator rewrites it.
        const rec = this.readable('control', key, value);
        this.control = rec ? meta(rec, kv) : undefined;
        return 'control';
      }
      case 'worker': {
        if ((this.workers.get(parsed.id)?.modRevision ?? 0) >= modRevision) return undefined;
        // Unreadable: not a member (it costs that instance its membership, not the job).
        const rec = this.readable('worker', key, value);
        if (rec) this.workers.set(parsed.id, meta(rec, kv));
        else this.workers.delete(parsed.id);
        return 'worker';
      }
      case 'assign': {
        if ((this.assigns.get(parsed.id)?.modRevision ?? 0) >= modRevision) return undefined;
        // Unreadable: as if absent, so the next decision writes a readable one over it.
        const rec = this.readable('assign', key, value);
        if (rec) this.assigns.set(parsed.id, meta(rec, kv));
        else this.assigns.delete(parsed.id);
        return 'assign';
      }
      case 'lease': {
        if ((this.leases.get(parsed.id)?.modRevision ?? 0) >= modRevision) return undefined;
        const rec = this.readable('lease', key, value, parsed.id);
        this.setLease(parsed.id, rec ? meta(rec, kv) : undefined);
        this.place(parsed.id, this.weightOf(parsed.id), this.statusOf(parsed.id));
        return 'lease';
      }
      case 'spec': {
        const spec = this.readable('spec', key, value, parsed.id);
        this.place(parsed.id, spec?.weight, this.statusOf(parsed.id));
        return 'spec';
      }
      case 'split': {
        const rec = this.readable('split', key, value, parsed.id);
        this.setOwner(parsed.id, rec?.owner ?? '');
        this.place(parsed.id, this.weightOf(parsed.id), rec?.status);
        return 'split';
      }
    }
  }

  private remove(key: string, revision: number): KeyKind | undefined {
    const parsed = parseKey(this.prefix, key);
    switch (parsed.kind) {
      case 'unknown':
      case 'progress':
        return undefined;
      case 'plan':
        this.plan = undefined;
        return 'plan';
      case 'leader':
        this.leader = undefined;
        return 'leader';
      case 'publish':
        return undefined;
      case 'control':
        this.control = undefined;
        return 'control';
      case 'worker':
        if (revision <= this.floor) return undefined;
        this.workers.delete(parsed.id);
        return 'worker';
      case 'assign':
        if (revision <= this.floor) return undefined;
        this.assigns.delete(parsed.id);
        return 'assign';
      case 'lease':
        if (revision <= this.floor) return undefined;
        this.problems.get(parsed.id)?.delete('lease');
        this.setLease(parsed.id, undefined);
        this.place(parsed.id, this.weightOf(parsed.id), this.statusOf(parsed.id));
        return 'lease';
      case 'spec':
        this.problems.get(parsed.id)?.delete('spec');
        this.place(parsed.id, undefined, this.statusOf(parsed.id));
        return 'spec';
      case 'split':
        this.problems.get(parsed.id)?.delete('split');
        this.setOwner(parsed.id, '');
        this.place(parsed.id, this.weightOf(parsed.id), undefined);
        return 'split';
    }
  }

  /**
   * Decodes a record; one this build cannot read is reported and, for a
   * split's records (`id` given), sets that split aside as a problem until a
   * readable value (or a deletion) replaces it. Undefined when unreadable.
   */
  private readable<K extends 'control' | 'worker' | 'assign' | 'lease' | 'spec' | 'split'>(kind: K, key: string, value: string, id?: string): RecordTypes[K] | undefined {
    try {
      const rec = decodeRecord(kind, key, value, this.fp);
      if (id !== undefined) this.problems.get(id)?.delete(kind);
      return rec;
    } catch (e) {
      const err = storeFailure(e);
      if (id !== undefined) {
        let p = this.problems.get(id);
        if (!p) this.problems.set(id, (p = new Map()));
        p.set(kind, err.message);
      }
      this.onUnreadable(key, err);
      return undefined;
    }
  }

  /**
   * Puts a split where its halves say: a pool row when its spec (`weight`)
   * and its record (`status`) are both known and none of its records is a
   * problem; else the halves wait in `specOnly` / `recordOnly`. Status counts
   * follow every readable record, row or not.
   */
  private place(id: string, weight: number | undefined, status: SplitStatus | undefined): void {
    const p = this.problems.get(id);
    if (p && p.size === 0) this.problems.delete(id);
    const r = this.pool.rowOf(id);
    const before = this.statusOf(id);
    if (before !== undefined) this.statusCounts[before]--;
    if (r >= 0 && this.status[r] !== NO_STATUS) this.statusWeights[STATUS_NAMES[this.status[r]!]!] -= this.weights[r]!;
    if (status !== undefined) this.statusCounts[status]++;
    if (weight !== undefined && status !== undefined && !this.problems.has(id)) {
      this.specOnly.delete(id);
      this.recordOnly.delete(id);
      const code = STATUS_CODES[status];
      if (r >= 0) {
        if (this.weights[r] !== weight || this.status[r] !== code) this.pool.upsertSplit(id, weight, status);
        this.weights[r] = weight;
        this.status[r] = code;
        this.statusWeights[status] += weight;
        return;
      }
      this.pool.upsertSplit(id, weight, status);
      const row = this.pool.rowOf(id);
      this.grow(row);
      this.weights[row] = weight;
      this.status[row] = code;
      this.statusWeights[status] += weight;
      const owner = this.owners.get(id);
      if (owner !== undefined) this.pool.setRecordOwner(id, owner);
      const lease = this.leases.get(id);
      if (lease) this.pool.setLeaseOwner(id, lease.rec.owner);
      return;
    }
    if (r >= 0) {
      this.status[r] = NO_STATUS;
      this.pool.removeSplit(id);
    }
    if (weight !== undefined) this.specOnly.set(id, weight);
    else this.specOnly.delete(id);
    if (status !== undefined) this.recordOnly.set(id, status);
    else this.recordOnly.delete(id);
  }

  private weightOf(id: string): number | undefined {
    const r = this.pool.rowOf(id);
    return r >= 0 ? this.weights[r] : this.specOnly.get(id);
  }

  private grow(row: number): void {
    if (row < this.status.length) return;
    const size = Math.max(2 * this.status.length, row + 1);
    const status = new Uint8Array(size).fill(NO_STATUS);
    status.set(this.status);
    this.status = status;
    const weights = new Float64Array(size);
    weights.set(this.weights);
    this.weights = weights;
  }

  private setOwner(id: string, owner: string): void {
    if (owner === '') {
      if (this.owners.delete(id)) this.pool.setRecordOwner(id, null);
    } else if (this.owners.get(id) !== owner) {
      this.owners.set(id, owner);
      this.pool.setRecordOwner(id, owner);
    }
  }

  private setLease(id: string, seen: Seen<LeaseRecord> | undefined): void {
    if (seen) this.leases.set(id, seen);
    else this.leases.delete(id);
    this.pool.setLeaseOwner(id, seen?.rec.owner ?? null);
  }

  private saw(revision: number): void {
    if (revision > this.revision) this.revision = revision;
  }

  private notify(change: LeaderViewChange): void {
    this.batcher.add(change);
  }

  private fail(error: SplitfleetError): void {
    if (this.failed) return;
    this.failed = true;
    this.onFatal(error);
  }
}

function meta<R>(rec: R, kv: { modRevision: number; lease?: string }): Seen<R> {
  const out: Seen<R> = { rec, modRevision: kv.modRevision };
  if (kv.lease !== undefined && kv.lease !== '0') out.lease = kv.lease;
  return out;
}

/** Binary search in ids sorted in JS string order (assignment records are). */
function sortedHas(ids: readonly string[], id: string): boolean {
  let lo = 0;
  let hi = ids.length - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    const v = ids[mid]!;
    if (v === id) return true;
    if (v < id) lo = mid + 1;
    else hi = mid - 1;
  }
  return false;
}


