/**
 * Issue 49, etcd restored from an older snapshot without `--bump-revision
 * --mark-compacted` (decision 0062): its revisions go back, and a process
 * whose views and fences rest on revisions the store now hands out again
 * would go blind (followers drop what they think they have seen) or, worse,
 * match a fence by coincidence. A write answered below a revision already
 * reported stops the process with STORE_RESTORED, naming what to do.
 * Here a store whose answers drop by 10,000 revisions stands in for the
 * restore (MemoryStore cannot go back); `RevisionFloor` is unit-tested below.
 */
import { describe, expect, it } from 'vitest';
import { isSplitfleetError } from '../../src/errors.js';
import { MemoryStore } from '../../src/store/memory.js';
import { RevisionFloor } from '../../src/store/revision-floor.js';
import type { Store } from '../../src/store/store.js';
import { useMemoryFleet } from '../support/memory-fleet.js';
import { waitUntil } from '../support/wait.js';

const coordinators = useMemoryFleet();

/** `inner`, whose write answers report `back` fewer revisions once `rewound` is set. */
function rewindable(inner: MemoryStore): { store: Store; rewind: () => void } {
  let back = 0;
  const lower = (r: number) => r - back;
  const store = new Proxy(inner, {
    get(target, prop, receiver) {
      const v = Reflect.get(target, prop, receiver) as unknown;
      if (typeof v !== 'function') return v;
      const f = (v as (...a: unknown[]) => unknown).bind(target);
      switch (prop) {
        case 'txn': case 'createIfAbsent': case 'compareAndSwap': case 'deleteIf':
          return async (...a: unknown[]) => { const r = await (f(...a) as Promise<{ revision: number }>); return { ...r, revision: lower(r.revision) }; };
        case 'put': case 'delete':
          return async (...a: unknown[]) => lower(await (f(...a) as Promise<number>));
        default:
          return f;
      }
    },
  }) as unknown as Store;
  return { store, rewind: () => (back = 10_000) };
}

describe('a store whose revisions go back (restored from an older snapshot)', () => {
  it('stops the process with STORE_RESTORED, saying what happened and what to do', async () => {
    const inner = new MemoryStore();
    // Revisions well above what the rewind takes off, as a long-lived cluster's are.
    for (let i = 0; i < 10_050; i++) await inner.put('/elsewhere/k', String(i));
    const { store, rewind } = rewindable(inner);
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    const c = await coordinators.start({
      store, job: 'restored', instance: 'w-0', maxInFlight: 1, layout: 'keys', reconcileIntervalMs: 500,
      planner: () => ({ final: true, splits: [{ id: 'a', weight: 1 }, { id: 'b', weight: 1 }] }),
      handler: async (split) => { await held; await split.commit(1).catch(() => undefined); },
    });
    await waitUntil('a split to be held', () => c.held.length > 0);
    rewind();
    release();
    const error = await c.done.then(() => undefined, (e: unknown) => e);
    expect(isSplitfleetError(error, 'STORE_RESTORED')).toBe(true);
    expect((error as Error).message).toMatch(/answered at revision \d+ after reporting \d+: etcd was restored from an older snapshot without --bump-revision --mark-compacted/);
    await waitUntil('the process to have stopped', () => c.health().state === 'stopped');
    expect(c.health().reason).toMatch(/STORE_RESTORED/);
  });
});

describe('RevisionFloor', () => {
  it('holds an answer to what was known when its request was sent, not to answers that came meanwhile', () => {
    const regressions: [number, number][] = [];
    const floor = new RevisionFloor((known, answered) => regressions.push([known, answered]));
    const first = floor.known; // 0: two requests go out together
    const second = floor.known;
    floor.answered(first, 12);
    floor.answered(second, 11); // sent before 12 was known: answered out of order, fine
    expect(regressions).toEqual([]);
    expect(floor.known).toBe(12);
    floor.answered(floor.known, 12); // a request answered at the same revision (a read-only txn)
    floor.answered(floor.known, 5); // sent once 12 was known, answered at 5: the history went back
    expect(regressions).toEqual([[12, 5]]);
  });
});
