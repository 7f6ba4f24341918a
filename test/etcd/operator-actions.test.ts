/**
 * The operator actions (issue 12), run as operators run them: the compiled
 * `splitfleet` bin in a child process, against a throwaway etcd, while a
 * fleet of in-process coordinators works the job.
 * - pause: every assignment record is empty, every lane drains (with a final
 *   commit), nothing is claimed or completed while paused, progress is kept;
 *   resume: the job completes, resuming the drained splits from that progress;
 * - evacuate: the instance drains and holds nothing while the others work;
 *   `inspect` shows it; `resume --instance` undoes it; so does its restart;
 * - retry: a job stalled on a quarantined split (every process stopped on the
 *   verdict) runs again after `retry --all-quarantined` and completes; a
 *   split quarantined while the fleet runs is retried in place;
 * - delete: a finished job's keys go; a running one is refused (exit 2,
 *   naming what it would stop) unless `--force`, which stops every process
 *   with JOB_DELETED and leaves nothing (no job started over);
 * - jobs: lists each job's verdict, progress and members;
 * - bad input: one line on stderr, exit 2, nothing written.
 * Build first: `npm run build`.
 */
import { join } from 'node:path';
import { runCli, type Ran } from '../support/cli.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startCoordinator, type Coordinator } from '../../src/coordinator/coordinator.js';
import { silentLogger } from '../../src/coordinator/log.js';
import type { SplitHandle } from '../../src/coordinator/types.js';
import { defaultFingerprint } from '../../src/config.js';
import { isSplitfleetError } from '../../src/errors.js';
import type { JobReport } from '../../src/inspect/report.js';
import { assignKey, controlKey, jobPrefix, planKey, progressKey, splitKey } from '../../src/protocol/keys.js';
import { decodeRecord, fingerprintHash } from '../../src/protocol/records.js';
import { EtcdStore } from '../../src/store/etcd/etcd.js';
import { sleep, waitUntil } from '../support/wait.js';
import { startEtcd, type EtcdHandle } from '../support/etcd.js';

const fast = { leaseDurationMs: 3000, opTimeoutMs: 1000, rebalanceDelayMs: 0, drainDeadlineMs: 2000, reconcileIntervalMs: 1000 };

let etcd: EtcdHandle;
let admin: EtcdStore;
beforeAll(async () => {
  etcd = await startEtcd();
  admin = new EtcdStore({ endpoints: etcd.endpoint });
});
afterAll(async () => {
  await admin?.close();
  await etcd?.stop();
});

function cli(...args: string[]): Promise<Ran> {
  return runCli([...args, '--etcd', etcd.endpoint]);
}
async function ok(...args: string[]): Promise<string> {
  const r = await cli(...args);
  expect(r.stderr, `${args.join(' ')}: stderr`).toBe('');
  expect(r.code, `${args.join(' ')}: exit code`).toBe(0);
  return r.stdout;
}
async function refused(pattern: RegExp, ...args: string[]): Promise<void> {
  const r = await cli(...args);
  expect(r.code, `${args.join(' ')}: exit code (stderr: ${r.stderr})`).toBe(2);
  expect(r.stdout).toBe('');
  expect(r.stderr.trim().split('\n')).toHaveLength(1);
  expect(r.stderr).toMatch(pattern);
}
async function report(job: string): Promise<JobReport> {
  return JSON.parse(await ok('inspect', '--job', job, '--json')) as JobReport;
}

interface Job {
  job: string;
  prefix: string;
  fp: string;
  coordinators: Map<string, Coordinator>;
  /** Progress each claim started from, by split. */
  startedFrom: Map<string, unknown[]>;
  completions: string[];
  start(instance: string): Promise<Coordinator>;
  close(): Promise<void>;
}

interface JobOptions {
  splits: number;
  /** Units per split, 25 ms each, a commit every unit. */
  units: number;
  /** A handler that fails these splits (every attempt while `failing` says so). */
  failing?: (id: string) => boolean;
  maxAttempts?: number;
}

