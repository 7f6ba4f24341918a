/**
 * The store contract on `MemoryStore`, with lease time driven by a
 * `VirtualClock`, plus the memory-only simulation hooks.
 */

import { describe, expect, it } from 'vitest';
import { VirtualClock } from '../../src/clock.js';
import { MemoryStore } from '../../src/store/memory.js';
import type { WatchEvent } from '../../src/store/store.js';
import { memoryContractFixture, storeContract } from '../../src/store/contract.js';

/** Lets queued microtasks and timers run. */
const settle = () => new Promise<void>((r) => setImmediate(r));

storeContract('memory', memoryContractFixture());

describe('MemoryStore simulation hooks', () => {
  it('counts txns, writes and reads; a losing txn is not a write', async () => {
    const store = new MemoryStore({ clock: new VirtualClock() });
    await store.put('a', '1');
    await store.createIfAbsent('a', '2');
    await store.get('a');
    await store.listAll('', 1);
    expect(store.stats).toEqual({ txns: 2, writes: 1, reads: 2 });
    expect(store.currentRevision).toBe(2);
    await store.close();
  });

  it('expireLease deletes the keys at once and watches see it asynchronously', async () => {
    const store = new MemoryStore({ clock: new VirtualClock() });
    const lease = await store.grantLease(60);
    await store.put('w/1', 'x', { lease });
    const events: WatchEvent[] = [];
    store.watch('w/', { onEvent: (e) => events.push(e) });
    store.expireLease(lease);
    expect(events).toEqual([]); // delivery is never synchronous
    expect(await store.get('w/1')).toBeUndefined();
    await settle();
    expect(events).toEqual([{ type: 'delete', key: 'w/1', modRevision: 3, prevValue: 'x' }]);
    await store.close();
  });

  it('refuses an over-limit txn before it reaches the store', async () => {
    const store = new MemoryStore({ clock: new VirtualClock() });
    await expect(store.put('big', 'x'.repeat(2 * 1024 * 1024))).rejects.toMatchObject({ code: 'RECORD_TOO_LARGE' });
    expect(store.stats.txns).toBe(0);
    await store.close();
  });

  it('a lease with no keys expires without creating a revision', async () => {
    const clock = new VirtualClock();
    const store = new MemoryStore({ clock });
    await store.grantLease(1);
    clock.advance(5_000);
    expect(store.currentRevision).toBe(1);
    await store.close();
  });
});
