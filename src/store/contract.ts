/**
 * THE behavioural suite of the store contract, run on every backend
 * (test/contract/memory.test.ts, etcd.test.ts), and exported as
 * `splitfleet/store-contract` so that a backend written outside this
 * repository is held to it too (a vitest suite: vitest is an optional peer
 * dependency of that entry alone). A new backend passes this suite or it is
 * not a store. Each test works under its own key prefix and asserts things a
 * wrong backend would get wrong: races, stale revisions, atomicity, expiry,
 * ordering, pagination, limits. Time is abstracted by the fixture (a virtual
 * clock in memory, real sleeps on etcd), so the same assertions hold on both.
 */

import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { cmp, exactKey, isCompactedError, op, type KeyValue, type Store, type WatchEvent } from './store.js';
import { expectCode, type ContractFixture } from './contract-fixture.js';

// The suite's importers find the fixtures here too.
export { expectCode, memoryContractFixture, type ContractFixture } from './contract-fixture.js';

let prefixCounter = 0;
const MiB = 1024 * 1024;

/** Polls until `check` holds; the deadline only turns a hang into a readable failure (no timing is asserted). */
async function waitFor(what: string, check: () => boolean | Promise<boolean>): Promise<void> {
  const deadline = Date.now() + 8_000;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out after 8000 ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

/**
 * Runs the contract against the store made by `setup`, fresh for each test.
 *
 * Why one function: it is one vitest `describe` whose tests share the fixture, the store and the
 * key prefix its `beforeEach` makes; each `it` is a statement of the contract read on its own.
 */
export function storeContract(name: string, setup: () => Promise<ContractFixture>): void {
  describe(
    `store contract: ${name}`,
    // Why one function: the tests of one describe share its fixture, store and prefix (above).
    () => {
    let f: ContractFixture;
    let store: Store;
    let p: string;

    beforeEach(async () => {
      f = await setup();
      store = f.store;
      p = `contract/${name}/${++prefixCounter}-${Math.random().toString(36).slice(2, 8)}/`;
    });
    afterEach(async () => {
      await f.close();
    });

    it('list narrows to [rangeStart, rangeEnd) within the prefix, pages inside it, and reads a past revision', async () => {
      for (const k of ['assign.a', 'lease.a', 'plan', 'progress.a', 'progress.b', 'spec.a', 'split.a', 'split.ab', 'worker.a']) await store.put(`${p}${k}`, k);
      const keys = (kvs: KeyValue[]) => kvs.map((kv) => kv.key.slice(p.length));
      // Everything but progress.*: below `progress.` and from `progress/` ('/' follows '.').
      expect(keys((await store.list(p, { rangeEnd: `${p}progress.` })).kvs)).toEqual(['assign.a', 'lease.a', 'plan']);
      expect(keys((await store.list(p, { rangeStart: `${p}progress/` })).kvs)).toEqual(['spec.a', 'split.a', 'split.ab', 'worker.a']);
      expect(keys((await store.list(p, { rangeStart: `${p}lease.`, rangeEnd: `${p}lease/` })).kvs)).toEqual(['lease.a']);
      // Pages within a range, with startAfter.
      const first = await store.list(p, { rangeStart: `${p}progress/`, rangeEnd: `${p}worker.`, limit: 2 });
      expect(keys(first.kvs)).toEqual(['spec.a', 'split.a']);
      expect(first.more).toBe(true);
      const second = await store.list(p, { rangeStart: `${p}progress/`, rangeEnd: `${p}worker.`, limit: 2, startAfter: first.kvs[1]!.key });
      expect(keys(second.kvs)).toEqual(['split.ab']);
      expect(second.more).toBe(false);
      // A range reaching outside the prefix is still clipped to the prefix.
      expect(keys((await store.list(`${p}split.`, { rangeStart: p, rangeEnd: `${p}zzz` })).kvs)).toEqual(['split.a', 'split.ab']);
      // At a past revision, and through listAll.
      const rev = (await store.list(p, { limit: 1 })).revision;
      await store.put(`${p}lease.b`, 'later');
      expect(keys((await store.list(p, { rangeStart: `${p}lease.`, rangeEnd: `${p}lease/`, revision: rev })).kvs)).toEqual(['lease.a']);
      expect(keys((await store.listAll(p, 1, { rangeStart: `${p}lease.`, rangeEnd: `${p}lease/` })).kvs)).toEqual(['lease.a', 'lease.b']);
    });

    it('exactKey lists and watches one key only, not its longer siblings', async () => {
      await store.put(`${p}split.a`, 'a0');
      await store.put(`${p}split.ab`, 'ab0');
      await store.put(`${p}split.a.b`, 'a.b0');
      expect((await store.list(`${p}split.a`, exactKey(`${p}split.a`))).kvs.map((kv) => kv.value)).toEqual(['a0']);
      expect((await store.listAll(`${p}split.a`, 10, exactKey(`${p}split.a`))).kvs.map((kv) => kv.value)).toEqual(['a0']);
      const seen: WatchEvent[] = [];
      const h = store.watch(`${p}split.a`, { ...exactKey(`${p}split.a`), onEvent: (e) => seen.push(e) });
      await h.ready;
      await store.put(`${p}split.ab`, 'ab1');
      await store.put(`${p}split.a.b`, 'a.b1');
      await store.put(`${p}split.a`, 'a1');
      await store.delete(`${p}split.ab`);
      await store.delete(`${p}split.a`);
      const last = await store.put(`${p}split.a`, 'a2');
      await waitFor('the watch to reach the last put', () => seen.some((e) => e.modRevision === last));
      expect(seen.map((e) => [e.type, e.key.slice(p.length), e.value ?? null])).toEqual([
        ['put', 'split.a', 'a1'], ['delete', 'split.a', null], ['put', 'split.a', 'a2'],
      ]);
      await h.close();
    });

    it('a ranged watch delivers only its range, from a past revision too, and snapshotAndWatch narrows both halves', async () => {
      const from = await store.put(`${p}progress.a`, '1');
      await store.put(`${p}split.a`, 's1');
      await store.put(`${p}lease.a`, 'l1');
      const low: string[] = [];
      const high: string[] = [];
      const h1 = store.watch(p, { rangeEnd: `${p}progress.`, fromRevision: from, onEvent: (e) => low.push(e.key.slice(p.length)) });
      const h2 = store.watch(p, { rangeStart: `${p}progress/`, fromRevision: from, onEvent: (e) => high.push(e.key.slice(p.length)) });
      await Promise.all([h1.ready, h2.ready]);
      await store.put(`${p}progress.a`, '2');
      await store.put(`${p}assign.w`, 'x');
      const last = await store.put(`${p}worker.w`, 'y');
      await waitFor('both watches to catch up', () => low.includes('assign.w') && high.includes('worker.w'));
      expect(low).toEqual(['lease.a', 'assign.w']);
      expect(high).toEqual(['split.a', 'worker.w']);
      await Promise.all([h1.close(), h2.close()]);
      const snap: string[] = [];
      const live: string[] = [];
      const h3 = store.snapshotAndWatch(p, {
        onSnapshot: (kvs) => snap.push(...kvs.map((kv) => kv.key.slice(p.length))),
        onEvent: (e) => live.push(e.key.slice(p.length)),
      }, { rangeStart: `${p}progress/`, pageSize: 1 });
      await h3.ready;
      await store.put(`${p}progress.b`, '1');
      const end = await store.put(`${p}split.b`, 's');
      expect(end).toBeGreaterThan(last);
      await waitFor('the snapshot watch to see split.b', () => live.includes('split.b'));
      expect(snap).toEqual(['split.a', 'worker.w']);
      expect(live).toEqual(['split.b']);
      await h3.close();
    });

    it('tracks create and mod revisions; a losing txn writes nothing and keeps the revision', async () => {
      const r1 = await store.put(`${p}a`, 'v1');
      const r2 = await store.put(`${p}a`, 'v2');
      expect(r2).toBe(r1 + 1);
      expect(await store.get(`${p}a`)).toEqual({ key: `${p}a`, value: 'v2', createRevision: r1, modRevision: r2 });
      const lost = await store.txn({ compares: [cmp.absent(`${p}a`)], success: [op.put(`${p}b`, 'x')] });
      expect(lost).toEqual({ won: false, revision: r2, reads: [] });
      expect(await store.get(`${p}b`)).toBeUndefined();
      const r3 = await store.delete(`${p}a`);
      expect(r3).toBe(r2 + 1);
      expect(await store.delete(`${p}a`)).toBe(r3); // deleting a missing key changes nothing
      const r4 = await store.put(`${p}a`, 'v3');
      expect((await store.get(`${p}a`))?.createRevision).toBe(r4);
    });

    it('create-if-absent: exactly one of many concurrent creates wins', async () => {
      const other = await f.connect();
      const attempts = Array.from({ length: 12 }, (_, i) => (i % 2 ? other : store).createIfAbsent(`${p}leader`, `cand-${i}`));
      const results = await Promise.all(attempts);
      const winners = results.flatMap((r, i) => (r.won ? [i] : []));
      expect(winners).toHaveLength(1);
      const winner = `cand-${winners[0]}`;
      expect((await store.get(`${p}leader`))?.value).toBe(winner);
      for (const r of results) if (!r.won) expect(r.reads[0]?.value).toBe(winner);
    });

    it('compare-and-swap on a stale revision loses and writes nothing', async () => {
      const r1 = await store.put(`${p}rec`, 'v1');
      const swapped = await store.compareAndSwap(`${p}rec`, r1, 'v2');
      expect(swapped.won).toBe(true);
      const stale = await store.compareAndSwap(`${p}rec`, r1, 'zombie');
      expect(stale.won).toBe(false);
      expect(stale.revision).toBe(swapped.revision);
      expect(stale.reads[0]).toMatchObject({ value: 'v2', modRevision: swapped.revision });
      expect(await store.get(`${p}rec`)).toMatchObject({ value: 'v2', modRevision: swapped.revision, createRevision: r1 });
      expect((await store.compareAndSwap(`${p}missing`, r1, 'x')).won).toBe(false);
      expect(await store.get(`${p}missing`)).toBeUndefined();
    });

    it('guarded delete removes the key only at the expected revision', async () => {
      const r1 = await store.put(`${p}k`, 'v1');
      const r2 = await store.put(`${p}k`, 'v2');
      expect((await store.deleteIf(`${p}k`, r1)).won).toBe(false);
      expect((await store.get(`${p}k`))?.value).toBe('v2');
      const del = await store.deleteIf(`${p}k`, r2);
      expect(del).toMatchObject({ won: true, revision: r2 + 1 });
      expect(await store.get(`${p}k`)).toBeUndefined();
      expect((await store.deleteIf(`${p}k`, r2)).won).toBe(false);
    });

    it('a multi-key transaction is atomic: all writes at one revision, or none', async () => {
      const rA = await store.put(`${p}a`, 'a1');
      await store.put(`${p}c`, 'c1');
      const guards = [cmp.modRevision(`${p}a`, rA), cmp.absent(`${p}b`), cmp.value(`${p}c`, 'c1')];
      const writes = [op.put(`${p}a`, 'a2'), op.put(`${p}b`, 'b1'), op.delete(`${p}c`), op.get(`${p}a`)];
      const won = await store.txn({ compares: guards, success: writes, failure: [op.get(`${p}a`)] });
      expect(won.won).toBe(true);
      expect(won.reads).toEqual([{ key: `${p}a`, value: 'a2', createRevision: rA, modRevision: won.revision }]);
      expect((await store.get(`${p}a`))?.modRevision).toBe(won.revision);
      expect((await store.get(`${p}b`))?.modRevision).toBe(won.revision);
      expect(await store.get(`${p}c`)).toBeUndefined();
      // Same guards again: a is stale, b exists, c is gone. Nothing of the success branch lands.
      const lost = await store.txn({ compares: guards, success: [op.put(`${p}d`, 'd'), op.delete(`${p}a`)], failure: [op.get(`${p}b`), op.get(`${p}c`)] });
      expect(lost.won).toBe(false);
      expect(lost.revision).toBe(won.revision);
      expect(lost.reads.map((kv) => kv?.value)).toEqual(['b1', undefined]);
      expect(await store.get(`${p}d`)).toBeUndefined();
      expect((await store.get(`${p}a`))?.value).toBe('a2');
      // A failing compare on a missing key's value fails the whole txn.
      expect((await store.txn({ compares: [cmp.value(`${p}nope`, '')], success: [op.put(`${p}d`, 'd')] })).won).toBe(false);
    });

    it('refuses over-limit and malformed transactions before sending, naming the key and sizes', async () => {
      expect(store.limits).toEqual({ maxOpsPerTxn: 128, maxRequestBytes: 1.5 * MiB });
      const many = Array.from({ length: 129 }, (_, i) => op.put(`${p}many/${i}`, 'x'));
      await expectCode(store.txn({ compares: [], success: many }), 'RECORD_TOO_LARGE', '129');
      await expectCode(store.put(`${p}huge`, 'x'.repeat(1.6 * MiB)), 'RECORD_TOO_LARGE', `${p}huge`);
      await expectCode(store.createIfAbsent(`${p}huge`, 'é'.repeat(0.8 * MiB)), 'RECORD_TOO_LARGE', String(1.5 * MiB));
      await expectCode(store.txn({ compares: [], success: [op.put(`${p}d`, '1'), op.delete(`${p}d`)] }), 'INVALID_INPUT', `${p}d`);
      expect((await store.list(p)).kvs).toEqual([]);
      // Just under the limits is accepted by the backend itself.
      const ok = Array.from({ length: 128 }, (_, i) => op.put(`${p}many/${String(i).padStart(3, '0')}`, 'x'));
      expect((await store.txn({ compares: [], success: ok })).won).toBe(true);
      const big = Math.floor(1.4 * MiB);
      await store.put(`${p}big`, 'y'.repeat(big));
      expect((await store.get(`${p}big`))?.value.length).toBe(big);
    });

    it('refuses a lease TTL, a page size and a watch start out of range with INVALID_INPUT, naming the rule', async () => {
      for (const ttl of [0, 0.5, -1]) await expectCode(store.grantLease(ttl), 'INVALID_INPUT', '>= 1');
      for (const limit of [0, 1.5]) await expectCode(store.list(p, { limit }), 'INVALID_INPUT', 'positive integer');
      // A watch's refusal may come as a throw or as its `ready` rejecting; either names the rule.
      const watchFrom = async (fromRevision: number) => {
        try {
          await store.watch(p, { fromRevision, onEvent: () => undefined }).ready;
        } catch (e) {
          return e;
        }
        return undefined;
      };
      for (const from of [0, -3]) await expectCode(watchFrom(from).then((e) => Promise.reject(e)), 'INVALID_INPUT', '>= 1');
    });

    it('leases: keys carry the lease id, revoke deletes them and emits deletes, a gone lease is LEASE_LOST', async () => {
      const lease = await store.grantLease(30);
      expect(typeof lease).toBe('string');
      expect(BigInt(lease) > 0n).toBe(true);
      const events: WatchEvent[] = [];
      const w = store.watch(p, { onEvent: (e) => events.push(e) });
      await w.ready;
      await store.put(`${p}eph1`, 'one', { lease });
      await store.createIfAbsent(`${p}eph2`, 'two', lease);
      expect((await store.get(`${p}eph1`))?.lease).toBe(lease);
      expect((await store.txn({ compares: [cmp.lease(`${p}eph2`, lease)], success: [] })).won).toBe(true);
      expect((await store.keepAliveOnce(lease)).ttl).toBeGreaterThanOrEqual(29);
      await store.revokeLease(lease);
      expect(await store.get(`${p}eph1`)).toBeUndefined();
      expect(await store.get(`${p}eph2`)).toBeUndefined();
      await waitFor('two delete events', () => events.filter((e) => e.type === 'delete').length === 2);
      const deletes = events.filter((e) => e.type === 'delete');
      expect(deletes.map((e) => e.prevValue).sort()).toEqual(['one', 'two']);
      expect(deletes[0]!.modRevision).toBe(deletes[1]!.modRevision);
      await expectCode(store.keepAliveOnce(lease), 'LEASE_LOST');
      await store.revokeLease(lease); // idempotent
      await expectCode(store.put(`${p}eph3`, 'three', { lease }), 'LEASE_LOST');
      expect(await store.get(`${p}eph3`)).toBeUndefined();
      await w.close();
    });

    it('a key put without a lease reports none (get, list, watch), and cmp.noLease holds on it and on a missing key, not on a leased one', async () => {
      // What makes a presence or lease key put by hand not live (protocol/ephemeral.ts): both backends must say so alike.
      const lease = await store.grantLease(30);
      const events: WatchEvent[] = [];
      const w = store.watch(p, { onEvent: (e) => events.push(e) });
      await w.ready;
      await store.put(`${p}bare`, 'by hand');
      await store.put(`${p}leased`, 'live', { lease });
      expect((await store.get(`${p}bare`))?.lease).toBeUndefined();
      expect((await store.list(p)).kvs.map((kv) => [kv.key, kv.lease])).toEqual([[`${p}bare`, undefined], [`${p}leased`, lease]]);
      await waitFor('two put events', () => events.filter((e) => e.type === 'put').length === 2);
      expect(events.map((e) => [e.key, e.lease])).toEqual([[`${p}bare`, undefined], [`${p}leased`, lease]]);
      const holds = async (c: ReturnType<typeof cmp.noLease>) => (await store.txn({ compares: [c], success: [] })).won;
      expect(await holds(cmp.noLease(`${p}bare`))).toBe(true);
      expect(await holds(cmp.noLease(`${p}missing`))).toBe(true);
      expect(await holds(cmp.noLease(`${p}leased`))).toBe(false);
      // A claim's write over the bare key: guarded by noLease, it lands and attaches the lease.
      expect((await store.txn({ compares: [cmp.noLease(`${p}bare`)], success: [op.put(`${p}bare`, 'claimed', lease)] })).won).toBe(true);
      expect((await store.get(`${p}bare`))?.lease).toBe(lease);
      await store.revokeLease(lease);
      await w.close();
    });

    it('lease expiry deletes attached keys, a watch sees the delete, and keepAliveOnce then throws LEASE_LOST', async () => {
      const lease = await store.grantLease(2);
      const events: WatchEvent[] = [];
      const w = store.watch(p, { onEvent: (e) => events.push(e) });
      await w.ready;
      await store.put(`${p}worker`, 'alive', { lease });
      await store.put(`${p}durable`, 'stays');
      await f.passTime(1);
      expect((await store.get(`${p}worker`))?.value).toBe('alive');
      await f.passTime(1.5);
      await waitFor('the leased key to expire', async () => (await store.get(`${p}worker`)) === undefined);
      await waitFor('the expiry delete event', () => events.some((e) => e.type === 'delete'));
      const del = events.find((e) => e.type === 'delete')!;
      expect(del).toMatchObject({ type: 'delete', key: `${p}worker`, prevValue: 'alive' });
      expect(del.modRevision).toBeGreaterThan(events[1]!.modRevision);
      expect((await store.get(`${p}durable`))?.value).toBe('stays');
      await expectCode(store.keepAliveOnce(lease), 'LEASE_LOST');
      await w.close();
    });

    it('keepAliveOnce extends a lease past its original TTL', async () => {
      // 1 s margins either side: without the renewal the key is gone by t = 3.5 s at the latest.
      const lease = await store.grantLease(3);
      await store.put(`${p}kept`, 'v', { lease });
      await f.passTime(2);
      expect((await store.keepAliveOnce(lease)).ttl).toBeGreaterThanOrEqual(3);
      await f.passTime(2);
      expect((await store.get(`${p}kept`))?.value).toBe('v');
      await store.revokeLease(lease);
    });

    it('snapshot then watch: existing keys first, then every live change in order', async () => {
      await store.put(`${p}s/1`, 'a');
      await store.put(`${p}s/2`, 'b');
      const last = await store.put(`${p}s/3`, 'c');
      await store.put(`${p}t`, 'outside');
      const log: string[] = [];
      const events: WatchEvent[] = [];
      let snapshot: { kvs: KeyValue[]; revision: number } | undefined;
      const w = store.snapshotAndWatch(
        `${p}s/`,
        {
          onSnapshot: (kvs, revision) => {
            snapshot = { kvs, revision };
            log.push('snapshot');
          },
          onEvent: (e) => {
            events.push(e);
            log.push(`${e.type} ${e.key.slice(p.length)}`);
          },
        },
        { pageSize: 2 },
      );
      await w.ready;
      expect(snapshot!.kvs.map((kv) => kv.value)).toEqual(['a', 'b', 'c']);
      expect(snapshot!.revision).toBeGreaterThanOrEqual(last);
      const r1 = await store.put(`${p}s/2`, 'b2');
      await store.delete(`${p}s/1`);
      await store.txn({ compares: [], success: [op.put(`${p}s/4`, 'd'), op.put(`${p}s/5`, 'e')] });
      await store.put(`${p}u`, 'outside');
      await waitFor('four events', () => events.length >= 4);
      await new Promise((r) => setTimeout(r, 50));
      expect(log).toEqual(['snapshot', 'put s/2', 'delete s/1', 'put s/4', 'put s/5']);
      expect(events[0]).toMatchObject({ value: 'b2', prevValue: 'b', modRevision: r1 });
      expect(events[1]).toMatchObject({ prevValue: 'a', modRevision: r1 + 1 });
      expect(events[2]!.modRevision).toBe(r1 + 2);
      expect(events[3]!.modRevision).toBe(r1 + 2);
      expect(events[2]!.createRevision).toBe(r1 + 2);
      await w.close();
      await store.put(`${p}s/6`, 'after close');
      await new Promise((r) => setTimeout(r, 50));
      expect(events).toHaveLength(4);
    });

    it('a watch resumes from a past revision: replay then live, no gaps, no duplicates', async () => {
      const revs: number[] = [];
      for (let i = 0; i < 5; i++) revs.push(await store.put(`${p}k${i}`, `v${i}`));
      const seen: WatchEvent[] = [];
      const w = store.watch(p, { fromRevision: revs[2]!, onEvent: (e) => seen.push(e) });
      await w.ready;
      const live = await store.put(`${p}k0`, 'again');
      await waitFor('replayed and live events', () => seen.length >= 4);
      await new Promise((r) => setTimeout(r, 50));
      expect(seen.map((e) => [e.key.slice(p.length), e.modRevision])).toEqual([
        ['k2', revs[2]],
        ['k3', revs[3]],
        ['k4', revs[4]],
        ['k0', live],
      ]);
      expect(seen[3]).toMatchObject({ type: 'put', value: 'again', prevValue: 'v0', createRevision: revs[0] });
      await w.close();
    });

    it('paginates in UTF-8 key order and listAll reads every page at one revision', async () => {
      const keys = Array.from({ length: 25 }, (_, i) => `${p}items/${String(i).padStart(2, '0')}`);
      for (const k of keys) await store.put(k, k.slice(-2));
      await store.put(`${p}items0`, 'sibling, not under items/');
      const first = await store.list(`${p}items/`, { limit: 10 });
      expect(first.more).toBe(true);
      expect(first.kvs.map((kv) => kv.key)).toEqual(keys.slice(0, 10));
      // Writes after the first page are invisible to later pages read at its revision.
      await store.delete(keys[15]!);
      await store.put(`${p}items/15a`, 'new');
      const second = await store.list(`${p}items/`, { limit: 10, startAfter: keys[9]!, revision: first.revision });
      expect(second.kvs.map((kv) => kv.key)).toEqual(keys.slice(10, 20));
      expect(second.revision).toBe(first.revision);
      const now = await store.list(`${p}items/`, { startAfter: keys[19]! });
      expect(now.more).toBe(false);
      expect(now.kvs.map((kv) => kv.key)).toEqual(keys.slice(20));
      const all = await store.listAll(`${p}items/`, 7);
      expect(all.kvs.map((kv) => kv.key)).toEqual([...keys.slice(0, 15), `${p}items/15a`, ...keys.slice(16)]);
      // Byte order, not UTF-16 order: U+FF5E sorts before U+1F600 in UTF-8.
      await store.put(`${p}u/\u{1F600}`, 'emoji');
      await store.put(`${p}u/\uFF5E`, 'tilde');
      await store.put(`${p}u/z`, 'z');
      expect((await store.listAll(`${p}u/`, 1)).kvs.map((kv) => kv.value)).toEqual(['z', 'tilde', 'emoji']);
      // The empty prefix is the whole keyspace.
      const everything = await store.list('', { limit: 1 });
      expect(everything.kvs).toHaveLength(1);
      expect(everything.more).toBe(true);
    });

    it('compaction: resuming a watch or reading below it fails with a CompactedError', async () => {
      const old = await store.put(`${p}x`, '1');
      const current = await store.put(`${p}x`, '2');
      await store.compact(current);
      const errors: unknown[] = [];
      const events: WatchEvent[] = [];
      const w = store.watch(p, { fromRevision: old, onEvent: (e) => events.push(e), onError: (e) => errors.push(e) });
      await waitFor('the compaction error', () => errors.length === 1);
      expect(isCompactedError(errors[0])).toBe(true);
      expect(events).toEqual([]);
      await w.close();
      const err = await store.list(p, { revision: old }).catch((e: unknown) => e);
      expect(isCompactedError(err)).toBe(true);
      expect((await store.list(p, { revision: current })).kvs.map((kv) => kv.value)).toEqual(['2']);
    });

    it('fails with CLOSED after close(), and close is idempotent', async () => {
      await store.put(`${p}x`, '1');
      await store.close();
      await store.close();
      await expectCode(store.get(`${p}x`), 'CLOSED');
      await expectCode(store.put(`${p}x`, '2'), 'CLOSED');
      await expect(store.watch(p, { onEvent: () => undefined }).ready).rejects.toMatchObject({ code: 'CLOSED' });
    });
    },
  );
}
