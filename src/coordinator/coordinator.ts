/**
 * Coordinator: one process's membership of a job. It composes the view (the
 * keys that concern this instance only), the session (one lease, presence),
 * the worker (reconcile, lanes, revocations) and the leader candidacy (plan,
 * publish, verdict; the whole-job view only while leading), and reports the
 * job's verdict.
 *
 * Lifecycle:
 * - start: validate config, read the job's `plan` and `leader` keys and this
 *   instance's own records (a record of another fingerprint or schema
 *   refuses the start), open the session, begin reconciling and campaigning.
 * - lease lost: every lane is dropped without writing (it is fenced anyway),
 *   leadership ends, and a fresh session rejoins the fleet.
 * - the leader writes a final plan's verdict on the plan record once every
 *   split is terminal: `done` resolves with 'complete' or 'stalled' on every
 *   instance, which then stops.
 * - stop(): graceful (drain and release every lane, resign, revoke the
 *   lease); what SIGTERM should call, and what run() calls on one (run.ts).
 * - `done` settles on every ending: the verdict, 'stopped' once stop() or
 *   close() has finished without one, or the fatal error.
 * - throughout: lifecycle events (events.ts) from the parts where things
 *   happen, and health (health.ts) judged from what this class observes.
 * It composes and reports; every rule it follows is protocol/'s.
 */
import { systemClock, type Clock } from '../clock.js';
import type { Config } from '../config.js';
import { SplitfleetError } from '../errors.js';
import { jobOutcome, presenceVerdict } from '../protocol/completion.js';
import { jobPrefix, parseKey, planKey } from '../protocol/keys.js';
import { fingerprintHash } from '../protocol/records.js';
import { retryRandom } from '../protocol/backoff.js';
import { instrumentStoreWithFloor } from '../store/instrumented.js';
import { RevisionFloor } from '../store/revision-floor.js';
import type { Store } from '../store/store.js';
import { background, UnexpectedErrors, type OnUnexpected } from './background.js';
import { DefaultEngine } from '../assignment/front-door.js';
import { Leader, type LeaderStats } from './leader/leader.js';
import { LifecycleEvents, type CoordinatorEventName, type CoordinatorListener } from './events.js';
import { HealthMonitor, type Health, type HealthObservations } from './health.js';
import { LeadershipHealth } from './leadership-health.js';
import { defaultLogger, rateLimitWarnings, UnreadableReporter, type Logger } from './log.js';
import { Metrics } from './metrics.js';
import { resolveOptions, type CoordinatorOptions } from './options.js';
import { asHandlerModuleError, sandboxedHandler, type SandboxedHandler } from './sandbox/sandbox.js';
import { Rejoiner } from './rejoin.js';
import { Session, type GrantedLease } from './session.js';
import { snapshotOf, type CoordinatorSnapshot } from './views/snapshot.js';
import { untilStarted } from './startup.js';
import { runCoordinator, type RunOptions, type RunResult } from './run.js';
import type { JobVerdict, Json, RunOutcome, SplitHandler } from './types.js';
import { Worker } from './worker/worker.js';
import { WorkerView } from './views/worker-view.js';

export type { CoordinatorOptions, CoordinatorSnapshot, RunOptions, RunResult };
export { OFF_THREAD_SPLITS } from '../assignment/front-door.js';

/**
 * Starts a coordinator; resolves once the job is observed and the session is
 * open. `startCoordinator<Descriptor, Progress>({ ... })` (or a handler
 * annotated with `SplitHandle<Descriptor, Progress>`) types `split.descriptor`,
 * `split.progress` and `split.commit` without casts.
 */
export async function startCoordinator<Descriptor extends Json = Json, Progress extends Json = Json>(
  options: CoordinatorOptions<Descriptor, Progress>,
): Promise<Coordinator> {
  const config = resolveOptions(options as unknown as CoordinatorOptions);
  // The internals carry Json: the handler only gets descriptors its own planner wrote and
  // progress its own commits wrote, so narrowing here is the one (unchecked) cast.
  const c = new Coordinator(options as unknown as CoordinatorOptions, config);
  try {
    await c.start();
  } catch (e) {
    // Nobody gets a handle to close it: close it here, or its watch and timers outlive the failure.
    await c.close().catch(() => undefined);
    throw e;
  }
  return c;
}

export class Coordinator {
  readonly config: Config;
  readonly metrics: Metrics;
  /** What this instance observes: its own keys and its splits' (the worker's and the candidacy's input). */
  private readonly own: WorkerView;
  /** The job's verdict; 'stopped' once stop() or close() has ended this membership before one; rejects with a fatal error. */
  readonly done: Promise<RunOutcome>;
  private readonly store: Store;
  private readonly clock: Clock;
  private readonly log: Logger;

