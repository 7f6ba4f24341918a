/**
 * A throwaway single-node etcd for the benches (bench/protocol.ts,
 * bench/fleet.ts, …), started by the suites' one launcher
 * (test/support/etcd.ts) with the benches' flags (an 8 GiB quota, optional
 * auto-compaction) and data directory. `etcdMetrics` reads the database size
 * and revision from etcd's /metrics.
 */
import { existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { startEtcd } from '../test/support/etcd.js';

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
  stop(): Promise<void>;
}

/**
 * Starts etcd on loopback through the suites' one launcher
 * (test/support/etcd.ts) and resolves once it answers a read. Its data dir is
 * on `BENCH_ETCD_DIR` (default: /dev/shm when it exists, so fsync costs
 * nothing and the figures are the protocol's, not the disk's; set it to a disk
 * path to include the disk).
 */
export async function startBenchEtcd(options: BenchEtcdOptions = {}): Promise<BenchEtcd> {
  const dataRoot = process.env.BENCH_ETCD_DIR ?? (existsSync('/dev/shm') ? '/dev/shm' : tmpdir());
  const etcd = await startEtcd([
    '--quota-backend-bytes', String(options.quotaBackendBytes ?? 8 * 1024 ** 3),
    ...(options.autoCompaction
      ? ['--auto-compaction-mode', options.autoCompaction.mode, '--auto-compaction-retention', options.autoCompaction.retention]
      : []),
  ], { dataRoot });
  return { endpoint: etcd.endpoint, dataDir: etcd.dataDir, stop: () => etcd.stop() };
}

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
