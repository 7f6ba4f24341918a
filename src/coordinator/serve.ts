/**
 * serve: a standing fleet (issue 50; decision 0064). One process serves every
 * job of its kinds submitted under a root (`submitJob`): it follows the
 * definitions' range (`<root>/~jobs/`, one watch), joins each unfinished job
 * of a kind it serves as the same instance, with a coordinator of its own
 * (its planner bound to the job's parameters, under the job's fingerprint),
 * and shares its lanes among them.
 *
 * Invariants:
 * - Lanes are shared evenly: with n jobs joined and L lanes, each gets
 *   ⌊L / n⌋ and the first L mod n one more (in job-name order), never fewer
 *   than one, so a process serving more jobs than it has lanes runs one lane
 *   per job. Each share is advertised on the job's presence record
 *   (`setLaneBudget`), so each job's leader balances within it; a job that
 *   finishes gives its share back, a new one gets its share at once (the
 *   others drain what they hold beyond theirs).
 * - A job whose plan carries a verdict is not joined; one whose coordinator
 *   ends (its verdict, a deletion, a fatal error) is let go and its error
 *   reported through `onError`; a definition that cannot be read is reported
 *   and skipped.
 * - `close()` stops every job's coordinator gracefully (drains) and the watch.
 * - Each job's coordinator records into metrics of its own, its series
 *   labelled `splitfleet_job` and `splitfleet_kind`; `registry` serves every
 *   joined job's in one exposition, and `health()` the process's state
 *   (serving-health.ts), so `serveMetrics(...).attach(server)` exposes a
 *   serving process as it does a coordinator (decision 0068).
 */
import { CONFIG_DEFAULTS } from '../config.js';
import { isRetryable, SplitfleetError, storeFailure } from '../errors.js';
import { decodeDefinition, definitionsPrefix, jobOfDefinitionKey, type DefinitionRecord } from '../protocol/definitions.js';
import { jobPrefix, planKey } from '../protocol/keys.js';
import { decodeRecord, fingerprintHash, type Json } from '../protocol/records.js';
import type { KeyValue, Store, WatchHandle } from '../store/store.js';
import { startCoordinator, type Coordinator } from './coordinator.js';
import type { Health } from './health.js';
import type { JobFinished } from './leader/finished-hook.js';
import { mergedSource, type ExpositionSource } from './merged-metrics.js';
import { Metrics } from './metrics.js';
import { resolveOptions, type CoordinatorOptions } from './options.js';
import { assessServing } from './serving-health.js';
import type { JobVerdict, PlannerContext, PlanResult, SplitHandle } from './types.js';

/** The job a served planner or handler works for. */
export interface ServedJob<Params extends Json = Json> {
  job: string;
  kind: string;
  params: Params;
}

/** What a fleet serves for one kind: its planner (given the job's parameters) and its handler (given the split and its job). */
export interface ServedKind<Params extends Json = Json> {
  /** Enumerates a job's splits from its parameters; runs only on that job's leader, as a coordinator's planner does. */
  planner: (params: Params, context: PlannerContext & { job: string }) => PlanResult | Promise<PlanResult>;
  /** Processes one split of one of this kind's jobs, as a coordinator's handler does; `job` says which. */
  handler: (split: SplitHandle, job: ServedJob<Params>) => Promise<void>;
  /** Runs once per verdict of each of this kind's jobs, across the fleet (decision 0065; `onJobFinished`). */
  onFinished?: (finished: JobFinished, job: ServedJob<Params>) => unknown;
  /**
   * Coordinator knobs for this kind's jobs (maxAttempts, layout, …); the fleet's own options win for the instance and lanes.
   * No `metrics`: each job records into its own, labelled by job (`Server.registry` serves them all).
   */
  options?: Partial<Omit<CoordinatorOptions, 'store' | 'job' | 'instance' | 'planner' | 'handler' | 'handlerModule' | 'fingerprint' | 'root' | 'maxInFlight' | 'metrics'>>;
}

