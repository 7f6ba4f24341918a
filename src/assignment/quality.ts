/**
 * Quality figures of an assignment: loads, a lower bound on the optimal
 * maximum load, the imbalance ratio, and churn (moved weight and count)
 * against a previous assignment. Pure; figures are f64 (approximate past 2^53).
 */
import { effectiveWeight } from './hand-out-order.js';

export interface LoadFigures {
  maxLoad: number;
  minLoad: number;
  lowerBound: number;
  imbalance: number;
}

/**
 * A lower bound on the best achievable maximum load for `weights` over
 * `members` members: no member can carry less than the heaviest split or
 * less than the average.
 */
export function lowerBound(weights: Iterable<number>, members: number): number {
  let total = 0;
  let heaviest = 0;
  for (const w0 of weights) {
    const w = effectiveWeight(w0);
    total += w;
    if (w > heaviest) heaviest = w;
  }
  if (members <= 0) return 0;
  return Math.max(heaviest, Math.ceil(total / members));
}

/** max / min load, lower bound and imbalance (max / lower bound; 1 when empty). */
export function loadFigures(loads: ArrayLike<number>, assignedWeights: Iterable<number>): LoadFigures {
  let maxLoad = 0;
  let minLoad = loads.length > 0 ? Infinity : 0;
  for (let i = 0; i < loads.length; i++) {
    const l = loads[i]!;
    if (l > maxLoad) maxLoad = l;
    if (l < minLoad) minLoad = l;
  }
  const lb = lowerBound(assignedWeights, loads.length);
  return { maxLoad, minLoad, lowerBound: lb, imbalance: lb > 0 ? maxLoad / lb : 1 };
}

export interface Churn {
  /** Sum of effective weights of splits whose assignee changed (newly assigned or moved). */
  movedWeight: number;
  movedCount: number;
}

/**
 * Churn of `next` against `prev` (both member → split ids): a split counts as
 * moved when it was assigned in `prev` and is assigned to a different member
 * in `next`. Splits new to the assignment are not moves.
 */
export function churn(
  prev: Record<string, readonly string[]>,
  next: Record<string, readonly string[]>,
  weightOf: (id: string) => number,
): Churn {
  const before = new Map<string, string>();
  for (const [member, ids] of Object.entries(prev)) for (const id of ids) before.set(id, member);
  let movedWeight = 0;
  let movedCount = 0;
  for (const [member, ids] of Object.entries(next)) {
    for (const id of ids) {
      const was = before.get(id);
      if (was !== undefined && was !== member) {
        movedWeight += effectiveWeight(weightOf(id));
        movedCount++;
      }
    }
  }
  return { movedWeight, movedCount };
}
