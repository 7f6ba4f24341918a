/**
 * The simulation harness: a fleet of real coordinators on one MemoryStore and
 * one VirtualClock, driven step by step by a deterministic scheduler, with
 * the faults of the one fault facade (src/testing/faults.ts, which the demo
 * uses too) applied per process, each write attributed to its process for
 * the auditor.
 *
 * Invariants: time moves only in `runUntil`, one timer at a time, with the
 * microtask queue drained (one `setImmediate` turn) after each, so every
 * promise chain settles before the next timer; MemoryStore answers in
 * microtasks, so between steps every process is quiescent. The whole run is
 * a function of the schedule: no wall clock, no Math.random. A process that
 * never yields (a hot loop) or a clock that never moves (a livelock) is
 * detected, not waited on.
 *
 * It must not reach into coordinator internals: processes are driven only
 * through the public Coordinator API and the facades.
 */
import { desiredAssignment } from '../../src/assignment/engine.js';
import { VirtualClock } from '../../src/clock.js';
import { startCoordinator, type Coordinator } from '../../src/coordinator/coordinator.js';
import { DEPOSED_REASON } from '../../src/coordinator/events.js';
import type { Logger } from '../../src/coordinator/log.js';
import type { JobVerdict } from '../../src/coordinator/types.js';
import { isSplitfleetError } from '../../src/errors.js';
import { jobPrefix, leaderKey } from '../../src/protocol/keys.js';
import { MemoryStore } from '../../src/store/memory.js';
import type { Txn } from '../../src/store/store.js';
import { Auditor } from './auditor.js';
import { simHandler, type HandlerOptions } from './handler.js';
import { FaultClock, FaultStore, flush } from '../../src/testing/faults.js';

export { flush };
export type { DrainBehaviour } from './handler.js';

// ---- processes and the fleet ------------------------------------------------------

/** 'exited': startCoordinator rejected with a retryable error; a supervisor starts the id again. */
export type ProcState = 'starting' | 'running' | 'stopping' | 'stopped' | 'crashed' | 'done' | 'failed' | 'exited';

/** One incarnation of one instance id. */
export class SimProcess {
  state: ProcState = 'starting';
  paused = false;
  coordinator: Coordinator | undefined;
  verdict: JobVerdict | undefined;
  error: unknown;
  readonly clock: FaultClock;
  readonly store: FaultStore;
  /** Whether to hold the request just made, unsent, with a pause that begins at it (Fleet.trapAt). */
  atCall: ((what: string) => boolean) | undefined;

  constructor(
    readonly instance: string,
    readonly run: number,
    shared: VirtualClock,
    inner: MemoryStore,
    auditor: Auditor,
    onCall: (p: SimProcess, what: string) => void,
    mutate?: (txn: Txn) => Txn,
  ) {
    this.clock = new FaultClock(shared);
    this.store = new FaultStore(inner, this.clock, {
      world: shared,
      onCall: (what) => onCall(this, what),
      holdAtCall: (what) => this.atCall?.(what) ?? false,
      ...(mutate ? { mutate } : {}),
      onWrite: (revision, what) => auditor.attribute(revision, this.id, what),
      onLease: (id) => auditor.noteLease(id, this.id),
    });
  }

  get id(): string {
    return `${this.instance}#${this.run}`;
  }

  /** Not crashed, not stopped or stopping, not finished with an error. */
  get alive(): boolean {
    return this.state === 'starting' || this.state === 'running' || this.state === 'done';
  }
}

export interface FleetSplit {
  id: string;
  units: number;
}

export interface FleetOptions {
  job: string;
  splits: FleetSplit[];
  knobs: {
    leaseDurationMs: number;
    opTimeoutMs: number;
    rebalanceDelayMs: number;
    drainDeadlineMs: number;
    reconcileIntervalMs: number;
    maxAttempts: number;
    /** Open plans (`waves`) are planned again this often; the library's default otherwise. */
    replanIntervalMs?: number;
    /** The least part of a divided split (decision 0063); the library's default otherwise. */
    divideMinWeight?: number;
  };
  /** The job's layout (decision 0037): 'packed' keeps its splits in queue pages; default 'keys'. */
  layout?: 'keys' | 'packed';
  /**
   * A packed job's bucket count (the `buckets` option, given to every
   * coordinator of the job); absent: chosen from the first plan (one bucket
   * for a simulated job's few splits).
   */
  buckets?: number;
  /**
   * An open plan released in waves: split i of n is planned from virtual time
   * `floor(i · count / n) · everyMs` on, and the plan is final once every wave
   * is out. Each wave a packed job seeds appends pages to its buckets. Default:
   * one final plan of every split.
   */
  waves?: { count: number; everyMs: number };
  /** Lane budget of an instance. */
  maxInFlight: (instance: string) => number;
  /** Prefetch depth of an instance (substrate.md, "Prefetch"); absent: 0, the work-assignment page's model exactly. */
  prefetch?: (instance: string) => number;
  handler: (instance: string) => HandlerOptions;
  /** Assignment engine; default the production default. */
  engine?: 'reference' | 'wasm';
  /** Print every log line with its virtual time and process. */
  trace?: boolean;
  /**
   * Rewrites every transaction a process sends: a deliberately broken
   * coordinator, to check that the auditor notices (never set in real runs).
   */
  mutate?: (txn: Txn) => Txn;
}

