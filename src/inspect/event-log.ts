/**
 * The dashboard's event log: what the leader's history says happened before
 * the dashboard looked (decision 0070: the summary's `history`), then what
 * the dashboard sees happen, one line per event, in store-revision order.
 *
 * Invariants:
 * - An event told both ways (by the history and by a watched change) is one
 *   line: the same revision, kind and subject (job-history.ts `subjectOf`)
 *   is the same event. The line first told stays (its time, its seq).
 * - Ordered by revision: a history entry that arrives after later live lines
 *   (a summary is written every few seconds) is put in its place.
 * - Bounded: the newest `maxEvents` lines are kept; a history entry older
 *   than every kept line of a full log is not put back.
 *
 * Pure: no I/O, no clock (each line's time comes in with it).
 */
import { subjectOf, type HistoryEntry, type HistoryEvent } from '../protocol/job-history.js';
import { describeChange, type ChangeEvent } from './changes.js';
import type { DashboardEvent } from './dashboard-view.js';

/** The kinds both the leader's history and the watch tell. */
const TOLD_BOTH_WAYS: ReadonlySet<string> = new Set(['join', 'leave', 'leader', 'failed', 'quarantine', 'divided', 'paused', 'resumed', 'verdict']);

/** Same revision, kind and subject: one event (undefined for kinds only the watch tells: never deduplicated). */
function identity(e: ChangeEvent, rev: number): string | undefined {
  return TOLD_BOTH_WAYS.has(e.kind) ? `${rev}\u0000${e.kind}\u0000${subjectOf(e as HistoryEvent)}` : undefined;
}

export class EventLog {
  private lines: DashboardEvent[] = [];
  private readonly known = new Set<string>();
  private seq = 0;

  constructor(private readonly maxEvents: number) {}

  /** An event seen by the watch: the change of revision `rev`, seen at `at` (wall ms). */
  addLive(event: ChangeEvent, rev: number, at: number): void {
    this.insert(event, rev, at, 'watch');
    this.trim();
  }

  /** The leader's history (any number of times: what is already told is skipped). */
  addHistory(entries: readonly HistoryEntry[]): void {
    for (const { rev, at, ...event } of entries) {
      // A full log's oldest line is newer: this one was let go already, or would be at once.
      if (this.lines.length >= this.maxEvents && rev < this.lines[0]!.rev) continue;
      this.insert(event as ChangeEvent, rev, at, 'history');
    }
    this.trim();
  }

  /** The lines, oldest first. */
  events(): DashboardEvent[] {
    return [...this.lines];
  }

  private insert(event: ChangeEvent, rev: number, at: number, told: DashboardEvent['told']): void {
    const id = identity(event, rev);
    if (id !== undefined) {
      if (this.known.has(id)) return;
      this.known.add(id);
    }
    const line: DashboardEvent = { ...event, seq: ++this.seq, at, rev, told, text: describeChange(event) };
    let i = this.lines.length;
    while (i > 0 && this.lines[i - 1]!.rev > rev) i--;
    if (i === this.lines.length) this.lines.push(line);
    else this.lines.splice(i, 0, line);
  }

  private trim(): void {
    if (this.lines.length <= this.maxEvents) return;
    for (const gone of this.lines.splice(0, this.lines.length - this.maxEvents)) {
      const id = identity(gone, gone.rev);
      if (id !== undefined) this.known.delete(id);
    }
  }
}