/** What `serve` serves, and where. */
export interface ServeOptions {
  store: Store;
  /** Key prefix root (default `splitfleet`). */
  root?: string;
  /** This process's instance id, in every job it serves. */
  instance: string;
  /** The kinds this fleet runs. */
  kinds: Record<string, ServedKind<any>>;
  /** This process's lanes, shared among the jobs it serves. Default 8. */
  maxInFlight?: number;
  /** Knobs for every job's coordinator (a kind's `options` win). */
  options?: ServedKind['options'];
  /** A job joined (its share of lanes), ended (its verdict, or why not), or a definition that cannot be read. */
  onJobStarted?: (job: string, kind: string) => void;
  /** A job this process had joined ended here: its verdict, or the error that ended it (undefined both: stopped). */
  onJobEnded?: (job: string, verdict: JobVerdict | undefined, error: Error | undefined) => void;
  /** Something went wrong that ended no job: a definition that cannot be read, a job that could not be joined. */
  onError?: (error: Error) => void;
}

/** A standing fleet member: the jobs it serves now, its health and metrics, and its end. */
export interface Server {
  /** Jobs joined now, with each one's lane share. */
  jobs(): { job: string; kind: string; lanes: number }[];
  /**
   * The process's state, in a coordinator's states (serving-health.ts): `running`
   * while it serves, zero jobs included; `degraded` while a joined job's
   * coordinator is, after a job was left on an error, or once the definitions'
   * watch stopped; `stopping`, `stopped` from close(). What `/healthz` and
   * `/readyz` answer (`serveMetrics(...).attach(server)`).
   */
  health(): Health;
  /**
   * Prometheus text of every joined job's coordinator (series labelled
   * `splitfleet_job`, `splitfleet_kind`) and `splitfleet_served_jobs`, merged:
   * one family per name. A job's series go when the process lets it go.
   */
  readonly registry: ExpositionSource;
  /** Stops serving: every job's coordinator drains and stops, the watch ends. */
  close(): Promise<void>;
}

/**
 * Starts serving `options.kinds` under the root; resolves once the definitions
 * there have been read. A store that cannot be reached yet is retried for up
 * to `options.startTimeoutMs` (default 60 s), then the last failure rejects.
 * Each kind's coordinator options are checked first (INVALID_CONFIG, naming
 * the kind), so a bad knob fails here rather than every job of the kind.
 */
export async function serve(options: ServeOptions): Promise<Server> {
  const s = new Serving(options);
  await s.start();
  return s;
}

interface Joined { job: string; kind: string; coordinator: Coordinator | undefined; metrics: Metrics | undefined; lanes: number; starting: Promise<void> }

class Serving implements Server {
  private readonly root: string;
  private readonly lanes: number;
  private readonly joined = new Map<string, Joined>();
  /** Jobs let go (finished, failed): not joined again while this process serves. */
  private readonly ended = new Set<string>();
  /** Jobs left after an error (a deletion aside), and why: the process is degraded until their definitions go. */
  private readonly failed = new Map<string, string>();
  private watch: WatchHandle | undefined;
  private watchError: string | undefined;
  /** close() has begun; `stopped`: it has returned. */
  private closed = false;
  private stopped = false;
  private current: Health = { state: 'running', reason: '', since: Date.now() };
  readonly registry: ExpositionSource;
  /** Coordinators of jobs let go, still closing (their sessions end): `close()` waits for them. */
  private readonly closing = new Set<Promise<unknown>>();

  constructor(private readonly o: ServeOptions) {
    this.root = o.root ?? 'splitfleet';
    this.lanes = o.maxInFlight ?? 8;
    if (!Number.isSafeInteger(this.lanes) || this.lanes < 1) throw new SplitfleetError('INVALID_CONFIG', `serve maxInFlight: must be an integer ≥ 1 (got ${String(o.maxInFlight)})`);
    if (Object.keys(o.kinds).length === 0) throw new SplitfleetError('INVALID_CONFIG', 'serve kinds: must name at least one kind ({ kind: { planner, handler } })');
    // Each kind's coordinator options, checked now: a bad knob would otherwise fail every job of the kind, one by one, when it is joined.
    for (const [name, kind] of Object.entries(o.kinds)) {
      try {
        resolveOptions({
          ...o.options, ...kind.options, store: o.store, root: this.root, job: 'serve-options-check', instance: o.instance,
          maxInFlight: this.lanes, planner: () => ({ final: true, splits: [] }), handler: async () => undefined,
        });
        if (typeof kind.planner !== 'function') throw new SplitfleetError('INVALID_CONFIG', 'planner: must be a function (params, context) => { splits, final }');
        if (typeof kind.handler !== 'function') throw new SplitfleetError('INVALID_CONFIG', 'handler: must be a function (split, job) => Promise<void>');
      } catch (e) {
        throw new SplitfleetError('INVALID_CONFIG', `serve kinds.${name}: ${(e as Error).message}`, { cause: e });
      }
    }
    // Only started coordinators: a job still joining has recorded nothing, and may never start.
    this.registry = mergedSource(
      () => [...this.joined.values()].flatMap((j) => (j.coordinator && j.metrics ? [j.metrics.registry] : [])),
      () => `# HELP splitfleet_served_jobs Jobs this serving process has joined now (serve()).\n# TYPE splitfleet_served_jobs gauge\nsplitfleet_served_jobs ${this.joined.size}\n`,
    );
  }

