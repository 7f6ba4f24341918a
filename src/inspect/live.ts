/**
 * One job kept live from one prefix watch, for the dashboard: the decoded
 * records (applied key by key with `applyRecord`), a fresh `jobReport` at
 * most every `refreshMs` after a change, and the event log diffed from each
 * record's change (`ChangeTracker`). Subscribers get every refreshed view.
 *
 * Invariants:
 * - Read-only: it lists and watches, never writes.
 * - Never throws on what it reads: an undecodable record is a problem line.
 * - The fingerprint is detected from the job's own records (as `inspect`
 *   does): until something is stored, raw values are held and decoded once
 *   it is known, so a dashboard may start before its job.
 * - A watch that stops (compaction, etcd away) is re-snapshotted after a
 *   pause; the event log and the diff state survive it.
 * - The event log opens on the leader's history (the summary's `history`,
 *   decision 0070), read with the first keys and again from every summary
 *   the watch or the poll brings, and goes on with what the watch tells;
 *   an event told both ways is one line (event-log.ts).
 * - The first view comes from the leader's summary when it speaks for the job
 *   (summary-read.ts, decision 0040): `start` resolves once it is read, and
 *   the snapshot of every record, which a large job takes long to list, follows
 *   in the background; until it lands the view says its source is the summary.
 * - Above `followRecordsUpTo` splits the job is followed by its summary only
 *   (decision 0042): the summary's few keys are read again every
 *   `summaryPollMs`, and no split record is ever listed or watched, so the
 *   dashboard's memory and its store traffic do not grow with the job.
 */
import type { KeyValue, Store, WatchHandle } from '../store/store.js';
import { jobPrefix, parseKey } from '../protocol/keys.js';
import { inJobScope, jobSpan } from '../protocol/scope.js';
import { readHistory } from '../protocol/job-history.js';
import { decodeSummary } from '../protocol/summary.js';
import { ChangeTracker, type RecordChange } from './changes.js';
import { slim, summaryDashboardReport, type DashboardView } from './dashboard-view.js';
import { EventLog } from './event-log.js';
import { applyRecord, detectFingerprintHash, emptyJobRecords, jobReport, type JobRecords } from './report.js';
import { fromSummary, listScope, summaryHistory, SUMMARY_ABOVE_SPLITS, SUMMARY_KINDS, type SummaryReport } from './summary-read.js';


/**
 * The most splits (by a trusted summary) the dashboard follows record by record; above it, the
 * summary only (decision 0042). At 1M splits on etcd the snapshot of every record had not landed
 * after 240 s and held 521 MiB (bench/inspect-summary.ts).
 */
export const FOLLOW_RECORDS_UP_TO = 200_000;

/** Keys per page of a packed job's snapshot: a queue page record may be near a store request's size. */
const PACKED_SNAPSHOT_PAGE = 16;

/** The plan record's `layout` field, read before the record can be decoded (the fingerprint is not known yet). */
function planLayout(value: string): unknown {
  try {
    return (JSON.parse(value) as { layout?: unknown }).layout;
  } catch {
    return undefined;
  }
}

export interface LiveJobOptions {
  store: Store;
  job: string;
  root?: string;
  /** Least time between two refreshes, ms (default 250). */
  refreshMs?: number;
  /** Events kept (default 300). */
  maxEvents?: number;
  /** Entries kept of each long list (revocations, quarantined, problems; default 200). */
  maxListed?: number;
  /** Pause before re-snapshotting a stopped watch, ms (default 2000). */
  retryMs?: number;
  /** The first view comes from a trusted summary counting more splits than this (default SUMMARY_ABOVE_SPLITS). */
  summaryAbove?: number;
  /** Above this many splits (by a trusted summary) the job is followed by its summary only (default FOLLOW_RECORDS_UP_TO). */
  followRecordsUpTo?: number;
  /** How often the summary is read again while it is all that is followed, ms (default 2000). */
  summaryPollMs?: number;
  now?: () => number;
}

