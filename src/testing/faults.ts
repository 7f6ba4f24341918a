/**
 * The one fault facade: what makes an in-process fleet member behave like an
 * OS process under faults, for the demo's chaos on the MemoryStore and for
 * the simulation (test/simulation/harness.ts). A clock facade (`FaultClock`)
 * over the world's clock and a store facade (`FaultStore`) over the shared
 * MemoryStore, so that a member can be:
 * - PAUSED (SIGSTOP): timers that fall due are deferred, answers and watch
 *   events are held; on resume all of it runs in due order, as a stopped
 *   process finds its world moved on when it wakes. A request already on its
 *   way (sent before the pause, or by a continuation already running) still
 *   reaches the store, unless the member was paused *at* that request
 *   (`holdAtCall`): then it is sent on resume, after the world moved on;
 * - CRASHED (SIGKILL): its timers never fire again, nothing it asks of the
 *   store is executed or answered, its watches stop; it writes nothing, does
 *   not release or revoke, and its leases expire on their own;
 * - given DELAYED DELIVERY: its watch events arrive late (order kept);
 * - given a SLOW LINK: each request reaches the store half its latency late
 *   and its answer comes back the other half later, on the world's clock, so
 *   an answer can outlive opTimeoutMs while its write still lands (a crash
 *   drops the answer, not the request already sent).
 *
 * Invariants: the facades, not the coordinator, implement the faults (the
 * code under test never cooperates with its own failure) and decide nothing;
 * the coordinator sees an ordinary Clock and Store. Internal: exported by
 * neither src/index.ts nor src/testing/index.ts.
 */
import { systemClock, type Clock } from '../clock.js';
import { BaseStore } from '../store/base.js';
import type { MemoryStore } from '../store/memory.js';
import type {
  KeyValue, ListOptions, ListPage, Txn, TxnResult, WatchEvent, WatchHandle, WatchOptions,
} from '../store/store.js';

/** Drains the microtask queue: everything MemoryStore and the coordinator chain on it settles. */
export const flush = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

// ---- the clock facade -----------------------------------------------------------

interface FaultTimer { at: number; seq: number; fn: () => void; cancel: () => void }

/** One member's view of the world's clock (real or virtual): pausable, killable. */
export class FaultClock implements Clock {
  private paused = false;
  private dead = false;
  private seq = 0;
  private readonly pending = new Set<FaultTimer>();
  private deferred: FaultTimer[] = [];

  /** `world`: the clock every member shares (the real one in the demo, the simulation's virtual one). */
  constructor(readonly world: Clock = systemClock) {}

  now(): number {
    return this.world.now();
  }