  private session: Session | undefined;
  /** The first session's lease, granted while the job is read (`start`). */
  private earlyLease: Promise<GrantedLease | undefined> | undefined;
  private readonly engine = new DefaultEngine();
  private readonly handler: SplitHandler;
  /** The threads of `handlerModule`, ended with this coordinator. */
  private readonly sandbox: SandboxedHandler | undefined;
  private worker: Worker | undefined;
  private leader: Leader | undefined;
  private resolveDone!: (v: RunOutcome) => void;
  private rejectDone!: (e: unknown) => void;
  private fatal: SplitfleetError | undefined;
  private stopping = false;
  private cancelBackstop: (() => void) | undefined;
  private verdict: JobVerdict | undefined;
  private readonly reported: UnreadableReporter;
  /** Lifecycle events (`on`, `once`, `off`), and the health judged from what this coordinator observes. */
  private readonly events: LifecycleEvents;
  private readonly monitor: HealthMonitor;
  /** Why stop() runs when the user did not call it (the job's verdict). */
  private stopReason: string | undefined;
  /** Sessions opened so far: every one after the first is a rejoin. */
  private sessions = 0;
  /** Errors that escape a background path: logged, counted, in health (background.ts). */
  private readonly unexpectedErrors: UnexpectedErrors;
  private readonly unexpected: OnUnexpected;
  /** Degraded while the job has no working leader for two leases (leadership-health.ts). */
  private readonly leadership: LeadershipHealth;
  /** This process's jitter stream for its retry loops (protocol/backoff.ts). */
  private readonly random: () => number;
  private readonly rejoiner: Rejoiner;

  constructor(private readonly options: CoordinatorOptions, config: Config) {
    // A copy the lane budget may change in (setLaneBudget): every part reads maxInFlight and prefetch at use.
    this.config = { ...config };
    this.clock = options.clock ?? systemClock;
    // Warnings are de-duplicated per key by their callers, and rate-limited overall here (log.ts).
    this.log = rateLimitWarnings(options.logger ?? defaultLogger({ job: config.job, instance: config.instance }), this.clock);
    this.metrics = options.metrics ?? new Metrics();
    if (options.handlerModule !== undefined) {
      try {
        this.sandbox = sandboxedHandler(options.handlerModule, { threads: config.maxInFlight });
      } catch (e) {
        throw asHandlerModuleError(e);
      }
    }
    this.handler = this.sandbox ?? options.handler!;
    this.events = new LifecycleEvents(config.instance, this.log);
    for (const [event, listener] of Object.entries(options.on ?? {})) {
      this.events.on(event as CoordinatorEventName, listener as CoordinatorListener<CoordinatorEventName>);
    }
    this.monitor = new HealthMonitor(this.clock.now());
    this.reported = new UnreadableReporter(this.log); // once per key and problem
    this.random = retryRandom(config.instance);
    this.unexpectedErrors = new UnexpectedErrors({
      log: this.log, clock: this.clock, count: (where) => this.metrics.unexpectedErrors.inc({ where }), setHealthReason: (unexpected) => this.observe({ unexpected }),
    });
    this.unexpected = this.unexpectedErrors.report;
    this.leadership = new LeadershipHealth({
      clock: this.clock, leaseDurationMs: config.leaseDurationMs, setHealthReason: (leaderless) => this.observe({ leaderless }),
      seen: () => ({ leaderGeneration: this.own.leader?.rec.generation, planGeneration: this.own.plan?.rec.generation }),
    });
    // The one decorator: every store call of every part timed, counted and bounded by opTimeoutMs on
    // the injected clock; no call site adds its own (safe with the publication fence, decision 0015).
    // Every write's answer held to the revisions already seen (decision 0062): a store whose history went
    // back would hand out revisions our views and fences have seen; this process stops, to start afresh.
    const revisions = new RevisionFloor((known, answered) => this.fail(storeRestored(known, answered)));
    this.store = instrumentStoreWithFloor(options.store, this.metrics, this.clock, config.opTimeoutMs, revisions);
    this.own = new WorkerView(
      this.store, jobPrefix(config.root, config.job), fingerprintHash(config.fingerprint), config.instance, (e) => this.fail(e), this.clock,
      (key, e) => this.unreadable(key, e),
    );
    this.rejoiner = new Rejoiner({
      store: this.store, clock: this.clock, log: this.log, leaseDurationMs: config.leaseDurationMs, random: this.random, unexpected: this.unexpected,
      openSession: () => this.openSession(), giveUp: () => this.stopping || this.fatal !== undefined, retrying: (rejoinError) => this.observe({ rejoinError }),
      fail: (e) => this.fail(e),
    });
    this.done = new Promise<RunOutcome>((resolve, reject) => {
      this.resolveDone = resolve;
      this.rejectDone = reject;
    });
    this.done.catch(() => undefined);
  }

