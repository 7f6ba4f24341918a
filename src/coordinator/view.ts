/**
 * JobView: one process's observed state of a job, kept by one prefix watch
 * (snapshot, then live events) and validated record by record.
 *
 * Invariants:
 * - Every record is decoded strictly; a record this build cannot read is
 *   reported once through `onFatal` (typed, naming key and problem) and the
 *   view stops applying events: acting on a half-understood job is worse
 *   than stopping.
 * - Keys of no known kind under the prefix are ignored (counted in
 *   `unknownKeys`), so tools may leave notes beside a job without breaking it.
 * - `resync()` replaces the whole view from a fresh listing: the backstop
 *   against a missed event (anything not listed is treated as deleted).
 *
 * I/O: the watch. No decisions are made here.
 */
import { systemClock, type Clock } from '../clock.js';
import type { SplitfleetError } from '../errors.js';
import { isSplitfleetError, SplitfleetError as Err } from '../errors.js';
import { parseKey, type KeyKind } from '../protocol/keys.js';
import {
  decodeRecord, type AssignRecord, type LeaderRecord, type LeaseRecord, type PlanRecord, type SpecRecord,
  type SplitRecord, type WorkerRecord,
} from '../protocol/records.js';
import { op, type KeyValue, type Store, type WatchEvent, type WatchHandle } from '../store/store.js';

/** A decoded record with the store metadata the protocol needs. */
export interface Seen<R> {
  rec: R;
  modRevision: number;
  lease?: string;
}

/** What changed in one batch of events: the kinds and the ids (split id or instance). */
export interface ViewChange {
  kinds: Set<KeyKind>;
  ids: Set<string>;
  /** True after a snapshot or resync: treat everything as changed. */
  all: boolean;
  /**
   * True when something the leader's decision reads changed: membership, lane
   * budgets, specs, a split's status or owner, a lease key, an assignment, the
   * plan. A progress-only commit is not one, so commits do not wake the leader.
   */
  relevant: boolean;
}

export class JobView {
  plan: Seen<PlanRecord> | undefined;
  leader: Seen<LeaderRecord> | undefined;
  readonly workers = new Map<string, Seen<WorkerRecord>>();
  readonly specs = new Map<string, SpecRecord>();
  readonly splits = new Map<string, Seen<SplitRecord>>();
  readonly leases = new Map<string, Seen<LeaseRecord>>();
  readonly assigns = new Map<string, Seen<AssignRecord>>();
  revision = 0;
  unknownKeys = 0;
  /** Counts by status, kept incrementally so completion checks are O(1). */
  readonly statusCounts = { runnable: 0, completed: 0, quarantined: 0 };

  private handle: WatchHandle | undefined;
  private listeners: ((change: ViewChange) => void)[] = [];
  private pending: ViewChange | undefined;
  private failed = false;
  private closed = false;
  private cancelRetry: (() => void) | undefined;

  constructor(
    private readonly store: Store,
    readonly prefix: string,
    readonly fp: string,
    private readonly onFatal: (error: SplitfleetError) => void,
    private readonly clock: Clock = systemClock,
  ) {}

  /** Subscribes to batched changes (delivered on a microtask after events). */
  onChange(listener: (change: ViewChange) => void): void {
    this.listeners.push(listener);
  }

  /** Lists the prefix and follows it; resolves once the snapshot is applied. */
  async start(): Promise<void> {
    await this.open();
  }

  /**
   * Re-lists the whole prefix and replaces the view (the reconcile backstop).
   * A retryable failure (the store unreachable) rejects, and the view keeps
   * trying on its own every RESYNC_RETRY_MS until a listing succeeds: it is
   * never left without a watch. Any other failure is fatal.
   */
  async resync(): Promise<void> {
    if (this.failed || this.closed) return;
    this.cancelRetry?.();
    this.cancelRetry = undefined;
    const old = this.handle;
    this.handle = undefined;
    await old?.close();
    try {
      await this.open();
    } catch (e) {
      const err = asError(e);
      if (!err.retryable) this.fail(err);
      else if (!this.failed && !this.closed && this.handle === undefined && !this.cancelRetry) {
        this.cancelRetry = this.clock.setTimer(RESYNC_RETRY_MS, () => {
          this.cancelRetry = undefined;
          if (this.handle === undefined) void this.resync().catch(() => undefined);
        });
      }
      throw err;
    }
  }

