/**
 * An etcd member that accepts connections but never answers (one cut off
 * from its peers has no quorum: it serves no linearizable request), among
 * members that answer (issue 49 item 4, decision 0086). Simulated by a
 * blackholing proxy (test/chaos/proxy.ts) in front of a real etcd, as one of
 * two endpoints; the other is the same etcd, direct. Nothing is refused, so
 * only a deadline tells the client.
 *
 * A session with the chaos suite's timings (3 s lease, 1 s op timeout: one
 * renewal that waits out its deadline loses it) must keep its lease through
 * ten renewals: a keep-alive that gets no answer is sent again to the other
 * member within its interval. Before decision 0086 a timed-out keep-alive
 * was not sent again, and etcd3 picks a member at random per call: each
 * renewal had an even chance of meeting the blackhole, so the session was
 * lost within a few (it survives ten with probability 2^-10). Then reads:
 * once a call has timed out on the blackholed member it is passed by, so ten
 * reads in a row meet it at most once (before: three timeouts in a row set
 * it aside, one in two reads met it until then).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { systemClock } from '../../src/clock.js';
import { resolveConfig } from '../../src/config.js';
import { Session, type SessionEnd } from '../../src/coordinator/session.js';
import { jobPrefix } from '../../src/protocol/keys.js';
import { EtcdStore } from '../../src/store/etcd/etcd.js';
import { TcpProxy } from '../chaos/proxy.js';
import { startEtcd, type EtcdHandle } from '../support/etcd.js';
import { waitUntil } from '../support/wait.js';

let etcd: EtcdHandle;
let proxy: TcpProxy;
beforeAll(async () => {
  etcd = await startEtcd();
  proxy = await TcpProxy.start(etcd.endpoint);
}, 30_000);
afterAll(async () => {
  await proxy?.close();
  await etcd?.stop();
});

describe('an etcd member that accepts connections and never answers (real etcd, blackholing proxy)', () => {
  it('a session keeps its lease through ten renewals, and later calls pass the silent member by', async () => {
    const config = resolveConfig({ job: 'renewal-failover', instance: 'w0', leaseDurationMs: 3000, opTimeoutMs: 1000 });
    // gRPC keepalive off: nothing but a call's deadline may notice the silent member.
    const store = new EtcdStore({ endpoints: [etcd.endpoint, proxy.url], opTimeoutMs: config.opTimeoutMs, keepAliveMs: 0 });
    const direct = new EtcdStore({ endpoints: etcd.endpoint });
    const prefix = jobPrefix(config.root, config.job);
    let session: Session | undefined;
    try {
      proxy.blackhole();
      // The presence write may meet the blackhole (a transaction is never sent twice): open until one lands.
      session = await waitUntil('a session opened', () => Session.open(store, config, systemClock, prefix).catch(() => undefined), { timeoutMs: 20_000 });
      let end: SessionEnd | undefined;
      session.onEnd((e) => (end = e));
      const renewals: unknown[] = [];
      session.onRenewal((e) => renewals.push(e));
      await waitUntil('ten renewals, or the session ended', () => renewals.length >= 10 || end !== undefined, { timeoutMs: 30_000 });
      expect(end, `the session ended after ${renewals.length} renewals`).toBeUndefined();
      expect(renewals.filter((e) => e !== undefined), 'renewals that failed').toEqual([]);
      // The lease lives on etcd, and its presence key with it.
      expect((await direct.get(session.presenceKey))?.lease).toBe(session.leaseId);

      const reads: boolean[] = [];
      for (let i = 0; i < 10; i++) reads.push(await store.get(session.presenceKey).then(() => true, () => false));
      expect(reads.filter((ok) => !ok).length, `reads that timed out: ${reads.map((ok) => (ok ? '.' : 'T')).join('')}`).toBeLessThanOrEqual(1);
      expect(proxy.stats.accepted, 'the silent member was called at all').toBeGreaterThan(0);
    } finally {
      await session?.close();
      await store.close();
      await direct.close();
    }
  }, 60_000);
});
