/**
 * One bad record costs what it concerns, not the fleet (issue 11), on a real
 * etcd, with the bad records written the way an operator or a script would:
 * `etcdctl put`.
 * - A split's record: that split is parked (neither assigned nor claimed),
 *   logged once with the key and the problem, counted; every other split
 *   completes, nobody crashes, and the verdict is `stalled`.
 * - Repaired (a readable record put back) or deleted (the leader seeds it
 *   again): the split comes back without a restart and the job completes.
 * - A held split whose record turns unreadable: its lane stops without
 *   writing; once repaired it is taken up again.
 * - An instance's assignment record: that instance holds what it has; the
 *   leader writes a readable record over it and the job completes.
 * - An instance's presence key: it rewrites its own, and stays a member.
 * - The job's `plan` of another fingerprint still stops every process with
 *   FINGERPRINT_MISMATCH (job-level records are not the job's to park).
 */
import { execFileSync } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startCoordinator, type Coordinator } from '../../src/coordinator/coordinator.js';
import type { Logger } from '../../src/coordinator/log.js';
import type { SplitHandle } from '../../src/coordinator/types.js';
import { defaultFingerprint } from '../../src/config.js';
import { isSplitfleetError } from '../../src/errors.js';
import { assignKey, jobPrefix, planKey, splitKey, workerKey } from '../../src/protocol/keys.js';
import { decodeRecord, fingerprintHash } from '../../src/protocol/records.js';
import { EtcdStore } from '../../src/store/etcd/etcd.js';
import { sleep, waitUntil } from '../support/wait.js';
import { startEtcd, type EtcdHandle } from '../support/etcd.js';

let etcd: EtcdHandle;
beforeAll(async () => {
  etcd = await startEtcd();
});
afterAll(async () => {
  await etcd?.stop();
});

const etcdctl = (...args: string[]): string =>
  execFileSync('etcdctl', ['--endpoints', etcd.endpoint, ...args], { env: { ...process.env, ETCDCTL_API: '3' }, encoding: 'utf8' });

/** A logger that keeps the error lines about unreadable records. */
function capturing(lines: { key: string; msg: string }[]): Logger {
  const noop = () => undefined;
  const log: Logger = {
    error: (obj: unknown, msg?: string) => {
      const o = obj as { key?: string };
      if (typeof o?.key === 'string' && msg?.includes('cannot be read')) lines.push({ key: o.key, msg });
    },
    warn: noop, info: noop, debug: noop,
  } as unknown as Logger;
  return log;
}

interface Fleet {
  job: string;
  prefix: string;
  fp: string;
  coordinators: Coordinator[];
  logged: { key: string; msg: string }[];
  started: Map<string, number>;
  writesAfterAbort: string[];
  close(): Promise<void>;
}

/** `n` members on their own connections; `units` per split at ~10 ms each, a commit every 2 units. */
async function fleet(label: string, n: number, splits: number, units: number): Promise<Fleet> {
  const job = `blast-${label}-${Date.now().toString(36)}`;
  const prefix = jobPrefix('splitfleet', job);
  const logged: { key: string; msg: string }[] = [];
  const started = new Map<string, number>();
  const writesAfterAbort: string[] = [];
  const handler = async (h: SplitHandle) => {
    started.set(h.id, (started.get(h.id) ?? 0) + 1);
    let done = typeof h.progress === 'number' ? h.progress : 0;
    while (done < units) {
      if (h.drainSignal.aborted) return;
      if (h.signal.aborted) {
        // Whatever this lane tries now must not land.
        await h.commit(done).then(() => writesAfterAbort.push(h.id), () => undefined);
        return;
      }
      await sleep(10);
      done++;
      if (done % 2 === 0) await h.commit(done);
    }
    await h.complete(done);
  };
  const stores = Array.from({ length: n }, () => new EtcdStore({ endpoints: etcd.endpoint, opTimeoutMs: 1000 }));
  const coordinators: Coordinator[] = [];
  for (const [i, store] of stores.entries()) {
    coordinators.push(await startCoordinator({
      // The keys layout: these cases write split and spec records by hand (a packed job's pages: hostile-records and the simulation).
      store, job, instance: `w${i}`, logger: capturing(logged), maxInFlight: 3, layout: 'keys', leaseDurationMs: 4000, opTimeoutMs: 1000,
      drainDeadlineMs: 1000, rebalanceDelayMs: 0, reconcileIntervalMs: 1000,
      planner: () => ({ splits: Array.from({ length: splits }, (_, k) => ({ id: `s-${String(k).padStart(3, '0')}`, weight: 1 + (k % 5) })), final: true }),
      handler,
    }));
  }
  return {
    job, prefix, fp: fingerprintHash(defaultFingerprint('splitfleet', job)), coordinators, logged, started, writesAfterAbort,
    close: async () => {
      for (const c of coordinators) await c.close().catch(() => undefined);
      for (const s of stores) await s.close().catch(() => undefined);
    },
  };
}

const GARBAGE = '{"v":1,"garbage":true}';

