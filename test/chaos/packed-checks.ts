/**
 * The chaos checks' view of a packed job (decision 0037), from the packed
 * queue's checker of the same replay (test/support/packed-invariants.ts):
 * what each planned split must do (its units, from its queue page, whether or
 * not it was ever promoted), the last state of a split whose keys a fold-back
 * deleted, and the checker's problems under their own rule names as checks.
 * Pure: no I/O, no clock.
 */
import type { PackedChecker } from '../support/packed-invariants.js';
import type { Violation } from './checks.js';

type Rec = Record<string, any>;
type Held = { rec: Rec; rev: number };

/** Units of every split the queue pages hold (descriptor `{ units }`, as the synthetic planner writes it). */
export function plannedUnits(packed: PackedChecker): Map<string, number> {
  return new Map([...packed.planned].map(([id, s]) => [id, Number((s.descriptor as Rec | null)?.units ?? 0)]));
}

/** Split `id`'s last record and committed progress: its keys if it has them, else what its fold-back deleted. */
export function lastState(packed: PackedChecker, id: string, split: Held | undefined, progress: Held | undefined): { split: Held | undefined; progress: Rec | undefined } {
  const fold = split === undefined ? packed.folds.get(id) : undefined;
  if (!fold) return { split, progress: progress?.rec };
  return { split: fold.split ? { rec: fold.split, rev: fold.rev } : undefined, progress: fold.progress };
}

/** The checker's problems as checks (its rule names), with its whole-run ones when the job must have finished. */
export function packedViolations(packed: PackedChecker, expectComplete: boolean): Violation[] {
  const problems = [...packed.problems, ...(expectComplete ? packed.endProblems() : [])];
  return problems.map((p) => ({ check: p.rule, ...(p.split ? { split: p.split } : {}), revisions: p.revisions, detail: p.detail }));
}