export class LiveJob {
  readonly job: string;
  readonly root: string;
  readonly prefix: string;
  private readonly store: Store;
  private readonly refreshMs: number;
  private readonly maxEvents: number;
  private readonly maxListed: number;
  private readonly retryMs: number;
  private readonly summaryAbove: number;
  private readonly followRecordsUpTo: number;
  private readonly summaryPollMs: number;
  /** Set when the job is followed by its summary only (above followRecordsUpTo). */
  private summaryOnly = false;
  /**
   * Keys per page of the snapshot of every record: fewer for a packed job, whose queue pages may
   * each be near a store request's size (decision 0037); its other keys are few (promoted splits only).
   */
  private snapshotPageSize: number | undefined;
  private poll: NodeJS.Timeout | undefined;
  private readonly now: () => number;
  private records: JobRecords = emptyJobRecords();
  private fp: string | undefined;
  /** Raw values, only until the fingerprint is known. */
  private pending = new Map<string, KeyValue>();
  private readonly problems = new Map<string, string>();
  private revision = 0;
  private handle: WatchHandle | undefined;
  private readonly tracker = new ChangeTracker();
  private readonly log: EventLog;
  private error: string | null = null;
  private timer: NodeJS.Timeout | undefined;
  private retry: NodeJS.Timeout | undefined;
  private lastRefresh = 0;
  private closed = false;
  /** The summary the first view came from, until the snapshot of every record lands. */
  private summary: SummaryReport | undefined;
  private current: DashboardView;
  private readonly listeners = new Set<(view: DashboardView) => void>();

  constructor(options: LiveJobOptions) {
    this.store = options.store;
    this.job = options.job;
    this.root = options.root ?? 'splitfleet';
    this.prefix = jobPrefix(this.root, this.job);
    this.refreshMs = options.refreshMs ?? 250;
    this.maxEvents = options.maxEvents ?? 300;
    this.maxListed = options.maxListed ?? 200;
    this.retryMs = options.retryMs ?? 2000;
    this.summaryAbove = options.summaryAbove ?? SUMMARY_ABOVE_SPLITS;
    this.followRecordsUpTo = options.followRecordsUpTo ?? FOLLOW_RECORDS_UP_TO;
    this.summaryPollMs = options.summaryPollMs ?? 2000;
    this.now = options.now ?? Date.now;
    this.log = new EventLog(this.maxEvents);
    this.current = this.build();
  }

  /** Starts the watch; rejects when the first snapshot cannot be read (etcd unreachable, refused). */
  async start(): Promise<void> {
    const { kvs, revision } = await listScope(this.store, this.prefix, SUMMARY_KINDS);
    if (kvs.some((kv) => parseKey(this.prefix, kv.key).kind === 'plan' && planLayout(kv.value) === 'packed')) this.snapshotPageSize = PACKED_SNAPSHOT_PAGE;
    const summary = fromSummary(kvs, { root: this.root, job: this.job, prefix: this.prefix, revision, now: this.now() }).report;
    // What happened before the dashboard looked: the leader's history, whether or not its counts are trusted.
    this.log.addHistory(summaryHistory(this.prefix, kvs, this.now()));
    // A small job's snapshot is quick: its first view may as well be the whole one.
    this.summary = summary !== undefined && summary.splits.total > this.summaryAbove ? summary : undefined;
    if (this.summary === undefined) {
      await this.watch();
      this.refresh();
      return;
    }
    if (this.summary.splits.total > this.followRecordsUpTo) {
      this.summaryOnly = true;
      this.refresh();
      this.schedulePoll();
      return;
    }
    this.refresh();
    // Every record, for the per-split lists and live events: in the background, retried as a stopped watch is.
    this.watchInBackground();
  }

  /** The next read of the summary's keys, while the summary is all that is followed. */
  private schedulePoll(): void {
    if (this.closed) return;
    this.poll = setTimeout(() => {
      this.poll = undefined;
      void this.readSummary().finally(() => this.schedulePoll());
    }, this.summaryPollMs);
  }

