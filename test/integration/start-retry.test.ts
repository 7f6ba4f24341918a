/**
 * startCoordinator during a store outage: retryable failures are retried
 * until `startTimeoutMs`, then the last one is the rejection; a
 * non-retryable one rejects at once. On MemoryStore behind a facade that
 * fails the first N requests (a store that is still electing, say).
 */
import { describe, expect, it } from 'vitest';
import { startCoordinator } from '../../src/coordinator/coordinator.js';
import { silentLogger } from '../../src/coordinator/log.js';
import { isSplitfleetError, SplitfleetError } from '../../src/errors.js';
import { MemoryStore } from '../../src/store/memory.js';
import type { Txn, TxnResult } from '../../src/store/store.js';

/** Fails the next `failures` transactions with `error`, then behaves. */
class FlakyStore extends MemoryStore {
  failures = 0;
  failed = 0;
  error: SplitfleetError = new SplitfleetError('STORE_UNAVAILABLE', 'etcd is unreachable (a test fault)', { retryable: true });

  override txn(txn: Txn): Promise<TxnResult> {
    if (this.failures > 0) {
      this.failures--;
      this.failed++;
      return Promise.reject(this.error);
    }
    return super.txn(txn);
  }
}

const options = (store: MemoryStore, startTimeoutMs: number) => ({
  store, job: 'start-retry', instance: 'w0', logger: silentLogger, startTimeoutMs,
  leaseDurationMs: 2000, opTimeoutMs: 500, drainDeadlineMs: 500,
  planner: () => ({ splits: [], final: false }), handler: async () => undefined,
});

describe('startCoordinator and a store that is not there yet', () => {
  it('retries retryable failures within startTimeoutMs and then starts', async () => {
    const store = new FlakyStore();
    store.failures = 3;
    const c = await startCoordinator(options(store, 10_000));
    expect(store.failed).toBe(3);
    expect(c.view.self?.rec.instance).toBe('w0');
    await c.stop();
    await store.close();
  });

  it('rejects with the last retryable failure once startTimeoutMs has passed', async () => {
    const store = new FlakyStore();
    store.failures = 1_000;
    const err = await startCoordinator(options(store, 300)).then(() => undefined, (e: unknown) => e);
    expect(isSplitfleetError(err, 'STORE_UNAVAILABLE')).toBe(true);
    expect(store.failed).toBeGreaterThan(1);
    await store.close();
  });

  it('rejects a non-retryable failure at once', async () => {
    const store = new FlakyStore();
    store.failures = 1_000;
    store.error = new SplitfleetError('STORE_UNAVAILABLE', 'etcd denied permission (a test fault)', { retryable: false });
    const err = await startCoordinator(options(store, 10_000)).then(() => undefined, (e: unknown) => e);
    expect((err as Error).message).toMatch(/denied permission/);
    expect(store.failed).toBe(1);
    await store.close();
  });
});
