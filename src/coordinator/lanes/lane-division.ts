/**
 * A lane's division write (decision 0063): the one fenced transaction that
 * gives the primary part its new end and creates the residual (or records a
 * decline), built from the lane's records as they are when its turn in the
 * lane's write order comes (protocol/division.ts builds it), and what the
 * handler is told of it.
 *
 * Invariants:
 * - 'landed' only when the transaction won (or a read-back showed it did).
 * - 'not-landed' only when nothing was written and the lane is still whole
 *   and ours: the residual's keys existed already, or the store refused the
 *   request before applying it.
 * - 'lost' when the split is no longer ours (the lane ends as lost), which is
 *   also the answer when a reply was lost and the lane ended before the
 *   read-back knew: a handler is never told "not landed" of a division that
 *   may have landed, so it never works past an end it gave away.
 */
import type { Clock } from '../../clock.js';
import { isRetryable } from '../../errors.js';
import { backoffDelay, type BackoffPolicy } from '../../protocol/backoff.js';
import { laneWrite, type LaneWrite, type LaneWriteArgs } from '../../protocol/lanes.js';
import type { Json, ProgressRecord, SplitRecord } from '../../protocol/records.js';
import { laneTxn, readBackTxn } from '../../protocol/txns.js';
import type { Store } from '../../store/store.js';
import type { LaneGuards, WriteOutcome } from './lane-guards.js';

/** What became of a division's (or a decline's) write. */
export type DivisionWritten = 'landed' | 'not-landed' | 'lost';

/** A lane's records as a division is built from them, when its turn in the lane's write order comes. */
export interface HeldParts {
  readonly record: SplitRecord;
  readonly progressRecord: ProgressRecord | undefined;
  readonly committed: Json;
}

/** What a division write needs of its lane (lane.ts hands it over; the lane keeps the write order). */
export interface DivisionLane {
  readonly id: string;
  readonly store: Store;
  readonly prefix: string;
  readonly clock: Clock;
  readonly random: () => number;
  readonly guards: LaneGuards;
  /** How a division whose reply was lost is read back while the store fails. */
  readonly readBackRetry: BackoffPolicy;
  /** The lane has ended, or its handler was aborted: nothing more is written. */
  ended(): boolean;
  /** The lane has ended (a read-back goes on until it has, or knows). */
  closed(): boolean;
  /** Settles a previous write of unknown outcome first (it may have ended the lane). */
  settleUnknown(what: string): Promise<void>;
  /** What `laneWrite` needs of the lane for a fenced write of its progress. */
  writerState(): Parameters<typeof laneWrite>[1];
  /** Takes a write that landed as the lane's new guards. */
  apply(write: LaneWrite, res: WriteOutcome): void;
  /** Ends the lane as lost. */
  lose(reason: string): void;
}

/** Sends a division or a decline of `lane`'s split, fenced like a commit (see the header for its answers). */
export async function writeDivision(
  lane: DivisionLane, kind: 'divide' | 'decline', build: (held: HeldParts) => NonNullable<LaneWriteArgs['division']>,
): Promise<DivisionWritten> {
  if (lane.ended()) return 'lost';
  await lane.settleUnknown(kind);
  const { guards } = lane;
  const write = laneWrite(kind, lane.writerState(), {
    division: build({ record: guards.record, progressRecord: guards.progressRecord, committed: guards.committed }),
  });
  const fence = guards.fence;
  const txn = laneTxn(fence, write);
  let res;
  try {
    // The failure branch reads the fence back: a loss on the residual's keys alone leaves the lane whole.
    res = await lane.store.txn({ ...txn, failure: readBackTxn(lane.prefix, lane.id).success });
  } catch (e) {
    if (!isRetryable(e)) return 'not-landed'; // refused before it applied: nothing written
    guards.unknown = write;
    return divisionReadBack(lane, write);
  }
  if (res.won) {
    lane.apply(write, res);
    return 'landed';
  }
  const [split, progress, lease] = res.reads;
  const whole = split?.modRevision === fence.splitRevision && (progress?.modRevision ?? 0) === fence.progressRevision && lease?.lease === fence.sessionLease;
  if (whole) return 'not-landed';
  lane.lose(`${kind === 'divide' ? 'division' : 'decline'} lost the fenced swap`);
  return 'lost';
}

/** A division whose reply was lost: read back until it is known to have landed or not, or the lane ends. */
async function divisionReadBack(lane: DivisionLane, write: LaneWrite): Promise<DivisionWritten> {
  for (let attempt = 0; !lane.closed(); attempt++) {
    try {
      const settled = await lane.guards.readBack();
      if (!settled.won) {
        lane.lose('division lost the fenced swap');
        return 'lost';
      }
      lane.apply(write, settled);
      return 'landed';
    } catch {
      if (lane.guards.unknown === undefined) return 'not-landed'; // read back: it did not land
      const delay = backoffDelay(attempt, lane.readBackRetry, lane.random);
      await new Promise<void>((resolve) => lane.clock.setTimer(delay, resolve));
    }
  }
  return 'lost';
}
