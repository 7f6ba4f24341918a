/**
 * The dashboard's job list: every job under the root as `splitfleet jobs`
 * lists it (listJobs: the leader's summary when it speaks for the job, else
 * the split records), joined with the jobs' definitions (their kind; a job
 * submitted but not yet planned has only that), with each job's state, its
 * progress, and the rate and ETA that rates.ts makes from successive reads.
 *
 * Invariants:
 * - Read-only.
 * - At most one read in flight and at most one per `refreshMs`, whatever the
 *   number of viewers: a viewer asking sooner gets the last list.
 * - A failed read keeps the last list and says why (`error`).
 */
import { listDefinitions, type ListedDefinition } from '../operator/definitions.js';
import { listJobs, type JobSummary } from '../operator/jobs.js';
import type { Store } from '../store/store.js';
import { RateWindow, type Rate } from './rates.js';

/** A job's state as the list shows it. */
export type JobState =
  /** A definition with no plan yet: waiting for a fleet serving its kind. */
  | 'submitted'
  /** Planned, the plan still open (more splits may come). */
  | 'planning'
  | 'running'
  | 'paused'
  | 'complete'
  | 'stalled'
  /** Keys under its prefix, but no readable plan (see `problem`). */
  | 'unknown';

/** One row of the job list. */
export interface JobRow {
  job: string;
  /** The kind of its definition; null for a job started with startCoordinator (no definition). */
  kind: string | null;
  state: JobState;
  leader: string | null;
  members: number;
  /** Splits: completed, and planned (or seen, when more have been seeded than the plan says). */
  done: number;
  planned: number;
  quarantined: number;
  /** Splits completed per second, over the last minute of this dashboard's reads; null until two reads a second apart. */
  ratePerSecond: number | null;
  /** Ms until the splits left are done at that rate; null when unknown or nothing is left. */
  etaMs: number | null;
  /** The plan is open: the ETA counts only the splits planned so far. */
  openPlan: boolean;
  /** Where the counts came from (listJobs' `source`). */
  source: JobSummary['source'];
  /** A problem reading the job or its definition, or null. */
  problem: string | null;
}

/** What `api/jobs` answers. */
export interface JobListView {
  root: string;
  /** Ms since the epoch of the read. */
  generatedAt: number;
  jobs: JobRow[];
  /** The last read failed: why (the jobs are the last read's). */
  error: string | null;
}

export interface JobListOptions {
  store: Store;
  root: string;
  /** Least time between two reads, ms (default 2000). */
  refreshMs?: number;
  now?: () => number;
}

export class JobList {
  private readonly refreshMs: number;
  private readonly now: () => number;
  private readonly rates = new RateWindow();
  private last: JobListView | undefined;
  private reading: Promise<JobListView> | undefined;

  constructor(private readonly options: JobListOptions) {
    this.refreshMs = options.refreshMs ?? 2000;
    this.now = options.now ?? Date.now;
  }

  /** The list, read again when the last read is older than `refreshMs`. Rejects only when there has never been a list. */
  async view(): Promise<JobListView> {
    if (this.last !== undefined && this.now() - this.last.generatedAt < this.refreshMs) return this.last;
    this.reading ??= this.read().finally(() => (this.reading = undefined));
    return this.reading;
  }

  private async read(): Promise<JobListView> {
    const { store, root } = this.options;
    try {
      const [jobs, definitions] = await Promise.all([listJobs({ store, root }), listDefinitions({ store, root })]);
      const at = this.now();
      this.last = { root, generatedAt: at, jobs: this.rows(at, jobs, definitions), error: null };
    } catch (e) {
      if (this.last === undefined) throw e;
      this.last = { ...this.last, generatedAt: this.now(), error: `cannot list the jobs under ${root}/: ${(e as Error).message}; showing the last list` };
    }
    return this.last;
  }

  private rows(at: number, jobs: JobSummary[], definitions: ListedDefinition[]): JobRow[] {
    const defs = new Map(definitions.map((d) => [d.job, d]));
    const rows = jobs.map((j) => row(j, defs.get(j.job)));
    const listed = new Set(jobs.map((j) => j.job));
    // Submitted, nothing under its prefix yet: no fleet of its kind has planned it.
    for (const d of definitions) if (!listed.has(d.job)) rows.push(submitted(d));
    rows.sort((a, b) => (a.job < b.job ? -1 : a.job > b.job ? 1 : 0));
    const rates = this.rates.observe(at, rows.map((r) => ({
      job: r.job, completed: r.done, remaining: r.planned - r.done - r.quarantined, finished: r.state === 'complete' || r.state === 'stalled',
    })));
    return rows.map((r) => withRate(r, rates.get(r.job)));
  }
}

function withRate(r: JobRow, rate: Rate | undefined): JobRow {
  return { ...r, ratePerSecond: rate?.perSecond ?? null, etaMs: rate?.etaMs ?? null };
}

function stateOf(j: JobSummary, def: ListedDefinition | undefined): JobState {
  if (j.verdict !== null) return j.verdict;
  if (j.plan === null) return def !== undefined ? 'submitted' : 'unknown';
  if (j.paused) return 'paused';
  return j.plan.final ? 'running' : 'planning';
}

function row(j: JobSummary, def: ListedDefinition | undefined): JobRow {
  return {
    job: j.job, kind: def?.kind ?? null, state: stateOf(j, def), leader: j.leader, members: j.members.length,
    done: j.splits.completed, planned: Math.max(j.plan?.planned ?? 0, j.splits.total), quarantined: j.splits.quarantined,
    ratePerSecond: null, etaMs: null, openPlan: j.plan !== null && !j.plan.final, source: j.source,
    // A job with a definition but no plan yet is not a problem: it waits for its fleet.
    problem: j.plan === null && def !== undefined ? def.problem : (j.problem ?? def?.problem ?? null),
  };
}

function submitted(d: ListedDefinition): JobRow {
  return {
    job: d.job, kind: d.kind, state: 'submitted', leader: null, members: 0, done: 0, planned: 0, quarantined: 0,
    ratePerSecond: null, etaMs: null, openPlan: true, source: null, problem: d.problem,
  };
}
