/**
 * The garbage collections of this process, phase by phase (bench/fleet-host.ts):
 * the longest pause with its kind and their sum, so a high event-loop max can
 * be told apart as a collection or a long task.
 */
import { PerformanceObserver } from 'node:perf_hooks';

export interface GcFigures {
  maxMs: number;
  /** V8's kind of the longest: minor, major, incremental or weakcb. */
  maxKind: string;
  totalMs: number;
  count: number;
}

const KINDS: Record<number, string> = { 1: 'minor', 2: 'major', 4: 'incremental', 8: 'weakcb' };
const none = (): GcFigures => ({ maxMs: 0, maxKind: '', totalMs: 0, count: 0 });

/** Starts observing; `take()` returns the figures since the last take and starts a new phase. */
export function gcPauses(): { take: () => GcFigures } {
  let gc = none();
  new PerformanceObserver((list) => {
    for (const e of list.getEntries()) {
      gc.count++;
      gc.totalMs += e.duration;
      const kind = (e as unknown as { detail?: { kind?: number } }).detail?.kind ?? 0;
      if (e.duration > gc.maxMs) gc = { ...gc, maxMs: e.duration, maxKind: KINDS[kind] ?? 'other' };
    }
  }).observe({ entryTypes: ['gc'] });
  return {
    take: () => {
      const taken = gc;
      gc = none();
      return taken;
    },
  };
}
