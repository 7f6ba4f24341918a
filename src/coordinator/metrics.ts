/**
 * Metrics (prom-client), one registry per coordinator unless the user passes
 * their own to expose. Names and meanings are documented in docs/metrics.md;
 * every name is splitfleet_*. prom-client is loaded (load-prom-client.ts, the
 * only file that imports it) when the first `Metrics` is made, not when the module loads:
 * `import 'splitfleet'` loads no prom-client (a peer dependency). A registry
 * passed in is only registered into (no default labels set, nothing cleared):
 * constant labels go on splitfleet's own series.
 */
import { SplitfleetError } from '../errors.js';
import type { StoreCall, StoreCallRecorder } from '../store/instrumented.js';
import { VERSION } from '../version.js';
import { loadPromClient, type PromParts, type Registry } from './load-prom-client.js';

/**
 * Label names a constant label may not take: Prometheus's own target labels
 * (`job`, `instance`: a scrape would rename ours to `exported_job`), and the
 * labels splitfleet's series carry themselves.
 */
const RESERVED_LABELS = new Set(['job', 'instance', 'le', 'quantile', 'state', 'kind', 'outcome', 'where', 'write', 'call', 'code', 'resolution', 'version']);

/** How `new Metrics(options)` records. */
export interface MetricsOptions {
  /**
   * A prom-client `Registry` to register the splitfleet series into (yours, to
   * serve with your own metrics); default: a fresh one, `metrics.registry`.
   * It is never otherwise changed: no default labels are set on it.
   */
  registry?: Registry;
  /**
   * Constant labels on every splitfleet series, for instance
   * `{ splitfleet_job: 'backfill' }` when several jobs report to one
   * Prometheus (docs/alerts.yml aggregates by `splitfleet_job`). None by
   * default. `job` and `instance` are refused: they are Prometheus's target
   * labels.
   */
  labels?: Record<string, string>;
  /**
   * Also collect Node's default metrics (prom-client's
   * `collectDefaultMetrics`: event-loop lag, GC, heap, CPU; the event-loop
   * stalls that cost sessions show there) into this registry, with the same
   * constant labels. Default false; leave it off for a registry that already
   * has them (prom-client refuses a name registered twice).
   */
  defaultMetrics?: boolean;
}

/** Checks `labels` (name syntax, reserved names, string values); the message names the label and the rule. */
function checkLabels(labels: Record<string, string>): void {
  for (const [name, value] of Object.entries(labels)) {
    if (!/^[a-zA-Z_][a-zA-Z0-9_]*$/.test(name) || name.startsWith('__')) {
      throw new SplitfleetError('INVALID_CONFIG', `Metrics labels: '${name}' is not a Prometheus label name (letters, digits and _, not starting with a digit or __)`);
    }
    if (RESERVED_LABELS.has(name)) {
      throw new SplitfleetError('INVALID_CONFIG', name === 'job' || name === 'instance'
        ? `Metrics labels: '${name}' is a Prometheus target label (a scrape renames it exported_${name}); use splitfleet_${name}`
        : `Metrics labels: '${name}' is a label splitfleet's own series carry`);
    }
    if (typeof value !== 'string') throw new SplitfleetError('INVALID_CONFIG', `Metrics labels: '${name}' must be a string, got ${typeof value}`);
  }
}

type Collectable = { get(): Promise<{ values: { labels: object; sharedLabels?: object }[] }>; getForPromString?: () => Promise<{ values: { labels: object; sharedLabels?: object }[] }> };

/**
 * Puts `labels` on every value `metric` reports, on this instance only (own
 * properties, never prom-client's prototypes): what `setDefaultLabels` would
 * do, without changing a registry that is not ours. A histogram reports
 * through `getForPromString` (its `get` calls it), with the labels it shares
 * among its buckets in `sharedLabels`.
 */
function withConstantLabels(metric: Collectable, labels: Record<string, string>): void {
  if (metric.getForPromString) {
    const read = metric.getForPromString.bind(metric);
    metric.getForPromString = async () => {
      const data = await read();
      for (const v of data.values) v.sharedLabels = { ...labels, ...v.sharedLabels };
      return data;
    };
  } else {
    const read = metric.get.bind(metric);
    metric.get = async () => {
      const data = await read();
      for (const v of data.values) v.labels = { ...labels, ...v.labels };
      return data;
    };
  }
}

