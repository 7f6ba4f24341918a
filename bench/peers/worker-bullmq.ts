#!/usr/bin/env node
/**
 * A BullMQ worker of bench:peers: one `Worker` with `concurrency` = lanes on
 * the bench's redis, one job per item (jobId = item id, added by the parent).
 * Progress through `job.updateProgress` (BullMQ does not fence it: it checks
 * only that the job exists); a retried job resumes from `job.progress`. Lock
 * duration = the bench's lease, stalled check every half of it, everything
 * else BullMQ's defaults (maxStalledCount 1). A lock renewal that fails
 * cancels that job's processor (`cancelJob`), as a careful user would wire it.
 */
import { Worker, type Job } from 'bullmq';
import { emit, itemsById, runAttempt, waitForGo, workerConfig } from './worker-shell.js';

const cfg = workerConfig();
const items = itemsById(cfg);

async function main(): Promise<void> {
  const url = new URL(cfg.endpoint);
  const connection = { host: url.hostname, port: Number(url.port), maxRetriesPerRequest: null };
  const attemptOf = new Map<string, number>();
  const worker = new Worker(cfg.job, async (job: Job, _token?: string, signal?: AbortSignal) => {
    const item = items.get(job.id!)!;
    const from = typeof job.progress === 'number' ? job.progress : 0;
    const r = await runAttempt(cfg, {
      item, from, ...(signal ? { signal } : {}),
      commit: async (n) => {
        await job.updateProgress(n);
        return true;
      },
    });
    attemptOf.set(item.id, r.n);
    if (r.status !== 'done') throw new Error('lock lost');
    return r.units;
  }, {
    connection, concurrency: cfg.lanes, autorun: false,
    lockDuration: cfg.leaseMs, stalledInterval: cfg.leaseMs / 2,
  });
  worker.on('completed', (job: Job) => emit(cfg, { ev: 'done', id: job.id!, ok: true, n: attemptOf.get(job.id!) ?? 0 }));
  worker.on('lockRenewalFailed', (ids: string[]) => {
    for (const id of ids) worker.cancelJob(id, 'lock renewal failed');
  });
  worker.on('error', (e: Error) => emit(cfg, { ev: 'error', message: e.message }));
  await worker.waitUntilReady();
  emit(cfg, { ev: 'ready' });
  await waitForGo();
  void worker.run();
}

main().catch((e: Error) => {
  emit(cfg, { ev: 'error', message: e.message });
  setTimeout(() => process.exit(3), 50);
});
