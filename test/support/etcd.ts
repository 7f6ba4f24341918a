/**
 * A throwaway single-node etcd for tests: the `etcd` binary from PATH, free
 * loopback ports, a temp data dir. `restart()` brings it back on the same
 * data dir and ports (for chaos tests); `stop()` sends SIGTERM and removes
 * the data dir. A missing binary is a loud failure, never a silent skip.
 */

import { spawn, type ChildProcess } from 'node:child_process';
import { accessSync, constants, mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { EtcdStore } from '../../src/store/etcd.js';

/** A running etcd under test control. */
export interface EtcdHandle {
  /** The client URL, e.g. `http://127.0.0.1:41234`. */
  endpoint: string;
  dataDir: string;
  /** SIGTERM, wait for exit, delete the data dir. */
  stop(): Promise<void>;
  /** Sends `signal` (default SIGKILL) and waits for the process to exit; keeps the data dir. */
  kill(signal?: NodeJS.Signals): Promise<void>;
  /** Starts etcd again on the same data dir and ports; resolves once it answers. */
  restart(): Promise<void>;
}

const running = new Set<ChildProcess>();
process.on('exit', () => {
  for (const child of running) child.kill('SIGKILL');
});

/** Finds `etcd` on PATH or fails with instructions. */
function findEtcd(): string {
  for (const dir of (process.env.PATH ?? '').split(delimiter)) {
    if (!dir) continue;
    const candidate = join(dir, 'etcd');
    try {
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {
      // keep looking
    }
  }
  const where = process.env.CI === 'true' ? 'CI must install it' : 'install it locally';
  throw new Error(
    `etcd tests need the 'etcd' binary on PATH and it was not found: ${where} (e.g. 'apt-get install etcd-server', ` +
      `or an official release from https://github.com/etcd-io/etcd/releases). These tests are never skipped.`,
  );
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

function exited(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => child.once('exit', () => resolve()));
}

/**
 * Starts a fresh etcd (with `extraArgs`, e.g. a small `--quota-backend-bytes`) and resolves once
 * it answers a read. A port found free can be taken before etcd binds it (another process's
 * outgoing connection picks from the same range): that start is retried on fresh ports.
 */
export async function startEtcd(extraArgs: readonly string[] = []): Promise<EtcdHandle> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await startEtcdOnce(extraArgs);
    } catch (e) {
      if (attempt >= 3 || !String((e as Error)?.message).includes('address already in use')) throw e;
    }
  }
}

async function startEtcdOnce(extraArgs: readonly string[]): Promise<EtcdHandle> {
  const binary = findEtcd();
  const dataDir = mkdtempSync(join(tmpdir(), 'splitfleet-etcd-'));
  const clientPort = await freePort();
  const peerPort = await freePort();
  const endpoint = `http://127.0.0.1:${clientPort}`;
  const peer = `http://127.0.0.1:${peerPort}`;
  const args = [
    '--name', 'default',
    '--data-dir', dataDir,
    '--listen-client-urls', endpoint,
    '--advertise-client-urls', endpoint,
    '--listen-peer-urls', peer,
    '--initial-advertise-peer-urls', peer,
    '--initial-cluster', `default=${peer}`,
    '--logger', 'zap',
    '--log-level', 'error',
    ...extraArgs,
  ];
  let child: ChildProcess | undefined;
  let log = '';

  const launch = async (): Promise<void> => {
    log = '';
    const proc = spawn(binary, args, { stdio: ['ignore', 'ignore', 'pipe'] });
    child = proc;
    running.add(proc);
    proc.stderr?.on('data', (chunk: Buffer) => {
      log = (log + chunk.toString()).slice(-4000);
    });
    proc.once('exit', () => running.delete(proc));
    const probe = new EtcdStore({ endpoints: endpoint, opTimeoutMs: 1000 });
    const deadline = Date.now() + 20_000;
    try {
      for (;;) {
        if (proc.exitCode !== null || proc.signalCode !== null) {
          throw new Error(`etcd exited during start-up (code ${proc.exitCode}, signal ${proc.signalCode}):\n${log}`);
        }
        try {
          await probe.get('splitfleet-harness-probe');
          return;
        } catch {
          if (Date.now() > deadline) throw new Error(`etcd at ${endpoint} did not answer within 20 s:\n${log}`);
          await new Promise((r) => setTimeout(r, 100));
        }
      }
    } finally {
      await probe.close();
    }
  };

  const kill = async (signal: NodeJS.Signals = 'SIGKILL'): Promise<void> => {
    if (!child) return;
    const proc = child;
    child = undefined;
    proc.kill(signal);
    await exited(proc);
  };

  try {
    await launch();
  } catch (e) {
    await kill();
    rmSync(dataDir, { recursive: true, force: true });
    throw e;
  }

  return {
    endpoint,
    dataDir,
    kill,
    restart: async () => {
      await kill();
      await launch();
    },
    stop: async () => {
      if (child) {
        const proc = child;
        const hard = setTimeout(() => proc.kill('SIGKILL'), 5_000);
        await kill('SIGTERM');
        clearTimeout(hard);
      }
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}