  /**
   * A read-only snapshot of this instance's own records as observed (snapshot.ts), copied and frozen per read.
   * @internal A test hook: not part of the public surface.
   */
  get view(): CoordinatorSnapshot {
    return snapshotOf(this.own);
  }

  get instance(): string {
    return this.config.instance;
  }

  /** True while this instance leads the job. */
  get isLeader(): boolean {
    return this.leader?.leading ?? false;
  }

  /** Split ids with an open lane here. */
  get held(): string[] {
    return [...(this.worker?.lanes.keys() ?? [])].sort();
  }

  /** Leader counters (decisions made, records written) for tests and inspection. */
  get leaderStats(): LeaderStats | undefined {
    return this.leader?.stats;
  }

  /** Calls `listener` on every `event` from now on, on a microtask after it happened (the events: `CoordinatorEventMap`). */
  on<E extends CoordinatorEventName>(event: E, listener: CoordinatorListener<E>): this {
    this.events.on(event, listener);
    return this;
  }

  /** Calls `listener` on the next `event` only. */
  once<E extends CoordinatorEventName>(event: E, listener: CoordinatorListener<E>): this {
    this.events.once(event, listener);
    return this;
  }

  /** Removes `listener` from `event` (events already queued for it are not delivered to it). */
  off<E extends CoordinatorEventName>(event: E, listener: CoordinatorListener<E>): this {
    this.events.off(event, listener);
    return this;
  }

  /** starting, running, degraded, stopping or stopped, with why and since when (clock ms); each change is a `health` event. */
  health(): Health {
    return this.monitor.health;
  }

  private observe(change: Partial<HealthObservations>): void {
    const next = this.monitor.observe(change, this.clock.now());
    if (next) this.events.emit('health', next);
  }

  async start(): Promise<void> {
    // The first session's lease is granted while the job is read (one round trip fewer before
    // joining, decision 0084); a failed grant leaves the session to grant its own.
    this.earlyLease = Session.grant(this.store, this.config, this.clock).catch(() => undefined);
    this.own.onChange((change) => background('view change', () => {
      if (change.kinds.has('leader') || change.kinds.has('plan')) {
        this.leader?.onViewChange();
        this.leadership.check();
      }
      this.worker?.schedule();
      this.checkCompletion();
      if (change.kinds.has('worker') && this.session?.alive) this.checkPresence();
    }, this.unexpected));
    // A handler module that cannot be loaded refuses the start, rather than failing every split it is given.
    try {
      await this.sandbox?.ready().catch((e: unknown) => {
        throw asHandlerModuleError(e);
      });
      await this.untilStarted('reading the job', () => this.own.start());
      if (this.fatal) throw this.fatal;
      await this.untilStarted('joining the fleet', () => this.openSession());
    } finally {
      // Not taken (start-up failed, or stopped first): nothing may stay on it.
      void this.takeEarlyLease().then((lease) => lease && this.store.revokeLease(lease.leaseId)).catch(() => undefined);
    }
    if (!this.stopping && !this.fatal) this.armBackstop();
    this.leadership.check();
    this.checkCompletion();
  }

  /** One start-up step, retried while the store fails retryably, within startTimeoutMs (startup.ts). */
  private untilStarted(what: string, step: () => Promise<void>): Promise<void> {
    return untilStarted(what, step, {
      clock: this.clock, log: this.log, startTimeoutMs: this.config.startTimeoutMs,
      giveUp: () => this.stopping || this.fatal !== undefined, observe: (startStep) => this.observe({ startStep }), random: this.random,
    });
  }

  /** The lease granted early for the first session, once (undefined after, or if its grant failed). */
  private async takeEarlyLease(): Promise<GrantedLease | undefined> {
    const early = this.earlyLease;
    this.earlyLease = undefined;
    return early ? await early : undefined;
  }

