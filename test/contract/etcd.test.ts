/**
 * The store contract on a real etcd (one throwaway server for the file), plus
 * what only a real server can show: a watch survives an etcd restart and
 * resumes without losing or repeating events, a cut connection likewise,
 * and MemoryStore answers random command sequences exactly as etcd does.
 */

import { createConnection, createServer, type Socket } from 'node:net';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { VirtualClock } from '../../src/clock.js';
import { isSplitfleetError } from '../../src/errors.js';
import { EtcdStore } from '../../src/store/etcd/etcd.js';
import { MemoryStore } from '../../src/store/memory.js';
import { cmp, op, type Compare, type Op, type Store, type WatchEvent } from '../../src/store/store.js';
import { startEtcd, type EtcdHandle } from '../support/etcd.js';
import { sleep } from '../support/wait.js';
import { storeContract } from '../../src/store/contract.js';

let etcd: EtcdHandle;

beforeAll(async () => {
  etcd = await startEtcd();
});
afterAll(async () => {
  await etcd?.stop();
});

storeContract('etcd', async () => {
  const stores: Store[] = [];
  const make = () => {
    const s = new EtcdStore({ endpoints: [etcd.endpoint], opTimeoutMs: 5_000 });
    stores.push(s);
    return s;
  };
  return {
    store: make(),
    connect: async () => make(),
    passTime: (seconds) => sleep(seconds * 1000),
    close: async () => {
      await Promise.all(stores.map((s) => s.close()));
    },
  };
});

/** Retries a write while etcd comes back, as the coordinator would on a retryable error. */
async function retrying<T>(fn: () => Promise<T>): Promise<T> {
  const deadline = Date.now() + 15_000;
  for (;;) {
    try {
      return await fn();
    } catch (e) {
      if (!isSplitfleetError(e) || !e.retryable || Date.now() > deadline) throw e;
      await sleep(100);
    }
  }
}

describe('EtcdStore against a real etcd', () => {
  it('a watch survives an etcd restart and resumes without losing or repeating events', async () => {
    const watching = new EtcdStore({ endpoints: [etcd.endpoint], watchRetryMaxMs: 500 });
    const errors: unknown[] = [];
    const seen: WatchEvent[] = [];
    const w = watching.watch('restart/', { onEvent: (e) => seen.push(e), onError: (e) => errors.push(e) });
    await w.ready;
    const writer = new EtcdStore({ endpoints: [etcd.endpoint] });
    const expected: number[] = [];
    for (let i = 0; i < 5; i++) expected.push(await writer.put(`restart/${i}`, `before-${i}`));
    const deadline = Date.now() + 5_000;
    while (seen.length < 5 && Date.now() < deadline) await sleep(20);
    expect(seen).toHaveLength(5);

    await etcd.kill('SIGKILL');
    await etcd.restart();
    // Written while the watch is still reconnecting: it must resume from the last revision it saw.
    for (let i = 5; i < 10; i++) expected.push(await retrying(() => writer.put(`restart/${i}`, `after-${i}`)));
    const lease = await retrying(() => writer.grantLease(60));
    await writer.put('restart/eph', 'x', { lease });
    await writer.revokeLease(lease);
    const until = Date.now() + 20_000;
    while (seen.length < 12 && Date.now() < until) await sleep(50);
    await sleep(200);

    expect(errors).toEqual([]);
    expect(seen.slice(0, 10).map((e) => e.modRevision)).toEqual(expected);
    expect(seen.slice(0, 10).map((e) => e.value)).toEqual([0, 1, 2, 3, 4].map((i) => `before-${i}`).concat([5, 6, 7, 8, 9].map((i) => `after-${i}`)));
    expect(seen.slice(10).map((e) => `${e.type} ${e.key}`)).toEqual(['put restart/eph', 'delete restart/eph']);
    expect(seen[11]!.prevValue).toBe('x');
    await w.close();
    await watching.close();
    await writer.close();
  });

  it('the harness fails loudly, never skips, when etcd is not on PATH', async () => {
    const path = process.env.PATH;
    process.env.PATH = '/nonexistent';
    try {
      await expect(startEtcd()).rejects.toThrow(/etcd-server/);
    } finally {
      process.env.PATH = path;
    }
  });

  it('maps an unreachable etcd to a retryable STORE_UNAVAILABLE', async () => {
    const store = new EtcdStore({ endpoints: ['http://127.0.0.1:1'], opTimeoutMs: 2_000 });
    const err = await store.get('x').catch((e: unknown) => e);
    expect(isSplitfleetError(err, 'STORE_UNAVAILABLE')).toBe(true);
    expect((err as { retryable: boolean }).retryable).toBe(true);
    await store.close();
  });
});

