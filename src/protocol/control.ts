/**
 * The operators' record (`control`) and what it asks of a decision
 * (decision 0011): pause and evacuation, as pure functions of the record and
 * the live members, plus the edits the operator actions make to it.
 *
 * Invariants:
 * - Paused: every live member is assigned nothing (an empty record, never a
 *   missing one: a worker holds everything when it has no record, and pause
 *   must drain). Nothing is claimed, lanes drain cooperatively, progress stays.
 * - Evacuated: an entry names an instance and the run (presence nonce) it was
 *   evacuated under. It holds only while that run is the live member: the
 *   instance's restart is a new run, which is assigned again. So an
 *   evacuation never outlives the deploy it was made for.
 * - Edits are canonical (entries sorted by instance, one per instance), so a
 *   record that is already as asked is not rewritten.
 *
 * Pure: no I/O, no clock.
 */
import type { ControlRecord, Evacuation } from './records.js';
import { jsStringOrder } from '../js-order.js';

/** What the control record asks of one decision. */
export interface OperatorHold {
  paused: boolean;
  /** Live instances that must be assigned nothing (their evacuated run is the live one). */
  evacuated: ReadonlySet<string>;
}

/**
 * The hold a control record puts on a decision, given the live members'
 * nonces (instance → nonce). No record is no hold.
 */
export function operatorHold(control: ControlRecord | undefined, liveNonces: ReadonlyMap<string, string>): OperatorHold {
  const evacuated = new Set<string>();
  for (const e of control?.evacuated ?? []) {
    if (liveNonces.get(e.instance) === e.nonce) evacuated.add(e.instance);
  }
  return { paused: control?.paused ?? false, evacuated };
}

/** The control record's content without its stamp: what the operator actions edit. */
export interface ControlState {
  paused: boolean;
  evacuated: Evacuation[];
}

export const NO_CONTROL: ControlState = Object.freeze({ paused: false, evacuated: [] }) as ControlState;

/** Sets `paused`. */
export function withPaused(state: ControlState, paused: boolean): ControlState {
  return { ...state, paused };
}

/** Evacuates `instance`'s run `nonce` (replacing an entry for an earlier run). */
export function withEvacuated(state: ControlState, instance: string, nonce: string): ControlState {
  const evacuated = state.evacuated.filter((e) => e.instance !== instance);
  evacuated.push({ instance, nonce });
  evacuated.sort((a, b) => jsStringOrder(a.instance, b.instance));
  return { ...state, evacuated };
}

/** Undoes the evacuation of `instance` (whatever run it named). */
export function withoutEvacuated(state: ControlState, instance: string): ControlState {
  return { ...state, evacuated: state.evacuated.filter((e) => e.instance !== instance) };
}

/** Entries whose run is no longer the live member's (restarted or gone): kept, but no longer in force. */
export function staleEvacuations(state: ControlState, liveNonces: ReadonlyMap<string, string>): Evacuation[] {
  return state.evacuated.filter((e) => liveNonces.get(e.instance) !== e.nonce);
}

/** True when the state asks nothing (the record can be deleted rather than written). */
export function isNeutral(state: ControlState): boolean {
  return !state.paused && state.evacuated.length === 0;
}
