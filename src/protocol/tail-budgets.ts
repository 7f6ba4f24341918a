/**
 * The tail's budgets (decision 0089): how many splits a decision may name
 * for each member once the queue fits in the fleet's free lanes.
 *
 * Prefetch names splits beyond a member's lanes so a lane that frees need
 * not wait for the leader (substrate.md, "Prefetch"). While the queue is
 * longer than the free lanes that is what keeps every lane busy. In the
 * tail it works against the job: the engine balances weight and cannot tell
 * a lane from a prefetch slot, so a split (a new residual, most often) can
 * stay named, as prefetch, to a member whose lanes are all busy while a lane
 * idles elsewhere (the giant `bench:peers` scenario: 1 to 3 residuals
 * waiting 0.6 to 1.4 s). The spec lets the leader name *up to* lanes plus
 * prefetch; once every split waiting fits in a free lane, it names at most
 * the lanes, so what waits goes where a lane is free.
 *
 * Invariants:
 * - Outside the tail every member's budget is its assignment budget
 *   (`maxInFlight + prefetch`), exactly as before.
 * - In the tail (`queued ≤ Σ max(0, lanes − held)`) every budget is the
 *   member's lanes. The engine then still names every queued split (the free
 *   lanes have room for all of them), so totality over the claimable pool
 *   holds over either budget; it only stops naming splits as prefetch.
 * - A member's held splits count against its lanes whoever's record names
 *   them (a draining split still takes a lane).
 * - With `prefetch: 0` everywhere both budgets are equal: nothing changes.
 *
 * Pure: no I/O, no clock.
 */

/** A member the decision may name splits for. */
export interface BudgetMember {
  readonly id: string;
  /** Its assignment budget: lanes plus prefetch. */
  readonly cap: number;
  /** Its lanes (`maxInFlight`). */
  readonly lanes: number;
}

/** Whether the splits waiting for a lane all fit in the lanes that are free. */
export function inTheTail(members: readonly BudgetMember[], held: ReadonlyMap<string, number>, queued: number): boolean {
  let free = 0;
  for (const m of members) free += Math.max(0, m.lanes - (held.get(m.id) ?? 0));
  return queued <= free;
}

/** Each member's budget for this decision: its lanes in the tail, lanes plus prefetch otherwise. */
export function tailBudgets(
  members: readonly BudgetMember[], held: ReadonlyMap<string, number>, queued: number,
): { id: string; cap: number }[] {
  const tail = inTheTail(members, held, queued);
  return members.map((m) => ({ id: m.id, cap: tail ? Math.min(m.cap, m.lanes) : m.cap }));
}