describe('one bad record costs one split, not the fleet (real etcd)', () => {
  it('etcdctl put of a malformed split record mid-job: the split is parked, logged once, the rest completes, verdict stalled', async () => {
    const f = await fleet('split', 3, 30, 20);
    try {
      await waitUntil('the fleet to be working', () => f.coordinators.some((c) => c.held.length > 0), { timeoutMs: 20_000 });
      const bad = 's-025';
      etcdctl('put', splitKey(f.prefix, bad), GARBAGE);
      const verdicts = await Promise.all(f.coordinators.map((c) => c.done));
      expect(verdicts).toEqual(['stalled', 'stalled', 'stalled']);
      const admin = new EtcdStore({ endpoints: etcd.endpoint });
      for (let k = 0; k < 30; k++) {
        const id = `s-${String(k).padStart(3, '0')}`;
        if (id === bad) continue;
        const rec = decodeRecord('split', splitKey(f.prefix, id), (await admin.get(splitKey(f.prefix, id)))!.value, f.fp);
        expect(rec.status, id).toBe('completed');
      }
      expect((await admin.get(splitKey(f.prefix, bad)))!.value).toBe(GARBAGE); // nobody wrote over it
      await admin.close();
      const lines = f.logged.filter((l) => l.key === splitKey(f.prefix, bad));
      expect(lines.length).toBeGreaterThan(0);
      // Once per process that saw it (the leader, and a worker it concerned), never a flood.
      expect(lines.length).toBeLessThanOrEqual(f.coordinators.length);
      const counted = await Promise.all(f.coordinators.map(async (c) => (await c.metrics.unreadable.get()).values.reduce((s, v) => s + v.value, 0)));
      expect(counted.reduce((a, b) => a + b, 0)).toBeGreaterThan(0);
    } finally {
      await f.close();
    }
  }, 60_000);

  it('repaired (a readable record put back) or deleted (seeded again): the split comes back without a restart and the job completes', async () => {
    const f = await fleet('repair', 2, 16, 30);
    const admin = new EtcdStore({ endpoints: etcd.endpoint });
    try {
      await waitUntil('the fleet to be working', () => f.coordinators.some((c) => c.held.length > 0), { timeoutMs: 20_000 });
      const [repaired, deleted] = ['s-014', 's-015'];
      const original = (await admin.get(splitKey(f.prefix, repaired)))!.value;
      etcdctl('put', splitKey(f.prefix, repaired), GARBAGE);
      etcdctl('put', splitKey(f.prefix, deleted), 'not even JSON');
      await waitUntil('both to be logged', () => [repaired, deleted].every((id) => f.logged.some((l) => l.key === splitKey(f.prefix, id))), { timeoutMs: 10_000 });
      await sleep(500);
      etcdctl('put', splitKey(f.prefix, repaired), original);
      etcdctl('del', splitKey(f.prefix, deleted));
      const verdicts = await Promise.all(f.coordinators.map((c) => c.done));
      expect(verdicts).toEqual(['complete', 'complete']);
      for (const id of [repaired, deleted]) {
        const rec = decodeRecord('split', splitKey(f.prefix, id), (await admin.get(splitKey(f.prefix, id)))!.value, f.fp);
        expect(rec.status, id).toBe('completed');
      }
    } finally {
      await admin.close();
      await f.close();
    }
  }, 60_000);

  it('a held split whose record turns unreadable: its lane stops without writing, and is taken up again once repaired', async () => {
    const f = await fleet('held', 1, 3, 200);
    const admin = new EtcdStore({ endpoints: etcd.endpoint });
    try {
      const c = f.coordinators[0]!;
      await waitUntil('a lane', () => c.held.length > 0, { timeoutMs: 20_000 });
      const id = c.held[0]!;
      const original = (await admin.get(splitKey(f.prefix, id)))!.value;
      etcdctl('put', splitKey(f.prefix, id), GARBAGE);
      await waitUntil('its lane to stop', () => !c.held.includes(id), { timeoutMs: 10_000 });
      await sleep(300);
      expect((await admin.get(splitKey(f.prefix, id)))!.value).toBe(GARBAGE);
      expect(f.writesAfterAbort).toEqual([]);
      etcdctl('put', splitKey(f.prefix, id), original);
      expect(await c.done).toBe('complete');
      expect(f.started.get(id)).toBeGreaterThanOrEqual(2);
    } finally {
      await admin.close();
      await f.close();
    }
  }, 60_000);

  it("an instance's assignment or presence record written by hand costs that instance, not the job; both heal", async () => {
    const f = await fleet('instance', 2, 16, 30);
    try {
      await waitUntil('the fleet to be working', () => f.coordinators.every((c) => c.held.length > 0), { timeoutMs: 20_000 });
      etcdctl('put', assignKey(f.prefix, 'w1'), GARBAGE);
      etcdctl('put', workerKey(f.prefix, 'w1'), 'garbage');
      await waitUntil('w1 to rewrite its presence key', () => f.coordinators[1]!.view.self?.rec.instance === 'w1', { timeoutMs: 10_000 });
      const verdicts = await Promise.all(f.coordinators.map((c) => c.done));
      expect(verdicts).toEqual(['complete', 'complete']);
      expect(f.logged.some((l) => l.key === assignKey(f.prefix, 'w1'))).toBe(true);
    } finally {
      await f.close();
    }
  }, 60_000);

  it("a plan of another job's fingerprint still stops every process with FINGERPRINT_MISMATCH", async () => {
    const f = await fleet('plan', 2, 4, 2000);
    try {
      await waitUntil('the fleet to be working', () => f.coordinators.some((c) => c.held.length > 0), { timeoutMs: 20_000 });
      etcdctl('put', planKey(f.prefix), JSON.stringify({ v: 1, fp: '0123456789abcdef', generation: 9, final: false, planned: 0 }));
      for (const c of f.coordinators) {
        const err = await c.done.then(() => undefined, (e: unknown) => e);
        expect(isSplitfleetError(err, 'FINGERPRINT_MISMATCH')).toBe(true);
        expect((err as Error).message).toContain(planKey(f.prefix));
      }
    } finally {
      await f.close();
    }
  }, 60_000);
});
