/**
 * The set-up every fleet test on real etcd shares: one throwaway etcd and one
 * EtcdStore per file, the members a test opened ended after it: closed
 * (in-process members, `useEtcdFleet`) or SIGKILLed (OS processes,
 * `useEtcdProcessFleet`, which first checks the compiled member exists so a
 * missing `dist/` fails loudly before etcd starts).
 */
import { afterAll, afterEach, beforeAll } from 'vitest';
import { EtcdStore } from '../../src/store/etcd/etcd.js';
import { startEtcd, type EtcdHandle } from './etcd.js';
import { fleetProcessScript, type FleetMember } from './fleet.js';
import type { InProcessMember } from './in-process.js';

type Ready = (store: EtcdStore, etcd: EtcdHandle) => void;

/** Registers the hooks for in-process members; `ready` receives the store and etcd once started. */
export function useEtcdFleet(open: InProcessMember[], ready: Ready): void {
  useEtcd(ready, async () => {
    await Promise.all(open.splice(0).map((m) => m.close()));
  });
}

/** Registers the hooks for members run as OS processes (test/support/fleet.ts); `ready` as above. */
export function useEtcdProcessFleet(members: FleetMember[], ready: Ready): void {
  beforeAll(() => {
    fleetProcessScript();
  });
  useEtcd(ready, async () => {
    await Promise.all(members.splice(0).map((m) => m.kill()));
  });
}

function useEtcd(ready: Ready, endMembers: () => Promise<void>): void {
  let etcd: EtcdHandle | undefined;
  let store: EtcdStore | undefined;
  beforeAll(async () => {
    etcd = await startEtcd();
    store = new EtcdStore({ endpoints: etcd.endpoint, opTimeoutMs: 2000 });
    ready(store, etcd);
  });
  afterEach(endMembers);
  afterAll(async () => {
    await store?.close();
    await etcd?.stop();
  });
}