  private async openSession(): Promise<void> {
    if (this.stopping || this.fatal) return;
    const session = await Session.open(this.store, this.config, this.clock, this.own.prefix, () => this.stopping || this.fatal !== undefined, await this.takeEarlyLease());
    if (this.stopping || this.fatal) {
      // stop() (the job finished, say) or a fatal error came while the session was opening:
      // end it at once, or its presence key would stay renewed by a coordinator that is gone.
      await session.close();
      return;
    }
    this.session = session;
    const rejoined = this.sessions++ > 0;
    this.worker = new Worker({
      store: this.store, config: this.config, clock: this.clock, view: this.own, session, handler: this.handler, metrics: this.metrics, log: this.log,
      unexpected: this.unexpected, random: this.random,
      hooks: {
        emit: this.events.emit,
        // Start-up ends with the first reconciliation on the first session: only then does this instance act on its assignment.
        reconciled: () => {
          if (!this.monitor.observations.started) this.observe({ started: true });
        },
      },
    });
    this.leader = new Leader({
      store: this.store, config: this.config, clock: this.clock, view: this.own, session, planner: this.options.planner,
      onUnreadable: (key, e) => this.unreadable(key, e),
      assigner: this.options.assigner, decide: (pool) => this.engine.decide(pool), ready: (pool) => this.engine.ready(pool), metrics: this.metrics, log: this.log,
      onFatal: (e) => this.fail(e), emit: this.events.emit, unexpected: this.unexpected, random: this.random,
      onStuck: (stuck) => this.observe({ stuck }),
      ...(this.options.onJobFinished ? { onJobFinished: this.options.onJobFinished } : {}),
    });
    session.onRenewal((error) => {
      if (this.session !== session) return;
      const failures = error === undefined ? 0 : this.monitor.observations.renewalFailures + 1;
      this.observe({ renewalFailures: failures, lastRenewalError: error === undefined ? undefined : (error as Error)?.message ?? String(error) });
    });
    session.onEnd((end) => {
      if (end.kind !== 'lost') return;
      this.log.warn({ reason: end.reason }, 'session lease lost; dropping lanes and rejoining');
      this.metrics.sessionLosses.inc();
      this.events.emit('session-lost', { reason: end.reason });
      this.observe({ sessionLost: end.reason, rejoinError: undefined, renewalFailures: 0, lastRenewalError: undefined });
      this.worker?.loseAll(end.reason);
      const leader = this.leader;
      background('resign', () => leader?.stop('session lost'), this.unexpected);
      if (!this.stopping && !this.fatal) this.rejoiner.rejoin(session.leaseId);
    });
    if (rejoined) {
      this.rejoiner.rejoined();
      this.events.emit('session-rejoined', {});
      this.observe({ sessionLost: undefined, rejoinError: undefined });
    }
    this.leader.onViewChange();
    this.worker.schedule();
  }

  /** Our presence key changed: another run under our instance id, or deleted by hand. */
  private checkPresence(): void {
    const seen = this.own.self;
    const session = this.session;
    // Stopping: another run taking our key over is the restart that replaces us (a rolling
    // restart under a stable id), not a duplicate; our lanes are fenced away either way.
    if (!session || this.stopping) return;
    const verdict = presenceVerdict({ seen: seen && { nonce: seen.rec.nonce, modRevision: seen.modRevision }, nonce: session.nonce, presenceRevision: session.presenceRevision });
    if (verdict === 'missing') {
      void session.ensurePresence().catch(() => undefined);
      return;
    }
    if (verdict === 'duplicate') {
      this.fail(new SplitfleetError('DUPLICATE_INSTANCE', `instance "${this.config.instance}" is running twice: another process wrote ${session.presenceKey}; instance ids must be unique`));
    }
  }

  /** The listing backstop: re-read what this instance depends on, treating anything missing as deleted. */
  private armBackstop(): void {
    this.cancelBackstop = this.clock.setTimer(this.config.reconcileIntervalMs, () => {
      background('backstop', () => this.backstop().finally(() => {
        if (!this.stopping && !this.fatal) this.armBackstop();
      }), this.unexpected);
    });
  }

  private async backstop(): Promise<void> {
    try {
      await this.own.refresh();
      await this.leader?.resync();
      this.observe({ viewError: undefined });
    } catch (e) {
      this.log.warn({ err: (e as Error).message }, 'reconcile backstop failed; will retry');
      this.observe({ viewError: (e as Error).message });
    }
  }

  /** The leader wrote the verdict on the plan record: the job is over for every instance. */
  private checkCompletion(): void {
    if (this.verdict) return;
    const outcome = jobOutcome(this.own.plan?.rec, this.own.planSeen);
    if (outcome.kind === 'deleted' && !this.stopping) {
      this.fail(new SplitfleetError('JOB_DELETED', `the job's plan record ${planKey(this.own.prefix)} was deleted (splitfleet delete --force?): stopping, rather than start the job over`));
      return;
    }
    if (outcome.kind !== 'finished') return;
    this.verdict = outcome.verdict;
    this.log.info({ verdict: this.verdict, planned: this.own.plan?.rec.planned }, 'job finished');
    const verdict = this.verdict;
    this.stopReason = `job finished: verdict ${verdict}`;
    background('stop', () => this.stop().then(() => this.resolveDone(verdict)), this.unexpected);
  }

