/**
 * Running a held split's handler, and what its end means: `runLane` calls the
 * user's handler on the lane's handle and maps how it returned onto the lane
 * (finished, failed, released on a store failure, or a failed drain that
 * revocation servicing forces); `recordLaneEnd` counts how a lane ended.
 * What a failure means is `handlerFailure` (protocol/lanes.ts); this file
 * only executes it.
 */
import type { Clock } from '../../clock.js';
import { handlerFailure } from '../../protocol/lanes.js';
import { background, type OnUnexpected } from '../background.js';
import type { EndedLane, Lane } from '../lanes/lane.js';
import type { Logger } from '../log.js';
import type { Metrics } from '../metrics.js';
import type { SplitHandler } from '../types.js';

/** What runLane reports to: the worker's log, its background reporter, and revocation servicing (a drain whose handler failed is forced). */
export interface RunLaneContext {
  handler: SplitHandler;
  log: Logger;
  unexpected: OnUnexpected;
  serviceRevocations: () => void;
}

/** Runs the handler of `lane` in the background until it returns or throws, then ends the lane accordingly. */
export function runLane(lane: Lane, ctx: RunLaneContext): void {
  background('lane', async () => {
    try {
      await ctx.handler(lane.handle);
      await lane.finishNormally();
    } catch (e) {
      if (lane.ended) return;
      const d = handlerFailure(e, lane.state.kind === 'draining');
      switch (d.kind) {
        case 'force':
          lane.drainFailed();
          ctx.serviceRevocations();
          return;
        case 'release':
          // A store failure the library raised: no attempt consumed; the uncommitted tail replays.
          ctx.log.warn({ split: lane.id, err: e }, 'split handler stopped on a store failure; releasing the split');
          await lane.finishNormally('store-failure');
          return;
        case 'fail':
          break;
        default: {
          const never: never = d;
          throw new Error(`unhandled handler failure ${JSON.stringify(never)}`);
        }
      }
      ctx.log.warn({ split: lane.id, err: e, kind: d.failure }, d.failure === 'permanent' ? 'split handler failed permanently' : 'split handler failed');
      await lane.finishWithError(e, d.failure);
    }
  }, ctx.unexpected);
}

/** The metrics of a lane's end: completions, handler failures (and a quarantine they caused), and a drain's duration and outcome. */
export function recordLaneEnd(metrics: Metrics, clock: Clock, lane: Lane, ended: EndedLane): void {
  const { as: end, drain } = ended;
  if (end === 'completed') metrics.completions.inc();
  else if (end === 'failed') {
    metrics.handlerFailures.inc({ kind: lane.failureKind });
    // A failure report that quarantines (permanent, or at the cap) is a quarantine like a claim's.
    if (lane.record.status === 'quarantined') metrics.quarantined.inc();
  }
  if (drain !== undefined) {
    metrics.drainDuration.observe((clock.now() - drain.startedAt) / 1000);
    const outcome = end === 'forced' ? (drain.handler === 'declined' ? 'declined' : 'forced') : 'cooperative';
    if (end !== 'lost') metrics.revocations.inc({ outcome });
  }
}