  /**
   * Re-reads `keys` and applies what is found; a key that is missing is
   * treated as deleted (when the view's copy is older than the read). The
   * worker's backstop: a missed event costs latency, never correctness.
   */
  async refresh(keys: string[]): Promise<void> {
    for (let i = 0; i < keys.length; i += 100) {
      const chunk = keys.slice(i, i + 100);
      const res = await this.store.txn({ compares: [], success: chunk.map((key) => op.get(key)) });
      if (this.failed) return;
      chunk.forEach((key, j) => {
        const kv = res.reads[j];
        const known = this.modRevisionOf(key);
        let parsed: { kind: KeyKind; id?: string; relevant?: boolean } | undefined;
        if (kv && (known === undefined || kv.modRevision > known)) parsed = this.put(key, kv.value, kv.modRevision, kv.lease);
        else if (!kv && known !== undefined && known < res.revision) parsed = this.remove(key);
        if (parsed) this.notify({ kinds: new Set([parsed.kind]), ids: new Set(parsed.id ? [parsed.id] : []), all: false, relevant: true });
      });
    }
  }

  private modRevisionOf(key: string): number | undefined {
    const parsed = parseKey(this.prefix, key);
    switch (parsed.kind) {
      case 'split':
        return this.splits.get(parsed.id)?.modRevision;
      case 'lease':
        return this.leases.get(parsed.id)?.modRevision;
      case 'assign':
        return this.assigns.get(parsed.id)?.modRevision;
      case 'worker':
        return this.workers.get(parsed.id)?.modRevision;
      default:
        return undefined;
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    this.cancelRetry?.();
    const h = this.handle;
    this.handle = undefined;
    this.listeners = [];
    await h?.close();
  }

  private async open(): Promise<void> {
    let established = false;
    const handle = this.store.snapshotAndWatch(this.prefix, {
      onSnapshot: (kvs, revision) => this.applySnapshot(kvs, revision),
      onEvent: (e) => this.applyEvent(e),
      onError: (e) => {
        // A failed listing rejects `ready`, and whoever awaits it decides (start fails; resync retries).
        // Once established, the watch has stopped for good (e.g. a compacted resume point): take a
        // fresh snapshot instead; resync retries by itself while the store is unreachable.
        if (!established || this.failed || this.handle !== handle) return;
        if (!e.retryable) this.fail(e);
        else void this.resync().catch(() => undefined);
      },
    });
    this.handle = handle;
    try {
      await handle.ready;
    } catch (e) {
      // No watch came of it: the view has none until a resync succeeds.
      if (this.handle === handle) this.handle = undefined;
      throw e;
    }
    established = true;
  }

  private applySnapshot(kvs: KeyValue[], revision: number): void {
    this.plan = undefined;
    this.leader = undefined;
    this.workers.clear();
    this.specs.clear();
    this.splits.clear();
    this.leases.clear();
    this.assigns.clear();
    this.statusCounts.runnable = this.statusCounts.completed = this.statusCounts.quarantined = 0;
    for (const kv of kvs) {
      this.put(kv.key, kv.value, kv.modRevision, kv.lease);
      if (this.failed) return;
    }
    this.revision = revision;
    this.notify({ kinds: new Set(), ids: new Set(), all: true, relevant: true });
  }

  private applyEvent(e: WatchEvent): void {
    if (this.failed) return;
    if (e.modRevision > this.revision) this.revision = e.modRevision;
    // The backstop's refresh may already have read this key past a lagging watch: an older
    // event would take the view backwards (a lease key it knows to be live, say, deleted).
    const known = this.modRevisionOf(e.key);
    if (known !== undefined && known >= e.modRevision) return;
    const parsed = e.type === 'put' ? this.put(e.key, e.value ?? '', e.modRevision, e.lease) : this.remove(e.key);
    if (parsed) {
      this.notify({
        kinds: new Set([parsed.kind]),
        ids: new Set(parsed.id ? [parsed.id] : []),
        all: false,
        relevant: parsed.relevant ?? true,
      });
    }
  }

  private put(
    key: string, value: string, modRevision: number, lease: string | undefined,
  ): { kind: KeyKind; id?: string; relevant?: boolean } | undefined {
    const parsed = parseKey(this.prefix, key);
    if (parsed.kind === 'unknown') {
      this.unknownKeys++;
      return undefined;
    }
    try {
      const meta = (rec: unknown) => ({ rec, modRevision, ...(lease !== undefined && lease !== '0' ? { lease } : {}) });
      switch (parsed.kind) {
        case 'plan':
          this.plan = meta(decodeRecord('plan', key, value, this.fp)) as Seen<PlanRecord>;
          return { kind: 'plan' };
        case 'leader':
          this.leader = meta(decodeRecord('leader', key, value, this.fp)) as Seen<LeaderRecord>;
          return { kind: 'leader' };
        case 'worker':
          this.workers.set(parsed.id, meta(decodeRecord('worker', key, value, this.fp)) as Seen<WorkerRecord>);
          return { kind: 'worker', id: parsed.id };
        case 'spec':
          this.specs.set(parsed.id, decodeRecord('spec', key, value, this.fp));
          return { kind: 'spec', id: parsed.id };
        case 'split': {
          const rec = decodeRecord('split', key, value, this.fp);
          const old = this.splits.get(parsed.id);
          if (old) this.statusCounts[old.rec.status]--;
          this.statusCounts[rec.status]++;
          this.splits.set(parsed.id, { rec, modRevision });
          const relevant = !old || old.rec.status !== rec.status || old.rec.owner !== rec.owner;
          return { kind: 'split', id: parsed.id, relevant };
        }
        case 'lease':
          this.leases.set(parsed.id, meta(decodeRecord('lease', key, value, this.fp)) as Seen<LeaseRecord>);
          return { kind: 'lease', id: parsed.id };
        case 'assign':
          this.assigns.set(parsed.id, meta(decodeRecord('assign', key, value, this.fp)) as Seen<AssignRecord>);
          return { kind: 'assign', id: parsed.id };
      }
    } catch (e) {
      this.fail(asError(e));
      return undefined;
    }
  }

  private remove(key: string): { kind: KeyKind; id?: string; relevant?: boolean } | undefined {
    const parsed = parseKey(this.prefix, key);
    switch (parsed.kind) {
      case 'unknown':
        return undefined;
      case 'plan':
        this.plan = undefined;
        return { kind: 'plan' };
      case 'leader':
        this.leader = undefined;
        return { kind: 'leader' };
      case 'worker':
        this.workers.delete(parsed.id);
        return { kind: 'worker', id: parsed.id };
      case 'spec':
        this.specs.delete(parsed.id);
        return { kind: 'spec', id: parsed.id };
      case 'split': {
        const old = this.splits.get(parsed.id);
        if (old) this.statusCounts[old.rec.status]--;
        this.splits.delete(parsed.id);
        return { kind: 'split', id: parsed.id };
      }
      case 'lease':
        this.leases.delete(parsed.id);
        return { kind: 'lease', id: parsed.id };
      case 'assign':
        this.assigns.delete(parsed.id);
        return { kind: 'assign', id: parsed.id };
    }
  }

  private notify(change: ViewChange): void {
    if (this.pending) {
      for (const k of change.kinds) this.pending.kinds.add(k);
      for (const id of change.ids) this.pending.ids.add(id);
      this.pending.all ||= change.all;
      this.pending.relevant ||= change.relevant;
      return;
    }
    this.pending = change;
    queueMicrotask(() => {
      const c = this.pending!;
      this.pending = undefined;
      if (this.failed) return;
      for (const l of this.listeners) l(c);
    });
  }

  private fail(error: SplitfleetError): void {
    if (this.failed) return;
    this.failed = true;
    this.onFatal(error);
  }
}

/** How often a failed resync is tried again while the store is unreachable. */
const RESYNC_RETRY_MS = 500;

function asError(e: unknown): SplitfleetError {
  return isSplitfleetError(e) ? e : new Err('STORE_UNAVAILABLE', String((e as Error)?.message ?? e), { cause: e });
}