  /** Logs a record that cannot be read once per key and problem, and counts every sighting. */
  unreadable(key: string, e: SplitfleetError): void {
    this.metrics.unreadable.inc({ kind: parseKey(this.own.prefix, key).kind });
    this.reported.report(key, e);
  }

  private fail(e: SplitfleetError): void {
    if (this.fatal) return;
    this.fatal = e;
    this.log.error({ code: e.code, err: e.message }, 'fatal');
    this.events.emit('fatal', { error: e });
    this.rejectDone(e);
    background('close', () => this.close(), this.unexpected);
  }

  /**
   * Runs until this membership ends: stops gracefully on the first of
   * `signals` (default SIGTERM, SIGINT), closes at once on a second, and
   * resolves with the outcome once ended (run.ts).
   */
  run(options?: RunOptions): Promise<RunResult> {
    return runCoordinator(this, this.log, options);
  }

  /**
   * Changes this process's lane budget in the job (decision 0064: a serving fleet shares its lanes
   * among its jobs): the presence record advertises the new `maxInFlight` (and `prefetch`, default
   * unchanged), the leader balances within it at its next decision, and splits held beyond it are
   * drained as the new assignment drops them. A sandboxed handler keeps its thread count.
   */
  async setLaneBudget(maxInFlight: number, prefetch: number = this.config.prefetch): Promise<void> {
    if (!Number.isSafeInteger(maxInFlight) || maxInFlight < 1) throw new SplitfleetError('INVALID_CONFIG', `setLaneBudget maxInFlight: must be an integer ≥ 1 (got ${String(maxInFlight)})`);
    if (!Number.isSafeInteger(prefetch) || prefetch < 0) throw new SplitfleetError('INVALID_CONFIG', `setLaneBudget prefetch: must be an integer ≥ 0 (got ${String(prefetch)})`);
    if (maxInFlight === this.config.maxInFlight && prefetch === this.config.prefetch) return;
    Object.assign(this.config as { maxInFlight: number; prefetch: number }, { maxInFlight, prefetch });
    this.metrics.laneCapacity.set(maxInFlight);
    await this.session?.rewritePresence();
    this.worker?.schedule();
  }

  /** Graceful stop: drain and release every lane, resign leadership, revoke the lease. */
  async stop(): Promise<void> {
    if (this.stopping) return;
    await this.end(this.stopReason ?? 'stop() called', async () => {
      await this.worker?.stop();
      await this.leader?.stop();
    });
  }

  /** Abrupt close: lanes are dropped without release (they replay elsewhere after the lease expires). */
  async close(): Promise<void> {
    const reason = this.fatal ? `fatal: ${this.fatal.code}: ${this.fatal.message}` : this.monitor.observations.started ? 'close() called' : 'closed during start-up';
    await this.end(reason, async () => {
      this.worker?.abortAll();
      await this.leader?.stop().catch(() => undefined);
    });
  }

  /**
   * The one ending of stop() and close(): no new work (backstop, health timers), then `lanes`
   * (drain or drop them, resign), then the session, the view, the engine and the sandbox.
   * Whatever ended it, `done` settles (a no-op after a verdict or a fatal error).
   */
  private async end(reason: string, lanes: () => Promise<void>): Promise<void> {
    this.stopping = true;
    this.observe({ stopping: reason });
    this.cancelBackstop?.();
    this.leadership.close();
    this.unexpectedErrors.close();
    try {
      await lanes();
      await this.session?.close();
      await this.own.close();
      await this.engine.close();
      await this.sandbox?.close();
      this.observe({ stopped: reason });
    } finally {
      this.resolveDone(this.verdict ?? 'stopped');
    }
  }
}

/** The fatal error of a store whose revision went back (decision 0062). */
function storeRestored(known: number, answered: number): SplitfleetError {
  return new SplitfleetError('STORE_RESTORED',
    `the store answered at revision ${answered} after reporting ${known}: etcd was restored from an older snapshot without --bump-revision --mark-compacted, or the endpoints now reach another cluster. `
    + 'This process stops: its views and fences rest on revisions the store would hand out again. Restart it (every process of the job does the same); docs/operations.md, "Restoring etcd"');
}
