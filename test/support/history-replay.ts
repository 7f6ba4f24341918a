/**
 * The one replay of a recorded history (history.ts) that every checker plugs
 * into: the history is cut into revisions (the events one transaction wrote,
 * in the order they were recorded) and each revision is handed, oldest first,
 * to every checker in turn. A checker keeps the state it needs (the shared
 * invariants of invariants.ts keep the last record per key; the chaos and
 * simulation auditors keep their own views of ownership) and reports what it
 * finds its own way. Pure: no I/O, no clock.
 */
import type { HistoryEvent } from './history.js';

/** The events one revision wrote, in recorded order. */
export interface Revision {
  rev: number;
  events: readonly HistoryEvent[];
}

/** A checker plugged into `replayHistory`: sees every revision once, in revision order. */
export interface HistoryChecker {
  revision(r: Revision): void;
}

/** The revisions of `history`, oldest first (a revision's events stay together even if recorded apart). */
export function revisionsOf(history: readonly HistoryEvent[]): Revision[] {
  const byRev = new Map<number, HistoryEvent[]>();
  for (const e of history) {
    let g = byRev.get(e.rev);
    if (!g) byRev.set(e.rev, (g = []));
    g.push(e);
  }
  return [...byRev].sort((a, b) => a[0] - b[0]).map(([rev, events]) => ({ rev, events }));
}

/** Replays `history` revision by revision through every checker of `checkers`, in the order given. */
export function replayHistory(history: readonly HistoryEvent[], checkers: readonly HistoryChecker[]): void {
  for (const r of revisionsOf(history)) for (const c of checkers) c.revision(r);
}

/** `checker` fed only the revisions `keep` accepts (the simulation's invariants skip the hostile writer's). */
export function onlyRevisions(keep: (rev: number) => boolean, checker: HistoryChecker): HistoryChecker {
  return { revision: (r) => (keep(r.rev) ? checker.revision(r) : undefined) };
}
