/**
 * The leader's side of the job's event history (decision 0070): which watched
 * changes are notable, read off what the leader's records held before and
 * after the change (`noteBefore`, then `notableEvents`), and where a new
 * term's history starts (`seedHistory`: the last summary's, continued by this
 * term's own leadership).
 *
 * Invariants:
 * - Only changes that came by the watch are told; a listing (a term's first,
 *   or a re-listing after a stopped watch) learns the state silently.
 * - Rare events only: members, leadership, failures, quarantines, divisions,
 *   pauses, verdicts. A completion is not an entry: every split completes, so
 *   completions would push everything else out of the bounded history (the
 *   summary's counts tell them).
 * - A split record is decoded again only when it failed or was quarantined
 *   (for its attempts and reason): the common changes cost one key parse.
 *
 * No I/O: LeaderView (leader-view.ts) calls it around each applied event.
 */
import { appendHistory, historyEntry, readHistory, type HistoryEntry, type HistoryEvent } from '../../protocol/job-history.js';
import { parseKey } from '../../protocol/keys.js';
import { decodeRecord, type LeaderRecord } from '../../protocol/records.js';
import { isResidualId, parentOf } from '../../protocol/residual-ids.js';
import { decodeSummary } from '../../protocol/summary.js';
import type { SplitStatus } from '../../split-model.js';
import type { Seen } from '../views/seen.js';
import type { LeaderRecords } from './leader-records.js';

/** What the records held of one notable key before its change. */
export type Before =
  | { kind: 'worker'; id: string; member: boolean }
  | { kind: 'leader'; instance: string | undefined; generation: number | undefined }
  | { kind: 'plan'; verdict: string | undefined }
  | { kind: 'control'; paused: boolean }
  | { kind: 'split'; id: string; status: SplitStatus | undefined; waiting: boolean }
  | { kind: 'spec'; id: string; residual: boolean };

function paused(records: LeaderRecords): boolean {
  // An unreadable control record holds the job paused (leader-records.ts): so it counts here.
  return records.control !== undefined && (records.control.unreadable !== undefined || records.control.rec.paused);
}

/** What `key` holds now, for telling its change; undefined for kinds that make no entries. */
export function noteBefore(records: LeaderRecords, key: string): Before | undefined {
  const parsed = parseKey(records.prefix, key);
  switch (parsed.kind) {
    case 'worker': return { kind: 'worker', id: parsed.id, member: records.workers.has(parsed.id) };
    case 'leader': return { kind: 'leader', instance: records.leader?.rec.instance, generation: records.leader?.rec.generation };
    case 'plan': return { kind: 'plan', verdict: records.plan?.rec.verdict };
    case 'control': return { kind: 'control', paused: paused(records) };
    case 'split': return { kind: 'split', id: parsed.id, status: records.columns.statusOf(parsed.id), waiting: records.notBefore.has(parsed.id) };
    // Only a residual's spec tells anything (a division; decision 0063).
    case 'spec': return isResidualId(parsed.id) ? { kind: 'spec', id: parsed.id, residual: records.residuals.has(parsed.id) } : undefined;
    default: return undefined;
  }
}

/** A split record's attempts and reason, as stored at `key` (zero and none when it cannot be read). */
function failure(records: LeaderRecords, key: string, value: string | undefined): { attempts: number; reason: string | null } {
  if (value === undefined) return { attempts: 0, reason: null };
  try {
    const rec = decodeRecord('split', key, value, records.fp);
    return { attempts: rec.attempts, reason: rec.reason ?? null };
  } catch {
    return { attempts: 0, reason: null };
  }
}

/** The events of one applied change of `key` (`value` undefined: deleted), given what was held before it. */
export function notableEvents(records: LeaderRecords, before: Before, key: string, value: string | undefined): HistoryEvent[] {
  switch (before.kind) {
    case 'worker': {
      const now = records.workers.get(before.id);
      if (now !== undefined && !before.member) return [{ kind: 'join', instance: before.id, lanes: now.rec.maxInFlight }];
      if (now === undefined && before.member) return [{ kind: 'leave', instance: before.id }];
      return [];
    }
    case 'leader': {
      const now = records.leader?.rec;
      if (now === undefined || (now.instance === before.instance && now.generation === before.generation)) return [];
      return [{ kind: 'leader', instance: now.instance, generation: now.generation, previous: before.instance ?? null }];
    }
    case 'plan': {
      const verdict = records.plan?.rec.verdict;
      return verdict !== undefined && verdict !== before.verdict ? [{ kind: 'verdict', verdict }] : [];
    }
    case 'control': {
      const now = paused(records);
      if (now === before.paused) return [];
      return [{ kind: now ? 'paused' : 'resumed' }];
    }
    case 'split': {
      const status = records.columns.statusOf(before.id);
      if (status === 'quarantined' && before.status !== 'quarantined') return [{ kind: 'quarantine', split: before.id, ...failure(records, key, value) }];
      // A failure report sets the backoff; a claim or an operator's retry clears it: each failure is a new one.
      if (status === 'runnable' && records.notBefore.has(before.id) && !before.waiting) return [{ kind: 'failed', split: before.id, ...failure(records, key, value) }];
      return [];
    }
    case 'spec':
      return !before.residual && records.residuals.has(before.id) ? [{ kind: 'divided', residual: before.id, parent: parentOf(before.id) ?? null }] : [];
  }
}

/**
 * A term's history to start from: the stored summary's (`summaryText`, undecodable: none), and this
 * term's leadership after it (`leader`, the leader key as listed), at wall time `at`.
 */
export function seedHistory(summaryKey: string, summaryText: string | undefined, fp: string, leader: Seen<LeaderRecord> | undefined, at: number): HistoryEntry[] {
  let history: HistoryEntry[] = [];
  if (summaryText !== undefined) {
    try {
      history = readHistory(decodeSummary(summaryKey, summaryText, fp).history);
    } catch {
      // An unreadable summary is rewritten by this term: its history is lost, never the job.
    }
  }
  if (leader === undefined) return history;
  const previous = [...history].reverse().find((e) => e.kind === 'leader');
  const event: HistoryEvent = {
    kind: 'leader', instance: leader.rec.instance, generation: leader.rec.generation,
    previous: previous?.kind === 'leader' ? previous.instance : null,
  };
  return appendHistory(history, [historyEntry(event, leader.modRevision, at)]);
}
