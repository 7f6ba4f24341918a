/**
 * The one history recorder, for the real-etcd integration tests, the chaos
 * auditor and the simulation auditor: a watch on a job's keys from a given
 * revision, every put and delete kept in revision order (its record parsed
 * leniently, its raw value kept), and `sync()`, which writes a marker outside
 * the job (inside the watch) and resolves once the watch has delivered it, so
 * everything written before has been recorded. The checks over a history live
 * in invariants.ts and in each suite's auditor.
 *
 * `Recorder` is the integration tests' view of the same history, with each
 * split's committed progress merged into its 'split' events.
 *
 * Invariants: it only watches, and writes nothing but its own marker; the
 * receive time comes from an injected clock (virtual in the simulation, so a
 * run stays a function of its schedule); every wait is bounded.
 */
import type { Clock } from '../../src/clock.js';
import { parseKey, type KeyKind } from '../../src/protocol/keys.js';
import type { Store, WatchEvent, WatchHandle } from '../../src/store/store.js';

/** One write to the job's keys, as the recorder saw it. */
export interface HistoryEvent {
  rev: number;
  type: 'put' | 'delete';
  key: string;
  kind: KeyKind | 'unknown';
  /** Split id or instance id, for keyed kinds. */
  id: string | undefined;
  /** The record, parsed leniently (puts only; undefined when it is not JSON). */
  rec: Record<string, any> | undefined;
  /** The raw value (puts only); absent on hand-made histories. */
  value?: string;
  /** The store lease the put is attached to. */
  lease: string | undefined;
  /** When the recorder received it: wall-clock ms (Date.now), or the injected clock's. */
  at: number;
  /**
   * On a 'split' event of `Recorder`: the state was produced by a write of
   * `progress.{id}` alone (a commit), not of `split.{id}`.
   */
  commit?: boolean;
}

export interface HistoryOptions {
  /** The first revision recorded (default: the watch's start). */
  fromRevision?: number;
  /** Receive times (default wall-clock Date.now, comparable with a member's `t`; the simulation's virtual clock there). */
  clock?: Pick<Clock, 'now'>;
  /** The watch failed (it retries by itself; the failure is kept for a message). */
  onError?: (e: Error) => void;
}

/** Records every write under `prefix` seen by a watch on `watchPrefix` (which contains it and the sync marker). */
export class HistoryRecorder {
  readonly events: HistoryEvent[] = [];
  /** The highest revision the watch has delivered (marker writes and other keys included). */
  lastRevision = 0;
  readonly ready: Promise<void>;
  private readonly handle: WatchHandle;
  private readonly clock: Pick<Clock, 'now'>;
  private readonly listeners: ((e: HistoryEvent) => void)[] = [];
  private waiters: { rev: number; resolve: () => void }[] = [];
  private syncs = 0;

  constructor(private readonly store: Store, watchPrefix: string, readonly prefix: string, options: HistoryOptions = {}) {
    this.clock = options.clock ?? { now: () => Date.now() };
    this.handle = store.watch(watchPrefix, {
      ...(options.fromRevision !== undefined ? { fromRevision: options.fromRevision } : {}),
      onEvent: (e) => this.onEvent(e),
      ...(options.onError ? { onError: options.onError } : {}),
    });
    this.ready = this.handle.ready;
  }

  /** Calls `fn` with every event recorded from now on, as it is recorded. */
  follow(fn: (e: HistoryEvent) => void): void {
    this.listeners.push(fn);
  }