  setTimer(ms: number, fn: () => void): () => void {
    if (this.dead) return () => undefined;
    const t: FaultTimer = { at: this.world.now() + Math.max(0, ms), seq: this.seq++, fn, cancel: () => undefined };
    t.cancel = this.world.setTimer(ms, () => {
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

  /** Runs the timers that fell due while paused, in due order, settling after each. */
  async resume(): Promise<void> {
    this.paused = false;
    while (!this.dead && !this.paused && this.deferred.length > 0) {
      this.deferred.sort((a, b) => a.at - b.at || a.seq - b.seq);
      this.deferred.shift()!.fn();
      await flush();
    }
  }

  crash(): void {
    this.dead = true;
    for (const t of this.pending) t.cancel();
    this.pending.clear();
    this.deferred = [];
  }
}

// ---- the store facade -----------------------------------------------------------

export interface FaultStoreOptions {
  /** The world's clock, on which a slow link's requests and answers travel (default the member clock's world). */
  world?: Clock;
  /** Called before each request is sent, with what it is (`get`, `txn put k, …`): a hook to crash or pause mid-call. */
  onCall?: (what: string) => void;
  /**
   * Called after `onCall`: true holds this request itself, unsent, until the member resumes (a
   * member paused *at* this call, between deciding and writing). Without it, a request made while
   * paused is sent at once, as a request already on its way would be.
   */
  holdAtCall?: (what: string) => boolean;
  /** Rewrites each transaction before it is sent (a mutant of the code under test). */
  mutate?: (txn: Txn) => Txn;
  /** Called when a request made a revision (MemoryStore applies a request synchronously: at most one). */
  onWrite?: (revision: number, what: string) => void;
  /** Called with each lease this member is granted, before the answer reaches it. */
  onLease?: (id: string) => void;
}

interface FaultWatch {
  options: WatchOptions;
  queue: { at: number; event: WatchEvent }[];
  lastAt: number;
  /** This member's watches in the order opened: picks the watch's share of a skew. */
  n: number;
  closed: boolean;
  cancel: (() => void) | undefined;
  inner: WatchHandle | undefined;
}

/**
 * One member's connection to the shared store. Requests run on the shared
 * store at once (as if sent), or half a slow link's latency later; answers are
 * held while paused and dropped once crashed; watch events go through a
 * per-watch queue on the member's clock that applies the delivery delay.
 */
export class FaultStore extends BaseStore {
  private dead = false;
  private paused = false;
  private held: (() => void)[] = [];
  private readonly watches = new Set<FaultWatch>();
  private delays: { until: number; ms: number }[] = [];
  private skews: { until: number; ms: number }[] = [];
  private opened = 0;
  private slow: { until: number; ms: number }[] = [];
  private readonly world: Clock;
  /** Lease ids granted to this member, in order. */
  readonly leases: string[] = [];

  constructor(private readonly inner: MemoryStore, private readonly clock: FaultClock, private readonly options: FaultStoreOptions = {}) {
    super();
    this.world = options.world ?? clock.world;
  }

  /** Delays every watch event arriving before `until` by `ms`. */
  delayEvents(ms: number, until: number): void {
    this.delays.push({ ms, until });
  }

  /**
   * Delays the events of each watch arriving before `until` by its own share
   * of `ms` (0 to `ms`, fixed per watch): events of two keys can then reach
   * this member out of store order, as etcd orders events within one watch
   * only. Each watch keeps its own order.
   */
  skewEvents(ms: number, until: number): void {
    this.skews.push({ ms, until });
  }

  /** Requests made before `until` take `ms` for the round trip. */
  slowRequests(ms: number, until: number): void {
    this.slow.push({ ms, until });
  }

  clearDelays(): void {
    this.delays = [];
    this.skews = [];
    this.slow = [];
  }

  pause(): void {
    this.paused = true;
  }

  resume(): void {
    this.paused = false;
    for (const fn of this.held.splice(0)) fn();
  }

  crash(): void {
    this.dead = true;
    this.held = [];
    for (const w of this.watches) {
      w.closed = true;
      w.cancel?.();
      void w.inner?.close();
    }
    this.watches.clear();
  }

  private call<T>(what: string, fn: () => Promise<T>, observe?: (v: T) => void): Promise<T> {
    if (this.dead) return new Promise<T>(() => undefined);
    this.options.onCall?.(what);
    if (this.dead) return new Promise<T>(() => undefined);
    const now = this.clock.now();
    let rtt = 0;
    for (const d of this.slow) if (now < d.until) rtt = Math.max(rtt, d.ms);
    const send = (): Promise<T> => {
      const before = this.inner.currentRevision;
      let p: Promise<T>;
      try {
        p = fn();
      } catch (e) {
        p = Promise.reject(e);
      }
      if (this.inner.currentRevision !== before) this.options.onWrite?.(this.inner.currentRevision, what);
      return p;
    };
    const back = rtt - Math.floor(rtt / 2);
    const reply = (fn: () => void) => (back === 0 ? this.answer(fn) : this.world.setTimer(back, () => this.answer(fn)));
    const hold = this.options.holdAtCall?.(what) === true && this.paused;
    return new Promise<T>((resolve, reject) => {
      const go = () =>
        send().then(
          (v) => {
            observe?.(v);
            reply(() => resolve(v));
          },
          (e) => reply(() => reject(e)),
        );
      // In flight on the world's clock: a request sent before a crash or pause still arrives.
      const launch = () => (rtt === 0 ? go() : void this.world.setTimer(Math.floor(rtt / 2), go));
      // Held at the call: sent on resume (in order with held answers), never once crashed.
      if (hold) this.held.push(launch);
      else launch();
    });
  }

  private answer(fn: () => void): void {
    if (this.dead) return;
    if (this.paused) this.held.push(fn);
    else fn();
  }

  get(key: string): Promise<KeyValue | undefined> {
    return this.call('get', () => this.inner.get(key));
  }

  list(prefix: string, options?: ListOptions): Promise<ListPage> {
    return this.call('list', () => this.inner.list(prefix, options));
  }

  protected applyTxn(original: Txn): Promise<TxnResult> {
    const txn = this.options.mutate ? this.options.mutate(original) : original;
    return this.call(`txn ${txn.success.map((o) => `${o.op} ${o.key}`).join(', ')}`, () => this.inner.txn(txn));
  }

  grantLease(ttlSeconds: number): Promise<string> {
    return this.call('grant', () => this.inner.grantLease(ttlSeconds), (id) => {
      this.leases.push(id);
      this.options.onLease?.(id);
    });
  }

  keepAliveOnce(id: string): Promise<{ ttl: number }> {
    return this.call('keepalive', () => this.inner.keepAliveOnce(id));
  }

  revokeLease(id: string): Promise<void> {
    return this.call('revoke', () => this.inner.revokeLease(id));
  }

  compact(revision: number): Promise<void> {
    return this.call('compact', () => this.inner.compact(revision));
  }

  async close(): Promise<void> {
    // The shared store outlives every member.
  }

  watch(prefix: string, options: WatchOptions): WatchHandle {
    if (this.dead) return { ready: new Promise<void>(() => undefined), close: async () => undefined };
    const w: FaultWatch = { options, queue: [], lastAt: 0, n: this.opened++, closed: false, cancel: undefined, inner: undefined };
    const innerOptions: WatchOptions = { onEvent: (event) => this.arrive(w, event) };
    if (options.fromRevision !== undefined) innerOptions.fromRevision = options.fromRevision;
    // The member's narrowing, as etcd applies it (a leader's view leaves queue pages and progress out).
    if (options.rangeStart !== undefined) innerOptions.rangeStart = options.rangeStart;
    if (options.rangeEnd !== undefined) innerOptions.rangeEnd = options.rangeEnd;
    innerOptions.onError = (e) => this.answer(() => {
      if (!w.closed) options.onError?.(e);
    });
    w.inner = this.inner.watch(prefix, innerOptions);
    this.watches.add(w);
    return {
      ready: w.inner.ready,
      close: async () => {
        w.closed = true;
        w.cancel?.();
        w.queue = [];
        this.watches.delete(w);
        await w.inner?.close();
      },
    };
  }

  private latency(w: FaultWatch, now: number): number {
    let ms = 0;
    for (const d of this.delays) if (now < d.until) ms = Math.max(ms, d.ms);
    // A watch's share of a skew: a fixed fraction in [0, 1) from its number (Knuth's multiplicative hash).
    const share = (Math.imul(w.n + 1, 2654435761) >>> 0) / 2 ** 32;
    for (const d of this.skews) if (now < d.until) ms = Math.max(ms, Math.floor(d.ms * share));
    return ms;
  }

  /** A watch event reaches the member: now, or (late, or while it is paused) through its queue, order kept. */
  private arrive(w: FaultWatch, event: WatchEvent): void {
    if (w.closed || this.dead) return;
    const now = this.clock.now();
    const at = Math.max(now + this.latency(w, now), w.lastAt);
    w.lastAt = at;
    if (w.queue.length === 0 && at <= now && !this.paused) {
      w.options.onEvent(event);
      return;
    }
    w.queue.push({ at, event });
    this.arm(w);
  }

  private arm(w: FaultWatch): void {
    if (w.cancel || w.queue.length === 0 || w.closed) return;
    w.cancel = this.clock.setTimer(Math.max(0, w.queue[0]!.at - this.clock.now()), () => {
      w.cancel = undefined;
      const now = this.clock.now();
      while (!w.closed && w.queue.length > 0 && w.queue[0]!.at <= now) w.options.onEvent(w.queue.shift()!.event);
      this.arm(w);
    });
  }
}
