/**
 * What happens in a job, as events an operator can read, diffed from each
 * change of one record (its value before and after): members joining and
 * leaving, leader changes, splits moving from one assignee to another,
 * revocations starting and ending, claims by a new holder, failures,
 * quarantines, pauses and resumes, and the verdict. The kinds the leader's
 * history also keeps (protocol/job-history.ts) are spelled as it spells them,
 * so a line told both ways is one line (event-log.ts). The dashboard (`splitfleet inspect --serve`) feeds it every
 * watched change, so a revocation shorter than a refresh is still seen.
 *
 * Invariants:
 * - No I/O, no clock, no randomness: the same changes give the same events
 *   (the caller stamps them). It reads `records` and never changes them.
 * - A move is a change of assignee, remembered across the naming record
 *   going away: a split named by A, then by no record, then by B, moved A→B.
 * - A revocation starts when an instance's assignment record stops naming a
 *   split it holds (a live lease key), exactly what jobReport calls
 *   draining; it ends when the lease key goes or changes hands, or when the
 *   record names the split again.
 * - `seed` learns a state without reporting it: what was already true when
 *   the dashboard started did not "happen".
 */
import type {
  AssignRecord, ControlRecord, LeaderRecord, LeaseRecord, PlanRecord, SplitRecord, WorkerRecord,
} from '../protocol/records.js';
import { isResidualId, parentOf } from '../protocol/residual-ids.js';
import { printableDeep } from './printable.js';
import type { JobRecords } from './report.js';

/** One thing the dashboard's event log says happened, derived from one record's change. */
export type ChangeEvent =
  | { kind: 'join'; instance: string; lanes: number }
  | { kind: 'leave'; instance: string }
  | { kind: 'leader'; instance: string; generation: number; previous: string | null }
  | { kind: 'move'; split: string; from: string; to: string; fromLive: boolean }
  | { kind: 'revocation-start'; split: string; holder: string; to: string | null }
  | { kind: 'revocation-end'; split: string; holder: string; outcome: 'handed-over' | 'released' | 'kept'; next: string | null }
  | { kind: 'claim'; split: string; holder: string; previous: string }
  | { kind: 'quarantine'; split: string; attempts: number; reason: string | null }
  /** A failure report: the split waits out its backoff (`attempts` consumed so far). */
  | { kind: 'failed'; split: string; attempts: number; reason: string | null }
  | { kind: 'paused' }
  | { kind: 'resumed' }
  /** A residual appeared (decision 0063): a running split was divided; `parent` null when its id does not say. */
  | { kind: 'divided'; residual: string; parent: string | null }
  | { kind: 'verdict'; verdict: 'complete' | 'stalled' };

/** One record's change: its decoded value before and after (undefined: absent, or unreadable). */
export type RecordChange =
  | { kind: 'plan'; before?: PlanRecord; after?: PlanRecord }
  | { kind: 'leader'; before?: LeaderRecord; after?: LeaderRecord }
  | { kind: 'control'; before?: ControlRecord; after?: ControlRecord }
  | { kind: 'worker'; id: string; before?: WorkerRecord; after?: WorkerRecord }
  | { kind: 'assign'; id: string; before?: AssignRecord; after?: AssignRecord }
  | { kind: 'lease'; id: string; before?: LeaseRecord; after?: LeaseRecord }
  | { kind: 'split'; id: string; before?: SplitRecord; after?: SplitRecord };

/** Remembers the last assignee and holder of each unfinished split, and the revocations in flight. */
export class ChangeTracker {
  private readonly assignee = new Map<string, string>();
  private readonly holder = new Map<string, string>();
  /** Split → the instance draining it. */
  private readonly revoking = new Map<string, string>();
  private verdict: 'complete' | 'stalled' | undefined;

  /** Learns `records` as they stand (a snapshot), reporting nothing. Earlier memory is kept where the snapshot is silent. */
  seed(records: JobRecords): void {
    for (const [instance, rec] of records.assigns) for (const id of rec.splits) this.assignee.set(id, instance);
    this.revoking.clear();
    for (const [id, lease] of records.leases) {
      this.holder.set(id, lease.owner);
      const named = records.assigns.get(lease.owner)?.splits;
      if (named !== undefined && !named.includes(id)) this.revoking.set(id, lease.owner);
    }
    this.verdict = records.plan?.verdict;
  }

  /** Revocations in flight as tracked: split → holder. */
  get inFlight(): ReadonlyMap<string, string> {
    return this.revoking;
  }

