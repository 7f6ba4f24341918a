/**
 * Issue 29 item 4 on a real etcd (decision 0033): with heartbeatTimeoutMs
 * set, a handler that hangs (no commit, no heartbeat, never returns, ignores
 * its signal) loses its split: its signal aborts with HEARTBEAT_TIMEOUT, its
 * lane reports a timeout failure (one attempt) and frees itself, and a
 * later lane completes the split. The stale handler's commit afterwards is
 * refused and writes nothing. Two in-process members, one EtcdStore each.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startCoordinator, type Coordinator } from '../../src/coordinator/coordinator.js';
import type { CoordinatorEventMap } from '../../src/coordinator/events.js';
import { silentLogger } from '../../src/coordinator/log.js';
import type { SplitHandle } from '../../src/coordinator/types.js';
import { isSplitfleetError } from '../../src/errors.js';
import { jobPrefix, progressKey, splitKey } from '../../src/protocol/keys.js';
import { EtcdStore } from '../../src/store/etcd/etcd.js';
import { waitUntil } from '../support/wait.js';
import { startEtcd, type EtcdHandle } from '../support/etcd.js';

let etcd: EtcdHandle;
beforeAll(async () => {
  etcd = await startEtcd();
});
afterAll(async () => {
  await etcd?.stop();
});

describe('heartbeat timeout (real etcd)', () => {
  it('a hung handler loses its split to its timeout, and a later lane completes it', async () => {
    const job = `heartbeat-${Date.now().toString(36)}`;
    const prefix = jobPrefix('splitfleet', job);
    const handles: SplitHandle[] = [];
    const failed: CoordinatorEventMap['split-failed'][] = [];
    const handler = async (h: SplitHandle): Promise<void> => {
      handles.push(h);
      if (h.epoch === 1) {
        await h.commit({ started: true });
        return new Promise<void>(() => undefined); // hangs: no further commit, no heartbeat, never returns, ignores its signal
      }
      h.heartbeat({ resumedFrom: h.progress });
      await h.complete({ done: true });
    };
    const admin = new EtcdStore({ endpoints: etcd.endpoint });
    const stores = [0, 1].map(() => new EtcdStore({ endpoints: etcd.endpoint, opTimeoutMs: 500 }));
    const coordinators: Coordinator[] = [];
    try {
      for (const [i, store] of stores.entries()) {
        coordinators.push(await startCoordinator({
          // The keys layout: the test reads the split and progress records after the verdict (a packed job folds them back).
          store, job, instance: `w${i}`, logger: silentLogger, maxInFlight: 2, layout: 'keys',
          leaseDurationMs: 2000, opTimeoutMs: 500, drainDeadlineMs: 1000, rebalanceDelayMs: 0, reconcileIntervalMs: 1000,
          heartbeatTimeoutMs: 1000,
          planner: () => ({ splits: [{ id: 's-0', weight: 1 }], final: true }),
          handler,
          on: { 'split-failed': (e) => { failed.push(e); } },
        }));
      }
      await waitUntil('the first tenancy to be timed out', () => handles[0]?.signal.aborted === true, { timeoutMs: 20_000 });
      const stale = handles[0]!;
      expect(isSplitfleetError(stale.signal.reason, 'HEARTBEAT_TIMEOUT')).toBe(true);

      const verdicts = await Promise.all(coordinators.map((c) => c.done));
      expect(verdicts).toEqual(['complete', 'complete']);
      expect(failed).toHaveLength(1);
      expect(failed[0]).toMatchObject({ id: 's-0', epoch: 1, attempts: 1, kind: 'timeout', permanent: false });
      expect(failed[0]!.reason).toMatch(/^timeout: the handler neither committed nor heartbeated/);
      expect(handles.map((h) => [h.epoch, h.attempts])).toEqual([[1, 0], [2, 1]]);
      expect(handles[1]!.progress).toEqual({ started: true }); // resumed from the stale tenancy's last commit

      const split = JSON.parse((await admin.get(splitKey(prefix, 's-0')))!.value) as Record<string, unknown>;
      expect(split).toMatchObject({ status: 'completed', epoch: 2, attempts: 1 });
      // The stale handler wakes up and commits: refused, and nothing is written.
      const before = await admin.get(progressKey(prefix, 's-0'));
      await expect(stale.commit({ stale: true })).rejects.toSatisfy((e: unknown) => isSplitfleetError(e, 'LEASE_LOST'));
      expect((await admin.get(progressKey(prefix, 's-0')))!.modRevision).toBe(before!.modRevision);
    } finally {
      for (const c of coordinators) await c.close().catch(() => undefined);
      for (const s of [...stores, admin]) await s.close().catch(() => undefined);
    }
  }, 60_000);
});
