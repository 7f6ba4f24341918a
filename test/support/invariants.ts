/**
 * Checkers over a recorded job history (test/support/history.ts), one per
 * invariant, shared by the integration, chaos and simulation suites; each
 * suite reports a problem under its own name for the property (the chaos
 * auditor's `check`, the simulation's `property`). Pure: history in, problems
 * out, empty when the invariant holds, so a failure names the split and the
 * revisions at fault.
 *
 * - `splitFence`: a split's epoch moves only by +1 (a claim, which names an
 *   owner) and never back; its owner changes only through a claim.
 * - `noSplitHeldTwice`: a live `lease.{id}` is replaced only by its own
 *   owner's reclaim at a higher epoch, never by another owner.
 * - `progressNeverRegresses`: committed progress (`progress.{id}`) never goes
 *   backwards, nor does the epoch that wrote it.
 *
 * Each is a checker of the one replay (history-replay.ts): `splitFenceChecker`
 * and its siblings plug into `replayHistory` beside a suite's own checkers,
 * and `splitFence(history)` and its siblings replay a history through one.
 * Histories may interleave other events (a Recorder's merged split states:
 * copies of the last record, which pass every check). No I/O, no clock.
 */
import type { HistoryEvent } from './history.js';
import { replayHistory, type HistoryChecker } from './history-replay.js';

export interface Problem {
  /** Which rule of the invariant broke. */
  rule: string;
  split: string;
  /** The revisions involved, oldest first (the earlier write, the offending one). */
  revisions: number[];
  detail: string;
}

type Rec = Record<string, any>;
const progressOf = (r: Rec | undefined): number => (typeof r?.progress === 'number' ? r.progress : 0);

/** A checker of one invariant: the problems it found so far. */
export interface InvariantChecker extends HistoryChecker {
  readonly problems: Problem[];
}

/** A checker that sees the puts and deletes of `kind` records (optionally of split `id`) with a parsed record, one by one. */
function perEvent(kind: 'split' | 'lease' | 'progress', id: string | undefined, see: (e: HistoryEvent & { id: string }, problems: Problem[]) => void): InvariantChecker {
  const problems: Problem[] = [];
  return {
    problems,
    revision: (r) => {
      for (const e of r.events) {
        if (e.kind === kind && e.id !== undefined && (id === undefined || e.id === id) && (e.type === 'delete' || e.rec)) see(e as HistoryEvent & { id: string }, problems);
      }
    },
  };
}

/** Replays `history` through `checker` and returns what it found. */
function run(history: readonly HistoryEvent[], checker: InvariantChecker): Problem[] {
  replayHistory(history, [checker]);
  return checker.problems;
}

/**
 * Rules 'epoch-moved' (not by 0 or +1), 'owner-changed-without-claim' (another
 * non-empty owner at the same epoch) and 'claim-without-owner' (+1 to no owner).
 */
export function splitFenceChecker(id?: string): InvariantChecker {
  const prev = new Map<string, { rec: Rec; rev: number }>();
  return perEvent('split', id, (e, problems) => {
    if (e.type !== 'put') return;
    const r = e.rec!;
    const p = prev.get(e.id);
    prev.set(e.id, { rec: r, rev: e.rev });
    if (!p) return;
    const revisions = [p.rev, e.rev];
    const b = p.rec;
    if (r.epoch !== b.epoch && r.epoch !== b.epoch + 1) {
      problems.push({ rule: 'epoch-moved', split: e.id, revisions, detail: `split.${e.id} epoch ${b.epoch} → ${r.epoch}` });
    } else if (r.epoch === b.epoch + 1) {
      if (r.owner === '') problems.push({ rule: 'claim-without-owner', split: e.id, revisions, detail: `split.${e.id} epoch bumped to ${r.epoch} without an owner` });
    } else if (r.owner !== '' && r.owner !== b.owner) {
      problems.push({ rule: 'owner-changed-without-claim', split: e.id, revisions, detail: `split.${e.id} owner ${b.owner || '(none)'} → ${r.owner} at epoch ${r.epoch}` });
    }
  });
}

/**
 * Rule 'lease-overwritten': a put of `lease.{id}` while another's key (or an older one of the same owner) is live.
 * A put with no etcd lease (written by hand, decision 0059) is no tenancy: it ends the one it replaces.
 */
export function noSplitHeldTwiceChecker(id?: string): InvariantChecker {
  const live = new Map<string, { rec: Rec; rev: number }>();
  return perEvent('lease', id, (e, problems) => {
    if (e.type === 'delete' || e.lease === undefined) {
      live.delete(e.id);
      return;
    }
    const l = live.get(e.id);
    // The one allowed overwrite: the same instance (a restarted run) taking its own key over, at a new epoch.
    if (l && (e.rec!.owner !== l.rec.owner || !(e.rec!.epoch > l.rec.epoch))) {
      problems.push({
        rule: 'lease-overwritten', split: e.id, revisions: [l.rev, e.rev],
        detail: `lease.${e.id} of ${l.rec.owner} (epoch ${l.rec.epoch}, written at ${l.rev}) overwritten while live by ${e.rec!.owner} (epoch ${e.rec!.epoch})`,
      });
    }
    live.set(e.id, { rec: e.rec!, rev: e.rev });
  });
}

/** Rules 'progress-regressed' and 'progress-epoch-regressed', per put of `progress.{id}`. */
export function progressNeverRegressesChecker(id?: string): InvariantChecker {
  const prev = new Map<string, { rec: Rec; rev: number }>();
  return perEvent('progress', id, (e, problems) => {
    if (e.type !== 'put') return;
    const p = prev.get(e.id);
    prev.set(e.id, { rec: e.rec!, rev: e.rev });
    if (!p) return;
    const revisions = [p.rev, e.rev];
    if (progressOf(e.rec) < progressOf(p.rec)) {
      problems.push({ rule: 'progress-regressed', split: e.id, revisions, detail: `progress.${e.id} went from ${progressOf(p.rec)} to ${progressOf(e.rec)} (epoch ${p.rec.epoch} → ${e.rec!.epoch})` });
    }
    if (Number(e.rec!.epoch) < Number(p.rec.epoch)) {
      problems.push({ rule: 'progress-epoch-regressed', split: e.id, revisions, detail: `progress.${e.id} epoch ${p.rec.epoch} → ${e.rec!.epoch}` });
    }
  });
}

/** The three shared invariants, as checkers, in the order suites report them. */
export function invariantCheckers(id?: string): InvariantChecker[] {
  return [progressNeverRegressesChecker(id), splitFenceChecker(id), noSplitHeldTwiceChecker(id)];
}

export const splitFence = (history: readonly HistoryEvent[], id?: string): Problem[] => run(history, splitFenceChecker(id));
export const noSplitHeldTwice = (history: readonly HistoryEvent[], id?: string): Problem[] => run(history, noSplitHeldTwiceChecker(id));
export const progressNeverRegresses = (history: readonly HistoryEvent[], id?: string): Problem[] => run(history, progressNeverRegressesChecker(id));

/**
 * The fence over one split's whole history, as the integration tests assert
 * it: every checker above, as messages (`split@revision: detail`).
 */
export function fenceProblems(history: readonly HistoryEvent[], id: string): string[] {
  const checkers = [splitFenceChecker(id), noSplitHeldTwiceChecker(id), progressNeverRegressesChecker(id)];
  replayHistory(history, checkers);
  return checkers.flatMap((c) => c.problems).map((p) => `${p.split}@${p.revisions[p.revisions.length - 1]}: ${p.detail}`);
}
