/**
 * The store factory (src/store/open.ts, decision 0082): a spec names its backend and carries that
 * backend's options unchanged; an unknown backend is refused naming `backend` and the ones there are.
 * No etcd is reached: EtcdStore connects lazily, on its first call.
 */
import { describe, expect, it } from 'vitest';
import { EtcdStore } from '../../../src/store/etcd/etcd.js';
import { openStore, STORE_BACKENDS, type StoreSpec } from '../../../src/store/open.js';
import { expectCode } from '../../../src/store/contract-fixture.js';

describe('openStore', () => {
  it("opens an EtcdStore for backend 'etcd', with the spec's options and without the backend's name", async () => {
    const store = await openStore({ backend: 'etcd', endpoints: ['http://127.0.0.1:1'], opTimeoutMs: 1234 });
    try {
      expect(store).toBeInstanceOf(EtcdStore);
      expect((store as unknown as { opTimeoutMs: number }).opTimeoutMs).toBe(1234);
    } finally {
      await store.close();
    }
  });

  it("passes the backend's own refusals through (etcd: no endpoint)", async () => {
    await expectCode(openStore({ backend: 'etcd', endpoints: [] }), 'INVALID_CONFIG', 'endpoint');
  });

  it('refuses a backend it does not know, naming the field and the backends there are', async () => {
    expect(STORE_BACKENDS).toEqual(['etcd']);
    const err = await expectCode(openStore({ backend: 'consul', endpoints: ['x'] } as unknown as StoreSpec), 'INVALID_CONFIG', "backend: must be one of 'etcd'");
    expect(err.message).toContain('got "consul"');
  });
});
