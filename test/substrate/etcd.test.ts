/**
 * The substrate suite on a real etcd (one throwaway server for the file).
 * Every coordinator gets its own client connection, as a separate process
 * would, so claim races are real races on the server.
 */

import { afterAll, beforeAll } from 'vitest';
import { EtcdStore } from '../../src/store/etcd/etcd.js';
import type { Store } from '../../src/store/store.js';
import { startEtcd, type EtcdHandle } from '../support/etcd.js';
import { substrateSuite } from './substrate-suite.js';

let etcd: EtcdHandle | undefined;
beforeAll(async () => {
  etcd = await startEtcd();
});
afterAll(async () => {
  await etcd?.stop();
});

substrateSuite('etcd', async () => {
  const clients: Store[] = [];
  const connect = async (): Promise<Store> => {
    if (!etcd) throw new Error('etcd did not start');
    const s = new EtcdStore({ endpoints: [etcd.endpoint], opTimeoutMs: 5_000 });
    clients.push(s);
    return s;
  };
  return {
    store: await connect(),
    connect,
    close: async () => {
      await Promise.all(clients.map((c) => c.close().catch(() => undefined)));
    },
  };
});
