/**
 * What the simulation auditor checks of divisions (substrate.md, "Dividing a
 * running split"; decision 0063), from the history alone:
 * - a division is one revision, written by the parent's owner: the parent's
 *   `progress.{id}` with `divisions` one more than before, its committed
 *   progress unchanged and its new `end` at or past it, and the residual
 *   `<id>÷<seq>` created in the same revision (spec and split, fresh), its
 *   descriptor covering exactly (end, the parent's old end] ('division');
 * - after a division, no commit of the parent passes its end ('division'):
 *   the old owner's writes past it are refused, and a later owner stops there;
 * - what each split must end at: a planned split at its size, a divided one
 *   at its last end, a residual at its descriptor's `units`; and where its
 *   units start (a residual: its `from`), for no-loss and the final state.
 *
 * Records are read with JSON.parse (never the production codecs). Pure.
 */
import { residualId } from '../../src/protocol/residual-ids.js';
import type { HistoryEvent } from '../support/history.js';

/** A residual as its spec says: its parent and the units (from, to] of the root's numbering it covers. */
export interface ResidualPart { parent: string; from: number; to: number }

interface ProgressWithDivision { progress?: unknown; divisions?: number; end?: unknown }

const num = (p: unknown): number => (typeof p === 'number' ? p : 0);

/** The divisions of a run: residuals by id, each divided split's last end, gathered from every change. */
export class DivisionFacts {
  readonly residuals = new Map<string, ResidualPart>();
  /** Each divided split's last end. */
  readonly ends = new Map<string, number>();
  /** Each divided split's divisions in order: the tenancy that divided and the end it set. */
  readonly divided = new Map<string, { epoch: number; end: number }[]>();

  constructor(changes: readonly HistoryEvent[], private readonly prefix: string) {
    for (const c of changes) {
      if (c.type !== 'put' || c.value === undefined) continue;
      const rest = c.key.slice(prefix.length);
      if (rest.startsWith('spec.')) {
        const rec = JSON.parse(c.value) as { id?: string; parent?: string; descriptor?: { units?: number; from?: number } };
        if (rec.parent !== undefined && rec.id !== undefined) {
          this.residuals.set(rec.id, { parent: rec.parent, from: num(rec.descriptor?.from), to: num(rec.descriptor?.units) });
        }
      } else if (rest.startsWith('progress.')) {
        const rec = JSON.parse(c.value) as ProgressWithDivision & { id?: string; epoch?: number };
        if (rec.divisions !== undefined && rec.id !== undefined && typeof rec.end === 'number') {
          const list = this.divided.get(rec.id) ?? [];
          if (list.length < rec.divisions) list.push({ epoch: num(rec.epoch), end: rec.end });
          this.divided.set(rec.id, list);
          this.ends.set(rec.id, rec.end);
        }
      }
    }
  }

  /** Where split `id`'s units start: a residual's `from`, else 0. */
  startOf(id: string): number {
    return this.residuals.get(id)?.from ?? 0;
  }

  /** The progress split `id` must end at: its last division's end, a residual's `to`, else its planned size. */
  sizeOf(id: string, planned: ReadonlyMap<string, number>): number | undefined {
    return this.ends.get(id) ?? this.residuals.get(id)?.to ?? planned.get(id);
  }

  /**
   * Every split's final size (planned and residual, a divided one at its last end), its whole
   * range's end (before any division: a tenancy that died before it may have processed past the
   * end, its uncommitted tail), and where each starts (residuals only).
   */
  sizes(planned: ReadonlyMap<string, number>): { sizes: Map<string, number>; ranges: Map<string, number>; starts: Map<string, number> } {
    const sizes = new Map<string, number>();
    const ranges = new Map<string, number>();
    for (const id of [...planned.keys(), ...this.residuals.keys()]) {
      sizes.set(id, this.sizeOf(id, planned)!);
      ranges.set(id, this.residuals.get(id)?.to ?? planned.get(id)!);
    }
    return { sizes, ranges, starts: new Map([...this.residuals].map(([id, r]) => [id, r.from])) };
  }

  /**
   * A later owner stops at the end: units of split `id` processed by tenancy `epoch` past the end
   * the last division before that tenancy set ('division'), or undefined.
   */
  pastEnd(id: string, epoch: number, unit: number): string | undefined {
    const before = (this.divided.get(id) ?? []).filter((d) => d.epoch < epoch);
    const last = before[before.length - 1];
    return last !== undefined && unit > last.end
      ? `split.${id}: tenancy ${epoch} processed unit ${unit}, past the end ${last.end} that tenancy ${last.epoch}'s division set`
      : undefined;
  }

  /** Whether `id`'s creation in `group` is a division (its parent's progress put with the matching `divisions`), not a seeding. */
  isDivision(id: string, group: readonly HistoryEvent[]): boolean {
    const r = this.residuals.get(id);
    if (!r) return false;
    const put = group.find((x) => x.type === 'put' && x.key === `${this.prefix}progress.${r.parent}`);
    const divisions = put ? (JSON.parse(put.value!) as ProgressWithDivision).divisions : undefined;
    return divisions !== undefined && residualId(r.parent, divisions) === id;
  }

  /**
   * The rules a put of `progress.{id}` breaks (`prev` before it, `group` its revision), with the
   * end the split had before it: a division's, or a commit past the end.
   */
  progressProblems(id: string, prev: ProgressWithDivision | undefined, next: ProgressWithDivision, group: readonly HistoryEvent[], oldEnd: number | undefined): string[] {
    const out: string[] = [];
    const before = prev?.divisions ?? 0;
    const after = next.divisions ?? 0;
    const end = typeof next.end === 'number' ? next.end : undefined;
    if (after < before) out.push(`progress.${id}: divisions went back ${before} → ${after}`);
    // Nothing committed (null) is where the split's units start (a residual's `from`).
    const pos = (p: unknown): number => (typeof p === 'number' ? p : this.startOf(id));
    if (after > before) {
      const was = pos(prev?.progress);
      if (after !== before + 1) out.push(`progress.${id}: divisions jumped ${before} → ${after} in one revision`);
      if (pos(next.progress) !== was) out.push(`progress.${id}: a division moved committed progress ${was} → ${pos(next.progress)}`);
      if (end === undefined || end < pos(next.progress)) out.push(`progress.${id}: division ${after} ends at ${String(next.end)}, before its committed progress ${pos(next.progress)}`);
      const rid = residualId(id, after);
      const spec = group.find((x) => x.type === 'put' && x.key === `${this.prefix}spec.${rid}`);
      const split = group.find((x) => x.type === 'put' && x.key === `${this.prefix}split.${rid}`);
      if (!spec || !split) out.push(`progress.${id}: division ${after} without the residual ${rid}'s spec and split in the same revision`);
      else {
        const s = JSON.parse(split.value!) as { epoch?: number; status?: string; owner?: string; attempts?: number };
        if (s.epoch !== 0 || s.status !== 'runnable' || s.owner !== '' || s.attempts !== 0) out.push(`split.${rid} created non-initial by a division`);
        const r = this.residuals.get(rid);
        if (!r || r.parent !== id || r.from !== end || (oldEnd !== undefined && r.to !== oldEnd)) {
          out.push(`residual ${rid} covers (${r?.from}, ${r?.to}] of ${r?.parent}, not (${String(end)}, ${String(oldEnd)}] of ${id}`);
        }
      }
    } else if (end !== undefined && pos(next.progress) > end) {
      // The old owner's commit past the end the division set is refused; a later owner stops there.
      out.push(`progress.${id} committed ${pos(next.progress)}, past the end ${end} its division set`);
    }
    return out;
  }
}
