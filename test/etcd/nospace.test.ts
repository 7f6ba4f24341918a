/**
 * etcd out of space, mid-job (docs/operations.md): an etcd with a small
 * `--quota-backend-bytes` is filled while a fleet of two runs a job. Every
 * write is then refused with STORE_FULL, whose message says what to do;
 * nothing is lost and no progress goes backwards meanwhile; after the
 * operator's fix with etcd's own client (delete, compact, defragment,
 * disarm the alarm) the fleet resumes by itself and the job completes with
 * every unit processed.
 */
import { execFileSync } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startCoordinator, type Coordinator } from '../../src/coordinator/coordinator.js';
import { silentLogger } from '../../src/coordinator/log.js';
import type { SplitHandle } from '../../src/coordinator/types.js';
import { defaultFingerprint } from '../../src/config.js';
import { isSplitfleetError, type SplitfleetError } from '../../src/errors.js';
import { jobPrefix } from '../../src/protocol/keys.js';
import { fingerprintHash } from '../../src/protocol/records.js';
import { EtcdStore } from '../../src/store/etcd/etcd.js';
import { watchProgress } from '../support/progress-watch.js';
import { sleep, waitUntil } from '../support/wait.js';
import { startEtcd, type EtcdHandle } from '../support/etcd.js';

const QUOTA = 16 * 1024 * 1024;
let etcd: EtcdHandle;
beforeAll(async () => {
  etcd = await startEtcd(['--quota-backend-bytes', String(QUOTA)]);
});
afterAll(async () => {
  await etcd?.stop();
});

/** etcd's own client, as an operator runs it (etcd-client; .ci/run installs it). */
const etcdctl = (...args: string[]): string =>
  execFileSync('etcdctl', ['--endpoints', etcd.endpoint, ...args], { env: { ...process.env, ETCDCTL_API: '3' }, encoding: 'utf8' });

describe('etcd out of space mid-job (real etcd)', () => {
  it('writes fail with STORE_FULL saying what to do; nothing is lost or regresses; after the fix the job completes by itself', async () => {
    const job = `nospace-${Date.now().toString(36)}`;
    const prefix = jobPrefix('splitfleet', job);
    const fp = fingerprintHash(defaultFingerprint('splitfleet', job));
    const UNITS = 60;
    const splits = Array.from({ length: 6 }, (_, i) => ({ id: `s-${i}`, weight: 1 + i }));
    const processed = new Set<string>();
    const commitErrors: SplitfleetError[] = [];
    // Halfway through, each split waits until etcd is full, so that commits are still to come once
    // it is: a fill slower than the job (a loaded CI machine) once left no commit to refuse.
    let filled = false;
    const handler = async (h: SplitHandle) => {
      let done = typeof h.progress === 'number' ? h.progress : 0;
      while (done < UNITS) {
        while (done >= UNITS / 2 && !filled && !h.drainSignal.aborted && !h.signal.aborted) await sleep(20);
        if (h.drainSignal.aborted || h.signal.aborted) return;
        await sleep(20);
        processed.add(`${h.id}:${done + 1}`);
        done++;
        if (done % 2 === 0) {
          try {
            await h.commit(done);
          } catch (e) {
            if (isSplitfleetError(e, 'STORE_FULL')) commitErrors.push(e);
            throw e; // the lane releases and retries its release until etcd takes writes again
          }
        }
      }
      await h.complete(done);
    };
    const admin = new EtcdStore({ endpoints: etcd.endpoint });
    const stores = [new EtcdStore({ endpoints: etcd.endpoint, opTimeoutMs: 1000 }), new EtcdStore({ endpoints: etcd.endpoint, opTimeoutMs: 1000 })];
    // Progress as every write left it: it must never go backwards.
    const { last, regressions, handle: history } = watchProgress(admin, prefix, fp);
    const coordinators: Coordinator[] = [];
    try {
      await history.ready;
      for (const [i, store] of stores.entries()) {
        coordinators.push(await startCoordinator({
          store, job, instance: `w${i}`, logger: silentLogger, maxInFlight: 2, leaseDurationMs: 4000, opTimeoutMs: 1000,
          drainDeadlineMs: 1000, rebalanceDelayMs: 0, reconcileIntervalMs: 1000, planner: () => ({ splits, final: true }), handler,
        }));
      }
      await waitUntil('both members to hold splits', () => coordinators.every((c) => c.held.length > 0), { timeoutMs: 20_000 });

      // Fill etcd until it raises NOSPACE.
      const junk = 'x'.repeat(64 * 1024);
      let full: SplitfleetError | undefined;
      for (let i = 0; i < 2 * QUOTA / junk.length && !full; i++) {
        await admin.put(`junk/${i}`, junk).catch((e: unknown) => {
          if (isSplitfleetError(e, 'STORE_FULL')) full = e;
          else throw e;
        });
      }
      filled = true;
      expect(full, 'etcd never refused a write').toBeDefined();
      expect(full!.retryable).toBe(true);
      expect(full!.message).toMatch(/etcd is out of space \(its NOSPACE alarm is raised\).*etcdctl compact.*etcdctl defrag.*etcdctl alarm disarm/);
      expect(etcdctl('alarm', 'list')).toMatch(/NOSPACE/);
      await waitUntil('a commit to be refused as STORE_FULL', () => commitErrors.length > 0, { timeoutMs: 10_000 });
      await sleep(1500); // the fleet runs on, refused, for a while
      expect(coordinators.every((c) => c.view.plan?.rec.verdict === undefined)).toBe(true);

      // The operator's fix.
      etcdctl('del', '--prefix', 'junk/');
      const status = JSON.parse(etcdctl('endpoint', 'status', '--write-out=json')) as { Status: { header: { revision: number } } }[];
      etcdctl('compact', String(status[0]!.Status.header.revision));
      etcdctl('defrag');
      etcdctl('alarm', 'disarm');
      expect(etcdctl('alarm', 'list').trim()).toBe('');

      const verdicts = await Promise.all(coordinators.map((c) => c.done));
      expect(verdicts).toEqual(['complete', 'complete']);
      // The verdicts can land before the watch has delivered the last commits (etcd sends a
      // watcher that fell behind its events in batches): let it reach a write made after them.
      await history.sync(`${prefix}test-sync`, 20_000);
      expect(regressions).toEqual([]);
      for (const s of splits) for (let u = 1; u <= UNITS; u++) expect(processed.has(`${s.id}:${u}`)).toBe(true);
      for (const s of splits) expect(last.get(s.id)).toBe(UNITS);
    } finally {
      for (const c of coordinators) await c.close().catch(() => undefined);
      await history.close();
      for (const s of [...stores, admin]) await s.close().catch(() => undefined);
    }
  }, 120_000);
});
