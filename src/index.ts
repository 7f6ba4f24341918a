/**
 * The public surface of splitfleet (`import … from 'splitfleet'`), exported by
 * name (no `export *`): the coordinator and its types, `MemoryStore` and the
 * store contract, operator actions, inspection, errors. What loads a heavy
 * dependency has an entry point of its own, so importing this one loads
 * neither etcd3 nor hono nor prom-client (test/unit/package/entry-points.test.ts):
 * `splitfleet/etcd` (etcd.ts), `splitfleet/http` (http.ts), `splitfleet/engine`
 * (engine.ts), `splitfleet/testing` (testing/index.ts). Add new exports as one
 * line each in the section they belong to.
 */

// The coordinator: one process's membership of a job.
export { Coordinator, startCoordinator } from './coordinator/coordinator.js';
export type { CoordinatorOptions } from './coordinator/coordinator.js';
export type { RunOptions, RunResult } from './coordinator/run.js';
export type { RunOutcome } from './coordinator/types.js';
export type { CommitOptions, DivideCallback, DivisionProposal, DivisionRequest, FailOptions } from './coordinator/types.js';
// Jobs as data and standing fleets (decision 0064).
export { serve } from './coordinator/serve.js';
export type { ServedJob, ServedKind, ServeOptions, Server } from './coordinator/serve.js';
export type { ExpositionSource } from './coordinator/merged-metrics.js';
export type { JobFinished } from './coordinator/leader/finished-hook.js';
export { submitJob } from './operator/submit.js';
export type { SubmitJobOptions, SubmittedJob } from './operator/submit.js';
export { waitForJob } from './operator/wait.js';
export type { JobResult, WaitForJobOptions } from './operator/wait.js';
export { MAX_FINAL_PROGRESS_LIMIT, readFinalProgress } from './operator/final-progress.js';
export type { FinalProgress, FinalProgressPage, ReadFinalProgressOptions } from './operator/final-progress.js';
export type { DefinitionRecord } from './protocol/definitions.js';
// Dividing a running split (decision 0063): the helper for ranges of numbered units.
export { divisibleRange } from './divisible-range.js';
export type { DivisibleRange, DivisibleRangeOptions, UnitRun } from './divisible-range.js';
export type {
  JobVerdict,
  Json,
  PlannedSplit,
  Planner,
  PlannerContext,
  PlanResult,
  SplitHandle,
  SplitHandler,
} from './coordinator/types.js';
export type { Assigner } from './coordinator/leader/publish.js';
export type { LeaderStats } from './coordinator/leader/leader.js';
export type { ClaimEventKind, CoordinatorEventMap, CoordinatorEventName, CoordinatorListener, CoordinatorListeners, DrainOutcome, DrainReason, ReleaseCause } from './coordinator/events.js';
export type { Health, HealthState } from './coordinator/health.js';
export { Metrics } from './coordinator/metrics.js';
export type { MetricCounter, MetricGauge, MetricHistogram, MetricLabels, MetricsOptions, MetricValues } from './coordinator/metrics.js';
export { sandboxedHandler } from './coordinator/sandbox/sandbox.js';
export type { SandboxedHandler, SandboxOptions } from './coordinator/sandbox/sandbox.js';
export { BACKLOG_STATES } from './coordinator/metrics.js';
export type { BacklogCount, BacklogState } from './coordinator/metrics.js';
export { defaultLogger, silentLogger } from './coordinator/log.js';
export type { Logger } from './coordinator/log.js';

// Configuration.
export { CONFIG_DEFAULTS, defaultFingerprint, resolveConfig } from './config.js';
export type { Config, ConfigOptions } from './config.js';
export { RETRY_BACKOFF_DEFAULTS } from './config.js';
export type { RetryBackoff } from './config.js';

// Time.
export { systemClock, VirtualClock } from './clock.js';
export type { Clock } from './clock.js';

// Stores (EtcdStore: splitfleet/etcd; a backend is opened by name with openStore, which loads its client then).
export { openStore } from './store/open.js';
export type { StoreSpec } from './store/open.js';
export { MemoryStore } from './store/memory.js';
export { BaseStore } from './store/base.js';
export type { MemoryStoreOptions, MemoryStoreStats } from './store/memory.js';
export { cmp, CompactedError, DEFAULT_LIMITS, isCompactedError, op } from './store/store.js';
export { InstrumentedStore, instrumentStore } from './store/instrumented.js';
export type { StoreCall, StoreCallRecorder } from './store/instrumented.js';
export type {
  Compare,
  KeyRange,
  KeyValue,
  ListOptions,
  ListPage,
  Op,
  SnapshotHandler,
  Store,
  StoreLimits,
  Txn,
  TxnResult,
  WatchEvent,
  WatchHandle,
  WatchOptions,
} from './store/store.js';

// Keys (where a job lives on the store).
export { jobPrefix } from './protocol/keys.js';
export type { KeyKind } from './protocol/keys.js';
// A job's scope: its kinds' ranges, never a nested root's keys (decision 0027).
export { inJobScope, jobKeyRanges, jobSpan } from './protocol/scope.js';
export type { ScopeRange } from './protocol/scope.js';
export { listJobKeys } from './operator/scope.js';

// Operator actions: list, retry, pause, resume, evacuate, delete (one guarded write each; decision 0011).
export { listJobs } from './operator/jobs.js';
export type { JobSummary } from './operator/jobs.js';
export { previewRetry, retrySplits } from './operator/retry.js';
export type { RetryOptions, RetryPreview, RetryResult } from './operator/retry.js';
export { evacuateInstance, pauseJob, resumeInstance, resumeJob } from './operator/control.js';
export type { ControlResult } from './operator/control.js';
export { deleteJob, previewDelete } from './operator/delete.js';
export type { DeleteOptions, DeletePreview, DeleteResult } from './operator/delete.js';
export type { JobTarget } from './operator/job.js';
export type { ControlRecord, Evacuation } from './protocol/records.js';

// Inspection: a job's state from its records (the command line's text renderers are its own: text.ts).
export { detectFingerprintHash, jobReport, readJobRecords, splitState } from './inspect/report.js';
export type { JobRecords, JobReport, MemberReport, ReportInfo, RevocationReport, SplitState } from './inspect/report.js';
export { splitStatus } from './inspect/packed-records.js';
export type { FoldedSlots, QueueRecords } from './inspect/packed-records.js';
export type {
  AssignRecord, LeaderRecord, LeaseRecord, PlanRecord, ProgressRecord, QueueRecord, SpecRecord, SplitRecord, StoredHistoryEntry, SummaryRecord, WorkerRecord,
} from './protocol/records.js';
export { ChangeTracker } from './inspect/changes.js';
export type { ChangeEvent, RecordChange } from './inspect/changes.js';
export { MAX_SPLIT_PAGE, readSplit, readSplitPage } from './inspect/split-read.js';
export type { SplitPageOptions } from './inspect/split-read.js';
export { readFullReport, readJobReport } from './inspect/summary-read.js';
export type { InspectResult, ReadJobReportOptions, SummaryReport } from './inspect/summary-read.js';
export type { SplitPage, SplitView } from './inspect/splits.js';

// The desired assignment, the pool and the quality figures: splitfleet/engine.

// Errors.
export { isSplitfleetError, SplitfleetError } from './errors.js';
// A handler's permanent failure: the split is quarantined at once (decision 0032).
export { isPermanentFailure, PermanentFailure } from './errors.js';
export type { FailureKind } from './protocol/retry-policy.js';
export type { SplitfleetErrorCode } from './errors.js';
