/**
 * The rules of one held split (a lane): what each of its writes changes, how
 * a write whose reply was lost is judged once read back, and what a
 * handler's failure means for the split.
 *
 * Invariants:
 * - A commit rewrites `progress.{id}` only; complete, fail and release also
 *   rewrite `split.{id}` and end the tenancy (the lease key goes).
 * - A write read back is `landed` only when our exact bytes are there at a
 *   newer revision, `not-landed` only when every guard is still as the lane
 *   knew it; anything else is `moved` (the split is no longer ours).
 * - A handler that dies of a retryable store failure the library raised
 *   releases its split (no attempt spent: a store outage says nothing about
 *   the split); any other failure is the source's report that the split
 *   cannot be processed, which costs an attempt. A failure while draining
 *   forces the release, except a PermanentFailure: the source's last word.
 * - A failure report waits out its backoff (`notBefore`, retry-policy.ts)
 *   unless it quarantines: permanent, or the attempt reaching maxAttempts.
 *
 * Pure: no I/O, no clock (the time and the jitter draw are LaneState's). The
 * transactions themselves are txns.ts's.
 */
import { isPermanentFailure, isSplitfleetError } from '../errors.js';
import { completedRecord, failedRecord, progressRecord, releasedRecord } from './claims.js';
import { encodeRecord, type Json, type ProgressRecord, type SplitRecord } from './records.js';
import { failureReport, type FailureKind, type FailureOptions, type RetryBackoff } from './retry-policy.js';
import type { LaneChange } from './txns.js';

/** How a lane can end. */
export type LaneEnd = 'released' | 'completed' | 'failed' | 'lost' | 'forced';

/** A lane write: the handle's four, and the forced release of a revocation. */
export type LaneWriteKind = 'commit' | 'complete' | 'fail' | 'release' | 'force' | 'divide' | 'decline';

/** One lane write as decided: the records it writes (kept to adopt them once it lands) and its encoded change. */
export interface LaneWrite extends LaneChange {
  readonly what: LaneWriteKind;
  readonly record: SplitRecord | undefined;
  readonly committed: ProgressRecord | undefined;
  /** How the lane ends when a terminal write lands. */
  readonly endAs: LaneEnd | undefined;
}

/** What the lane holds when it writes. */
export interface LaneState {
  readonly me: string;
  readonly record: SplitRecord;
  /** The `progress.{id}` record as last written or read (its newer-minor fields ride along). */
  readonly progressRecord: ProgressRecord | undefined;
  readonly maxAttempts: number;
  /** The failure backoff (config.retryBackoff). */
  readonly retryBackoff: Readonly<Required<RetryBackoff>>;
  /** The lane's clock at the write (epoch ms): a failure's `notBefore` counts from it. */
  readonly now: number;
  /** A draw in [0, 1) for the failure's jitter. */
  readonly draw: number;
}

/** A lane write's arguments: the progress it commits, and a failure report's reason and options. */
export interface LaneWriteArgs {
  progress?: Json;
  reason?: string;
  /** A failure report's options (`fail(reason, options)`): permanent, retryInMs. */
  failure?: FailureOptions;
  /** A division's or a decline's progress record and, for a division, its residual (protocol/division.ts). */
  division?: { committed: ProgressRecord; also?: LaneChange['also'] };
  /** The handler's report of the share of its part done (`commit(progress, { done })`). */
  done?: number;
}

/**
 * What a lane write changes: `progress` (when given) rewrites
 * `progress.{id}`; complete, fail, release and force rewrite `split.{id}`
 * through the record transitions of claims.ts (which throw INVALID_RECORD
 * for a lane that does not own its record: a bug, not a race).
 */
