/**
 * Worker reconciliation: from what a worker observes (its assignment record,
 * its lanes, the splits' records and leases) to the decisions that move it
 * toward its assignment, exactly work-assignment.md's table:
 *
 *   assigned, not held        → claim (only once the previous owner's lease key is gone)
 *   held, still assigned      → nothing: stickiness is free
 *   held, no longer assigned  → revoke: begin a cooperative drain, then release
 *   no record at all          → hold what it has, claim nothing
 *
 * Invariants:
 * - No record (undefined) yields no decision at all: absence of an
 *   instruction is not an instruction to hold nothing.
 * - A split already draining is never revoked twice, and a drain is never
 *   cancelled, even if the split is assigned again (it is released, then
 *   claimed back on a later pass).
 * - Claims never exceed maxInFlight, counting held and draining lanes: an
 *   assignment may name more (the prefetch depth, substrate.md "Prefetch"),
 *   and those wait, named but unheld, for the next lane to free.
 *
 * Pure: no I/O, no clock. The shell executes the decisions with an
 * exhaustive switch; `drainDecision` is what the worker's serviceRevocations (coordinator/worker/revocations.ts) consults.
 */

import { claimCandidates, type ClaimKind, type ObservedSplit } from './claims.js';
import { jsStringOrder } from '../js-order.js';

export interface ObservedAssignment {
  readonly me: string;
  /** The split ids of `assign.{me}`; undefined when no record exists (or none has been seen yet). */
  readonly assignment: readonly string[] | undefined;
  /** Splits with an open lane, including draining ones. */
  readonly held: Iterable<string>;
  /** Splits whose revocation has begun (a subset of the lanes; counted even if absent from `held`). */
  readonly draining: Iterable<string>;
  readonly splits: ReadonlyMap<string, ObservedSplit>;
  readonly maxInFlight: number;
  readonly maxAttempts: number;
  /** The worker's clock (epoch ms): an assigned split still waiting out its backoff is not claimed (claims.ts). */
  readonly now?: number;
}

export type ReconcileDecision =
  /** Try the claim transaction: lease key absent (or ours), record at the revision read. */
  | { kind: 'claim'; id: string; claim: ClaimKind; consumesAttempt: boolean }
  /**
   * Park the split instead of claiming it: this claim would consume the
   * attempt that reaches max_attempts. For a 'reclaim', our stale lease key
   * goes in the same transaction.
   */
  | { kind: 'quarantine'; id: string; claim: ClaimKind; attempts: number }
  /** Begin a cooperative drain of a held split; release when it finishes or is forced. */
  | { kind: 'revoke'; id: string };

/**
 * The decisions that move this worker toward its assignment: revokes first
 * (sorted by id), then quarantines and claims in claimCandidates' order.
 */
export function reconcileAssignment(observed: ObservedAssignment): ReconcileDecision[] {
  // No record: hold everything, claim nothing.
  if (observed.assignment === undefined) return [];

  const assigned = new Set(observed.assignment);
  const draining = new Set(observed.draining);
  const decisions: ReconcileDecision[] = [];

  const held = [...new Set(observed.held)].sort(jsStringOrder);
  for (const id of held) {
    // Already draining: the revocation is in progress and always finishes.
    if (!assigned.has(id) && !draining.has(id)) decisions.push({ kind: 'revoke', id });
  }

  const candidates = claimCandidates({
    me: observed.me,
    assigned,
    splits: observed.splits,
    held,
    draining,
    maxInFlight: observed.maxInFlight,
    maxAttempts: observed.maxAttempts,
    ...(observed.now !== undefined ? { now: observed.now } : {}),
  });
  for (const c of candidates) {
    decisions.push(c.quarantine
      ? { kind: 'quarantine', id: c.id, claim: c.claim, attempts: c.attempts }
      : { kind: 'claim', id: c.id, claim: c.claim, consumesAttempt: c.consumesAttempt });
  }
  return decisions;
}

/**
 * Where a source stands in its cooperative drain:
 * 'draining' (still chasing its tail), 'declined' (it will not drain),
 * 'failed' (its drain threw).
 */
export type DrainHandlerState = 'draining' | 'declined' | 'failed';

export type DrainDecision =
  /** Keep waiting; re-check at `forceAt` if the drain has not finished by then. */
  | { kind: 'wait'; forceAt: number }
  /** Force the release now; the uncommitted tail replays under the next owner. */
  | { kind: 'force'; reason: 'declined' | 'failed' | 'deadline' };

/**
 * Whether a revocation in progress may keep waiting for its cooperative drain.
 * Forced at once when the source declined or its drain failed; otherwise forced
 * once `drainDeadlineMs` has elapsed (at exactly `drainStartedAt + drainDeadlineMs`).
 */
export function drainDecision(
  drainStartedAt: number, now: number, drainDeadlineMs: number, handlerState: DrainHandlerState,
): DrainDecision {
  if (handlerState === 'declined' || handlerState === 'failed') return { kind: 'force', reason: handlerState };
  const forceAt = drainStartedAt + drainDeadlineMs;
  return now >= forceAt ? { kind: 'force', reason: 'deadline' } : { kind: 'wait', forceAt };
}
