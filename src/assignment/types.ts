/**
 * The shapes of the desired assignment: what the leader feeds it (the `plan`
 * command's JSON input) and what it returns. Shared by both engines.
 */

import type { SplitStatus } from '../split-model.js';

export type { SplitStatus };

export interface MemberInput {
  /** Stable instance id (a pod name). */
  id: string;
  /** Lane budget (`max_in_flight`); defaults to the input's `defaultCap`. Integer ≥ 1. */
  cap?: number;
}

export interface SplitInput {
  id: string;
  /** Integer 0 ≤ weight ≤ Number.MAX_SAFE_INTEGER; 0 counts as 1. */
  weight: number;
  /** Defaults to `runnable`. */
  status?: SplitStatus;
  /** The instance named by the live `lease.{id}` key, if any. */
  leaseOwner?: string | null;
  /** The `owner` field of the `split.{id}` record, if any. */
  recordOwner?: string | null;
  /** The instance whose published assignment named this split, if any. */
  previous?: string | null;
}

export interface AssignmentInput {
  /** Keys every tie-break: the job fingerprint, never the leader's identity. */
  seed: string;
  /** Lane budget of a member that states none. Default 8. */
  defaultCap?: number;
  members: MemberInput[];
  splits: SplitInput[];
  /** Split ids withheld from this decision (the rebalance delay). */
  reserved?: string[];
}

export interface AssignmentStats {
  /** Splits named in some member's assignment. */
  assigned: number;
  /** Claimable splits left unassigned because every lane is full. */
  queued: number;
  /** Moves made by the improving pass. */
  improvingMoves: number;
  /** True when MAX_IMPROVING_MOVES stopped the pass (local optimality lost). */
  backstopHit: boolean;
  /** Largest member load (sum of effective weights; approximate past 2^53). */
  maxLoad: number;
  minLoad: number;
  /** A lower bound on the optimal maximum load. */
  lowerBound: number;
  /** maxLoad / lowerBound (1 when nothing is assigned). */
  imbalance: number;
  /** Wall time of the decision, milliseconds. */
  computeMs: number;
}

export interface AssignmentResult {
  /** Every live member → its split ids, sorted in JS string order. */
  assignment: Record<string, string[]>;
  stats: AssignmentStats;
}

export const DEFAULT_CAP = 8;