/** The states the leader's backlog is counted in (`splitfleet_backlog_*{state}`). */
export const BACKLOG_STATES = ['queued', 'running', 'draining', 'completed', 'quarantined'] as const;
/** One of `BACKLOG_STATES`. */
export type BacklogState = (typeof BACKLOG_STATES)[number];
/** One state's share of the backlog: how many splits, and their summed weight. */
export interface BacklogCount {
  splits: number;
  weight: number;
}

/** The labels of one series: a value for some of its metric's label names `L`. */
export type MetricLabels<L extends string> = Partial<Record<L, string | number>>;

/** A metric's current values, one per series (a histogram's are its buckets, sum and count, told apart by `metricName`). */
export interface MetricValues<L extends string = string> {
  /** One entry per series. */
  values: { value: number; labels: MetricLabels<L>; metricName?: string }[];
}

/**
 * One of splitfleet's counters, as `Metrics` exposes it: what a caller may do
 * with it (add, read), and nothing that would reset or drop a series
 * splitfleet keeps. A prom-client `Counter` underneath.
 */
export interface MetricCounter<L extends string = string> {
  /** Adds `value` (default 1) to the series without labels. */
  inc(value?: number): void;
  /** Adds `value` (default 1) to the series of `labels`. */
  inc(labels: MetricLabels<L>, value?: number): void;
  /** The current values. */
  get(): Promise<MetricValues<L>>;
}

/** One of splitfleet's gauges, as `Metrics` exposes it (a prom-client `Gauge` underneath). */
export interface MetricGauge<L extends string = string> {
  /** Sets the series without labels. */
  set(value: number): void;
  /** Sets the series of `labels`. */
  set(labels: MetricLabels<L>, value: number): void;
  /** The current values. */
  get(): Promise<MetricValues<L>>;
}

/** One of splitfleet's histograms, as `Metrics` exposes it (a prom-client `Histogram` underneath). */
export interface MetricHistogram<L extends string = string> {
  /** Records one observation in the series without labels. */
  observe(value: number): void;
  /** Records one observation in the series of `labels`. */
  observe(labels: MetricLabels<L>, value: number): void;
  /** The current values: each bucket, the sum and the count. */
  get(): Promise<MetricValues<L>>;
}

/**
 * Every splitfleet series of one process (or of one coordinator): see docs/metrics.md.
 *
 * The series are typed by splitfleet's own `MetricCounter`, `MetricGauge` and
 * `MetricHistogram`, so prom-client's classes are no part of this surface.
 * `registry` is prom-client's `Registry` on purpose: it is where the series
 * meet the user's own (passed in as `MetricsOptions.registry`, served, merged).
 */
