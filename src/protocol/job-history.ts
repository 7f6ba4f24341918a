/**
 * The job's event history (decision 0070): the last notable events the leader
 * saw (members joining and leaving, leader changes, failures, quarantines,
 * divisions, pauses and resumes, the verdict), carried in the job summary's
 * optional `history` field so that the dashboard opens on what already
 * happened instead of an empty log.
 *
 * Invariants:
 * - Bounded twice: at most MAX_HISTORY_ENTRIES entries and MAX_HISTORY_BYTES
 *   of encoded JSON; the oldest go first. A reason is cut to
 *   MAX_HISTORY_REASON characters, so one entry never crowds out the rest.
 * - Ordered by the store revision of the change each entry reports (`rev`),
 *   oldest first, each event once (same revision, kind and subject): a new
 *   term continues the last term's history without repeating it.
 * - A reader keeps the entries whose kind and fields it knows and skips the
 *   rest: a newer build may add kinds without making the summary unreadable.
 *
 * Pure: no I/O, no clock (each entry's `at` comes in with it).
 */
import { utf8ByteLength } from './keys.js';
import type { Json, StoredHistoryEntry } from './record-types.js';

/** Entries kept, at most. */
export const MAX_HISTORY_ENTRIES = 100;
/**
 * Bytes of the encoded history, at most: with the summary's fixed fields (under 1 KiB at their
 * largest) the record stays under MAX_SUMMARY_BYTES (8 KiB), which every build's reader enforces.
 * A hundred entries of short ids take about 6 KiB.
 */
export const MAX_HISTORY_BYTES = 7 * 1024;
/** Characters of a failure's reason kept in an entry. */
export const MAX_HISTORY_REASON = 160;

/** What happened, as the leader saw it: the dashboard's event kinds that the leader can see. */
export type HistoryEvent =
  | { kind: 'join'; instance: string; lanes: number }
  | { kind: 'leave'; instance: string }
  | { kind: 'leader'; instance: string; generation: number; previous: string | null }
  | { kind: 'failed'; split: string; attempts: number; reason: string | null }
  | { kind: 'quarantine'; split: string; attempts: number; reason: string | null }
  | { kind: 'divided'; residual: string; parent: string | null }
  | { kind: 'paused' }
  | { kind: 'resumed' }
  | { kind: 'verdict'; verdict: 'complete' | 'stalled' };

/** One entry: the event, the revision of the change that made it, and when the leader saw it (wall ms). */
export type HistoryEntry = HistoryEvent & { rev: number; at: number };

/** `reason` cut to MAX_HISTORY_REASON characters (never splitting a surrogate pair). */
function shortReason(reason: string | null): string | null {
  if (reason === null || reason.length <= MAX_HISTORY_REASON) return reason;
  let cut = MAX_HISTORY_REASON - 1;
  const code = reason.charCodeAt(cut - 1);
  if (code >= 0xd800 && code <= 0xdbff) cut--;
  return `${reason.slice(0, cut)}…`;
}

/** The entry as stored: its reason cut, its fields in a fixed order (equal histories encode alike). */
export function historyEntry(event: HistoryEvent, rev: number, at: number): HistoryEntry {
  const stamp = { rev: Math.max(0, Math.round(rev)), at: Math.max(0, Math.round(at)) };
  if (event.kind === 'failed' || event.kind === 'quarantine') return { ...stamp, ...event, reason: shortReason(event.reason) };
  return { ...stamp, ...event };
}

function entryBytes(e: HistoryEntry): number {
  // The separating comma included: the sum is the array's encoded length, give or take its brackets.
  return utf8ByteLength(JSON.stringify(e)) + 1;
}

/** `history` cut to its bounds, oldest entries first to go. */
export function trimHistory(history: readonly HistoryEntry[]): HistoryEntry[] {
  let kept = history.length > MAX_HISTORY_ENTRIES ? history.slice(history.length - MAX_HISTORY_ENTRIES) : [...history];
  let bytes = 2;
  let from = kept.length;
  // From the newest back, while they fit.
  while (from > 0) {
    const b = entryBytes(kept[from - 1]!);
    if (bytes + b > MAX_HISTORY_BYTES) break;
    bytes += b;
    from--;
  }
  if (from > 0) kept = kept.slice(from);
  return kept;
}

