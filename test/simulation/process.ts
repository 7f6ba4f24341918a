/**
 * One simulated process's connection to the shared world: a clock facade
 * (`ProcClock`) over the shared VirtualClock and a store facade (`ProcStore`)
 * over the shared MemoryStore, so that the process can be:
 * - PAUSED (SIGSTOP): timers that fall due are deferred, watch events and
 *   answers are held; all of it runs, in due order, on resume;
 * - CRASHED (SIGKILL): its timers never fire again, nothing it asks of the
 *   store is executed or answered, its watches stop; it writes nothing, does
 *   not release or revoke, and its leases expire on their own;
 * - given DELAYED DELIVERY: its watch events arrive late (order kept);
 * - given a SLOW LINK: each request reaches the store half its latency late
 *   and its answer comes back the other half later, so an answer can outlive
 *   opTimeoutMs while its write still lands (a crash drops the answer, not
 *   the request already sent).
 *
 * The facades, not the coordinator, implement the faults: the code under
 * test never cooperates with its own failure. Every write is attributed to
 * the process that made it, for the auditor.
 */
import type { Clock, VirtualClock } from '../../src/clock.js';
import type { MemoryStore } from '../../src/store/memory.js';
import {
  type KeyValue, type ListOptions, type ListPage, type Txn, type TxnResult, type WatchEvent, type WatchHandle, type WatchOptions,
} from '../../src/store/store.js';
import { BaseStore } from '../../src/store/base.js';
import type { Auditor } from './auditor.js';

/** Drains the microtask queue: everything MemoryStore and the coordinator chain on it settles. */
export const flush = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

// ---- the clock facade -----------------------------------------------------------

interface ProcTimer { at: number; seq: number; fn: () => void; cancel: () => void }

/** One process's view of the shared clock: pausable, killable. */
export class ProcClock implements Clock {
  private paused = false;
  private dead = false;
  private seq = 0;
  private readonly pending = new Set<ProcTimer>();
  private deferred: ProcTimer[] = [];

  constructor(private readonly shared: VirtualClock) {}

  now(): number {
    return this.shared.now();
  }

  setTimer(ms: number, fn: () => void): () => void {
    if (this.dead) return () => undefined;
    const t: ProcTimer = { at: this.shared.now() + Math.max(0, ms), seq: this.seq++, fn, cancel: () => undefined };
    t.cancel = this.shared.setTimer(ms, () => {
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

interface ProcWatch {
  options: WatchOptions;
  queue: { at: number; event: WatchEvent }[];
  lastAt: number;
  closed: boolean;
  cancel: (() => void) | undefined;
  inner: WatchHandle | undefined;
}

/**
 * One process's connection to the shared store. Requests run on the shared
 * store at once (as if sent), answers are held while paused and dropped once
 * crashed; watch events go through a per-watch queue that applies the
 * scheduled latency. Every write is attributed to this process for the auditor.
 */
export class ProcStore extends BaseStore {
  private dead = false;
  private paused = false;
  private held: (() => void)[] = [];
  private readonly watches = new Set<ProcWatch>();
  private delays: { until: number; ms: number }[] = [];
  private slow: { until: number; ms: number }[] = [];
  /** Lease ids granted to this process, in order. */
  readonly leases: string[] = [];

  constructor(
    private readonly inner: MemoryStore,
    private readonly shared: VirtualClock,
    private readonly clock: ProcClock,
    private readonly procId: string,
    private readonly auditor: Auditor,
    private readonly onCall: (what: string) => void = () => undefined,
    private readonly mutate: (txn: Txn) => Txn = (txn) => txn,
  ) {
    super();
  }

  /** Delays every watch event arriving before `until` by `ms`. */
  delayEvents(ms: number, until: number): void {
    this.delays.push({ ms, until });
  }

  /** Requests made before `until` take `ms` for the round trip. */
  slowRequests(ms: number, until: number): void {
    this.slow.push({ ms, until });
  }

  clearDelays(): void {
    this.delays = [];
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
    this.onCall(what);
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
      // MemoryStore applies a request synchronously inside the call: one request, at most one revision.
      if (this.inner.currentRevision !== before) this.auditor.attribute(this.inner.currentRevision, this.procId, what);
      return p;
    };
    const back = rtt - Math.floor(rtt / 2);
    const reply = (fn: () => void) => (back === 0 ? this.answer(fn) : this.shared.setTimer(back, () => this.answer(fn)));
    return new Promise<T>((resolve, reject) => {
      const go = () =>
        send().then(
          (v) => {
            observe?.(v);
            reply(() => resolve(v));
          },
          (e) => reply(() => reject(e)),
        );
      // In flight on the shared clock: a request sent before a crash or pause still arrives.
      if (rtt === 0) go();
      else this.shared.setTimer(Math.floor(rtt / 2), go);
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
    const txn = this.mutate(original);
    return this.call(`txn ${txn.success.map((o) => `${o.op} ${o.key}`).join(', ')}`, () => this.inner.txn(txn));
  }

  grantLease(ttlSeconds: number): Promise<string> {
    return this.call('grant', () => this.inner.grantLease(ttlSeconds), (id) => {
      this.leases.push(id);
      this.auditor.noteLease(id, this.procId);
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
    // The shared store outlives every process.
  }

  watch(prefix: string, options: WatchOptions): WatchHandle {
    if (this.dead) return { ready: new Promise<void>(() => undefined), close: async () => undefined };
    const w: ProcWatch = { options, queue: [], lastAt: 0, closed: false, cancel: undefined, inner: undefined };
    const innerOptions: WatchOptions = { onEvent: (event) => this.arrive(w, event) };
    if (options.fromRevision !== undefined) innerOptions.fromRevision = options.fromRevision;
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

  private latency(now: number): number {
    let ms = 0;
    for (const d of this.delays) if (now < d.until) ms = Math.max(ms, d.ms);
    return ms;
  }

  private arrive(w: ProcWatch, event: WatchEvent): void {
    if (w.closed || this.dead) return;
    const now = this.clock.now();
    const at = Math.max(now + this.latency(now), w.lastAt);
    w.lastAt = at;
    if (w.queue.length === 0 && at <= now && !this.paused) {
      w.options.onEvent(event);
      return;
    }
    w.queue.push({ at, event });
    this.arm(w);
  }

  private arm(w: ProcWatch): void {
    if (w.cancel || w.queue.length === 0 || w.closed) return;
    w.cancel = this.clock.setTimer(Math.max(0, w.queue[0]!.at - this.clock.now()), () => {
      w.cancel = undefined;
      const now = this.clock.now();
      while (!w.closed && w.queue.length > 0 && w.queue[0]!.at <= now) w.options.onEvent(w.queue.shift()!.event);
      this.arm(w);
    });
  }
}
