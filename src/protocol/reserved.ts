/**
 * The rebalance delay: which splits the leader withholds from the desired
 * assignment because their instance has just departed, and until when.
 *
 * `reservedSplits` is a pure reducer over a small window state: the leader
 * feeds it the previous state, the time, the live members and what it knows
 * about each split's owners; it returns the reserved ids, the next state, and
 * the one moment the windows next change (so the shell sets a single timer).
 *
 * Invariants:
 * - A window opens once per departure (a live → absent transition, or, on a
 *   leader's first step, an owner it has never seen live) and closes when the
 *   instance reappears (cancelled, costing nothing) or at exactly
 *   `departedAt + rebalanceDelayMs` (expired). An expired window never
 *   reopens by itself, so nothing is withheld indefinitely.
 * - Only what a departed instance *held* is withheld (its live lease key or
 *   its name as the record's owner): a split merely named for it (prefetched,
 *   never claimed) is reassigned at once (substrate.md, "Prefetch"), since
 *   moving it costs no drain and a returning pod has nothing of it to resume.
 * - A split any of whose owners is live is never reserved: withholding it
 *   would tell a live holder to give it up.
 * - `rebalanceDelayMs === 0` is a separate early branch, not the window logic
 *   with a zero comparison (KAFKA-15693: Connect read zero as "withhold
 *   forever"). Enforced by a_zero_rebalance_delay_reassigns_immediately.
 *
 * Pure: no timers, no clock; `now` is an argument (ms on one process's clock).
 */

import { SplitfleetError } from '../errors.js';
import { jsStringOrder } from '../js-order.js';

/** An open window: `instance` left at `departedAt`; its splits are withheld until `departedAt + delay`. */
export interface DepartureWindow {
  readonly instance: string;
  readonly departedAt: number;
}

/** What one step carries to the next. Plain data, sorted, so it can be logged and compared. */
export interface ReservedWindowState {
  /** The members live at the previous step, sorted. Departures are detected against it. */
  readonly live: readonly string[];
  /** Open windows, sorted by instance. */
  readonly windows: readonly DepartureWindow[];
}

/** Who a split belongs to, as far as the leader can see. Empty string or null/undefined = nobody. */
export interface SplitOwnership {
  readonly id: string;
  /** The instance named by the live `lease.{id}` key. */
  readonly leaseOwner?: string | null;
  /** The `owner` field of `split.{id}`. */
  readonly recordOwner?: string | null;
  /** The instance whose published assignment named the split. */
  readonly previous?: string | null;
}

export interface ReservedInput {
  /** The state returned by the previous step; undefined on a leader's first step. */
  readonly previous: ReservedWindowState | undefined;
  readonly now: number;
  /** Instances whose presence key exists now. */
  readonly live: Iterable<string>;
  /** The splits to consider (typically the runnable ones). */
  readonly splits: Iterable<SplitOwnership>;
  readonly rebalanceDelayMs: number;
}

export interface ReservedResult {
  /** Split ids to withhold from the desired assignment, sorted. */
  readonly reserved: string[];
  /** Pass back as `previous` next step. Undefined when the delay is zero: there is no window. */
  readonly state: ReservedWindowState | undefined;
  /** When the earliest open window expires; undefined when none is open. */
  readonly nextChangeAt: number | undefined;
  /** The open windows with their expiry, for logs and metrics, sorted by instance. */
  readonly windows: readonly { instance: string; departedAt: number; until: number }[];
}

/** Every instance the split belongs to in any sense: held by (lease, record owner) or named for. */
function ownersOf(split: SplitOwnership): string[] {
  return present([split.leaseOwner, split.recordOwner, split.previous]);
}

/** The instances that hold the split (its lease key's owner, its record's owner): what a window withholds. */
function holdersOf(split: SplitOwnership): string[] {
  return present([split.leaseOwner, split.recordOwner]);
}

function present(owners: readonly (string | null | undefined)[]): string[] {
  const out: string[] = [];
  for (const o of owners) if (typeof o === 'string' && o !== '') out.push(o);
  return out;
}

/**
 * Advances the rebalance-delay windows to `now` and returns the splits to
 * withhold. See the module comment for the rules.
 *
 * @throws SplitfleetError('INVALID_INPUT') when `rebalanceDelayMs` is not a
 *   non-negative safe integer or `now` is not finite.
 */
export function reservedSplits(input: ReservedInput): ReservedResult {
  const delay = input.rebalanceDelayMs;
  // Reassign at once: a branch of its own, so that no comparison against a
  // zero-length window can ever withhold anything.
  if (delay === 0) return { reserved: [], state: undefined, nextChangeAt: undefined, windows: [] };

  if (!Number.isSafeInteger(delay) || delay < 0) {
    throw new SplitfleetError('INVALID_INPUT', `rebalanceDelayMs: must be an integer ≥ 0 (got ${delay})`);
  }
  if (!Number.isFinite(input.now)) {
    throw new SplitfleetError('INVALID_INPUT', `now: must be a finite number of milliseconds (got ${input.now})`);
  }
  return delayedReservation(input, delay);
}

/** The window logic proper; only ever reached with a positive delay. */
function delayedReservation(input: ReservedInput, delay: number): ReservedResult {
  const { now, previous } = input;
  const live = new Set(input.live);
  const splits = [...input.splits];
  const windows = new Map<string, number>();

  if (previous !== undefined) {
    for (const w of previous.windows) {
      if (live.has(w.instance)) continue; // reappeared: cancelled, nothing moves
      if (now >= w.departedAt + delay) continue; // expired at exactly the boundary
      windows.set(w.instance, w.departedAt);
    }
    for (const instance of previous.live) {
      if (!live.has(instance) && !windows.has(instance)) windows.set(instance, now);
    }
  } else {
    // A leader's first step cannot know when an absent owner left (it may be
    // mid-restart in the same rolling deploy that moved leadership), so it
    // grants each one a full window from now: bounded, and never repeated.
    for (const split of splits) {
      for (const owner of holdersOf(split)) {
        if (!live.has(owner) && !windows.has(owner)) windows.set(owner, now);
      }
    }
  }

  const reserved: string[] = [];
  const seen = new Set<string>();
  for (const split of splits) {
    if (seen.has(split.id)) continue;
    if (ownersOf(split).some((o) => live.has(o))) continue;
    if (holdersOf(split).some((o) => windows.has(o))) {
      reserved.push(split.id);
      seen.add(split.id);
    }
  }
  reserved.sort(jsStringOrder);

  const open = [...windows].sort((a, b) => jsStringOrder(a[0], b[0]));
  let nextChangeAt: number | undefined;
  for (const [, departedAt] of open) {
    const until = departedAt + delay;
    if (nextChangeAt === undefined || until < nextChangeAt) nextChangeAt = until;
  }
  return {
    reserved,
    state: {
      live: [...live].sort(jsStringOrder),
      windows: open.map(([instance, departedAt]) => ({ instance, departedAt })),
    },
    nextChangeAt,
    windows: open.map(([instance, departedAt]) => ({ instance, departedAt, until: departedAt + delay })),
  };
}
