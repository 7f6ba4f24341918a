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
    const units = (split.descriptor as { units: number }).units;
    let done = typeof split.progress === 'number' ? split.progress : 0;
    let committed = done;
    const exit = (how: string) => auditor.exit({ split: split.id, epoch: split.epoch, proc: proc.id, how, progress: done, at: proc.clock.now() });
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
        await sleep(proc.clock, o.unitMs, split.signal);
        if (split.signal.aborted) return exit('aborted');
        done++;
        auditor.unit({ split: split.id, unit: done, proc: proc.id, epoch: split.epoch, at: proc.clock.now() });
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
