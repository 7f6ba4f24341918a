/**
 * The synthetic job (exported by `splitfleet/testing`): an object-store-like planner (objects of skewed
 * sizes packed into splits by a target size) and a paced handler that
 * processes a split's units, commits progress every `commitEvery` units, and
 * reports every processed unit to a sink (the ledger). Deterministic for a
 * seed; used by `splitfleet demo`, by the fleet process, by tests, and by a
 * user who wants a fleet test of their own deployment without their handler.
 * `syntheticMember` (the fleet process's pairing) is internal.
 *
 * Options added later are optional and change nothing when absent: `clock`
 * (pace on an injected clock, so pausing it pauses the handler) and `poison`
 * (splits that fail every attempt, to show quarantine).
 */
import type { Clock } from '../clock.js';
import type { Planner, SplitHandle, SplitHandler } from '../coordinator/types.js';
import { prng } from '../prng.js';

/** The shape of a synthetic job: how many splits, and the seeded spread of their sizes. */
export interface SyntheticJob {
  /** Number of splits. */
  splits: number;
  /** PRNG seed for sizes. */
  seed: number;
  /** Units (e.g. MiB) of the smallest split; larger ones have more. */
  minUnits?: number;
  /** Units of the largest split. */
  maxUnits?: number;
}

/** One planned synthetic split. */
export interface SyntheticSplit {
  /** `obj-0`, `obj-1`, … (zero-padded to one width). */
  id: string;
  /** Its weight for the assignment: units × 1 MiB. */
  weight: number;
  /** How many units the paced handler processes. */
  units: number;
}

/** The splits of a synthetic job: skewed (Pareto-like) unit counts, weight = units × 1 MiB. */
export function syntheticSplits(job: SyntheticJob): SyntheticSplit[] {
  const rnd = prng(job.seed);
  const min = job.minUnits ?? 4;
  const max = job.maxUnits ?? 60;
  const width = String(job.splits - 1).length;
  return Array.from({ length: job.splits }, (_, i) => {
    const u = rnd();
    const units = Math.min(max, Math.max(min, Math.round(min / Math.pow(1 - u * 0.97, 0.8))));
    return { id: `obj-${String(i).padStart(width, '0')}`, weight: units * 1048576, units };
  });
}

/** A planner enumerating `syntheticSplits(job)` in one final plan, each descriptor `{ units }`. */
export function syntheticPlanner(job: SyntheticJob): Planner {
  const splits = syntheticSplits(job);
  return () => ({
    final: true,
    splits: splits.map((s) => ({ id: s.id, weight: s.weight, descriptor: { units: s.units } })),
  });
}

/** How the paced handler answers a drain: commit and return, decline, commit late, or work on until forced. */
export type DrainBehaviour = 'cooperate' | 'decline' | 'slow' | 'ignore';

/** The paced handler's pace, commit interval, drain behaviour and sinks. */
export interface PacedHandlerOptions {
  /** Milliseconds per unit. */
  unitMs: number;
  /** Commit every this many units. */
  commitEvery: number;
  /** How the handler answers a drain request. */
  drain?: DrainBehaviour;
  /** With drain 'slow': extra milliseconds before the final commit. */
  slowDrainMs?: number;
  /** Called once per processed unit (the ledger). */
  onUnit: (id: string, unit: number, epoch: number) => void;
  /** Called on lane events, for live views and tests. */
  onEvent?: (event: { ev: string; id: string; [k: string]: unknown }) => void;
  /** Paces the units on this clock (default: Node's timers). A pausable clock pauses the handler with it. */
  clock?: Clock;
  /** Split ids that fail every attempt (`fail()`), so they end quarantined and the job stalls. */
  poison?: readonly string[];
}

const sleep = (ms: number, signal: AbortSignal, clock?: Clock) =>
  new Promise<void>((resolve) => {
    if (signal.aborted) return resolve();
    const onAbort = () => {
      cancel();
      resolve();
    };
    // The listener goes when the sleep ends either way: one per unit would pile up on a long split's signal.
    const done = () => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    };
    let cancel: () => void;
    if (clock) {
      cancel = clock.setTimer(ms, done);
    } else {
      const t = setTimeout(done, ms);
      cancel = () => clearTimeout(t);
    }
    signal.addEventListener('abort', onAbort, { once: true });
  });

/** A handler that processes `descriptor.units` units at a pace, resuming from committed progress. */
export function pacedHandler(options: PacedHandlerOptions): SplitHandler {
  const poison = new Set(options.poison ?? []);
  return async (split: SplitHandle) => {
    const units = (split.descriptor as { units: number }).units;
    let done = typeof split.progress === 'number' ? split.progress : 0;
    let committed = done;
    options.onEvent?.({ ev: 'claimed', id: split.id, epoch: split.epoch, progress: done });
    if (poison.has(split.id)) {
      options.onEvent?.({ ev: 'failed', id: split.id, attempts: split.attempts + 1 });
      await split.fail('poisoned: this split fails every attempt (demo --poison)');
      return;
    }
    while (done < units) {
      if (split.signal.aborted) return;
      if (split.drainSignal.aborted) {
        const behaviour = options.drain ?? 'cooperate';
        if (behaviour === 'decline') {
          options.onEvent?.({ ev: 'declined', id: split.id, epoch: split.epoch, progress: committed });
          split.decline();
          return;
        }
        if (behaviour === 'ignore') {
          // Keep working as if nothing was asked: the deadline forces the release.
        } else {
          if (behaviour === 'slow') await sleep(options.slowDrainMs ?? 0, split.signal, options.clock);
          if (split.signal.aborted) return;
          if (done > committed) await split.commit(done);
          options.onEvent?.({ ev: 'drained', id: split.id, epoch: split.epoch, progress: done });
          return; // returning releases the split with the final commit
        }
      }
      await sleep(options.unitMs, split.signal, options.clock);
      if (split.signal.aborted) return;
      done++;
      options.onUnit(split.id, done, split.epoch);
      if (done - committed >= options.commitEvery && done < units) {
        await split.commit(done);
        committed = done;
      }
    }
    await split.complete(done);
    options.onEvent?.({ ev: 'completed', id: split.id, units: done });
  };
}

/** How a fleet member runs the synthetic job: the plan's shape and the handler's pace (fleet-config.ts extends it). */
export interface SyntheticMember {
  /** Number of synthetic splits the planner enumerates (a final plan). */
  splits: number;
  /** Seed of the synthetic split sizes. */
  seed: number;
  /** Units of the smallest / largest split (both equal gives uniform splits). */
  minUnits?: number;
  maxUnits?: number;
  /** Milliseconds per unit of work. */
  unitMs: number;
  /** Commit progress every this many units. */
  commitEvery: number;
  drain?: DrainBehaviour;
  slowDrainMs?: number;
  /** Split ids that fail every attempt (they end quarantined). */
  poison?: string[];
}

/** The planner and handler of a member running the synthetic job, reporting to `report` (the ledger, a view). */
export function syntheticMember(
  m: SyntheticMember,
  report: Pick<PacedHandlerOptions, 'onUnit' | 'onEvent' | 'clock'>,
): { planner: Planner; handler: SplitHandler } {
  return {
    planner: syntheticPlanner({ splits: m.splits, seed: m.seed, minUnits: m.minUnits, maxUnits: m.maxUnits }),
    handler: pacedHandler({
      unitMs: m.unitMs,
      commitEvery: m.commitEvery,
      drain: m.drain,
      slowDrainMs: m.slowDrainMs,
      ...(m.poison !== undefined ? { poison: m.poison } : {}),
      ...report,
    }),
  };
}