  /**
   * Writes `marker` (a key outside `prefix`, inside the watch) and waits until
   * the watch delivers it: every write before now is then recorded. Retries
   * the write while the store refuses it, up to `timeoutMs`. Returns the
   * marker's revision.
   */
  async sync(marker: string, timeoutMs: number): Promise<number> {
    const deadline = this.clock.now() + timeoutMs;
    let rev: number | undefined;
    while (rev === undefined) {
      try {
        rev = await this.store.put(marker, String(++this.syncs));
      } catch (e) {
        if (this.clock.now() > deadline) throw new Error(`history sync: cannot write the marker: ${(e as Error).message}`);
        await new Promise((r) => setTimeout(r, 200));
      }
    }
    if (this.lastRevision >= rev) return rev;
    const target = rev;
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`history sync: the watch did not reach revision ${target} within ${timeoutMs} ms (at ${this.lastRevision})`)),
        Math.max(1000, deadline - this.clock.now()),
      );
      this.waiters.push({ rev: target, resolve: () => (clearTimeout(timer), resolve()) });
    });
    return rev;
  }

  async close(): Promise<void> {
    await this.handle.close();
  }

  private onEvent(e: WatchEvent): void {
    this.lastRevision = Math.max(this.lastRevision, e.modRevision);
    if (e.key.startsWith(this.prefix)) {
      const parsed = parseKey(this.prefix, e.key);
      let rec: Record<string, any> | undefined;
      if (e.type === 'put') {
        try {
          rec = JSON.parse(e.value ?? '') as Record<string, any>;
        } catch {
          rec = undefined;
        }
      }
      const id = 'id' in parsed ? parsed.id : undefined;
      const event: HistoryEvent = { rev: e.modRevision, type: e.type, key: e.key, kind: parsed.kind, id, rec, lease: e.lease, at: this.clock.now() };
      if (e.type === 'put' && e.value !== undefined) event.value = e.value;
      this.events.push(event);
      for (const fn of this.listeners) fn(event);
    }
    const ready = this.waiters.filter((w) => w.rev <= this.lastRevision);
    this.waiters = this.waiters.filter((w) => w.rev > this.lastRevision);
    for (const w of ready) w.resolve();
  }
}

/** Outside every job's prefix (`<root>/<job>/`), inside the recorder's watch. */
const SYNC_KEY = 'splitfleet/test-sync';

/**
 * Follows one job's prefix from the moment it starts (start it before the
 * job's first member): every put and delete, in revision order. `sync()`
 * makes sure everything written before it has been recorded.
 *
 * Committed progress lives in `progress.{id}`, which split.{id} no longer
 * carries. The 'split' events are the split's *state* after each revision
 * that wrote either key: the record with `progress` set to the committed
 * progress then (null before the first commit). A commit (progress.{id}
 * alone) is a 'split' event with `commit: true`; a release or completion,
 * which writes both keys in one transaction, is one event. The raw
 * 'progress' events are recorded too.
 */
export class Recorder {
  readonly events: HistoryEvent[] = [];
  private readonly splitRecs = new Map<string, Record<string, any>>();
  private readonly committed = new Map<string, unknown>();

  static async start(store: Store, prefix: string): Promise<Recorder> {
    const { revision } = await store.list('splitfleet/', { limit: 1 });
    const r = new Recorder(new HistoryRecorder(store, 'splitfleet/', prefix, { fromRevision: revision + 1 }));
    await r.history.ready;
    return r;
  }

  /** The job's key prefix. */
  get prefix(): string {
    return this.history.prefix;
  }

  private constructor(private readonly history: HistoryRecorder) {
    const prefix = history.prefix;
    history.follow((raw) => {
      const { kind, id, rec } = raw;
      const event: HistoryEvent = { ...raw };
      if (kind === 'split' && id !== undefined && raw.type === 'put' && rec) {
        this.splitRecs.set(id, rec);
        event.rec = { ...rec, progress: this.committed.get(id) ?? null };
      }
      this.events.push(event);
      if (kind === 'progress' && id !== undefined && raw.type === 'put' && rec) {
        this.committed.set(id, rec.progress);
        const split = this.splitRecs.get(id);
        if (!split) return;
        let same: HistoryEvent | undefined;
        for (let i = this.events.length - 1; i >= 0 && !same; i--) if (this.events[i]!.kind === 'split' && this.events[i]!.id === id) same = this.events[i];
        if (same && same.rev === raw.rev && same.rec) same.rec = { ...same.rec, progress: rec.progress };
        else {
          this.events.push({ rev: raw.rev, type: 'put', key: raw.key.replace(`${prefix}progress.`, `${prefix}split.`), kind: 'split', id, rec: { ...split, progress: rec.progress }, lease: undefined, at: raw.at, commit: true });
        }
      }
    });
  }

  /** Writes a marker outside every job and waits until the recorder has seen it. */
  sync(): Promise<number> {
    return this.history.sync(SYNC_KEY, 10_000);
  }

  of(kind: KeyKind, id?: string): HistoryEvent[] {
    return this.events.filter((e) => e.kind === kind && (id === undefined || e.id === id));
  }

  between(fromRev: number, toRev: number, kind?: KeyKind): HistoryEvent[] {
    return this.events.filter((e) => e.rev > fromRev && e.rev < toRev && (kind === undefined || e.kind === kind));
  }

  async close(): Promise<void> {
    await this.history.close();
  }
}
