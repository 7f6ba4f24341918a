/**
 * What the dashboard page is sent (`DashboardView`, one per refresh) and how
 * a report becomes one: `slim` cuts the full report (members as counts, long
 * lists to their first entries), `summaryDashboardReport` builds one from the
 * leader's summary (counts only). Pure; live.ts keeps the view current.
 */
import type { ChangeEvent } from './changes.js';
import type { JobReport, MemberReport } from './report.js';
import type { SummaryReport } from './summary-read.js';

/** One line of the event log. */
export type DashboardEvent = ChangeEvent & {
  /** Increasing from 1: lets a client tell new lines from seen ones. */
  seq: number;
  /** Milliseconds since the epoch: when the dashboard saw it, or (told by the leader's history) when the leader did. */
  at: number;
  /** The store revision of the change it reports: the log's order (event-log.ts). */
  rev: number;
  /** Who told it: the dashboard's own watch, or the leader's history, read from the summary (decision 0070). */
  told: 'watch' | 'history';
  text: string;
};

/** A member as the page shows it: counts instead of id lists (a member may hold thousands). */
export type DashboardMember = Omit<MemberReport, 'assigned' | 'held' | 'claiming' | 'revoking'> & {
  heldCount: number;
  /** Null when it has no assignment record. */
  assignedCount: number | null;
  claimingCount: number;
  revokingCount: number;
};

/**
 * The report as the page gets it: the JobReport's fields (any this build
 * does not name are passed through as they are), members slimmed, long lists
 * cut to their first entries with their full length beside them.
 */
export type DashboardReport = Omit<JobReport, 'members'> & {
  members: DashboardMember[];
  revocationsTotal: number;
  quarantinedTotal: number;
  retryingTotal: number;
  problemsTotal: number;
};

/** What the dashboard page is sent on every refresh: the report, the members' rows and the events so far. */
export interface DashboardView {
  job: string;
  root: string;
  prefix: string;
  /** Milliseconds since the epoch of this view. */
  generatedAt: number;
  watch: { live: boolean; error: string | null };
  /**
   * What `report` was built from: the leader's summary (the first view of a large job, until
   * every record has been read: counts only, no per-split lists), or every record.
   */
  source: {
    kind: 'summary'; generation: number; ageMs: number;
    /** False above `followRecordsUpTo` splits: the per-split lists will not follow (decision 0042); true while every record is being read. */
    followsRecords: boolean;
  } | { kind: 'records' };
  report: DashboardReport;
  /** The latest events, oldest first. */
  events: DashboardEvent[];
}

/** The report without per-member id lists, long lists cut. Fields this build does not know pass through. */
export function slim(report: JobReport, maxListed: number): DashboardReport {
  const members = report.members.map((m): DashboardMember => {
    const { assigned, held, claiming, revoking, ...rest } = m;
    return { ...rest, heldCount: held.length, assignedCount: assigned?.length ?? null, claimingCount: claiming.length, revokingCount: revoking.length };
  });
  return {
    ...report,
    members,
    revocations: report.revocations.slice(0, maxListed),
    revocationsTotal: report.revocations.length,
    quarantined: report.quarantined.slice(0, maxListed),
    quarantinedTotal: report.quarantined.length,
    retrying: report.retrying.slice(0, maxListed),
    retryingTotal: report.retrying.length,
    problems: report.problems.slice(0, maxListed),
    problemsTotal: report.problems.length,
  };
}

/** The dashboard's report from the leader's summary: counts and members' lane budgets, no per-split lists. */
export function summaryDashboardReport(s: SummaryReport): DashboardReport {
  const sp = s.splits;
  return {
    root: s.root, job: s.job, prefix: s.prefix, revision: s.revision, fingerprintHash: s.fingerprintHash, exists: true,
    leader: s.leader, plan: s.plan,
    members: s.members.map((m): DashboardMember => ({
      instance: m.instance, live: true, leader: m.leader, maxInFlight: m.maxInFlight, assignmentGeneration: null,
      load: 0, assignedLoad: 0, heldCount: 0, assignedCount: null, claimingCount: 0, revokingCount: 0,
    })),
    splits: {
      queued: sp.queued + sp.backoff, running: sp.held - sp.revoking, draining: sp.revoking,
      completed: sp.completed, quarantined: sp.quarantined, total: sp.total,
    },
    progress: s.progress,
    revocations: [], revocationsTotal: sp.revoking,
    quarantined: [], quarantinedTotal: sp.quarantined,
    retrying: [], retryingTotal: sp.backoff,
    paused: s.paused, evacuated: s.evacuated, stuck: s.stuck,
    problems: s.problems, problemsTotal: s.problems.length,
  };
}
