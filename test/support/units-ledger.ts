/**
 * Checks of the one ledger of processed units (src/testing/ledger.ts: who
 * processed which unit of which split under which epoch) against the claims
 * a history shows, for the simulation's and the chaos auditor's whole-run
 * checks; each reports a problem under its own name:
 * - owned: a unit is processed only by the claimer of the epoch it names
 *   (`unitClaimProblem`);
 * - nothing lost: each unit of a range appears in the ledger at least once
 *   (`missingUnits`, whatever "appears" means to the caller: any tenancy for
 *   a whole split, the committing tenancy for a commit's step);
 * - duplicates within the replay bound: units processed more than once
 *   (`duplicates`) stay within one commit interval per cause that may replay
 *   one (a takeover, a forced or failed release, an adoption), plus what a
 *   caller allows besides (`overReplayBound`).
 *
 * Pure: entries in, problems out; no I/O, no clock.
 */
import type { UnitEntry } from '../../src/testing/ledger.js';

/** The one ledger shape both auditors read: a processed unit, its time when the suite keeps one. */
export type LedgerUnit = Pick<UnitEntry, 'instance' | 'id' | 'unit' | 'epoch'> & { t?: number };

/** Per split, unit → how many times it was processed. */
export function unitCounts(units: Iterable<LedgerUnit>): Map<string, Map<number, number>> {
  const seen = new Map<string, Map<number, number>>();
  for (const u of units) {
    let m = seen.get(u.id);
    if (!m) seen.set(u.id, (m = new Map()));
    m.set(u.unit, (m.get(u.unit) ?? 0) + 1);
  }
  return seen;
}

/** The units `from`..`to` for which `processed` is false: empty when nothing was lost. */
export function missingUnits(processed: (unit: number) => boolean, from: number, to: number): number[] {
  const missing: number[] = [];
  for (let u = from; u <= to; u++) if (!processed(u)) missing.push(u);
  return missing;
}

/** Processings beyond each unit's first. */
export function duplicates(counts: Iterable<number>): number {
  let n = 0;
  for (const c of counts) n += c - 1;
  return n;
}

/** Whether `dups` exceeds one commit interval per cause, plus `allowance` (units the store forgot, say). */
export function overReplayBound(dups: number, commitEvery: number, causes: number, allowance = 0): boolean {
  return dups > commitEvery * causes + allowance;
}

/**
 * A unit processed under an epoch: a problem when no claim installed that epoch (`unclaimed`) or another
 * instance claimed it (`non-owner`); `undefined` when the claimer processed it.
 */
export function unitClaimProblem(u: LedgerUnit, claimers: readonly string[]): { rule: 'unclaimed' | 'non-owner'; detail: string } | undefined {
  if (claimers.includes(u.instance)) return undefined;
  if (claimers.length === 0) return { rule: 'unclaimed', detail: `${u.instance} processed unit ${u.unit} of ${u.id} under epoch ${u.epoch}, which no claim wrote` };
  return { rule: 'non-owner', detail: `${u.instance} processed unit ${u.unit} of ${u.id} under epoch ${u.epoch}, which ${claimers.join(', ')} claimed` };
}

/** Compresses sorted integers to "1-4, 7". */
export function unitRanges(ns: readonly number[]): string {
  const out: string[] = [];
  for (let i = 0; i < ns.length; i++) {
    let j = i;
    while (j + 1 < ns.length && ns[j + 1] === ns[j]! + 1) j++;
    out.push(i === j ? `${ns[i]}` : `${ns[i]}-${ns[j]}`);
    i = j;
  }
  return out.join(', ');
}