/**
 * `history` with `entries` added in revision order (the leader's two watch ranges deliver
 * independently, so a later entry may carry an earlier revision), each event once, trimmed.
 */
export function appendHistory(history: readonly HistoryEntry[], entries: readonly HistoryEntry[]): HistoryEntry[] {
  const out = [...history];
  for (const e of entries) {
    let i = out.length;
    // Most entries are the newest: the scan back is short.
    while (i > 0 && out[i - 1]!.rev > e.rev) i--;
    let j = i;
    let seen = false;
    while (j > 0 && out[j - 1]!.rev === e.rev) if (sameEvent(out[--j]!, e)) seen = true;
    if (!seen) out.splice(i, 0, e);
  }
  return trimHistory(out);
}

/** Whether two entries report the same event (their `at` aside). */
export function sameEvent(a: HistoryEntry, b: HistoryEntry): boolean {
  return a.rev === b.rev && a.kind === b.kind && subjectOf(a) === subjectOf(b);
}

/** What an event is about (an instance, a split, a verdict), for telling one from another at one revision. */
export function subjectOf(e: HistoryEvent): string {
  switch (e.kind) {
    case 'join': case 'leave': return e.instance;
    case 'leader': return `${e.instance}@${e.generation}`;
    case 'failed': case 'quarantine': return e.split;
    case 'divided': return e.residual;
    case 'verdict': return e.verdict;
    case 'paused': case 'resumed': return '';
  }
}

const isStr = (v: Json | undefined): v is string => typeof v === 'string';
const isCount = (v: Json | undefined): v is number => typeof v === 'number' && Number.isSafeInteger(v) && v >= 0;
const strOrNull = (v: Json | undefined): v is string | null => v === null || typeof v === 'string';

/** One stored entry as this build knows it, or undefined (a newer build's kind, or fields it does not recognise). */
export function knownEntry(s: StoredHistoryEntry): HistoryEntry | undefined {
  const stamp = { rev: s.rev, at: s.at };
  switch (s.kind) {
    case 'join': return isStr(s.instance) && isCount(s.lanes) ? { ...stamp, kind: 'join', instance: s.instance, lanes: s.lanes } : undefined;
    case 'leave': return isStr(s.instance) ? { ...stamp, kind: 'leave', instance: s.instance } : undefined;
    case 'leader':
      return isStr(s.instance) && isCount(s.generation) && strOrNull(s.previous ?? null)
        ? { ...stamp, kind: 'leader', instance: s.instance, generation: s.generation, previous: (s.previous ?? null) as string | null } : undefined;
    case 'failed': case 'quarantine':
      return isStr(s.split) && isCount(s.attempts) && strOrNull(s.reason ?? null)
        ? { ...stamp, kind: s.kind, split: s.split, attempts: s.attempts, reason: (s.reason ?? null) as string | null } : undefined;
    case 'divided':
      return isStr(s.residual) && strOrNull(s.parent ?? null) ? { ...stamp, kind: 'divided', residual: s.residual, parent: (s.parent ?? null) as string | null } : undefined;
    case 'paused': case 'resumed': return { ...stamp, kind: s.kind };
    case 'verdict': return s.verdict === 'complete' || s.verdict === 'stalled' ? { ...stamp, kind: 'verdict', verdict: s.verdict } : undefined;
    default: return undefined;
  }
}

/** The entries of a stored history this build knows, in revision order (absent: none; an old summary has none). */
export function readHistory(stored: readonly StoredHistoryEntry[] | undefined): HistoryEntry[] {
  const out: HistoryEntry[] = [];
  for (const s of stored ?? []) {
    const e = knownEntry(s);
    if (e !== undefined) out.push(e);
  }
  // Stable: entries of one revision keep their order.
  return out.sort((a, b) => a.rev - b.rev);
}
