/**
 * gRPC keepalive on a real etcd, behind a proxy that blackholes the path:
 * the bytes of every open connection vanish with no reset and no FIN (a load
 * balancer that forgot the flow, a half-open TCP link). A watch opened
 * before must resume through a fresh connection once keepalive gives up on
 * the dead one, and deliver what was written meanwhile, in order. Without
 * keepalive the same watch stays silent (the control case), so the test can
 * fail. Keepalive options are refused below etcd's floor.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isSplitfleetError } from '../../src/errors.js';
import { EtcdStore, ETCD_KEEPALIVE_MIN_MS } from '../../src/store/etcd/etcd.js';
import type { WatchEvent } from '../../src/store/store.js';
import { TcpProxy } from '../chaos/proxy.js';
import { waitUntil } from '../support/wait.js';
import { startEtcd, type EtcdHandle } from '../support/etcd.js';

let etcd: EtcdHandle;
beforeAll(async () => {
  etcd = await startEtcd();
});
afterAll(async () => {
  await etcd?.stop();
});

/** A watch through a blackholed proxy; what it delivered once the path heals, within `waitMs`. */
async function watchAcrossBlackhole(keepAliveMs: number, waitMs: number): Promise<string[]> {
  const proxy = await TcpProxy.start(etcd.endpoint);
  const through = new EtcdStore({ endpoints: proxy.url, opTimeoutMs: 2000, keepAliveMs, keepAliveTimeoutMs: 2000 });
  const direct = new EtcdStore({ endpoints: etcd.endpoint });
  const prefix = `keepalive-${keepAliveMs}-${Date.now()}/`;
  const seen: string[] = [];
  try {
    const watch = through.watch(prefix, { onEvent: (e: WatchEvent) => seen.push(`${e.key.slice(prefix.length)}=${e.value}`) });
    await watch.ready;
    await direct.put(`${prefix}a`, '1');
    await waitUntil('the first event through the proxy', () => seen.length === 1, { timeoutMs: 10_000 });
    proxy.blackhole();
    await direct.put(`${prefix}b`, '2'); // written while the path is dead: must not be lost
    await new Promise((r) => setTimeout(r, 500));
    proxy.healBlackhole(); // new connections get through; the open one stays dead
    await direct.put(`${prefix}c`, '3');
    const deadline = Date.now() + waitMs;
    while (seen.length < 3 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
    await watch.close();
    return seen;
  } finally {
    await through.close();
    await direct.close();
    await proxy.close();
  }
}

describe('gRPC keepalive (real etcd)', () => {
  it('a watch behind a blackholed connection resumes on a fresh one and loses nothing', async () => {
    const seen = await watchAcrossBlackhole(ETCD_KEEPALIVE_MIN_MS + 1000, 25_000);
    expect(seen).toEqual(['a=1', 'b=2', 'c=3']);
  }, 40_000);

  it('control: without keepalive the same watch stays silent', async () => {
    const seen = await watchAcrossBlackhole(0, 12_000);
    expect(seen).toEqual(['a=1']);
  }, 30_000);

  it('refuses a keepalive more frequent than etcd accepts, naming the rule', () => {
    try {
      new EtcdStore({ endpoints: etcd.endpoint, keepAliveMs: 1000 });
      throw new Error('accepted');
    } catch (e) {
      expect(isSplitfleetError(e, 'INVALID_CONFIG')).toBe(true);
      expect((e as Error).message).toMatch(/keepAliveMs: must be 0 \(off\) or an integer ≥ 5000, etcd's default --grpc-keepalive-min-time/);
    }
  });
});
