/**
 * Which running splits the leader asks to divide (substrate.md, "Dividing a
 * running split"; decision 0063): a function of what it observes, no I/O.
 *
 * Invariants:
 * - Nothing is asked while no lane would idle: `idleLanes` is the fleet's
 *   lanes less its running splits less the claimable queue.
 * - At most one ask per split is outstanding: an ask stands until its
 *   division lands (`divisions` reaches its seq), its handler declines it
 *   (`declined` reaches it), or the tenancy it was asked of ends (another
 *   epoch, or the split no longer running). A split declined in a tenancy is
 *   not asked again in that tenancy.
 * - New asks go to the splits with the most weight left (their part's
 *   weight less the share their handler reported done), ties by id, one per
 *   idle lane, and only of a split with at least twice `minWeight` left, so
 *   that each part keeps at least `minWeight`. An ask outstanding takes an
 *   idle lane's place only while it is expected to be answered (`answering`):
 *   a handler that never divides leaves its ask unanswered, and must not keep
 *   the others from being asked.
 * - An ask moves half of what is left: an idle lane takes the residual, and
 *   k idle lanes are filled in about log2(k + 1) rounds, each part divided
 *   again while lanes still idle.
 *
 * Pure: no I/O, no clock.
 */
import type { DivisionAsk } from './record-types.js';

/** The share of its remaining weight an ask moves: half (see the header). */
export const DIVISION_SHARE = 0.5;

/** A running split as the leader sees it, with what its progress record says. */
export interface RunningSplit {
  readonly id: string;
  /** The instance whose lease it is under. */
  readonly owner: string;
  readonly epoch: number;
  /** Its current part's weight: the progress record's `weight` after a division, else the spec's. */
  readonly weight: number;
  /** The share of the part its handler reported done (0 when it reports none). */
  readonly done: number;
  /** Divisions landed so far (the progress record's `divisions`, 0 when none). */
  readonly divisions: number;
  /** The seq of the division declined in the tenancy that wrote the progress record, if any (with that tenancy's epoch). */
  readonly declined?: { readonly seq: number; readonly epoch: number } | undefined;
}

export interface DivisionRound {
  /** Lanes of live members less running splits less claimable queued splits (may be ≤ 0). */
  readonly idleLanes: number;
  readonly running: readonly RunningSplit[];
  /** Asks outstanding from earlier rounds, by split id, with the instance they were asked of. */
  readonly outstanding: ReadonlyMap<string, DivisionAsk & { readonly owner: string }>;
  /** Least weight a part may be left with (each side of a division). */
  readonly minWeight: number;
  /**
   * Of the asks outstanding, those still expected to be answered (asked recently): each takes an
   * idle lane's place until it is. An older one stands unanswered (a handler that never divides).
   */
  readonly answering?: number;
}

/** The weight a running split has left: its part's weight less what its handler reported done. */
export function weightLeft(s: Pick<RunningSplit, 'weight' | 'done'>): number {
  return s.weight * (1 - Math.min(1, Math.max(0, s.done)));
}

/** Whether an outstanding ask is answered or void: landed, declined, or its tenancy over. */
function settled(ask: DivisionAsk & { owner: string }, now: RunningSplit | undefined): boolean {
  if (!now || now.epoch !== ask.epoch || now.owner !== ask.owner) return true;
  if (now.divisions >= ask.seq) return true;
  return now.declined !== undefined && now.declined.epoch === ask.epoch && now.declined.seq >= ask.seq;
}

/** The asks that should stand after this round, by instance (instances with none are absent). */
export function divisionAsks(round: DivisionRound): Map<string, DivisionAsk[]> {
  const byId = new Map(round.running.map((s) => [s.id, s]));
  const standing: (DivisionAsk & { owner: string })[] = [];
  for (const ask of round.outstanding.values()) if (!settled(ask, byId.get(ask.id))) standing.push(ask);
  const room = round.idleLanes - Math.min(round.answering ?? 0, standing.length);
  if (room > 0) {
    const asked = new Set(standing.map((a) => a.id));
    const floor = 2 * Math.max(1, round.minWeight);
    const candidates = round.running
      .filter((s) => !asked.has(s.id) && weightLeft(s) >= floor && !(s.declined !== undefined && s.declined.epoch === s.epoch))
      .sort((a, b) => weightLeft(b) - weightLeft(a) || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
    for (const s of candidates.slice(0, room)) {
      standing.push({ id: s.id, epoch: s.epoch, seq: s.divisions + 1, share: DIVISION_SHARE, owner: s.owner });
    }
  }
  const out = new Map<string, DivisionAsk[]>();
  for (const { owner, ...ask } of standing) {
    let list = out.get(owner);
    if (!list) out.set(owner, (list = []));
    list.push(ask);
  }
  for (const list of out.values()) list.sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  return out;
}