  /**
   * Follows the definitions. While the store cannot be reached (a pod that
   * starts before its etcd), retries a retryable failure for up to
   * `startTimeoutMs` (as startCoordinator does; 0: fail at the first), then
   * rejects with the last one.
   */
  async start(): Promise<void> {
    const timeoutMs = this.o.options?.startTimeoutMs ?? CONFIG_DEFAULTS.startTimeoutMs;
    const deadline = Date.now() + timeoutMs;
    for (let delayMs = 250; ; delayMs = Math.min(2 * delayMs, 5000)) {
      try {
        return await this.follow();
      } catch (e) {
        if (!isRetryable(e) || Date.now() + delayMs > deadline) throw storeFailure(e);
        await new Promise((r) => setTimeout(r, delayMs));
      }
    }
  }

  private async follow(): Promise<void> {
    const prefix = definitionsPrefix(this.root);
    let established = false;
    const watch = this.o.store.snapshotAndWatch(prefix, {
      onSnapshot: (kvs: KeyValue[]) => { for (const kv of kvs) this.seen(kv.key, kv.value); },
      onEvent: (e) => {
        if (e.type === 'put') this.seen(e.key, e.value!);
        else this.forgotten(e.key);
      },
      onError: (e) => {
        // Before it is established, the failure is start()'s to retry or throw.
        if (!established) return;
        this.watchError = e.message;
        this.report(e);
      },
    });
    try {
      await watch.ready;
    } catch (e) {
      await watch.close().catch(() => undefined);
      throw e;
    }
    established = true;
    this.watch = watch;
  }

  jobs(): { job: string; kind: string; lanes: number }[] {
    return [...this.joined.values()].map((j) => ({ job: j.job, kind: j.kind, lanes: j.lanes }));
  }

  health(): Health {
    const next = assessServing({
      closed: this.stopped, closing: this.closed, kinds: Object.keys(this.o.kinds),
      ...(this.watchError !== undefined ? { watchError: this.watchError } : {}),
      jobs: [...this.joined.values()].map((j) => ({ job: j.job, health: j.coordinator?.health() })),
      failed: [...this.failed].map(([job, reason]) => ({ job, reason })),
    });
    // `since` moves with the state only, as a coordinator's does.
    if (next.state !== this.current.state) this.current = { ...next, since: Date.now() };
    else if (next.reason !== this.current.reason) this.current = { ...next, since: this.current.since };
    return this.current;
  }

  async close(): Promise<void> {
    this.closed = true;
    await this.watch?.close();
    await Promise.all([...this.joined.values()].map(async (j) => {
      await j.starting.catch(() => undefined);
      await j.coordinator?.stop().catch(() => undefined);
      // stop() returns at once when the coordinator is already ending (its verdict): `done` settles when it has.
      await j.coordinator?.done.catch(() => undefined);
    }));
    this.joined.clear();
    await Promise.all([...this.closing]);
    this.stopped = true;
  }

  private report(e: unknown): void {
    this.o.onError?.(e instanceof Error ? e : new Error(String(e)));
  }

  /** A definition deleted: a job left after an error no longer counts against this process's health. */
  private forgotten(key: string): void {
    const job = jobOfDefinitionKey(this.root, key);
    if (job !== undefined) this.failed.delete(job);
  }

