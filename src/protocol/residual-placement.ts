/**
 * Where a new residual is offered first (decision 0063, "Placement"): to a
 * member with a lane that would idle. The leader asks a running split to
 * divide because lanes would idle; the residual it gets is an ordinary split,
 * and the engine places it by weight, which does not know lanes from
 * prefetch slots: a residual named, as prefetch, to a member whose lanes are
 * all busy waits there while a lane idles elsewhere (measured on the giant
 * scenario: 1 to 3 residuals waiting 0.6 to 1.4 s). So each residual not yet
 * named for anyone is given, as its previous assignee, a member with a lane
 * that no split is named for; the engine's sticky pass then keeps it there
 * while that member has room, and its improving pass may still move it.
 *
 * Invariants:
 * - A hint, not a decision: the engine's rules and invariants are unchanged
 *   (a previous assignee is one of its inputs).
 * - Each idle lane is offered at most one residual; the heaviest residual
 *   goes first, to the member with the most idle lanes (ties by id).
 * - Only residuals nobody holds or is named for are hinted.
 *
 * Pure: no I/O, no clock.
 */

/** A live member as the placement sees it: its lanes (`maxInFlight`) and how many splits its record names. */
export interface PlacementMember {
  readonly id: string;
  readonly lanes: number;
  readonly named: number;
}

/** Residual id → the member it is offered to first. */
export function residualPlacement(
  residuals: readonly { readonly id: string; readonly weight: number }[], members: readonly PlacementMember[],
): Map<string, string> {
  const out = new Map<string, string>();
  const idle = members.map((m) => ({ id: m.id, left: m.lanes - m.named })).filter((m) => m.left > 0);
  if (idle.length === 0) return out;
  const order = [...residuals].sort((a, b) => b.weight - a.weight || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  for (const r of order) {
    let best: { id: string; left: number } | undefined;
    for (const m of idle) if (m.left > 0 && (!best || m.left > best.left || (m.left === best.left && m.id < best.id))) best = m;
    if (!best) break;
    out.set(r.id, best.id);
    best.left--;
  }
  return out;
}
