/**
 * A throwaway single-node etcd for the benches (bench/protocol.ts,
 * bench/fleet.ts): the `etcd` binary from PATH, free loopback ports, a temp
 * data dir removed on stop. The test launcher (test/support/etcd.ts) is not
 * compiled into dist/, so the benches carry this small launcher of their own.
 * `etcdMetrics` reads the database size and revision from etcd's /metrics.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { accessSync, constants, existsSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { EtcdStore } from '../src/store/etcd.js';

export interface BenchEtcdOptions {
  /** `--quota-backend-bytes`; default 8 GiB (room for a 1M-split job and its history). */
  quotaBackendBytes?: number;
  /**
   * etcd's own auto-compaction (`--auto-compaction-mode`, `--auto-compaction-retention`):
   * e.g. `{ mode: 'periodic', retention: '1m' }` or `{ mode: 'revision', retention: '100000' }`.
   * Absent: no auto-compaction (etcd's default).
   */
  autoCompaction?: { mode: 'periodic' | 'revision'; retention: string };
}

export interface BenchEtcd {
  endpoint: string;
  dataDir: string;
  pid: number;
  stop(): Promise<void>;
}

function findEtcd(): string {
  for (const dir of (process.env.PATH ?? '').split(delimiter)) {
    if (!dir) continue;
    try {
      accessSync(join(dir, 'etcd'), constants.X_OK);
      return join(dir, 'etcd');
    } catch {
      // keep looking
    }
  }
  throw new Error("the protocol bench needs the 'etcd' binary on PATH (e.g. 'apt-get install etcd-server')");
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

/**
 * Starts etcd on loopback and resolves once it answers a read. Its data dir is
 * on `BENCH_ETCD_DIR` (default: /dev/shm when it exists, so fsync costs
 * nothing and the figures are the protocol's, not the disk's; set it to a disk
 * path to include the disk).
 */
export async function startBenchEtcd(options: BenchEtcdOptions = {}): Promise<BenchEtcd> {
  const base = process.env.BENCH_ETCD_DIR ?? (existsSync('/dev/shm') ? '/dev/shm' : tmpdir());
  const dataDir = mkdtempSync(join(base, 'splitfleet-bench-etcd-'));
  const [clientPort, peerPort] = [await freePort(), await freePort()];
  const endpoint = `http://127.0.0.1:${clientPort}`;
  const peer = `http://127.0.0.1:${peerPort}`;
  let log = '';
  const child: ChildProcess = spawn(findEtcd(), [
    '--name', 'bench', '--data-dir', dataDir,
    '--listen-client-urls', endpoint, '--advertise-client-urls', endpoint,
    '--listen-peer-urls', peer, '--initial-advertise-peer-urls', peer, '--initial-cluster', `bench=${peer}`,
    '--logger', 'zap', '--log-level', 'error', '--quota-backend-bytes', String(options.quotaBackendBytes ?? 8 * 1024 ** 3),
    ...(options.autoCompaction
      ? ['--auto-compaction-mode', options.autoCompaction.mode, '--auto-compaction-retention', options.autoCompaction.retention]
      : []),
  ], { stdio: ['ignore', 'ignore', 'pipe'] });
  child.stderr!.on('data', (c: Buffer) => (log = (log + c.toString()).slice(-4000)));
  const killNow = () => {
    child.kill('SIGKILL');
    rmSync(dataDir, { recursive: true, force: true });
  };
  process.on('exit', killNow);
  const probe = new EtcdStore({ endpoints: endpoint, opTimeoutMs: 1000 });
  const deadline = Date.now() + 20_000;
  try {
    for (;;) {
      if (child.exitCode !== null) throw new Error(`etcd exited during start-up:\n${log}`);
      try {
        await probe.get('bench-probe');
        break;
      } catch {
        if (Date.now() > deadline) throw new Error(`etcd did not answer within 20 s:\n${log}`);
        await new Promise((r) => setTimeout(r, 100));
      }
    }
  } finally {
    await probe.close();
  }
  return {
    endpoint,
    dataDir,
    pid: child.pid!,
    stop: async () => {
      process.off('exit', killNow);
      if (child.exitCode === null) {
        child.kill('SIGTERM');
        await new Promise((r) => child.once('exit', r));
      }
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/** What etcd's /metrics says about its backend (absent figures are NaN). */
export interface EtcdBackendFigures {
  /** `etcd_mvcc_db_total_size_in_bytes`: the bbolt file, which compaction alone never shrinks. */
  dbSize: number;
  /** `etcd_mvcc_db_total_size_in_use_in_bytes`: the part holding live pages (falls after a compaction). */
  dbSizeInUse: number;
  /** `etcd_debugging_mvcc_keys_total`: live keys. */
  keys: number;
  /** `etcd_debugging_mvcc_current_revision`. */
  revision: number;
  /** `etcd_debugging_mvcc_compact_revision`: the last compaction's revision (0: never). */
  compactRevision: number;
  /** `process_resident_memory_bytes` of the etcd process. */
  rss: number;
  /** `process_cpu_seconds_total` of the etcd process. */
  cpuSeconds: number;
}

/** Reads the backend figures from `<endpoint>/metrics` (etcd serves it on the client URL). */
export async function etcdMetrics(endpoint: string): Promise<EtcdBackendFigures> {
  const res = await fetch(`${endpoint}/metrics`, { signal: AbortSignal.timeout(5000) });
  const text = await res.text();
  const read = (name: string): number => {
    const m = new RegExp(`^${name}(?:\\{[^}]*\\})? ([0-9.e+-]+)$`, 'm').exec(text);
    return m ? Number(m[1]) : NaN;
  };
  return {
    dbSize: read('etcd_mvcc_db_total_size_in_bytes'),
    dbSizeInUse: read('etcd_mvcc_db_total_size_in_use_in_bytes'),
    keys: read('etcd_debugging_mvcc_keys_total'),
    revision: read('etcd_debugging_mvcc_current_revision'),
    compactRevision: read('etcd_debugging_mvcc_compact_revision'),
    rss: read('process_resident_memory_bytes'),
    cpuSeconds: read('process_cpu_seconds_total'),
  };
}