export class Metrics implements StoreCallRecorder {
  readonly registry: Registry;
  /** `splitfleet_build_info{version}`: 1, with the package's version. */
  readonly buildInfo: MetricGauge<'version'>;
  /** Worker: the lanes this instance may hold at once (its `maxInFlight`); `splitfleet_lanes` over it is utilisation. */
  readonly laneCapacity: MetricGauge;
  /** Worker: call `metrics.commits.inc()` once per `commit()` write that landed (commits are most of a job's etcd writes). */
  readonly commits: MetricCounter;
  /** Worker: the age of the oldest open lane, from the source given to `observeLanes` at each scrape (0 with none). */
  readonly oldestLaneAge: MetricGauge;
  private oldestLaneSeconds: () => number = () => 0;
  /** The leader's backlog, read when the gauges are scraped (`observeBacklog`); none: the gauges hold what was set. */
  private backlogSource: (() => Record<BacklogState, BacklogCount> | undefined) | undefined;
  readonly decisionSeconds: MetricHistogram;
  readonly publishSeconds: MetricHistogram;
  readonly improvingMoves: MetricCounter;
  readonly recordsPublished: MetricCounter;
  readonly recordsRefused: MetricCounter;
  readonly drainDuration: MetricHistogram;
  readonly assignmentLatency: MetricHistogram;
  readonly revocations: MetricCounter<'outcome'>;
  /** Division requests this instance answered, by outcome (decision 0063). */
  readonly divisions: MetricCounter<'outcome'>;
  /** Division asks the leader made. */
  readonly divisionAsks: MetricCounter;
  readonly claims: MetricCounter<'kind' | 'outcome'>;
  /** Worker: claims that landed in the transaction of a completion (decision 0055). */
  readonly claimsRidden: MetricCounter;
  readonly quarantined: MetricCounter;
  readonly leaderChanges: MetricCounter;
  readonly imbalance: MetricGauge;
  readonly lanes: MetricGauge;
  readonly isLeader: MetricGauge;
  readonly unreadable: MetricCounter<'kind'>;
  readonly parked: MetricGauge;
  readonly unknownOutcomes: MetricCounter<'resolution'>;
  /** Leader only: set through `setBacklog`, removed by `clearBacklog`. */
  readonly backlogSplits: MetricGauge<'state'>;
  /** Leader only: set through `setBacklog`, removed by `clearBacklog`. */
  readonly backlogWeight: MetricGauge<'state'>;
  /**
   * Worker: call `metrics.completions.inc()` once each time a lane ends
   * `completed`, i.e. when the handler's `split.complete()` write has landed
   * (not when the handler merely returns, and not for a lost or fenced one).
   */
  readonly completions: MetricCounter;
  /**
   * Worker: call `metrics.handlerFailures.inc({ kind })` once each time a lane ends
   * `failed`, i.e. when a failure report (the handler threw a non-retryable
   * error, or called `split.fail()`) has landed and consumed a delivery
   * attempt, whether or not it quarantined the split. `kind`: `permanent`
   * (`fail(r, { permanent: true })`, a thrown PermanentFailure), `timeout`
   * (the heartbeat timeout), else `error`. A retryable store error
   * rethrown by the handler releases the split instead and is not counted.
   */
  readonly handlerFailures: MetricCounter<'kind'>;
  /**
   * Coordinator: call `metrics.sessionLosses.inc()` once per session that
   * ends with kind `lost` (its lease expired or its renewals went
   * unconfirmed), where the coordinator drops its lanes and rejoins. A
   * graceful stop or close is not a loss.
   */
  readonly sessionLosses: MetricCounter;
  /** An error that escaped a background path (claims, reconcile, publish, ...), by where: logged and in health, never an exit. */
  readonly unexpectedErrors: MetricCounter<'where'>;
  /** A lane's write refused for good (not retryable): the lane was ended, by write (commit, complete, fail, release). */
  readonly laneWritesRefused: MetricCounter<'write'>;
  /** Filled by the store decorator (`instrumentStore`) through `storeCall`. */
  readonly storeCallSeconds: MetricHistogram<'call'>;
  /** Filled by the store decorator (`instrumentStore`) through `storeError`. */
  readonly storeErrors: MetricCounter<'call' | 'code'>;
  /** Removes every backlog series (prom-client's `reset`, which the exposed gauges do not offer). */
  private readonly resetBacklog: () => void;

