/**
 * The simulation auditor's whole-run checks (auditor.ts replays the history
 * revision by revision; these read what that replay gathered):
 * - bounded replay: per tenancy, units processed beyond its last committed
 *   progress ≤ one commit interval (unless a foreign write hit the split:
 *   its commits may then be refused); a cooperative drain replays nothing; per
 *   split, duplicate processings ≤ commitEvery × (takeovers + non-cooperative
 *   releases + handler runs after a tenancy's first, an adoption), plus the
 *   committed units the hostile writer's deletions made the store forget
 *   (lives.ts); no unit outside the split's size;
 * - completion: every split completed with `progress.{id}` at its full size,
 *   written by the tenancy that completed it (a packed job's folded split: as
 *   its fold-back found them), no ephemeral key left behind.
 *
 * Pure: no I/O, no clock. It never writes.
 */
import type { LaneEvent } from '../../src/testing/ledger.js';
import type { HistoryEvent } from '../support/history.js';
import type { FoldedSplit } from '../support/packed-invariants.js';
import type { AuditStats, ProgressRec, SplitRec, Tenancy, Violation } from './auditor.js';
import { duplicates, overReplayBound } from '../support/units-ledger.js';
import { tenancyKey } from './lives.js';

const prog = (p: unknown): number => (typeof p === 'number' ? p : 0);

/**
 * `processed`: per tenancy (`tenancyKey`: split, life, epoch), unit → the processes that processed it;
 * `exits`: the handlers' 'exit' lane events, each with the life of its tenancy. Adds releases, forced
 * releases and duplicates to `stats`.
 */
export function replayViolations(
  tenancies: ReadonlyMap<string, Tenancy[]>,
  processed: ReadonlyMap<string, Map<number, string[]>>,
  exits: readonly (LaneEvent & { life: number })[],
  sizes: ReadonlyMap<string, number>,
  commitEvery: number,
  stats: AuditStats,
  /** Per split, revisions written from outside the fleet to its keys (each may fence its owner out). */
  foreignWrites: ReadonlyMap<string, number> = new Map(),
  /** Per residual (decision 0063), the unit its part starts after: its units are start+1..size. */
  starts: ReadonlyMap<string, number> = new Map(),
  /** Per split, committed units the hostile writer's deletions made the store forget (lives.ts): run again, no duplicates to bound. */
  forgotten: ReadonlyMap<string, number> = new Map(),
): Violation[] {
  const v: Violation[] = [];
  const exitOf = new Map(exits.map((e) => [`${tenancyKey(e.id!, e.life, e.epoch!)}\u0000${e.instance}`, e.how as string]));
  // Handlers run per tenancy: more than one means its lane was lost (a write of its own, read back as
  // not landed, landed later and fenced the next) and the split adopted by the same session.
  const runs = new Map<string, number>();
  for (const e of exits) runs.set(tenancyKey(e.id!, e.life, e.epoch!), (runs.get(tenancyKey(e.id!, e.life, e.epoch!)) ?? 0) + 1);
  for (const [id, ts] of tenancies) {
    let causes = foreignWrites.get(id) ?? 0;
    for (const t of ts) {
      const key = tenancyKey(id, t.life, t.epoch);
      const done = processed.get(key);
      const maxUnit = done ? Math.max(...done.keys()) : t.resume;
      const tail = Math.max(0, maxUnit - t.last);
      const how = exitOf.get(`${key}\u0000${t.proc}`);
      // A foreign write to the split's records (the hostile writer's put-back of a deleted progress record, say)
      // refuses the tenancy's next commit: its lane ends and the session adopts the split again, each run
      // processing up to a commit interval the store never saw. The split's duplicates stay bounded below.
      if (tail > commitEvery && !foreignWrites.has(id)) {
        v.push({ property: 'bounded-replay', message: `split.${id} epoch ${t.epoch}: ${tail} units processed past the last commit (commit interval ${commitEvery})`, context: { tenancy: t, exit: how } });
      }
      // A foreign write to the split's records fences the drain's last commit out: replay is then a cause's, not the drain's.
      if (how === 'drained' && t.end === 'released' && tail > 0 && !foreignWrites.has(id)) {
        v.push({ property: 'bounded-replay', message: `split.${id} epoch ${t.epoch}: a cooperative drain left ${tail} units uncommitted`, context: { tenancy: t } });
      }
      if (t.takeover) causes++;
      // Each handler run after the tenancy's first (an adoption) may replay one commit interval.
      causes += Math.max(0, (runs.get(key) ?? 0) - 1);
      if (t.end === 'released') {
        stats.releases++;
        if (how !== 'drained') {
          causes++;
          stats.forcedReleases++;
        }
      }
    }
    const counts = new Map<number, number>();
    for (const t of ts) for (const [u, procs] of processed.get(tenancyKey(id, t.life, t.epoch)) ?? []) counts.set(u, (counts.get(u) ?? 0) + procs.length);
    // The units ledger's bound (test/support/units-ledger.ts), with the units the store forgot allowed besides.
    const dups = duplicates(counts.values());
    stats.duplicates += dups;
    const lost = forgotten.get(id) ?? 0;
    if (overReplayBound(dups, commitEvery, causes, lost)) {
      v.push({ property: 'bounded-replay', message: `split.${id}: ${dups} duplicate processings exceed ${commitEvery} × ${causes} (takeovers + non-cooperative releases + foreign writes)${lost > 0 ? ` + ${lost} committed units the store forgot` : ''}` });
    }
    const size = sizes.get(id);
    const start = starts.get(id) ?? 0;
    for (const u of counts.keys()) {
      if (size === undefined || u <= start || u > size) v.push({ property: 'no-loss', message: `split.${id}: processed unit ${u} outside ${start + 1}..${size}` });
    }
  }
  return v;
}

