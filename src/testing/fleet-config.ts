/**
 * The one configuration of a fleet member process (SPLITFLEET_FLEET, read by
 * fleet-process.ts) and the lines it writes, shared by the process itself,
 * its spawner (fleet-member.ts: the demo and every test suite) so the two
 * sides cannot drift.
 *
 * Types only: importing this module runs nothing (fleet-process.ts starts a
 * coordinator on import, so nobody but node imports it).
 *
 * Backward compatible: every field added after the first version is optional
 * and changes nothing when absent.
 */
import type { Json } from '../protocol/records.js';
import type { SyntheticMember } from './synthetic.js';

/** The synthetic job's shape and pace (splits, seed, unitMs, commitEvery, drain, poison, …), and how to run. */
export interface FleetProcessConfig extends SyntheticMember {
  /** etcd client URL. */
  endpoint: string;
  /** Several client URLs (an etcd cluster); used instead of `endpoint` when given. */
  endpoints?: string[];
  job: string;
  instance: string;
  maxInFlight: number;
  /** Numeric coordinator knobs: leaseDurationMs, opTimeoutMs, rebalanceDelayMs, … */
  config?: Record<string, number>;
  /** Key prefix root (default the library's, 'splitfleet'). */
  root?: string;
  /** The layout a new job is created with (decision 0037; default the library's, 'packed'). */
  layout?: 'keys' | 'packed';
  /**
   * Also write `{ev: 'stats', cooperative, forced, declined, leaderChanges}`
   * (this member's revocation and leadership counters) whenever they change
   * and once at the end.
   */
  stats?: boolean;
  /** Stop gracefully when stdin ends: the parent holds it open as a pipe (the demo does). */
  stopWithParent?: boolean;
  /**
   * Act as a newer build for rolling-upgrade tests: every record this member
   * writes carries these extra fields (a `minor` version among them, say),
   * as a release that adds optional fields would write them.
   */
  recordExtras?: Record<string, Json>;
}

/**
 * One line of a member's stdout. Known `ev` values: started, leading,
 * not-leading, claimed {id, epoch, progress}, unit {id, unit, epoch},
 * drained {id, epoch, progress}, declined {id, epoch, progress}, completed {id, units},
 * failed {id, attempts}, session-lost {reason}, stats {…}, verdict {verdict}, fatal {code, message}, stopped.
 * A line that is not JSON is kept as {ev: 'raw', line}.
 */
export interface FleetEvent {
  ev: string;
  /** Wall-clock ms when the member wrote it (absent on raw lines). */
  t?: number;
  id?: string;
  epoch?: number;
  [field: string]: unknown;
}
