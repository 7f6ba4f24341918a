/**
 * The one etcd launcher of the suites: the `etcd` binary from PATH, free
 * loopback ports, the spawn (tracked: SIGKILLed when the test process exits)
 * and the readiness probe, which the TLS harness (test/etcd/tls-harness.ts)
 * and the 3-member cluster (test/chaos/cluster.ts) build on; and `startEtcd`,
 * a throwaway single node on a temp data dir. `restart()` brings it back on
 * the same data dir and ports (for chaos tests); `stop()` sends SIGTERM and
 * removes the data dir. A missing binary is a loud failure, never a silent
 * skip. The benches start theirs through it too (bench/etcd.ts adds their
 * flags and data directory; tsc compiles this file into dist/test/ beside
 * them, and it imports nothing but src/).
 */

import { spawn, type ChildProcess } from 'node:child_process';
import { accessSync, constants, mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { EtcdStore, type EtcdStoreOptions } from '../../src/store/etcd/etcd.js';

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
export function etcdBinary(): string {
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

/** A loopback port free now (another process can take it before etcd binds it: callers retry on 'address already in use'). */
export function freePort(): Promise<number> {
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

/** A spawned etcd: the process, and the last 4 000 characters of its stderr. */
export interface EtcdProcess {
  child: ChildProcess;
  log(): string;
}

/**
 * Spawns etcd with `args`, tracked so that it dies with this process. `wrap`
 * runs it through a command that execs it (e.g. `ip netns exec <ns>`, so the
 * child's pid is etcd's).
 */
export function spawnEtcd(args: readonly string[], wrap: readonly string[] = []): EtcdProcess {
  const [command, ...prefix] = [...wrap, etcdBinary()];
  const child = spawn(command!, [...prefix, ...args], { stdio: ['ignore', 'ignore', 'pipe'] });
  let log = '';
  running.add(child);
  child.stderr?.on('data', (chunk: Buffer) => {
    log = (log + chunk.toString()).slice(-4000);
  });
  child.once('exit', () => running.delete(child));
  return { child, log: () => log };
}

/**
 * Resolves once `url` answers a read (a linearizable one: it needs a raft leader), or throws after
 * `timeoutMs`, or as soon as `dead()` names why the server is gone. With `credentials` (TLS) each
 * attempt gets a fresh client: etcd3's per-host circuit breaker would otherwise stay open for 5 s.
 */
export async function waitForEtcd(
  url: string,
  timeoutMs: number,
  dead: () => string | undefined,
  options: { credentials?: EtcdStoreOptions['credentials']; detail?: () => string } = {},
): Promise<void> {
  const client = () => new EtcdStore({ endpoints: url, opTimeoutMs: 1000, ...(options.credentials ? { credentials: options.credentials } : {}) });
  const fresh = options.credentials !== undefined;
  let probe = fresh ? undefined : client();
  const deadline = Date.now() + timeoutMs;
  try {
    for (;;) {
      const why = dead();
      if (why) throw new Error(why);
      const p = probe ?? client();
      try {
        await p.get('splitfleet-harness-probe');
        return;
      } catch (e) {
        if (Date.now() > deadline) {
          throw new Error(`etcd at ${url} did not answer within ${timeoutMs / 1000} s${fresh ? ` (${String(e)})` : ''}:\n${options.detail?.() ?? ''}`);
        }
        await new Promise((r) => setTimeout(r, 100));
      } finally {
        if (p !== probe) await p.close();
      }
    }
  } finally {
    await probe?.close();
    probe = undefined;
  }
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
export async function startEtcd(extraArgs: readonly string[] = [], options: StartEtcdOptions = {}): Promise<EtcdHandle> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await startEtcdOnce(extraArgs, options.dataRoot ?? tmpdir());
    } catch (e) {
      if (attempt >= 3 || !String((e as Error)?.message).includes('address already in use')) throw e;
    }
  }
}

export interface StartEtcdOptions {
  /** Where the temp data dir is made (default the OS temp dir; the benches use /dev/shm). */
  dataRoot?: string;
}

/** The flags of a one-member etcd on `endpoint` (clients) and `peer`, quiet, then `extraArgs`. */
export function singleMemberArgs(dataDir: string, endpoint: string, peer: string, extraArgs: readonly string[] = []): string[] {
  return [
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
}

async function startEtcdOnce(extraArgs: readonly string[], dataRoot: string): Promise<EtcdHandle> {
  const dataDir = mkdtempSync(join(dataRoot, 'splitfleet-etcd-'));
  const clientPort = await freePort();
  const peerPort = await freePort();
  const endpoint = `http://127.0.0.1:${clientPort}`;
  const peer = `http://127.0.0.1:${peerPort}`;
  const args = singleMemberArgs(dataDir, endpoint, peer, extraArgs);
  let child: ChildProcess | undefined;

  const launch = async (): Promise<void> => {
    const proc = spawnEtcd(args);
    child = proc.child;
    const c = proc.child;
    await waitForEtcd(endpoint, 20_000, () =>
      c.exitCode !== null || c.signalCode !== null
        ? `etcd exited during start-up (code ${c.exitCode}, signal ${c.signalCode}):\n${proc.log()}`
        : undefined, { detail: proc.log });
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
