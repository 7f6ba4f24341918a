/**
 * What makes an in-process fleet member behave like an OS process for the
 * demo's chaos on the MemoryStore: a clock facade and a store facade per
 * member, over the real clock and the shared store.
 *
 * - crash() (SIGKILL): the member's timers never fire again (its lease
 *   renewals stop, its handlers freeze), nothing it sends reaches the store
 *   and nothing comes back, its watches stop. It writes nothing, releases
 *   nothing and revokes nothing: its lease expires on its own.
 * - pause() / resume() (SIGSTOP / SIGCONT): timers falling due are deferred,
 *   requests are held unsent, answers and watch events are held; on resume
 *   all of it runs in order, exactly as a stopped process finds its world
 *   moved on when it wakes.
 *
 * Invariants: nothing here decides anything; the coordinator sees an
 * ordinary Clock and Store. Store promises of a crashed member never settle.
 */
import { systemClock, type Clock } from '../clock.js';
import {
  type KeyValue, type ListOptions, type ListPage, type Store, type Txn, type TxnResult, type WatchHandle, type WatchOptions,
} from '../store/store.js';
import { BaseStore } from '../store/base.js';

interface MemberTimer { at: number; seq: number; fn: () => void; cancel: () => void }

/** One member's clock: the real clock, pausable and killable. */
export class MemberClock implements Clock {
  private paused = false;
  private dead = false;
  private seq = 0;
  private readonly pending = new Set<MemberTimer>();
  private deferred: MemberTimer[] = [];

  constructor(private readonly base: Clock = systemClock) {}

  now(): number {
    return this.base.now();
  }

  setTimer(ms: number, fn: () => void): () => void {
    if (this.dead) return () => undefined;
    const t: MemberTimer = { at: this.base.now() + Math.max(0, ms), seq: this.seq++, fn, cancel: () => undefined };
    t.cancel = this.base.setTimer(ms, () => {
      this.pending.delete(t);
      if (this.dead) return;
      if (this.paused) this.deferred.push(t);
      else fn();
    });
    this.pending.add(t);
    return () => {
      t.cancel();
      this.pending.delete(t);
      const i = this.deferred.indexOf(t);
      if (i >= 0) this.deferred.splice(i, 1);
    };
  }

  pause(): void {
    this.paused = true;
  }

  /** Runs the timers that fell due while paused, in due order. */
  resume(): void {
    this.paused = false;
    const due = this.deferred.splice(0).sort((a, b) => a.at - b.at || a.seq - b.seq);
    for (const t of due) {
      if (this.dead) return;
      t.fn();
    }
  }

  crash(): void {
    this.dead = true;
    for (const t of this.pending) t.cancel();
    this.pending.clear();
    this.deferred = [];
  }
}

/** One member's connection to the shared store: pausable and killable. */
export class MemberStore extends BaseStore {
  private dead = false;
  private paused = false;
  /** Requests not yet sent, answers and events not yet delivered: run in order on resume. */
  private held: (() => void)[] = [];
  private readonly watches = new Set<{ closed: boolean; inner: WatchHandle | undefined }>();

  constructor(private readonly inner: Store) {
    super();
  }

  pause(): void {
    this.paused = true;
  }

  resume(): void {
    this.paused = false;
    while (!this.paused && !this.dead && this.held.length > 0) this.held.shift()!();
  }

  crash(): void {
    this.dead = true;
    this.held = [];
    for (const w of this.watches) {
      w.closed = true;
      void w.inner?.close();
    }
    this.watches.clear();
  }

  /** Runs now, or on resume; never when crashed. */
  private later(fn: () => void): void {
    if (this.dead) return;
    if (this.paused) this.held.push(fn);
    else fn();
  }

  private call<T>(fn: () => Promise<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.later(() => {
        let p: Promise<T>;
        try {
          p = fn();
        } catch (e) {
          p = Promise.reject(e);
        }
        p.then((v) => this.later(() => resolve(v)), (e) => this.later(() => reject(e)));
      });
    });
  }

  get(key: string): Promise<KeyValue | undefined> {
    return this.call(() => this.inner.get(key));
  }

  list(prefix: string, options?: ListOptions): Promise<ListPage> {
    return this.call(() => this.inner.list(prefix, options));
  }

  protected applyTxn(txn: Txn): Promise<TxnResult> {
    return this.call(() => this.inner.txn(txn));
  }

  grantLease(ttlSeconds: number): Promise<string> {
    return this.call(() => this.inner.grantLease(ttlSeconds));
  }

  keepAliveOnce(id: string): Promise<{ ttl: number }> {
    return this.call(() => this.inner.keepAliveOnce(id));
  }

  revokeLease(id: string): Promise<void> {
    return this.call(() => this.inner.revokeLease(id));
  }

  compact(revision: number): Promise<void> {
    return this.call(() => this.inner.compact(revision));
  }

  async close(): Promise<void> {
    // The shared store outlives every member.
  }

  watch(prefix: string, options: WatchOptions): WatchHandle {
    if (this.dead) return { ready: new Promise<void>(() => undefined), close: async () => undefined };
    const w = { closed: false, inner: undefined as WatchHandle | undefined };
    const innerOptions: WatchOptions = {
      onEvent: (event) => this.later(() => {
        if (!w.closed) options.onEvent(event);
      }),
      onError: (e) => this.later(() => {
        if (!w.closed) options.onError?.(e);
      }),
    };
    if (options.fromRevision !== undefined) innerOptions.fromRevision = options.fromRevision;
    w.inner = this.inner.watch(prefix, innerOptions);
    this.watches.add(w);
    return {
      ready: w.inner.ready,
      close: async () => {
        w.closed = true;
        this.watches.delete(w);
        await w.inner?.close();
      },
    };
  }
}