/**
 * The final state, from every change recorded: each split completed at its size, no ephemeral key left.
 * `folds`: a packed job's folded splits, with the records their fold-back deleted (completed at its size too;
 * one of `forgotProgress`, whose progress record the hostile writer deleted, may have had none left to fold).
 */
export function finalStateViolations(
  changes: readonly HistoryEvent[], prefix: string, sizes: ReadonlyMap<string, number>, folds: ReadonlyMap<string, FoldedSplit> = new Map(),
  forgotProgress: ReadonlySet<string> = new Set(),
): Violation[] {
  const v: Violation[] = [];
  const state = new Map<string, string>();
  for (const c of changes) {
    if (c.type === 'put') state.set(c.key, c.value!);
    else state.delete(c.key);
  }
  for (const [id, size] of sizes) {
    const raw = state.get(`${prefix}split.${id}`);
    const folded = raw === undefined ? folds.get(id) : undefined;
    const rec = raw ? (JSON.parse(raw) as SplitRec) : (folded?.split as SplitRec | undefined);
    const rawProgress = state.get(`${prefix}progress.${id}`);
    const p = rawProgress ? (JSON.parse(rawProgress) as ProgressRec) : (folded?.progress as ProgressRec | undefined);
    if (folded && !p && forgotProgress.has(id) && rec?.status === 'completed') continue;
    if (!rec || rec.status !== 'completed' || !p || prog(p.progress) !== size || p.epoch !== rec.epoch) {
      const at = p ? `${JSON.stringify(p.progress)} (epoch ${p.epoch})` : 'no progress record';
      v.push({ property: 'completion', message: `split.${id} ended as ${rec ? `${rec.status}@${rec.epoch} at ${at}` : 'missing'} (size ${size})` });
    }
  }
  for (const key of state.keys()) {
    const rest = key.slice(prefix.length);
    if (rest === 'leader' || rest.startsWith('worker.') || rest.startsWith('lease.')) {
      v.push({ property: 'completion', message: `ephemeral key ${key} outlived the fleet` });
    }
  }
  return v;
}
