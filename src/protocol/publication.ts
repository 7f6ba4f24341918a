/**
 * The leader's rules around a decision: what goes into it (previous
 * assignees, the in-transit rule, the reserved set, the members and their
 * budgets under the operators' hold) and what comes out of it as records
 * (which `assign.{instance}` records change, which departed ones are
 * trimmed or deleted). `publishAssignments` (coordinator/leader/publish.ts) feeds
 * these from its view, runs the engine between them and sends the writes.
 *
 * Invariants:
 * - Previous assignees: a live member's record wins over a departed one's.
 * - In transit: a live member's record names a split while another live
 *   member still holds its lease (draining it toward them); the decision
 *   sees no lease owner for it, or successive decisions would undo the move
 *   mid-drain and flip splits back and forth.
 * - Only records whose split list changed are written (a steady fleet
 *   writes nothing; a new leader with the same decision writes nothing).
 * - A departed instance's record keeps only its splits still withheld for
 *   it, and is deleted once there are none, so no split is ever named in two
 *   records and records of pods that never return do not accumulate.
 * - Paused, or evacuated: the held members are no members to the engine and
 *   get empty records (never a missing one: that would mean "hold
 *   everything").
 * - A failed split waiting out its backoff (`notBefore` after `now`) is
 *   withheld from the decision like a reserved one, and the decision is made
 *   again when the earliest falls due (`nextChangeAt`).

 *
 * Pure: no I/O, no clock (`now` is an argument); nothing here touches the
 * engine's columns, so every rule is testable on plain maps.
 */
import type { OperatorHold } from './control.js';
import { reservedSplits, type ReservedWindowState, type SplitOwnership } from './reserved.js';
import type { SplitStatus } from './records.js';
import { waitingSplits } from './retry-policy.js';
import { tailBudgets } from './tail-budgets.js';

/**
 * A member's assignment budget (substrate.md, "Prefetch"): the splits the leader may name for
 * it, its lanes plus the prefetch depth its presence record advertises (none when absent: a
 * member of a build without prefetch is named at most its lanes).
 */
export function assignmentBudget(presence: { readonly maxInFlight: number; readonly prefetch?: number | undefined }): number {
  return presence.maxInFlight + (presence.prefetch ?? 0);
}

/** What the leader observes that a decision's inputs come from (the LeaderView has all of it). */
export interface ObservedJob {
  /** Live members: instance → assignment budget (`assignmentBudget`: lanes plus prefetch). */
  readonly members: ReadonlyMap<string, number>;
  /** Assignment records: instance → split ids. */
  readonly assigns: Iterable<readonly [string, readonly string[]]>;
  /** Live lease keys: split id → owner. */
  readonly leases: ReadonlyMap<string, string>;
  /** Record owners: split id → owner (only records whose owner is set). */
  readonly owners: ReadonlyMap<string, string>;
  readonly statusOf: (id: string) => SplitStatus | undefined;
  /** Failed splits' backoffs: split id → notBefore (only runnable records that have one). */
  readonly notBefore?: ReadonlyMap<string, number>;
  /**
   * Live members' lanes (`maxInFlight`) and the runnable splits nobody holds: with both, a
   * decision in the tail names at most the lanes (tail-budgets.ts); without, the budgets as given.
   */
  readonly tail?: { readonly lanes: ReadonlyMap<string, number>; readonly queued: number };
}

/** A decision's inputs beyond the split columns. */
export interface DecisionInputs {
  /** Previous assignee of each split some record names. */
  readonly previous: ReadonlyMap<string, string>;
  /** Splits in transit: their lease owner is hidden from this decision (split id → the owner hidden). */
  readonly hidden: ReadonlyMap<string, string>;
  /** Withheld for departed members (rebalance delay), sorted. */
  readonly reserved: readonly string[];
  /** Withheld while they wait out a failure's backoff, sorted (never in a record: nothing is kept for anyone). */
  readonly waiting: readonly string[];
  /** The engine's members and their budgets (none while paused; evacuated ones left out). */
  readonly members: readonly { id: string; cap: number }[];
  /** The window state to carry to the next step, and when it next changes by itself (a reserved split or a backoff falls due). */
  readonly window: ReservedWindowState | undefined;
  readonly nextChangeAt: number | undefined;
}

/** Previous assignees from the records: departed instances' first, so a live member's record wins. */
export function previousAssignees(assigns: Iterable<readonly [string, readonly string[]]>, live: ReadonlySet<string>): Map<string, string> {
  const records = [...assigns].sort((a, b) => Number(live.has(a[0])) - Number(live.has(b[0])));
  const previous = new Map<string, string>();
  for (const [instance, splits] of records) for (const id of splits) previous.set(id, instance);
  return previous;
}