/** A TCP proxy in front of etcd whose connections can be cut at will. */
async function cuttableProxy(target: string): Promise<{ endpoint: string; cut(): void; close(): Promise<void> }> {
  const { hostname, port } = new URL(target);
  const sockets = new Set<Socket>();
  const server = createServer((inbound) => {
    const outbound = createConnection({ host: hostname, port: Number(port) });
    for (const sock of [inbound, outbound]) {
      sockets.add(sock);
      sock.on('error', () => undefined);
      sock.on('close', () => {
        sockets.delete(sock);
        inbound.destroy();
        outbound.destroy();
      });
    }
    inbound.pipe(outbound).pipe(inbound);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  const address = server.address();
  const proxyPort = typeof address === 'object' && address ? address.port : 0;
  return {
    endpoint: `http://127.0.0.1:${proxyPort}`,
    cut: () => {
      for (const sock of sockets) sock.destroy();
    },
    close: async () => {
      for (const sock of sockets) sock.destroy();
      await new Promise((r) => server.close(r));
    },
  };
}

describe('EtcdStore through a cut connection', () => {
  it('a watch resumes after its connection is cut, without losing or repeating events', async () => {
    const proxy = await cuttableProxy(etcd.endpoint);
    const watching = new EtcdStore({ endpoints: [proxy.endpoint], watchRetryMaxMs: 300 });
    const writer = new EtcdStore({ endpoints: [etcd.endpoint] });
    const seen: number[] = [];
    const w = watching.watch('cut/', { onEvent: (e) => seen.push(e.modRevision) });
    await w.ready;
    const expected: number[] = [];
    for (let round = 0; round < 3; round++) {
      for (let i = 0; i < 4; i++) expected.push(await writer.put(`cut/${round}-${i}`, 'v'));
      proxy.cut();
    }
    const until = Date.now() + 15_000;
    while (seen.length < expected.length && Date.now() < until) await sleep(50);
    await sleep(200);
    expect(seen).toEqual(expected);
    await w.close();
    await watching.close();
    await writer.close();
    await proxy.close();
  });
});

/** One step of the differential test, over 4 keys and up to 3 leases (by index). */
type Step =
  | { kind: 'txn'; compares: CompareSpec[]; success: OpSpec[]; failure: OpSpec[] }
  | { kind: 'grant' }
  | { kind: 'revoke'; lease: number }
  | { kind: 'list' };
type CompareSpec = { t: 'absent' | 'mod' | 'value' | 'lease'; key: number; n: number };
type OpSpec = { t: 'put' | 'delete' | 'get'; key: number; n: number; lease?: number };

const opSpec = fc.record(
  { t: fc.constantFrom('put', 'put', 'delete', 'get'), key: fc.nat(3), n: fc.nat(2), lease: fc.nat(3) },
  { requiredKeys: ['t', 'key', 'n'] },
) as fc.Arbitrary<OpSpec>;
const stepArb: fc.Arbitrary<Step> = fc.oneof(
  {
    weight: 6,
    arbitrary: fc.record({
      kind: fc.constant('txn' as const),
      compares: fc.array(fc.record({ t: fc.constantFrom('absent', 'mod', 'value', 'lease'), key: fc.nat(3), n: fc.nat(8) }) as fc.Arbitrary<CompareSpec>, { maxLength: 2 }),
      success: fc.array(opSpec, { maxLength: 3 }),
      failure: fc.array(opSpec, { maxLength: 2 }),
    }),
  },
  { weight: 1, arbitrary: fc.constant({ kind: 'grant' as const }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('revoke' as const), lease: fc.nat(2) }) },
  { weight: 1, arbitrary: fc.constant({ kind: 'list' as const }) },
);

/** Runs `steps` on `store` under `prefix`; returns outputs with revisions relative to the start and leases by index. */
async function runSteps(store: Store, prefix: string, steps: Step[]): Promise<unknown[]> {
  const base = (await store.list(prefix)).revision;
  const leases: string[] = [];
  const rel = (r: number) => r - base;
  const leaseIndex = (id: string | undefined) => (id === undefined ? undefined : leases.indexOf(id));
  const norm = (kv: { key: string; value: string; createRevision: number; modRevision: number; lease?: string } | undefined) =>
    kv && [kv.key.slice(prefix.length), kv.value, rel(kv.createRevision), rel(kv.modRevision), leaseIndex(kv.lease)];
  const key = (i: number) => `${prefix}k${i}`;
  const leaseId = (i: number) => leases[i] ?? '0';
  const toOps = (specs: OpSpec[]): Op[] => {
    const written = new Set<number>();
    return specs.flatMap((o) => {
      if (o.t === 'get') return [op.get(key(o.key))];
      if (written.has(o.key)) return [];
      written.add(o.key);
      if (o.t === 'delete') return [op.delete(key(o.key))];
      return [op.put(key(o.key), `v${o.n}`, o.lease === undefined || leases[o.lease] === undefined ? undefined : leases[o.lease])];
    });
  };
  const toCompare = (c: CompareSpec): Compare => {
    switch (c.t) {
      case 'absent':
        return cmp.absent(key(c.key));
      case 'mod':
        return cmp.modRevision(key(c.key), c.n === 0 ? 0 : base + c.n);
      case 'value':
        return cmp.value(key(c.key), `v${c.n % 3}`);
      case 'lease':
        return cmp.lease(key(c.key), leaseId(c.n % 3));
    }
  };
  const out: unknown[] = [];
  try {
    for (const step of steps) {
      try {
        switch (step.kind) {
          case 'grant':
            leases.push(await store.grantLease(60));
            out.push(['grant', leases.length - 1]);
            break;
          case 'revoke':
            if (leases[step.lease] !== undefined) await store.revokeLease(leases[step.lease]!);
            out.push(['revoke', step.lease]);
            break;
          case 'list': {
            const page = await store.list(prefix);
            out.push(['list', rel(page.revision), page.kvs.map(norm)]);
            break;
          }
          case 'txn': {
            const r = await store.txn({ compares: step.compares.map(toCompare), success: toOps(step.success), failure: toOps(step.failure) });
            out.push(['txn', r.won, rel(r.revision), r.reads.map(norm)]);
            break;
          }
        }
      } catch (e) {
        out.push(['error', isSplitfleetError(e) ? e.code : String(e)]);
      }
    }
    out.push(['final', (await store.list(prefix)).kvs.map(norm)]);
  } finally {
    for (const id of leases) await store.revokeLease(id);
  }
  return out;
}

describe('MemoryStore is a faithful model of etcd', () => {
  it('answers random command sequences exactly as etcd does (revisions, compares, leases, reads)', async () => {
    const real = new EtcdStore({ endpoints: [etcd.endpoint] });
    let run = 0;
    try {
      await fc.assert(
        fc.asyncProperty(fc.array(stepArb, { minLength: 1, maxLength: 25 }), async (steps) => {
          const prefix = `diff/${++run}/`;
          const memory = new MemoryStore({ clock: new VirtualClock() });
          const expected = await runSteps(memory, prefix, steps);
          await memory.close();
          const actual = await runSteps(real, prefix, steps);
          expect(actual).toEqual(expected);
        }),
        { numRuns: 40 },
      );
    } finally {
      await real.close();
    }
  });
});