export function laneWrite(kind: LaneWriteKind, lane: LaneState, args: LaneWriteArgs = {}): LaneWrite {
  const { me, record: rec } = lane;
  let record: SplitRecord | undefined;
  let endAs: LaneEnd | undefined;
  switch (kind) {
    case 'commit': break;
    case 'divide':
    case 'decline': {
      // Not the handler's progress: what protocol/division.ts built, fenced like a commit.
      const committed = args.division!.committed;
      return { what: kind, record: undefined, committed, endAs: undefined, terminal: false, splitValue: undefined, progressValue: encodeRecord('progress', committed), also: args.division!.also };
    }
    case 'complete': record = completedRecord(rec, me); endAs = 'completed'; break;
    case 'fail': {
      const report = failureReport(String(args.reason), args.failure ?? {}, rec.attempts + 1, lane.now, lane.retryBackoff, lane.draw);
      record = failedRecord(rec, me, report, lane.maxAttempts);
      endAs = 'failed';
      break;
    }
    case 'release': record = releasedRecord(rec, me); endAs = 'released'; break;
    case 'force': record = releasedRecord(rec, me); endAs = 'forced'; break;
    default: {
      const never: never = kind;
      throw new Error(`unhandled lane write ${String(never)}`);
    }
  }
  // A fail and a forced release carry no progress: the last commit stands.
  const progress = kind === 'fail' || kind === 'force' ? undefined : args.progress;
  let committed = progress === undefined ? undefined : progressRecord(rec, me, progress, lane.progressRecord);
  if (committed && args.done !== undefined) committed = { ...committed, done: args.done };
  return {
    what: kind, record, committed, endAs, terminal: kind !== 'commit',
    splitValue: record ? encodeRecord('split', record) : undefined,
    progressValue: committed ? encodeRecord('progress', committed) : undefined,
  };
}

/** A key as read back. */
export interface ReadKey {
  readonly value: string;
  readonly modRevision: number;
  readonly lease?: string | undefined;
}

/** A lane write whose reply was lost, read back. */
export type ReadBackVerdict =
  /** It landed: adopt its revision, as if the reply had come. */
  | { kind: 'landed'; revision: number }
  /** Every guard is as the lane knew it: it did not land, and may be sent again. */
  | { kind: 'not-landed' }
  /** Someone else's write is there: the lane lost the split. */
  | { kind: 'moved' };

/**
 * Judges a lane write read back (`readBackTxn`): its split, progress and
 * lease keys, against what the write would have put and the revisions the
 * lane knew before it.
 */
export function readBackVerdict(
  write: LaneChange,
  known: { splitRevision: number; progressRevision: number; sessionLease: string },
  read: { split: ReadKey | undefined; progress: ReadKey | undefined; lease: ReadKey | undefined },
): ReadBackVerdict {
  const { split, progress, lease } = read;
  const splitLanded = write.splitValue !== undefined && split?.value === write.splitValue && split.modRevision > known.splitRevision;
  const progressLanded = write.progressValue !== undefined && progress?.value === write.progressValue && progress.modRevision > known.progressRevision;
  // What one transaction wrote shares one revision: either key tells.
  if (splitLanded) return { kind: 'landed', revision: split!.modRevision };
  if (write.splitValue === undefined && progressLanded) return { kind: 'landed', revision: progress!.modRevision };
  const untouched = (split?.modRevision ?? 0) === known.splitRevision && (progress?.modRevision ?? 0) === known.progressRevision && lease?.lease === known.sessionLease;
  return untouched ? { kind: 'not-landed' } : { kind: 'moved' };
}

/** What to do with a split whose handler threw. */
export type HandlerFailure =
  /** It threw while draining: force the release now (the uncommitted tail replays). */
  | { kind: 'force' }
  /** A store failure the library raised: release the split, no attempt consumed. */
  | { kind: 'release' }
  /** The source cannot process the split: a failure report, one attempt consumed (quarantined at once when `failure` is 'permanent'). */
  | { kind: 'fail'; failure: FailureKind };

/**
 * The handler-failure policy. substrate.md's failure report is "the source
 * says the split cannot be processed"; counting store outages as that would
 * quarantine healthy splits after a few etcd elections, so only a retryable
 * SplitfleetError (one the library raised: a commit that could not reach
 * etcd) releases instead. A plain error from the user's code is the split's.
 * A PermanentFailure quarantines the split, while draining too: the handler
 * said the split can never be processed, which no other owner would change.
 */
export function handlerFailure(error: unknown, draining: boolean): HandlerFailure {
  if (isPermanentFailure(error)) return { kind: 'fail', failure: 'permanent' };
  if (draining) return { kind: 'force' };
  if (isSplitfleetError(error) && error.retryable) return { kind: 'release' };
  return { kind: 'fail', failure: 'error' };
}
