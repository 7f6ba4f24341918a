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
 * Histories may interleave other events (a Recorder's merged split states:
 * copies of the last record, which pass every check). No I/O, no clock.
 */
import type { HistoryEvent } from './history.js';

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

/** Puts of `kind` records (optionally of split `id`) with a parsed record. */
function* puts(history: readonly HistoryEvent[], kind: 'split' | 'lease' | 'progress', id?: string): Generator<HistoryEvent & { id: string }> {
  for (const e of history) {
    if (e.kind === kind && e.id !== undefined && (id === undefined || e.id === id) && (e.type === 'delete' || e.rec)) yield e as HistoryEvent & { id: string };
  }
}

/**
 * Rules 'epoch-moved' (not by 0 or +1), 'owner-changed-without-claim' (another
 * non-empty owner at the same epoch) and 'claim-without-owner' (+1 to no owner).
 */
export function splitFence(history: readonly HistoryEvent[], id?: string): Problem[] {
  const problems: Problem[] = [];
  const prev = new Map<string, { rec: Rec; rev: number }>();
  for (const e of puts(history, 'split', id)) {
    if (e.type !== 'put') continue;
    const r = e.rec!;
    const p = prev.get(e.id);
    prev.set(e.id, { rec: r, rev: e.rev });
    if (!p) continue;
    const revisions = [p.rev, e.rev];
    const b = p.rec;
    if (r.epoch !== b.epoch && r.epoch !== b.epoch + 1) {
      problems.push({ rule: 'epoch-moved', split: e.id, revisions, detail: `split.${e.id} epoch ${b.epoch} → ${r.epoch}` });
    } else if (r.epoch === b.epoch + 1) {
      if (r.owner === '') problems.push({ rule: 'claim-without-owner', split: e.id, revisions, detail: `split.${e.id} epoch bumped to ${r.epoch} without an owner` });
    } else if (r.owner !== '' && r.owner !== b.owner) {
      problems.push({ rule: 'owner-changed-without-claim', split: e.id, revisions, detail: `split.${e.id} owner ${b.owner || '(none)'} → ${r.owner} at epoch ${r.epoch}` });
    }
  }
  return problems;
}

/** Rule 'lease-overwritten': a put of `lease.{id}` while another's key (or an older one of the same owner) is live. */
export function noSplitHeldTwice(history: readonly HistoryEvent[], id?: string): Problem[] {
  const problems: Problem[] = [];
  const live = new Map<string, { rec: Rec; rev: number }>();
  for (const e of puts(history, 'lease', id)) {
    if (e.type === 'delete') {
      live.delete(e.id);
      continue;
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
  }
  return problems;
}

/** Rules 'progress-regressed' and 'progress-epoch-regressed', per put of `progress.{id}`. */
export function progressNeverRegresses(history: readonly HistoryEvent[], id?: string): Problem[] {
  const problems: Problem[] = [];
  const prev = new Map<string, { rec: Rec; rev: number }>();
  for (const e of puts(history, 'progress', id)) {
    if (e.type !== 'put') continue;
    const p = prev.get(e.id);
    prev.set(e.id, { rec: e.rec!, rev: e.rev });
    if (!p) continue;
    const revisions = [p.rev, e.rev];
    if (progressOf(e.rec) < progressOf(p.rec)) {
      problems.push({ rule: 'progress-regressed', split: e.id, revisions, detail: `progress.${e.id} went from ${progressOf(p.rec)} to ${progressOf(e.rec)} (epoch ${p.rec.epoch} → ${e.rec!.epoch})` });
    }
    if (Number(e.rec!.epoch) < Number(p.rec.epoch)) {
      problems.push({ rule: 'progress-epoch-regressed', split: e.id, revisions, detail: `progress.${e.id} epoch ${p.rec.epoch} → ${e.rec!.epoch}` });
    }
  }
  return problems;
}

/**
 * The fence over one split's whole history, as the integration tests assert
 * it: every checker above, as messages (`split@revision: detail`).
 */
export function fenceProblems(history: readonly HistoryEvent[], id: string): string[] {
  return [...splitFence(history, id), ...noSplitHeldTwice(history, id), ...progressNeverRegresses(history, id)]
    .map((p) => `${p.split}@${p.revisions[p.revisions.length - 1]}: ${p.detail}`);
}