  /** Reads the summary again; one that cannot be trusted now (a new leader not yet written it) keeps the last, and says why. */
  private async readSummary(): Promise<void> {
    try {
      const { kvs, revision } = await listScope(this.store, this.prefix, SUMMARY_KINDS);
      const answer = fromSummary(kvs, { root: this.root, job: this.job, prefix: this.prefix, revision, now: this.now() });
      if (answer.report !== undefined) this.summary = answer.report;
      // Following the summary only, its history is the whole event log.
      this.log.addHistory(summaryHistory(this.prefix, kvs, this.now()));
      this.error = answer.report !== undefined ? null : `the leader's summary cannot be trusted now (${answer.reason}); showing the last one`;
    } catch (e) {
      this.error = `cannot read ${this.prefix}: ${(e as Error).message}; retrying in ${this.summaryPollMs / 1000} s`;
    }
    this.dirty();
  }

  /** The latest view. */
  view(): DashboardView {
    return this.current;
  }

  /** Calls `listener` with every refreshed view; returns the unsubscribe. */
  subscribe(listener: (view: DashboardView) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.timer);
    clearTimeout(this.retry);
    clearTimeout(this.poll);
    this.listeners.clear();
    await this.handle?.close().catch(() => undefined);
  }

  private async watch(): Promise<void> {
    // The job's span only, and of it only the job's own keys: never a nested job's (decision 0027).
    const handle = this.store.snapshotAndWatch(this.prefix, {
      onSnapshot: (kvs, revision) => {
        this.summary = undefined;
        // A re-snapshot replaces everything: keys deleted while the watch was down are gone from it.
        this.records = emptyJobRecords();
        this.pending = new Map();
        this.problems.clear();
        for (const kv of kvs) if (inJobScope(this.prefix, kv.key)) this.apply(kv.key, kv, false);
        if (this.fp !== undefined) this.tracker.seed(this.records);
        this.revision = revision;
        this.error = null;
        this.dirty();
      },
      onEvent: (e) => {
        if (!inJobScope(this.prefix, e.key)) return;
        this.revision = Math.max(this.revision, e.modRevision);
        this.apply(e.key, e.type === 'put' ? { key: e.key, value: e.value ?? '', createRevision: e.createRevision ?? 0, modRevision: e.modRevision } : undefined, true, e.modRevision);
        this.dirty();
      },
      onError: (e) => {
        if (handle !== this.handle || this.closed) return;
        this.error = `the watch stopped: ${e.message}; re-reading in ${this.retryMs / 1000} s`;
        this.dirty();
        void handle.close().catch(() => undefined);
        this.scheduleRetry();
      },
    }, { ...jobSpan(this.prefix), ...(this.snapshotPageSize !== undefined ? { pageSize: this.snapshotPageSize } : {}) });
    this.handle = handle;
    await handle.ready;
    if (this.closed) await handle.close();
  }

  private scheduleRetry(): void {
    // Both the watch's onError and a failed `ready` may ask; one retry at a time.
    if (this.retry !== undefined || this.closed) return;
    this.retry = setTimeout(() => {
      this.retry = undefined;
      if (!this.closed) this.watchInBackground();
    }, this.retryMs);
  }

  /** Starts the watch without waiting for it; a failure is shown and retried after `retryMs`. */
  private watchInBackground(): void {
    this.watch().catch((e: unknown) => {
      void this.handle?.close().catch(() => undefined);
      if (this.closed) return;
      this.error = `cannot read ${this.prefix}: ${(e as Error).message}; retrying in ${this.retryMs / 1000} s`;
      this.dirty();
      this.scheduleRetry();
    });
  }

  /**
   * Applies one key's value (undefined: deleted); `narrate`: turn it into events (not while reading a
   * snapshot); `rev`: the change's revision (a deletion has no KeyValue to carry it).
   */
  private apply(key: string, kv: KeyValue | undefined, narrate: boolean, rev = kv?.modRevision ?? 0): void {
    if (this.fp === undefined) {
      if (kv) this.pending.set(key, kv);
      else this.pending.delete(key);
      this.fp = detectFingerprintHash(this.prefix, [...this.pending.values()]);
      if (this.fp === undefined) return;
      // Now readable: what was held replays in order (news when it came by the watch; a snapshot seeds instead).
      const held = [...this.pending.values()];
      this.pending = new Map();
      for (const each of held) this.applyKnown(each.key, each.value, narrate, each.modRevision);
      return;
    }
    this.applyKnown(key, kv?.value, narrate, rev);
  }

  private applyKnown(key: string, value: string | undefined, narrate: boolean, rev: number): void {
    const before = narrate ? this.recordAt(key) : undefined;
    this.decode(key, value);
    if (value !== undefined && parseKey(this.prefix, key).kind === 'summary') this.readHistory(key, value);
    if (!before) return;
    // The same kind and id, read again after the change: its `before` is now the record's new value.
    const change = { ...before, after: this.recordAt(key)?.before } as RecordChange;
    const at = this.now();
    for (const e of this.tracker.change(this.records, change)) this.log.addLive(e, rev, at);
  }

  /** The history a summary carries, into the log (an unreadable summary is a problem line already: `decode`). */
  private readHistory(key: string, value: string): void {
    try {
      this.log.addHistory(readHistory(decodeSummary(key, value, this.fp!).history));
    } catch {
      // Shown by decode's problem line.
    }
  }

  /** The record `key` holds now, as a change's `before` (undefined for keys that make no events). */
  private recordAt(key: string): RecordChange | undefined {
    const parsed = parseKey(this.prefix, key);
    const r = this.records;
    switch (parsed.kind) {
      case 'plan': return { kind: 'plan', before: r.plan };
      case 'leader': return { kind: 'leader', before: r.leader };
      case 'control': return { kind: 'control', before: r.control };
      case 'worker': return { kind: 'worker', id: parsed.id, before: r.workers.get(parsed.id) };
      case 'assign': return { kind: 'assign', id: parsed.id, before: r.assigns.get(parsed.id) };
      case 'lease': return { kind: 'lease', id: parsed.id, before: r.leases.get(parsed.id) };
      case 'split': return { kind: 'split', id: parsed.id, before: r.splits.get(parsed.id) };
      default: return undefined;
    }
  }

  private decode(key: string, value: string | undefined): void {
    const problem = applyRecord(this.records, this.prefix, this.fp!, key, value);
    if (problem === undefined) this.problems.delete(key);
    else this.problems.set(key, problem);
  }

  /** Refreshes now if the last refresh is old enough, else once it is. */
  private dirty(): void {
    if (this.timer !== undefined || this.closed) return;
    const wait = Math.max(0, this.lastRefresh + this.refreshMs - this.now());
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.refresh();
    }, wait);
  }

  private refresh(): void {
    if (this.closed) return;
    this.lastRefresh = this.now();
    this.current = this.build();
    for (const listener of this.listeners) listener(this.current);
  }

  private build(): DashboardView {
    const at = this.now();
    if (this.summary !== undefined) {
      const s = this.summary;
      return {
        job: this.job, root: this.root, prefix: this.prefix, generatedAt: at,
        // Following the summary only, the view is live while the summary reads; else it waits for every record.
        watch: { live: this.summaryOnly && this.error === null, error: this.error },
        source: { kind: 'summary', generation: s.summary.generation, ageMs: Math.max(0, at - s.summary.writtenAt), followsRecords: !this.summaryOnly },
        report: summaryDashboardReport(s),
        events: this.log.events(),
      };
    }
    const report = jobReport(this.records, {
      root: this.root, job: this.job, prefix: this.prefix, revision: this.revision, fingerprintHash: this.fp, problems: [...this.problems.values()], now: at,
    });
    return {
      job: this.job,
      root: this.root,
      prefix: this.prefix,
      generatedAt: at,
      watch: { live: this.error === null && this.handle !== undefined, error: this.error },
      source: { kind: 'records' },
      report: slim(report, this.maxListed),
      events: this.log.events(),
    };
  }
}
