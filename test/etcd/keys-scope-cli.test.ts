/**
 * Issue 28's CLI row, as an operator runs it: the compiled `splitfleet` bin
 * against a throwaway etcd. Job `a` (under root `splitfleet`) is finished;
 * job `x` runs under root `splitfleet/a`, inside `a`'s bare prefix.
 * `delete --job a --dry-run` lists `a`'s keys only and deletes nothing;
 * `delete --job a` (no --force) deletes those and leaves `x` running;
 * `retry --dry-run` lists what it would retry and writes nothing.
 * Build first: `npm run build`.
 */
import { runCli, type Ran } from '../support/cli.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startCoordinator, type Coordinator } from '../../src/coordinator/coordinator.js';
import { silentLogger } from '../../src/coordinator/log.js';
import type { SplitHandle } from '../../src/coordinator/types.js';
import { jobPrefix, leaseKey } from '../../src/protocol/keys.js';
import { EtcdStore } from '../../src/store/etcd/etcd.js';
import { sleep, waitUntil } from '../support/wait.js';
import { startEtcd, type EtcdHandle } from '../support/etcd.js';

// A keys job: the dry run below counts its spec and split records (a packed job folds its completed ones back).
const fast = { leaseDurationMs: 3000, opTimeoutMs: 1000, rebalanceDelayMs: 0, drainDeadlineMs: 2000, reconcileIntervalMs: 1000, maxAttempts: 1, layout: 'keys' as const };
const A = jobPrefix('splitfleet', 'a');
const X = jobPrefix('splitfleet/a', 'x');

let etcd: EtcdHandle;
let store: EtcdStore;
let x: Coordinator;

function cli(...args: string[]): Promise<Ran> {
  return runCli([...args, '--etcd', etcd.endpoint]);
}

async function keys(prefix: string): Promise<string[]> {
  return (await store.listAll(prefix)).kvs.map((kv) => kv.key);
}

beforeAll(async () => {
  etcd = await startEtcd();
  store = new EtcdStore({ endpoints: etcd.endpoint });
  const a = await startCoordinator({
    store, job: 'a', instance: 'a-0', maxInFlight: 4, logger: silentLogger, ...fast,
    planner: () => ({ final: true, splits: ['logs/2026/a b.gz', 'a-1', 'bad'].map((id) => ({ id, weight: 1 })) }),
    handler: async (s: SplitHandle) => { if (s.id === 'bad') throw new Error('bad input'); await s.complete(1); },
  });
  expect(await a.done).toBe('stalled');
  x = await startCoordinator({
    store, root: 'splitfleet/a', job: 'x', instance: 'x-0', maxInFlight: 4, logger: silentLogger, ...fast,
    planner: () => ({ final: true, splits: ['n-0', 'n-1'].map((id) => ({ id, weight: 1 })) }),
    handler: async (s: SplitHandle) => {
      let n = 0;
      while (!s.signal.aborted && !s.drainSignal.aborted) {
        await s.commit(++n).catch(() => undefined);
        await sleep(20);
      }
    },
  });
  await waitUntil('job x holds its splits', async () => (await store.get(leaseKey(X, 'n-0'))) !== undefined && (await store.get(leaseKey(X, 'n-1'))) !== undefined);
}, 60_000);

afterAll(async () => {
  await x?.stop();
  await store?.close();
  await etcd?.stop();
});

describe('the CLI on a job with a nested root under its prefix', () => {
  it('retry --dry-run lists the split it would retry and writes nothing', async () => {
    const before = (await store.listAll(A)).revision;
    const r = await cli('retry', '--job', 'a', '--all-quarantined', '--dry-run');
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout).toBe('job a: would retry 1 split (dry run: nothing written)\n  bad\n  the stalled verdict would be cleared\n');
    const after = await store.listAll(A);
    expect(after.kvs.filter((kv) => !kv.key.startsWith(X)).every((kv) => kv.modRevision <= before)).toBe(true);
  });

  it('delete --dry-run lists a\'s keys, per kind and one by one, and deletes nothing', async () => {
    const own = (await keys(A)).filter((k) => !k.startsWith(X));
    const r = await cli('delete', '--job', 'a', '--dry-run', '--json');
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const out = JSON.parse(r.stdout) as { dryRun: boolean; keys: string[]; byKind: Record<string, number>; needsForce: boolean };
    expect(out.dryRun).toBe(true);
    expect(out.keys).toEqual(own);
    expect(out.keys).toContain('splitfleet/a/split.logs%2F2026%2Fa b.gz');
    expect(out.byKind).toMatchObject({ plan: 1, spec: 3, split: 3 });
    expect(out.needsForce).toBe(false);
    const text = await cli('delete', '--job', 'a', '--dry-run');
    expect(text.stdout.split('\n')[0]).toMatch(new RegExp(`^job a: would delete ${own.length} keys \\(dry run: nothing deleted\\): `));
    expect(text.stdout).not.toContain(X);
    expect((await keys(A)).filter((k) => !k.startsWith(X))).toEqual(own);
  });

  it('delete --job a (no --force) deletes a\'s keys only: job x keeps running', async () => {
    const own = (await keys(A)).filter((k) => !k.startsWith(X));
    const nested = await keys(X);
    expect(nested.length).toBeGreaterThan(5);
    const r = await cli('delete', '--job', 'a');
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout).toBe(`job a: deleted ${own.length} keys (verdict stalled)\n`);
    const left = await keys(A);
    expect(left.filter((k) => !k.startsWith(X))).toEqual([]);
    expect(left.filter((k) => k.startsWith(X))).toEqual(expect.arrayContaining(nested));
    expect(x.health().state).toBe('running');
    // Still working: its commits keep landing.
    const rev = (await store.get(`${X}progress.n-0`))!.modRevision;
    await waitUntil('job x commits again', async () => ((await store.get(`${X}progress.n-0`))?.modRevision ?? 0) > rev);
  });
});