  /** The events of one change; `records` are the job's records with the change already applied. */
  change(records: JobRecords, c: RecordChange): ChangeEvent[] {
    switch (c.kind) {
      case 'plan': {
        const verdict = c.after?.verdict;
        if (verdict === undefined || verdict === this.verdict) return [];
        this.verdict = verdict;
        return [{ kind: 'verdict', verdict }];
      }
      case 'leader': {
        const a = c.after;
        if (!a || (a.instance === c.before?.instance && a.generation === c.before.generation)) return [];
        return [{ kind: 'leader', instance: a.instance, generation: a.generation, previous: c.before?.instance ?? null }];
      }
      case 'control': {
        const was = c.before?.paused ?? false;
        const is = c.after?.paused ?? false;
        return was === is ? [] : [{ kind: is ? 'paused' : 'resumed' }];
      }
      case 'worker':
        if (c.after && !c.before) return [{ kind: 'join', instance: c.id, lanes: c.after.maxInFlight }];
        if (!c.after && c.before) return [{ kind: 'leave', instance: c.id }];
        return [];
      case 'assign':
        return this.assign(records, c.id, c.before?.splits ?? [], c.after?.splits);
      case 'lease':
        return this.lease(c.id, c.after?.owner);
      case 'split': {
        const a = c.after;
        if (a?.status === 'completed' || a?.status === 'quarantined') {
          // Terminal: nothing more moves; forget it so memory follows the unfinished splits.
          this.assignee.delete(c.id);
          this.holder.delete(c.id);
        }
        if (a && !c.before && isResidualId(c.id)) return [{ kind: 'divided', residual: c.id, parent: parentOf(c.id) ?? null }];
        // A failure report sets the backoff; a claim or a retry clears it (the leader's history reads it so too).
        if (c.before && a?.status === 'runnable' && a.notBefore !== undefined && c.before.notBefore === undefined) {
          return [{ kind: 'failed', split: c.id, attempts: a.attempts, reason: a.reason ?? null }];
        }
        if (a?.status !== 'quarantined' || c.before?.status === 'quarantined') return [];
        return [{ kind: 'quarantine', split: c.id, attempts: a.attempts, reason: a.reason ?? null }];
      }
    }
  }

  private assign(records: JobRecords, instance: string, before: readonly string[], after: readonly string[] | undefined): ChangeEvent[] {
    const events: ChangeEvent[] = [];
    const had = new Set(before);
    for (const id of after ?? []) {
      if (had.has(id)) continue;
      const from = this.assignee.get(id);
      this.assignee.set(id, instance);
      if (from !== undefined && from !== instance) events.push({ kind: 'move', split: id, from, to: instance, fromLive: records.workers.has(from) });
      if (this.revoking.get(id) === instance) {
        this.revoking.delete(id);
        events.push({ kind: 'revocation-end', split: id, holder: instance, outcome: 'kept', next: instance });
      }
    }
    // A deleted record revokes nothing (jobReport counts an instance with no record as running what it holds).
    if (after === undefined) return events;
    const named = new Set(after);
    for (const id of before) {
      if (named.has(id) || records.leases.get(id)?.owner !== instance || this.revoking.get(id) === instance) continue;
      this.revoking.set(id, instance);
      const to = this.assignee.get(id);
      events.push({ kind: 'revocation-start', split: id, holder: instance, to: to !== undefined && to !== instance ? to : null });
    }
    return events;
  }

  private lease(id: string, owner: string | undefined): ChangeEvent[] {
    const events: ChangeEvent[] = [];
    const draining = this.revoking.get(id);
    if (draining !== undefined && owner !== draining) {
      this.revoking.delete(id);
      events.push(owner === undefined
        ? { kind: 'revocation-end', split: id, holder: draining, outcome: 'released', next: null }
        : { kind: 'revocation-end', split: id, holder: draining, outcome: 'handed-over', next: owner });
    }
    if (owner === undefined) return events;
    const previous = this.holder.get(id);
    this.holder.set(id, owner);
    if (previous !== undefined && previous !== owner) events.push({ kind: 'claim', split: id, holder: owner, previous });
    return events;
  }
}

/**
 * One line of text for an event, as the dashboard's log shows it. Its ids and reasons are
 * printable (decision 0030): no control or bidi character from the store reaches the line.
 */
export function describeChange(event: ChangeEvent): string {
  const e = printableDeep(event);
  switch (e.kind) {
    case 'join': return `${e.instance} joined (${e.lanes} lanes)`;
    case 'leave': return `${e.instance} left (its presence key is gone)`;
    case 'leader': return `${e.instance} leads (generation ${e.generation})${e.previous !== null && e.previous !== e.instance ? `, after ${e.previous}` : ''}`;
    case 'move': return `${e.split} moved ${e.from}${e.fromLive ? '' : ' (gone)'} → ${e.to}`;
    case 'revocation-start': return `revocation of ${e.split} from ${e.holder} started${e.to !== null ? ` (assigned to ${e.to})` : ''}`;
    case 'revocation-end': {
      const how = {
        'handed-over': `handed over to ${e.next ?? '?'}`,
        released: 'let go (released, completed or expired)',
        kept: 'kept (assigned back to it)',
      }[e.outcome];
      return `revocation of ${e.split} from ${e.holder} ended: ${how}`;
    }
    case 'claim': return `${e.split} claimed by ${e.holder} (held by ${e.previous} before)`;
    case 'divided': return e.parent === null ? `${e.residual} divided from a running split` : `${e.parent} divided: ${e.residual} takes the rest`;
    case 'quarantine': return `${e.split} quarantined after ${e.attempts} attempts${e.reason !== null ? `: ${e.reason}` : ''}`;
    case 'failed': return `${e.split} failed (attempt ${e.attempts})${e.reason !== null ? `: ${e.reason}` : ''}; retried after its backoff`;
    case 'paused': return 'paused by an operator (no new claims)';
    case 'resumed': return 'resumed by an operator';
    case 'verdict': return `verdict: ${e.verdict}`;
  }
}