/** Timers that may fire at one virtual instant before the run is declared livelocked. */
const MAX_STEPS_PER_INSTANT = 20_000;
/** Store requests one process may make between two scheduler steps before it counts as a hot loop. */
const MAX_CALLS_PER_STEP = 20_000;
/** How long a supervisor waits before starting an instance whose start failed. */
const SUPERVISOR_BACKOFF_MS = 1000;

interface AgendaItem { at: number; seq: number; run: () => Promise<void> | void }

/** A fleet on one MemoryStore and one VirtualClock, with a scheduler and fault injection. */
export class Fleet {
  readonly clock = new VirtualClock();
  readonly store = new MemoryStore({ clock: this.clock });
  readonly prefix: string;
  readonly auditor: Auditor;
  readonly procs: SimProcess[] = [];
  /** Harness events, for failure reports. */
  readonly events: string[] = [];
  /** Supervisor restarts scheduled and not yet run. */
  pendingRestarts = 0;
  /** Hot loops found (each crashed its process). */
  readonly livelocks: string[] = [];
  /** Terms ended as deposed while the store's leader key still named them (a view judged too early: defect 26). */
  readonly falseDepositions: string[] = [];
  private readonly callsSinceFlush = new Map<SimProcess, number>();
  /** Consulted at each store call of every process: true pauses it *at* that call (step-trap.ts). */
  atCall: ((p: SimProcess, what: string) => boolean) | undefined;
  private agenda: AgendaItem[] = [];
  private seq = 0;
  private runs = new Map<string, number>();

  constructor(readonly options: FleetOptions) {
    this.prefix = jobPrefix('splitfleet', options.job);
    this.auditor = new Auditor(this.store, this.prefix, this.clock);
  }

  note(what: string): void {
    this.events.push(`t=${this.clock.now()} ${what}`);
    if (this.options.trace) console.log(`[sim t=${this.clock.now()}] ${what}`);
  }

  /** Starts an incarnation of `instance` (a restart when the id ran before). */
  start(instance: string): SimProcess {
    const run = (this.runs.get(instance) ?? 0) + 1;
    this.runs.set(instance, run);
    const p = new SimProcess(instance, run, this.clock, this.store, this.auditor, (q, what) => this.guard(q, what), this.options.mutate);
    p.atCall = (what) => this.atCall?.(p, what) ?? false;
    this.auditor.noteProc(p.id, instance, this.options.maxInFlight(instance));
    this.procs.push(p);
    this.note(`start ${p.id}`);
    const engine = this.options.engine;
    const { layout, buckets } = this.options;
    startCoordinator({
      store: p.store,
      clock: p.clock,
      job: this.options.job,
      instance,
      maxInFlight: this.options.maxInFlight(instance),
      prefetch: this.options.prefetch?.(instance) ?? 0,
      ...this.options.knobs,
      planner: () => this.plan(p.clock.now()),
      // A schedule names 'packed'; every other job is a `keys` job, whatever the library's default.
      layout: layout ?? 'keys',
      ...(buckets !== undefined ? { buckets } : {}),
      handler: simHandler(p, this.auditor, this.options.handler(instance)),
      logger: this.logger(p),
      ...(engine ? { assigner: async (input) => desiredAssignment(input, { engine }) } : {}),
    }).then(
      (c) => {
        p.coordinator = c;
        if (p.state === 'starting') p.state = 'running';
        c.on('leadership-lost', (e) => {
          if (e.reason === DEPOSED_REASON) this.checkDeposition(p, e.generation);
        });
        c.done.then(
          (v) => {
            if (v === 'stopped') return; // a leave or a close, recorded where it was made
            p.verdict = v;
            if (p.state === 'running') p.state = 'done';
            this.note(`${p.id} done: ${v}`);
          },
          (e) => this.failed(p, e),
        );
      },
      (e) => this.startFailed(p, e),
    );
    return p;
  }