  /** A definition seen: join its job if it is of our kinds, not joined, not finished. */
  private seen(key: string, value: string): void {
    if (this.closed) return;
    const job = jobOfDefinitionKey(this.root, key);
    if (job === undefined || this.joined.has(job) || this.ended.has(job)) return;
    let def: DefinitionRecord;
    try {
      def = decodeDefinition(key, value);
    } catch (e) {
      return this.report(e);
    }
    const kind = this.o.kinds[def.kind];
    if (!kind) return; // another fleet's kind
    const entry: Joined = { job, kind: def.kind, coordinator: undefined, metrics: undefined, lanes: 1, starting: Promise.resolve() };
    this.joined.set(job, entry);
    entry.starting = this.join(entry, def, kind).catch((e: unknown) => this.letGo(entry, undefined, storeFailure(e)));
  }

  private async join(entry: Joined, def: DefinitionRecord, kind: ServedKind): Promise<void> {
    // A finished job is not joined again (a restart of this process, or a job submitted long ago).
    const plan = await this.o.store.get(planKey(jobPrefix(this.root, entry.job)));
    if (plan && decodeRecord('plan', plan.key, plan.value, fingerprintHash(def.fingerprint)).verdict !== undefined) {
      this.joined.delete(entry.job);
      this.ended.add(entry.job);
      return;
    }
    const shares = this.shares();
    entry.lanes = shares.get(entry.job) ?? 1;
    const served: ServedJob = { job: entry.job, kind: entry.kind, params: def.params };
    // Labelled, so that every job's series can share one exposition (`registry`) without colliding.
    entry.metrics = new Metrics({ labels: { splitfleet_job: entry.job, splitfleet_kind: entry.kind } });
    const c = await startCoordinator({
      ...this.o.options, ...kind.options,
      store: this.o.store, root: this.root, job: entry.job, instance: this.o.instance, fingerprint: def.fingerprint,
      maxInFlight: entry.lanes, metrics: entry.metrics,
      planner: (context) => kind.planner(def.params, { ...context, job: entry.job }),
      handler: (split) => kind.handler(split, served),
      ...(kind.onFinished ? { onJobFinished: (f: JobFinished) => kind.onFinished!(f, served) } : {}),
    });
    if (this.closed || !this.joined.has(entry.job)) {
      await c.stop().catch(() => undefined);
      return;
    }
    entry.coordinator = c;
    this.o.onJobStarted?.(entry.job, entry.kind);
    void c.done.then((outcome) => this.letGo(entry, outcome === 'stopped' ? undefined : outcome, undefined), (e: unknown) => this.letGo(entry, undefined, e as Error));
    await this.reshare();
  }

  /** A job's coordinator ended: its lanes go back to the others. */
  private letGo(entry: Joined, verdict: JobVerdict | undefined, error: Error | undefined): void {
    if (this.joined.get(entry.job) !== entry) return;
    this.joined.delete(entry.job);
    this.ended.add(entry.job);
    // Its coordinator has stopped itself (its verdict) or failed: let its session end before close() returns.
    if (entry.coordinator) {
      const closing = entry.coordinator.close().catch(() => undefined);
      this.closing.add(closing);
      void closing.finally(() => this.closing.delete(closing));
    }
    if (error) this.report(error);
    // A deleted job is the operator's doing, not this process's trouble.
    if (error && !(error instanceof SplitfleetError && error.code === 'JOB_DELETED')) this.failed.set(entry.job, error.message);
    this.o.onJobEnded?.(entry.job, verdict, error);
    if (!this.closed) void this.reshare().catch((e: unknown) => this.report(e));
  }

  /** The even shares of this process's lanes, in job-name order. */
  private shares(): Map<string, number> {
    const jobs = [...this.joined.keys()].sort();
    const n = Math.max(1, jobs.length);
    const base = Math.floor(this.lanes / n);
    return new Map(jobs.map((job, i) => [job, Math.max(1, base + (i < this.lanes % n ? 1 : 0))]));
  }

  /** Advertises each joined job's share (its coordinator's lane budget). */
  private async reshare(): Promise<void> {
    const shares = this.shares();
    await Promise.all([...this.joined.values()].map(async (j) => {
      const lanes = shares.get(j.job) ?? 1;
      if (!j.coordinator || lanes === j.lanes) return;
      j.lanes = lanes;
      await j.coordinator.setLaneBudget(lanes).catch((e: unknown) => this.report(e));
    }));
  }
}
