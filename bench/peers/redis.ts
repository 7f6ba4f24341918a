/**
 * A throwaway redis-server for bench:peers (the counterpart of bench/etcd.ts):
 * `redis-server` from PATH on a free loopback port (the suites' `freePort`), no persistence, a temp
 * dir removed on stop, SIGKILLed when this process exits.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { freePort } from '../../test/support/etcd.js';

export interface BenchRedis {
  url: string;
  stop(): Promise<void>;
}

export async function startBenchRedis(): Promise<BenchRedis> {
  const dir = mkdtempSync(join(tmpdir(), 'splitfleet-bench-redis-'));
  const port = await freePort();
  let log = '';
  const child = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir], { stdio: ['ignore', 'pipe', 'pipe'] });
  child.on('error', (e) => (log += `\n${e.message} (bench:peers needs redis-server on PATH: apt-get install redis-server)`));
  child.stdout!.on('data', (c: Buffer) => (log = (log + c.toString()).slice(-4000)));
  child.stderr!.on('data', (c: Buffer) => (log = (log + c.toString()).slice(-4000)));
  const killNow = () => {
    child.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  };
  process.on('exit', killNow);
  const url = `redis://127.0.0.1:${port}`;
  const deadline = Date.now() + 15_000;
  for (;;) {
    if (child.exitCode !== null || log.includes('needs redis-server')) {
      killNow();
      throw new Error(`redis-server did not start:\n${log}`);
    }
    const probe = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
    probe.on('error', () => undefined);
    try {
      await probe.connect();
      await probe.ping();
      probe.disconnect();
      break;
    } catch {
      probe.disconnect();
      if (Date.now() > deadline) {
        killNow();
        throw new Error(`redis-server did not answer within 15 s:\n${log}`);
      }
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  return {
    url,
    stop: async () => {
      process.off('exit', killNow);
      if (child.exitCode === null) {
        child.kill('SIGTERM');
        await new Promise((r) => child.once('exit', r));
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