  constructor(options: MetricsOptions = {}) {
    const prom = loadPromClient();
    const { Counter, Gauge, Histogram, Registry } = prom;
    if (options instanceof Registry) {
      throw new SplitfleetError('INVALID_CONFIG', 'Metrics: pass { registry } (new Metrics({ registry, labels })), not a Registry');
    }
    const labels = options.labels ?? {};
    checkLabels(labels);
    const registry = options.registry ?? new Registry();
    this.registry = registry;
    const registers = [registry];
    const seconds = [0.001, 0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];
    // Store round trips are sub-millisecond to a few seconds (an etcd election); finer at the bottom.
    const storeSeconds = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];
    this.decisionSeconds = new Histogram({ name: 'splitfleet_decision_seconds', help: 'Time to compute one desired assignment (leader).', buckets: seconds, registers });
    this.publishSeconds = new Histogram({ name: 'splitfleet_publish_seconds', help: 'One publishing step (leader): from deciding to its last assignment write landing.', buckets: seconds, registers });
    this.improvingMoves = new Counter({ name: 'splitfleet_improving_moves_total', help: 'Moves made by the improving pass (leader).', registers });
    this.recordsPublished = new Counter({ name: 'splitfleet_assignment_records_published_total', help: 'assign.{instance} records written (leader).', registers });
    this.recordsRefused = new Counter({ name: 'splitfleet_assignment_records_refused_total', help: 'Assignment records refused because they would exceed the store request limit.', registers });
    this.drainDuration = new Histogram({ name: 'splitfleet_drain_seconds', help: 'From a revocation beginning to the split being released.', buckets: seconds, registers });
    this.assignmentLatency = new Histogram({ name: 'splitfleet_assignment_latency_seconds', help: 'From a split being named in this instance\'s assignment to its claim.', buckets: seconds, registers });
    this.revocations = new Counter({ name: 'splitfleet_revocations_total', help: 'Revocations by outcome: cooperative, forced (deadline) or declined.', labelNames: ['outcome'], registers });
    this.divisions = new Counter({ name: 'splitfleet_divisions_total', help: 'Division requests this instance answered (worker), by outcome: landed (a residual created), declined (the handler would not, or set no onDivide), not-landed (lost meanwhile, or the residual existed).', labelNames: ['outcome'], registers });
    this.divisionAsks = new Counter({ name: 'splitfleet_division_asks_total', help: 'Divisions the leader asked of running splits while lanes would idle (leader).', registers });
    this.claims = new Counter({ name: 'splitfleet_claims_total', help: 'Claim transactions by kind (create, released, reclaim, expired) and outcome (won, lost).', labelNames: ['kind', 'outcome'], registers });
    this.claimsRidden = new Counter({ name: 'splitfleet_claims_in_completions_total', help: 'Claims that landed in the same transaction as the completion of the lane they took over (prefetch; also counted in splitfleet_claims_total).', registers });
    this.quarantined = new Counter({ name: 'splitfleet_quarantined_total', help: 'Splits this instance quarantined: a claim or a failure report that reached max_attempts, or a permanent failure.', registers });
    this.leaderChanges = new Counter({ name: 'splitfleet_leader_changes_total', help: 'Times this instance became leader.', registers });
    this.imbalance = new Gauge({ name: 'splitfleet_imbalance_ratio', help: 'Max load over its lower bound in the last decision (leader).', registers });
    this.lanes = new Gauge({ name: 'splitfleet_lanes', help: 'Lanes (held splits) open in this instance.', registers });
    this.isLeader = new Gauge({ name: 'splitfleet_is_leader', help: '1 while this instance leads.', registers });
    this.unreadable = new Counter({ name: 'splitfleet_unreadable_records_total', help: 'Records this instance could not read, by kind (each costs only what it concerns: a split, an instance\'s membership or assignment).', labelNames: ['kind'], registers });
    this.unknownOutcomes = new Counter({ name: 'splitfleet_unknown_outcomes_total', help: 'A lane\'s write whose reply was lost, read back (worker): landed (adopted, no attempt spent), not-landed (sent again) or moved (someone else wrote: the lane ends).', labelNames: ['resolution'], registers });
    this.parked = new Gauge({ name: 'splitfleet_parked_splits', help: 'Splits set aside because a record of theirs cannot be read (leader): neither assigned nor claimable until repaired.', registers });
    const { backlogSplits, backlogWeight } = backlogGauges(Gauge, registers, () => {
      const counts = this.backlogSource?.();
      if (counts) this.setBacklog(counts);
    });
    this.backlogSplits = backlogSplits;
    this.backlogWeight = backlogWeight;
    this.resetBacklog = () => {
      backlogSplits.reset();
      backlogWeight.reset();
    };
    this.completions = new Counter({ name: 'splitfleet_completions_total', help: 'Splits this instance completed (the complete() write landed).', registers });
    this.handlerFailures = new Counter({ name: 'splitfleet_handler_failures_total', help: 'Failure reports this instance landed (the handler threw or called fail(), or timed out), by kind (error, permanent, timeout): one delivery attempt each.', labelNames: ['kind'], registers });
    for (const kind of ['error', 'permanent', 'timeout']) this.handlerFailures.inc({ kind }, 0);
    this.sessionLosses = new Counter({ name: 'splitfleet_session_losses_total', help: 'Sessions this instance lost (lease expired or renewals unconfirmed): lanes dropped, fleet rejoined.', registers });
    this.unexpectedErrors = new Counter({ name: 'splitfleet_unexpected_errors_total', help: 'Errors that escaped a background path of this process (where: claim, reconcile, publish, ...): logged, shown in health, the process carries on.', labelNames: ['where'], registers });
    this.laneWritesRefused = new Counter({ name: 'splitfleet_lane_writes_refused_total', help: 'Lane writes refused for good (not retryable: by the store, or before sending as too large to encode), by write: the lane was ended and its split released or left to its lease.', labelNames: ['write'], registers });
    this.storeCallSeconds = new Histogram({ name: 'splitfleet_store_call_seconds', help: 'Store calls by method, from the call to its answer (failures included; watches until established).', labelNames: ['call'], buckets: storeSeconds, registers });
    this.storeErrors = new Counter({ name: 'splitfleet_store_errors_total', help: 'Store calls that failed, by method and SplitfleetError code (a lost transaction is an answer, not an error).', labelNames: ['call', 'code'], registers });
    this.buildInfo = new Gauge({ name: 'splitfleet_build_info', help: 'Always 1; its version label is the splitfleet package version this process runs.', labelNames: ['version'], registers });
    this.buildInfo.set({ version: VERSION }, 1);
    this.laneCapacity = new Gauge({ name: 'splitfleet_lane_capacity', help: 'Lanes this instance may hold at once (maxInFlight): splitfleet_lanes over it is lane utilisation.', registers });
    this.commits = new Counter({ name: 'splitfleet_commits_total', help: 'Progress commits this instance landed (the handler\'s commit() writes): most of a job\'s store writes.', registers });
    const oldest = () => this.oldestLaneSeconds();
    this.oldestLaneAge = new Gauge({
      name: 'splitfleet_oldest_lane_age_seconds', help: 'Seconds since the oldest lane open in this instance was claimed (0 with none): a hung handler keeps it growing.', registers,
      collect() {
        this.set(oldest());
      },
    });
    if (Object.keys(labels).length > 0) {
      for (const metric of registry.getMetricsAsArray()) {
        if (Object.values(this).includes(metric)) withConstantLabels(metric as unknown as Collectable, labels);
      }
    }
    if (options.defaultMetrics) {
      try {
        prom.collectDefaultMetrics({ register: registry, labels });
      } catch (e) {
        throw new SplitfleetError('INVALID_CONFIG', `Metrics defaultMetrics: ${(e as Error).message} (the registry already has Node's default metrics: leave defaultMetrics off)`, { cause: e });
      }
    }
  }

  /**
   * Worker: where `splitfleet_oldest_lane_age_seconds` reads its value at each
   * scrape: a function returning the seconds since the oldest open lane was
   * claimed (0 with none). The last one given wins.
   */
  observeLanes(oldestSeconds: () => number): void {
    this.oldestLaneSeconds = oldestSeconds;
  }

  /**
   * Leader: sets `splitfleet_backlog_splits{state}` and
   * `splitfleet_backlog_weight{state}` for all five states at once (a state
   * missing from `counts` is a type error, so no series is left stale). Call
   * it from the leader whenever its view of the job changes (at most once per
   * publishing step is enough). States: `queued` runnable and held by no live
   * lease (assigned or not yet); `running` held, its holder still assigned
   * it; `draining` held but no longer assigned to its holder (a revocation
   * in flight); `completed`; `quarantined`. Parked splits (unreadable
   * records) are in `splitfleet_parked_splits`, not here.
   */
  setBacklog(counts: Record<BacklogState, BacklogCount>): void {
    for (const state of BACKLOG_STATES) {
      const c = counts[state];
      this.backlogSplits.set({ state }, c.splits);
      this.backlogWeight.set({ state }, c.weight);
    }
  }

  /**
   * Leader: removes every backlog series. Call it when this instance stops
   * leading (deposed, resigned, stopped, session lost: wherever `isLeader` is
   * set back to 0), so that only the current leader exports a backlog and a
   * sum or max over instances does not count a former leader's stale view.
   */
  clearBacklog(): void {
    this.backlogSource = undefined;
    this.resetBacklog();
  }

  /**
   * Leader: the backlog as `source` says when the gauges are read (each
   * scrape calls it once per gauge), instead of `setBacklog` on every change:
   * what the leader does, because computing it costs the held splits and a
   * large job's view changes hundreds of times a second. A source that
   * returns undefined leaves the gauges as they are; `clearBacklog` ends it.
   */
  observeBacklog(source: () => Record<BacklogState, BacklogCount> | undefined): void {
    this.backlogSource = source;
  }

  /** The store decorator's hook: one store call answered (or failed) after `seconds`. */
  storeCall(call: StoreCall, seconds: number): void {
    this.storeCallSeconds.observe({ call }, seconds);
  }

  /** The store decorator's hook: one store call (or an established watch) failed with `code`. */
  storeError(call: StoreCall, code: string): void {
    this.storeErrors.inc({ call, code });
  }
}

/**
 * The two backlog gauges. `collect` runs when either is read: with a source
 * observed (`observeBacklog`) the backlog is computed at scrape time, since it
 * costs the held splits and recomputing it on every change of a 1M-split view
 * was half the leader's CPU (bench:fleet at 1M, 2026-12-04).
 */
function backlogGauges(Gauge: PromParts['Gauge'], registers: Registry[], collect: () => void) {
  const backlogSplits = new Gauge({
    name: 'splitfleet_backlog_splits', help: 'Splits of the job by state: queued, running, draining, completed, quarantined (leader only; absent elsewhere).',
    labelNames: ['state'], registers, collect,
  });
  const backlogWeight = new Gauge({
    name: 'splitfleet_backlog_weight', help: 'Summed split weight of the job by state, as splitfleet_backlog_splits (leader only; absent elsewhere).',
    labelNames: ['state'], registers, collect,
  });
  return { backlogSplits, backlogWeight };
}