  /** What the planner returns at virtual time `now`: every split of the waves released by then. */
  private plan(now: number): { final: boolean; splits: { id: string; weight: number; descriptor: { units: number } }[] } {
    const { splits, waves } = this.options;
    const n = splits.length;
    const out = waves ? splits.filter((_, i) => Math.floor((i * waves.count) / n) * waves.everyMs <= now) : splits;
    return { final: out.length === n, splits: out.map((s) => ({ id: s.id, weight: s.units * 1000, descriptor: { units: s.units } })) };
  }

  /**
   * startCoordinator rejected. A retryable error (the store was slow or away)
   * is what a supervisor answers by starting the process again: this
   * incarnation exits and another starts after SUPERVISOR_BACKOFF_MS, unless
   * the schedule has started one meanwhile. Anything else is a failure.
   */
  private startFailed(p: SimProcess, e: unknown): void {
    if (p.state === 'crashed') return;
    if (!isSplitfleetError(e) || !e.retryable) return this.failed(p, e);
    p.state = 'exited';
    p.error = e;
    p.clock.crash();
    p.store.crash();
    this.note(`${p.id} exited (${e.code}: ${e.message}); restarting in ${SUPERVISOR_BACKOFF_MS} ms`);
    this.pendingRestarts++;
    this.at(this.clock.now() + SUPERVISOR_BACKOFF_MS, () => {
      this.pendingRestarts--;
      const busy = this.procs.some((q) => q.instance === p.instance && q.state !== 'crashed' && q.state !== 'stopped' && q.state !== 'exited');
      if (!busy) this.start(p.instance);
    });
  }

  /**
   * Store requests a process made since the scheduler last got the event loop
   * back. MemoryStore answers in microtasks, so a process that keeps asking
   * without waiting on a timer or an event starves everything else: such a
   * hot loop is recorded and the process is crashed to end it.
   */
  private guard(p: SimProcess, what: string): void {
    const n = (this.callsSinceFlush.get(p) ?? 0) + 1;
    this.callsSinceFlush.set(p, n);
    if (n === MAX_CALLS_PER_STEP) {
      this.livelocks.push(`${p.id} made ${n} store requests (last: ${what}) at t=${this.clock.now()} without yielding to a timer or event`);
      this.crash(p);
    }
  }

  private failed(p: SimProcess, e: unknown): void {
    if (p.state === 'crashed') return;
    p.state = 'failed';
    p.error = e;
    this.note(`${p.id} FAILED: ${(e as Error)?.message ?? String(e)}`);
  }

  private logger(p: SimProcess): Logger {
    if (!this.options.trace) return { debug() {}, info() {}, warn() {}, error() {} };
    const line = (level: string) => (obj: object, msg?: string) =>
      console.log(`[t=${this.clock.now()} ${p.id} ${level}] ${msg ?? ''} ${JSON.stringify(obj, (_k, v) => (v instanceof Error ? v.message : v))}`);
    return { debug: line('debug'), info: line('info'), warn: line('warn'), error: line('error') };
  }

  /**
   * A term `p` ended as deposed: the store's leader key, read at this very
   * moment, must not name it. A key that names the term (its instance and
   * generation) has held that value since the term was won, since a key
   * rewritten or deleted never comes back at the term's revision; so the
   * deposition was judged on a view that had not seen the key.
   */
  private checkDeposition(p: SimProcess, generation: number): void {
    const at = this.clock.now();
    // MemoryStore.get reads before its first await: the answer is the store's state now.
    void this.store.get(leaderKey(this.prefix)).then((kv) => {
      if (!kv) return;
      const rec = JSON.parse(kv.value) as { instance?: unknown; generation?: unknown };
      if (rec.instance === p.instance && rec.generation === generation) {
        this.falseDepositions.push(`${p.id} ended generation ${generation} as deposed at t=${at} while the leader key (revision ${kv.modRevision}) still named it`);
      }
    });
  }

  /** SIGKILL: nothing more runs or is written; leases expire on their own. */
  crash(p: SimProcess): void {
    if (p.state === 'crashed') return;
    this.note(`crash ${p.id}${p.coordinator?.isLeader ? ' (leader)' : ''}`);
    p.state = 'crashed';
    p.clock.crash();
    p.store.crash();
  }

  /** SIGSTOP for `ms`, then SIGCONT. */
  pause(p: SimProcess, ms: number): void {
    if (p.paused || !p.alive) return;
    this.note(`pause ${p.id} for ${ms} ms`);
    p.paused = true;
    p.clock.pause();
    p.store.pause();
    this.at(this.clock.now() + ms, () => this.resume(p));
  }

