#!/usr/bin/env node
/**
 * The hand-rolled Redis-lock worker of bench:peers, the loop most teams write
 * first: `lanes` loops, each picking candidates from a `todo` set
 * (SRANDMEMBER), taking one with `SET lock:id token NX PX lease`, renewing it
 * every third of the lease (compare-and-PEXPIRE in Lua, the redis.io recipe),
 * resuming from `progress:id` and writing it back every few units with a plain
 * SET. Nothing fences that SET: a holder that lost its lock (a pause, a GC,
 * a slow network) still writes. A failed renewal stops the attempt at the
 * next unit. Done: SREM from `todo`, then the compare-and-DEL release.
 */
import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { sleep } from './items.js';
import { emit, itemsById, runAttempt, waitForGo, workerConfig } from './worker-shell.js';

const cfg = workerConfig();
const items = itemsById(cfg);
const RENEW = "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) else return 0 end";
const RELEASE = "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) else return 0 end";

async function lane(redis: Redis): Promise<void> {
  const p = cfg.job;
  for (;;) {
    const candidates = await redis.srandmember(`${p}:todo`, 8);
    if (candidates.length === 0) return;
    let id: string | undefined;
    const token = `${cfg.worker}:${randomUUID()}`;
    for (const c of candidates) {
      if ((await redis.set(`${p}:lock:${c}`, token, 'PX', cfg.leaseMs, 'NX')) === 'OK') {
        id = c;
        break;
      }
    }
    if (id === undefined) {
      await sleep(20);
      continue;
    }
    const lockKey = `${p}:lock:${id}`;
    if (!(await redis.sismember(`${p}:todo`, id))) {
      await redis.eval(RELEASE, 1, lockKey, token);
      continue;
    }
    const from = Number((await redis.get(`${p}:progress:${id}`)) ?? 0);
    const lost = new AbortController();
    const renew = setInterval(() => {
      redis.eval(RENEW, 1, lockKey, token, String(cfg.leaseMs)).then(
        (r) => r === 1 || lost.abort(),
        () => lost.abort(),
      );
    }, cfg.leaseMs / 3);
    try {
      const r = await runAttempt(cfg, {
        item: items.get(id)!, from, signal: lost.signal,
        commit: async (n) => {
          await redis.set(`${p}:progress:${id}`, String(n));
          return true;
        },
      });
      if (r.status === 'done') {
        const s = Date.now();
        await redis.srem(`${p}:todo`, id);
        emit(cfg, { ev: 'done', id, ok: true, n: r.n, s });
      }
    } finally {
      clearInterval(renew);
      await redis.eval(RELEASE, 1, lockKey, token);
    }
  }
}

async function main(): Promise<void> {
  const redis = new Redis(cfg.endpoint, { maxRetriesPerRequest: null });
  await redis.ping();
  emit(cfg, { ev: 'ready' });
  await waitForGo();
  await Promise.all(Array.from({ length: cfg.lanes }, () => lane(redis)));
}

main().catch((e: Error) => {
  emit(cfg, { ev: 'error', message: e.message });
  setTimeout(() => process.exit(3), 50);
});
