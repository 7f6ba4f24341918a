/**
 * The simulated source: a split handler that works in virtual time on its
 * process's clock, resumes from committed progress, commits every
 * `commitEvery` units (the commit interval), completes, answers a drain in
 * one of four ways, and writes every processed unit and every exit to the
 * auditor's ledger.
 */
import type { Clock } from '../../src/clock.js';
import type { SplitHandle, SplitHandler } from '../../src/coordinator/types.js';
import type { Auditor } from './auditor.js';

export type DrainBehaviour = 'cooperate' | 'decline' | 'slow' | 'ignore';

export interface HandlerOptions {
  /** Virtual ms per unit. */
  unitMs: number;
  /** Commit every K units (the commit interval). */
  commitEvery: number;
  drain: DrainBehaviour;
  /** With 'slow': virtual ms before the final commit. */
  slowDrainMs: number;
  /**
   * Divisible (decision 0063): answers the leader's asks by moving the share asked of the
   * units left to a residual `{ units: end, from: at }`, and never passes a proposed end
   * before the division's outcome is known.
   */
  divide?: boolean;
}

function sleep(clock: Clock, ms: number, signal: AbortSignal): Promise<void> {
  return new Promise<void>((resolve) => {
    if (signal.aborted) return resolve();
    const cancel = clock.setTimer(ms, () => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    });
    const onAbort = () => {
      cancel();
      resolve();
    };
    signal.addEventListener('abort', onAbort, { once: true });
  });
}

/**
 * The simulated source: `descriptor.units` units at `unitMs` each, on the
 * process's own clock, resuming from committed progress, committing every
 * `commitEvery` units, completing at the end. Every processed unit goes to the
 * auditor's ledger (split, unit, process, epoch); every exit is reported.
 */
export function simHandler(proc: { id: string; clock: Clock }, auditor: Auditor, o: HandlerOptions): SplitHandler {
  return async (split: SplitHandle) => {
    // A residual covers units (from, units] of its root's numbering; a divided split ends at `end`.
    const d = split.descriptor as { units: number; from?: number };
    let units = typeof split.end === 'number' ? split.end : d.units;
    let done = typeof split.progress === 'number' ? split.progress : (d.from ?? 0);
    let committed = done;
    let pending: { at: number; landed: Promise<boolean> } | undefined;
    if (o.divide) {
      split.onDivide(async (request) => {
        if (pending) return;
        const at = done + Math.ceil((units - done) * (1 - request.share));
        if (at >= units || at <= done) return; // nothing to move: declines
        const landed = request.divide({ end: at, residual: { descriptor: { units, from: at }, weight: (units - at) * 1000 } });
        pending = { at, landed };
        try {
          if (await landed) units = at;
        } catch {
          // no longer ours: the lane's signal has aborted, and the loop stops
        } finally {
          pending = undefined;
        }
      });
    }
    const exit = (how: string) => auditor.exit({ instance: proc.id, id: split.id, epoch: split.epoch, how, progress: done, t: proc.clock.now() });
    try {
      while (done < units) {
        if (split.signal.aborted) return exit('aborted');
        if (split.drainSignal.aborted && o.drain !== 'ignore') {
          if (o.drain === 'decline') {
            split.decline();
            return exit('declined');
          }
          if (o.drain === 'slow') await sleep(proc.clock, o.slowDrainMs, split.signal);
          if (split.signal.aborted) return exit('aborted');
          if (done > committed) await split.commit(done);
          return exit('drained');
        }
        // Never past a proposed end before the division's outcome is known.
        while (pending && done >= pending.at) await pending.landed.catch(() => false);
        if (split.signal.aborted) return exit('aborted');
        if (done >= units) break;
        await sleep(proc.clock, o.unitMs, split.signal);
        if (split.signal.aborted) return exit('aborted');
        done++;
        auditor.unit({ instance: proc.id, id: split.id, unit: done, epoch: split.epoch, t: proc.clock.now() });
        if (done - committed >= o.commitEvery && done < units) {
          await split.commit(done);
          committed = done;
        }
      }
      await split.complete(done);
      exit('completed');
    } catch (e) {
      exit(`threw ${(e as { code?: string }).code ?? (e as Error).message}`);
      throw e;
    }
  };
}