const stores: EtcdStore[] = [];
async function job(label: string, instances: string[], o: JobOptions): Promise<Job> {
  const name = `ops-${label}-${Date.now().toString(36)}`;
  const startedFrom = new Map<string, unknown[]>();
  const completions: string[] = [];
  const handler = async (h: SplitHandle) => {
    startedFrom.set(h.id, [...(startedFrom.get(h.id) ?? []), h.progress]);
    if (o.failing?.(h.id)) throw new Error(`poisoned split ${h.id}`);
    let done = typeof h.progress === 'number' ? h.progress : 0;
    while (done < o.units) {
      if (h.drainSignal.aborted || h.signal.aborted) return; // progress committed per unit: the drain's final commit is the last one
      await sleep(25);
      done++;
      await h.commit(done);
    }
    await h.complete(done);
    completions.push(h.id);
  };
  const j: Job = {
    job: name, prefix: jobPrefix('splitfleet', name), fp: fingerprintHash(defaultFingerprint('splitfleet', name)),
    coordinators: new Map(), startedFrom, completions,
    async start(instance: string) {
      const store = new EtcdStore({ endpoints: etcd.endpoint, opTimeoutMs: 1000 });
      stores.push(store);
      const c = await startCoordinator({
        // The keys layout: these tests read split records (a packed job's operator actions: test/integration/packed-operators.test.ts).
        store, job: name, instance, logger: silentLogger, maxInFlight: 2, maxAttempts: o.maxAttempts ?? 4, layout: 'keys', ...fast,
        planner: () => ({ splits: Array.from({ length: o.splits }, (_, k) => ({ id: `s-${String(k).padStart(2, '0')}`, weight: 1 + (k % 3) })), final: true }),
        handler,
      });
      c.done.catch(() => undefined);
      j.coordinators.set(instance, c);
      return c;
    },
    async close() {
      for (const c of j.coordinators.values()) await c.close().catch(() => undefined);
    },
  };
  for (const i of instances) await j.start(i);
  return j;
}
afterAll(async () => {
  for (const s of stores) await s.close().catch(() => undefined);
});

async function assignment(j: Job, instance: string): Promise<string[] | undefined> {
  const kv = await admin.get(assignKey(j.prefix, instance));
  return kv ? decodeRecord('assign', kv.key, kv.value, j.fp).splits : undefined;
}
async function committed(j: Job, id: string): Promise<unknown> {
  const kv = await admin.get(progressKey(j.prefix, id));
  return kv ? decodeRecord('progress', kv.key, kv.value, j.fp).progress : null;
}
const heldBy = (j: Job) => [...j.coordinators.values()].reduce((s, c) => s + c.held.length, 0);

