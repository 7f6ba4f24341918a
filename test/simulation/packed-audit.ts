/**
 * The simulation auditor's view of the packed queue's checker
 * (test/support/packed-invariants.ts): its problems as the auditor's
 * properties, and its whole-run checks for a finished job. Pure: no I/O, no
 * clock. It never writes.
 *
 * Properties: a page or layout rule is 'layout'; promotion rules
 * 'promotion'; fold-back rules 'fold-back'; a folded bit cleared or a key
 * deleted by anything but a fold-back 'monotone' (the rule every split record
 * keeps); a split completed twice 'completed-once'; a planned split neither
 * folded nor terminal 'no-loss'.
 */
import type { Problem } from '../support/invariants.js';
import type { PackedChecker } from '../support/packed-invariants.js';
import type { Violation } from './auditor.js';

function propertyOf(rule: string): string {
  if (rule.startsWith('promote-')) return 'promotion';
  if (rule.startsWith('fold-')) return 'fold-back';
  if (rule === 'folded-bit-cleared' || rule === 'deleted-without-fold') return 'monotone';
  if (rule === 'completed-twice') return 'completed-once';
  if (rule === 'split-lost') return 'no-loss';
  if (rule === 'planned-count') return 'completion';
  return 'layout';
}

/** The checker's problems as violations, with the process that wrote the offending revision. */
export function packedViolations(problems: readonly Problem[], writers: ReadonlyMap<number, { proc: string; what: string }>): Violation[] {
  return problems.map((p) => {
    const revision = p.revisions[p.revisions.length - 1];
    return {
      property: propertyOf(p.rule),
      message: `${p.rule}: ${p.detail}`,
      ...(revision !== undefined ? { revision, context: { writer: writers.get(revision) } } : {}),
    };
  });
}

/** A finished packed job: every planned split folded or terminal, the plan's count right, the pages holding exactly the planner's splits. */
export function packedEndViolations(packed: PackedChecker, sizes: ReadonlyMap<string, number>): Violation[] {
  if (packed.layout !== 'packed') return [];
  const v = packedViolations(packed.endProblems(), new Map());
  for (const id of packed.planned.keys()) if (!sizes.has(id)) v.push({ property: 'layout', message: `queue page ${packed.planned.get(id)!.page} holds ${id}, which the planner never planned` });
  for (const id of sizes.keys()) if (!packed.planned.has(id)) v.push({ property: 'no-loss', message: `split ${id} was planned but no queue page holds it` });
  return v;
}