/** The in-transit rule: splits a live member is named for while another live member holds their lease. */
export function inTransit(leases: ReadonlyMap<string, string>, previous: ReadonlyMap<string, string>, live: ReadonlySet<string>): Map<string, string> {
  const hidden = new Map<string, string>();
  for (const [id, owner] of leases) {
    const prev = previous.get(id);
    if (prev !== undefined && live.has(prev) && owner !== prev) hidden.set(id, owner);
  }
  return hidden;
}

/** Everything a decision needs besides the split columns (the former assignmentInputFromView, on plain data). */
export function decisionInputs(
  job: ObservedJob, now: number, window: ReservedWindowState | undefined, rebalanceDelayMs: number, hold: OperatorHold,
  wallNow: number = now,
): DecisionInputs {
  const live = new Set(job.members.keys());
  const previous = previousAssignees(job.assigns, live);
  const hidden = inTransit(job.leases, previous, live);
  const ownership: SplitOwnership[] = [];
  // Ownership is sparse (at most the fleet's lanes): this costs that, not the split count.
  for (const id of new Set<string>([...job.leases.keys(), ...job.owners.keys(), ...previous.keys()])) {
    if (job.statusOf(id) !== 'runnable') continue;
    ownership.push({ id, leaseOwner: job.leases.get(id) ?? null, recordOwner: job.owners.get(id) ?? null, previous: previous.get(id) ?? null });
  }
  const r = reservedSplits({ previous: window, now, live, splits: ownership, rebalanceDelayMs });
  // An evacuated member (or every member, paused) is no member to the engine: its splits go to the
  // others at once (it is live, so nothing is withheld for it), and it gets an empty record.
  const budgets = hold.paused ? [] : [...job.members].filter(([id]) => !hold.evacuated.has(id)).map(([id, cap]) => ({ id, cap }));
  const members = job.tail === undefined ? budgets : inTheTailBudgets(job, budgets, job.tail);
  // Backoffs are epoch ms on the writers' clocks (`wallNow` here), the window is on `now`'s timeline.
  const w = waitingSplits(job.notBefore ?? [], wallNow);
  const due = w.nextDueAt === undefined ? undefined : now + (w.nextDueAt - wallNow);
  const nextChangeAt = r.nextChangeAt === undefined ? due : due === undefined ? r.nextChangeAt : Math.min(r.nextChangeAt, due);
  return { previous, hidden, reserved: r.reserved, waiting: w.waiting, members, window: r.state, nextChangeAt };
}

/** The tail's budgets (tail-budgets.ts), each member's held splits counted from the live leases. */
function inTheTailBudgets(
  job: ObservedJob, budgets: readonly { id: string; cap: number }[], tail: NonNullable<ObservedJob['tail']>,
): { id: string; cap: number }[] {
  const held = new Map<string, number>();
  for (const [id, owner] of job.leases) if (job.statusOf(id) === 'runnable') held.set(owner, (held.get(owner) ?? 0) + 1);
  return tailBudgets(budgets.map((b) => ({ ...b, lanes: tail.lanes.get(b.id) ?? b.cap })), held, tail.queued);
}

/** The records a decision asks for. */
export interface PublicationPlan {
  /** Records to (re)write: instance → split ids, sorted. */
  readonly puts: ReadonlyMap<string, readonly string[]>;
  /** Departed instances whose record goes. */
  readonly deletes: readonly string[];
}

/**
 * Diffs a decision against the records: every live member gets a record
 * (empty when the decision gave it nothing), written only when its list
 * changed; a departed instance's record is trimmed to what is still
 * reserved for it, or deleted.
 */
export function publicationPlan(
  decision: ReadonlyMap<string, readonly string[]>, live: Iterable<string>, current: ReadonlyMap<string, readonly string[]>, reserved: ReadonlySet<string>,
): PublicationPlan {
  const wanted = new Map(decision);
  for (const m of live) if (!wanted.has(m)) wanted.set(m, []);
  const puts = new Map<string, readonly string[]>();
  const deletes: string[] = [];
  for (const [instance, splits] of wanted) {
    const now = current.get(instance);
    if (!now || !sameList(now, splits)) puts.set(instance, splits);
  }
  for (const [instance, splits] of current) {
    if (wanted.has(instance)) continue;
    const kept = prunedRecord(splits, reserved);
    if (kept === undefined) deletes.push(instance);
    else if (kept.length < splits.length) puts.set(instance, kept);
  }
  return { puts, deletes };
}

/** A departed instance's record: the splits still withheld for it, or undefined when none is (delete the record). */
export function prunedRecord(splits: readonly string[], reserved: ReadonlySet<string>): string[] | undefined {
  const kept = splits.filter((id) => reserved.has(id));
  return kept.length === 0 ? undefined : kept;
}

function sameList(a: readonly string[], b: readonly string[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}