describe('operator actions on a running fleet (real etcd, the CLI)', () => {
  it('pause drains every lane and claims nothing while progress stays; resume completes the job from that progress', async () => {
    const j = await job('pause', ['w0', 'w1', 'w2'], { splits: 12, units: 60 });
    try {
      await waitUntil('every lane busy', () => heldBy(j) === 6, { timeoutMs: 20_000 });
      const out = await ok('pause', '--job', j.job);
      expect(out).toMatch(/paused; every lane drains/);
      await waitUntil('every lane drained', () => heldBy(j) === 0, { timeoutMs: 20_000 });
      for (const w of ['w0', 'w1', 'w2']) expect(await assignment(j, w), w).toEqual([]);
      const drained = [...j.startedFrom.keys()];
      const progressAtPause = new Map(await Promise.all(drained.map(async (id) => [id, await committed(j, id)] as const)));
      const completedAtPause = j.completions.length;
      const claimsAtPause = [...j.startedFrom.values()].reduce((s, l) => s + l.length, 0);
      await sleep(2000); // well over the reconcile interval: a claim would have come
      expect(heldBy(j)).toBe(0);
      expect([...j.startedFrom.values()].reduce((s, l) => s + l.length, 0)).toBe(claimsAtPause);
      expect(j.completions.length).toBe(completedAtPause);
      for (const [id, p] of progressAtPause) expect(await committed(j, id), id).toEqual(p);
      const paused = await report(j.job);
      expect(paused.paused).toBe(true);
      expect(await ok('pause', '--job', j.job)).toMatch(/already paused \(nothing changed\)/);

      expect(await ok('resume', '--job', j.job)).toMatch(/resumed/);
      const verdicts = await Promise.all([...j.coordinators.values()].map((c) => c.done));
      expect(verdicts).toEqual(['complete', 'complete', 'complete']);
      // A split drained at the pause was resumed from its committed progress, never from the start
      // (one that had committed its last unit may have completed just before the drain).
      const resumed = drained.filter((id) => {
        const p = progressAtPause.get(id);
        return typeof p === 'number' && p > 0 && p < 60;
      });
      expect(resumed.length).toBeGreaterThan(0);
      for (const id of resumed) expect(j.startedFrom.get(id)!.slice(1)).toContain(progressAtPause.get(id));
      expect(await admin.get(controlKey(j.prefix))).toBeUndefined(); // a record that asks nothing is deleted
    } finally {
      await j.close();
    }
  }, 90_000);

  it('evacuate drains one instance while the others work; resume --instance undoes it, and so does its restart', async () => {
    const j = await job('evac', ['w0', 'w1', 'w2'], { splits: 16, units: 200 });
    try {
      await waitUntil('every lane busy', () => heldBy(j) === 6, { timeoutMs: 20_000 });
      expect(await ok('evacuate', '--job', j.job, '--instance', 'w1')).toMatch(/instance w1 evacuated/);
      await waitUntil('w1 drained', () => j.coordinators.get('w1')!.held.length === 0, { timeoutMs: 20_000 });
      expect(await assignment(j, 'w1')).toEqual([]);
      await waitUntil('the others full', () => j.coordinators.get('w0')!.held.length === 2 && j.coordinators.get('w2')!.held.length === 2, { timeoutMs: 20_000 });
      await sleep(1500);
      expect(j.coordinators.get('w1')!.held).toEqual([]);
      const r = await report(j.job);
      expect(r.evacuated).toEqual([{ instance: 'w1', inForce: true }]);
      expect((await ok('inspect', '--job', j.job))).toMatch(/evacuated w1/);

      expect(await ok('resume', '--job', j.job, '--instance', 'w1')).toMatch(/w1 is assigned work again/);
      await waitUntil('w1 working again', () => j.coordinators.get('w1')!.held.length > 0, { timeoutMs: 20_000 });

      // Evacuated again, then restarted: the new run is not evacuated.
      await ok('evacuate', '--job', j.job, '--instance', 'w1');
      await waitUntil('w1 drained again', () => j.coordinators.get('w1')!.held.length === 0, { timeoutMs: 20_000 });
      await j.coordinators.get('w1')!.stop();
      const again = await j.start('w1');
      await waitUntil('the restarted w1 working', () => again.held.length > 0, { timeoutMs: 20_000 });
      expect((await report(j.job)).evacuated).toEqual([{ instance: 'w1', inForce: false }]);
    } finally {
      await j.close();
    }
  }, 90_000);

  it('retry: a stalled job whose processes stopped on the verdict runs again and completes; a split quarantined mid-job is retried in place', async () => {
    let poisoned = true;
    const j = await job('retry', ['w0', 'w1'], { splits: 6, units: 4, failing: (id) => poisoned && id === 's-03', maxAttempts: 2 });
    try {
      const verdicts = await Promise.all([...j.coordinators.values()].map((c) => c.done));
      expect(verdicts).toEqual(['stalled', 'stalled']);
      const r = await report(j.job);
      expect(r.quarantined.map((q) => q.id)).toEqual(['s-03']);
      expect(r.quarantined[0]!.reason).toMatch(/poisoned split s-03/);
      await refused(/split "s-01": is completed, not quarantined/, 'retry', '--job', j.job, '--split', 's-01');
      poisoned = false;
      const out = await ok('retry', '--job', j.job, '--all-quarantined');
      expect(out).toMatch(/1 split runnable again, attempts reset: s-03/);
      expect(out).toMatch(/stalled verdict is cleared/);
      const rec = decodeRecord('split', splitKey(j.prefix, 's-03'), (await admin.get(splitKey(j.prefix, 's-03')))!.value, j.fp);
      expect(rec).toMatchObject({ status: 'runnable', attempts: 0, owner: '' });
      expect(rec.reason).toBeUndefined();
      j.coordinators.clear();
      await j.start('w0');
      await j.start('w1');
      expect(await Promise.all([...j.coordinators.values()].map((c) => c.done))).toEqual(['complete', 'complete']);
    } finally {
      await j.close();
    }

    // Mid-job: the rest is slow (10 s a split), so the fleet still runs when s-00 is quarantined and retried.
    let bad = true;
    const k = await job('retry-live', ['w0'], { splits: 4, units: 400, failing: (id) => bad && id === 's-00', maxAttempts: 1 });
    try {
      await waitUntil('s-00 quarantined', async () => {
        const kv = await admin.get(splitKey(k.prefix, 's-00'));
        return kv !== undefined && decodeRecord('split', kv.key, kv.value, k.fp).status === 'quarantined';
      }, { timeoutMs: 20_000 });
      bad = false;
      expect(await ok('retry', '--job', k.job, '--split', 's-00')).toMatch(/1 split runnable again/);
      expect(await k.coordinators.get('w0')!.done).toBe('complete');
      expect(k.completions).toContain('s-00');
    } finally {
      await k.close();
    }
  }, 120_000);

  it('delete: a finished job goes; a running one is refused, then --force stops every process (JOB_DELETED) and leaves nothing behind', async () => {
    const done = await job('del-done', ['w0'], { splits: 3, units: 2 });
    expect(await done.coordinators.get('w0')!.done).toBe('complete');
    await done.close();
    const jobsOut = await ok('jobs');
    expect(jobsOut).toMatch(new RegExp(`${done.job}\\s+complete\\s+3/3 completed`));
    expect(await ok('delete', '--job', done.job)).toMatch(/deleted \d+ keys \(verdict complete\)/);
    expect((await admin.listAll(done.prefix)).kvs).toEqual([]);

    const running = await job('del-run', ['w0', 'w1'], { splits: 8, units: 400 });
    try {
      await waitUntil('working', () => heldBy(running) === 4, { timeoutMs: 20_000 });
      await refused(/force: job "ops-del-run-[a-z0-9]+" is not finished and idle \(.*2 live members \(w0, w1\); 4 held splits\).*pass --force/, 'delete', '--job', running.job);
      expect(await admin.get(planKey(running.prefix))).toBeDefined();
      const out = await ok('delete', '--job', running.job, '--force');
      expect(out).toMatch(/stopped: w0, w1/);
      for (const c of running.coordinators.values()) {
        const e = await c.done.then(() => undefined, (err: unknown) => err);
        expect(isSplitfleetError(e, 'JOB_DELETED'), String(e)).toBe(true);
      }
      await sleep(1500); // nobody re-creates the job
      expect((await admin.listAll(running.prefix)).kvs).toEqual([]);
    } finally {
      await running.close();
    }
  }, 90_000);

  it('refuses bad input in one line with exit code 2 and writes nothing', async () => {
    // Splits that never end, and more of them than lanes: once both lanes are busy, no split
    // record changes unless somebody writes one.
    const j = await job('refuse', ['w0'], { splits: 4, units: 1_000_000 });
    try {
      await waitUntil('working', () => heldBy(j) === 2, { timeoutMs: 20_000 });
      const before = (await admin.listAll(j.prefix)).revision;
      await refused(/job: no job "nope" under splitfleet\//, 'pause', '--job', 'nope');
      await refused(/job: must be 1 to 128 characters/, 'pause', '--job', 'bad/name');
      await refused(/instance: "ghost" is not a live member of job .* \(members: w0\)/, 'evacuate', '--job', j.job, '--instance', 'ghost');
      await refused(/instance: "w0" is not evacuated/, 'resume', '--job', j.job, '--instance', 'w0');
      await refused(/split: name the splits to retry/, 'retry', '--job', j.job);
      await refused(/split: name the splits to retry/, 'retry', '--job', j.job, '--split', 's-00', '--all-quarantined');
      await refused(/split "s-00": is runnable and waits out no backoff, not quarantined/, 'retry', '--job', j.job, '--split', 's-00');
      await refused(/split "zz": job .* has no such split/, 'retry', '--job', j.job, '--split', 'zz');
      await refused(/required option '--job <name>' not specified/, 'evacuate', '--instance', 'w0');
      // Nothing of the job was written by any of them (only the fleet's own commits move progress keys).
      const after = await admin.listAll(j.prefix);
      expect(after.kvs.filter((kv) => kv.key === controlKey(j.prefix))).toEqual([]);
      expect(after.kvs.filter((kv) => kv.key.startsWith(`${j.prefix}split.`) && kv.modRevision > before)).toEqual([]);
    } finally {
      await j.close();
    }
  }, 90_000);
});