  async resume(p: SimProcess): Promise<void> {
    if (!p.paused) return;
    this.note(`resume ${p.id}`);
    p.paused = false;
    p.store.resume();
    await flush();
    await p.clock.resume();
  }

  /** Graceful stop (SIGTERM): drain, release, resign, revoke. */
  leave(p: SimProcess): void {
    const c = p.coordinator;
    if (!c || p.state !== 'running' || p.paused) return;
    this.note(`leave ${p.id}`);
    p.state = 'stopping';
    c.stop().then(
      () => {
        if (p.state === 'stopping') p.state = 'stopped';
        this.note(`${p.id} stopped`);
      },
      (e) => this.failed(p, e),
    );
  }

  /** Store-side expiry of every lease the process holds (as if etcd lost them). */
  expireLeases(p: SimProcess): void {
    if (!p.alive) return;
    this.note(`expire leases of ${p.id}`);
    for (const id of p.store.leases) this.store.expireLease(id);
  }

  /** Delays `p`'s watch events by `ms` for the next `duration` ms. */
  delay(p: SimProcess, ms: number, duration: number): void {
    if (!p.alive) return;
    this.note(`delay ${p.id} events by ${ms} ms for ${duration} ms`);
    p.store.delayEvents(ms, this.clock.now() + duration);
  }

  /** Delays each of `p`'s watches by its own share of `ms` for the next `duration` ms (events of two keys out of order). */
  skew(p: SimProcess, ms: number, duration: number): void {
    if (!p.alive) return;
    this.note(`skew ${p.id} watches by up to ${ms} ms for ${duration} ms`);
    p.store.skewEvents(ms, this.clock.now() + duration);
  }

  /** Makes `p`'s store round trips take `ms` for the next `duration` ms. */
  slowLink(p: SimProcess, ms: number, duration: number): void {
    if (!p.alive) return;
    this.note(`slow link for ${p.id}: ${ms} ms round trips for ${duration} ms`);
    p.store.slowRequests(ms, this.clock.now() + duration);
  }

  /** Schedules a harness action at virtual time `at`. */
  at(at: number, run: () => Promise<void> | void): void {
    this.agenda.push({ at, seq: this.seq++, run });
    this.agenda.sort((a, b) => a.at - b.at || a.seq - b.seq);
  }

  /** Runs timers and agenda items in time order up to `target`, or until `stop()` holds. */
  async runUntil(target: number, stop?: () => boolean): Promise<boolean> {
    let instant = -1;
    let sameInstant = 0;
    for (;;) {
      await flush();
      this.callsSinceFlush.clear();
      if (stop?.()) return true;
      if (this.clock.now() === instant) {
        if (++sameInstant > MAX_STEPS_PER_INSTANT) {
          throw new Error(`livelock: more than ${MAX_STEPS_PER_INSTANT} timers fired at virtual time ${instant} without time moving`);
        }
      } else {
        instant = this.clock.now();
        sameInstant = 0;
      }
      const agendaAt = this.agenda[0]?.at ?? Infinity;
      const limit = Math.min(target, agendaAt);
      if (this.clock.step(limit)) continue;
      if (agendaAt <= target) {
        await this.agenda.shift()!.run();
        continue;
      }
      return stop?.() ?? false;
    }
  }

  async advance(ms: number, stop?: () => boolean): Promise<boolean> {
    return this.runUntil(this.clock.now() + ms, stop);
  }

  /** Incarnations not crashed, stopped or failed. */
  get live(): SimProcess[] {
    return this.procs.filter((p) => p.alive);
  }

  get leader(): SimProcess | undefined {
    return this.procs.find((p) => p.alive && p.coordinator?.isLeader);
  }

  /** Ends faults: resumes every paused process and ends every delay (events in transit still arrive late). */
  async calm(): Promise<void> {
    for (const p of this.procs) {
      p.store.clearDelays();
      if (p.paused) await this.resume(p);
    }
  }

  /** A one-line summary of each incarnation, for failure reports. */
  describe(): string[] {
    return this.procs.map((p) =>
      `${p.id} ${p.state}${p.paused ? ' paused' : ''}${p.coordinator?.isLeader ? ' leader' : ''} held=[${p.coordinator?.held.join(',') ?? ''}]${p.verdict ? ` verdict=${p.verdict}` : ''}${p.error ? ` error=${(p.error as Error).message}` : ''}`);
  }
}
