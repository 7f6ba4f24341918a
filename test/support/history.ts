/**
 * The history recorder of the real-etcd tests: follows one job's prefix from
 * the moment it starts, every put and delete in revision order, and `sync()`
 * proves everything written before it has been recorded. The checks over a
 * history live in invariants.ts.
 *
 * Invariants: it only watches and writes its own sync marker, outside every
 * job's prefix; each wait is bounded.
 */
import { parseKey, type KeyKind } from '../../src/protocol/keys.js';
import type { Store } from '../../src/store/store.js';
import { waitUntil } from './wait.js';

export interface HistoryEvent {
  rev: number;
  type: 'put' | 'delete';
  key: string;
  kind: KeyKind | 'unknown';
  id: string | undefined;
  /** The parsed record (puts only). */
  rec: Record<string, any> | undefined;
  lease: string | undefined;
  /** Local receive time. */
  at: number;
  /**
   * On a 'split' event: the state was produced by a write of `progress.{id}`
   * alone (a commit), not of `split.{id}`; see `Recorder`.
   */
  commit?: boolean;
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
  private readonly handle;
  private syncRev = 0;
  private lastRev = 0;
  private readonly splitRecs = new Map<string, Record<string, any>>();
  private readonly committed = new Map<string, unknown>();

  static async start(store: Store, prefix: string): Promise<Recorder> {
    const { revision } = await store.list('splitfleet/', { limit: 1 });
    const r = new Recorder(store, prefix, revision + 1);
    await r.handle.ready;
    return r;
  }

  private constructor(private readonly store: Store, readonly prefix: string, fromRevision: number) {
    this.handle = store.watch('splitfleet/', {
      fromRevision,
      onEvent: (e) => {
        this.lastRev = Math.max(this.lastRev, e.modRevision);
        if (e.key === SYNC_KEY) return;
        if (!e.key.startsWith(prefix)) return;
        const parsed = parseKey(prefix, e.key);
        let rec: Record<string, any> | undefined;
        if (e.type === 'put' && e.value !== undefined) {
          try {
            rec = JSON.parse(e.value) as Record<string, any>;
          } catch {
            rec = undefined;
          }
        }
        const id = 'id' in parsed ? parsed.id : undefined;
        const event: HistoryEvent = { rev: e.modRevision, type: e.type, key: e.key, kind: parsed.kind, id, rec, lease: e.lease, at: Date.now() };
        if (parsed.kind === 'split' && id !== undefined && e.type === 'put' && rec) {
          this.splitRecs.set(id, rec);
          event.rec = { ...rec, progress: this.committed.get(id) ?? null };
        }
        this.events.push(event);
        if (parsed.kind === 'progress' && id !== undefined && e.type === 'put' && rec) {
          this.committed.set(id, rec.progress);
          const split = this.splitRecs.get(id);
          if (!split) return;
          let same: HistoryEvent | undefined;
          for (let i = this.events.length - 1; i >= 0 && !same; i--) if (this.events[i]!.kind === 'split' && this.events[i]!.id === id) same = this.events[i];
          if (same && same.rev === e.modRevision && same.rec) same.rec = { ...same.rec, progress: rec.progress };
          else {
            this.events.push({ rev: e.modRevision, type: 'put', key: e.key.replace(`${prefix}progress.`, `${prefix}split.`), kind: 'split', id, rec: { ...split, progress: rec.progress }, lease: undefined, at: Date.now(), commit: true });
          }
        }
      },
    });
  }

  /** Writes a marker outside every job and waits until the recorder has seen it. */
  async sync(): Promise<number> {
    const rev = await this.store.put(SYNC_KEY, String(++this.syncRev));
    await waitUntil('the history recorder to catch up', () => this.lastRev >= rev, { timeoutMs: 10_000, intervalMs: 10 });
    return rev;
  }

  of(kind: KeyKind, id?: string): HistoryEvent[] {
    return this.events.filter((e) => e.kind === kind && (id === undefined || e.id === id));
  }

  between(fromRev: number, toRev: number, kind?: KeyKind): HistoryEvent[] {
    return this.events.filter((e) => e.rev > fromRev && e.rev < toRev && (kind === undefined || e.kind === kind));
  }

  async close(): Promise<void> {
    await this.handle.close();
  }
}
