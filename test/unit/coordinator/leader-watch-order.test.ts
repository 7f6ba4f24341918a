/**
 * A newly elected leader judges its term by its leader key's own watch, not
 * by the highest revision any watch of its view has delivered (leader.ts
 * `onViewChange`). Each key of a worker's view has its own etcd watch, and
 * etcd orders events within a watch only: the plan key's watch can deliver
 * the term's generation bump before the leader key's watch delivers the
 * campaign's put. Judged by the view's revision, the leader then saw no
 * leader key at a revision past its term's, deposed itself, deleted its own
 * key and campaigned again: a leader change at the start of a job, seen in
 * the fleet bench on a real etcd (4 of 6 starts in a scratch harness).
 */
import { describe, expect, it } from 'vitest';
import { startCoordinator } from '../../../src/coordinator/coordinator.js';
import { silentLogger } from '../../../src/coordinator/log.js';
import { MemoryStore } from '../../../src/store/memory.js';
import type { WatchHandle, WatchOptions } from '../../../src/store/store.js';

/** A store whose watches of the leader key deliver each event `lagMs` late (other watches on time). */
class LeaderWatchLags extends MemoryStore {
  constructor(private readonly lagMs: number) {
    super();
  }

  override watch(prefix: string, options: WatchOptions): WatchHandle {
    if (!prefix.endsWith('/leader')) return super.watch(prefix, options);
    return super.watch(prefix, { ...options, onEvent: (e) => void setTimeout(() => options.onEvent(e), this.lagMs) });
  }
}

describe('a leader whose leader-key watch lags its plan watch', () => {
  it('keeps its first term: no deposition, no second campaign', async () => {
    const store = new LeaderWatchLags(40);
    const c = await startCoordinator({
      store, job: 'watch-order', instance: 'w0', maxInFlight: 2,
      planner: () => ({ final: true, splits: [{ id: 'a', weight: 1 }, { id: 'b', weight: 1 }] }),
      // Holds each split until the coordinator stops (a handler that returns at once would be re-run at once, forever).
      handler: (split) => new Promise<void>((resolve) => split.signal.addEventListener('abort', () => resolve(), { once: true })),
      logger: silentLogger,
    });
    const seen: boolean[] = [];
    const poll = setInterval(() => {
      if (seen[seen.length - 1] !== c.isLeader) seen.push(c.isLeader);
    }, 1);
    await new Promise((r) => setTimeout(r, 400));
    clearInterval(poll);
    // Once leading, it never stopped (the poll sees each change of more than a millisecond or so).
    expect(seen.indexOf(true)).toBeGreaterThanOrEqual(0);
    expect(seen.slice(seen.indexOf(true))).toEqual([true]);
    expect(c.leaderStats?.terms).toBe(1);
    await c.stop();
  });
});
