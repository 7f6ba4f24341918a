/**
 * The set-up every in-process fleet test on real etcd shares: one throwaway
 * etcd and one EtcdStore per file, the members a test opened closed after it.
 */
import { afterAll, afterEach, beforeAll } from 'vitest';
import { EtcdStore } from '../../src/store/etcd/etcd.js';
import { startEtcd, type EtcdHandle } from './etcd.js';
import type { InProcessMember } from './in-process.js';

/** Registers the hooks; `ready` receives the store and etcd once started. */
export function useEtcdFleet(open: InProcessMember[], ready: (store: EtcdStore, etcd: EtcdHandle) => void): void {
  let etcd: EtcdHandle | undefined;
  let store: EtcdStore | undefined;
  beforeAll(async () => {
    etcd = await startEtcd();
    store = new EtcdStore({ endpoints: etcd.endpoint, opTimeoutMs: 2000 });
    ready(store, etcd);
  });
  afterEach(async () => {
    await Promise.all(open.splice(0).map((m) => m.close()));
  });
  afterAll(async () => {
    await store?.close();
    await etcd?.stop();
  });
}
