/**
 * `openStore`: the one place a store backend is chosen and made from a plain
 * description (`{ backend: 'etcd', endpoints, … }`), so the command line, the
 * demo and the fleet member process never name a backend's class (decision
 * 0082). A second backend is a member of `StoreSpec` and a case below, and
 * every caller reaches it.
 *
 * Invariants: a backend's module (and the client package it loads, etcd3 for
 * etcd) is imported when a store of it is opened, never when this file is, so
 * `import 'splitfleet'` still loads no gRPC (test/unit/package/entry-points.test.ts).
 * An unknown backend is refused with INVALID_CONFIG naming `backend` and the
 * ones there are. Must not hold a backend's rules: options are the backend's
 * own, passed through unchanged.
 */
import { SplitfleetError } from '../errors.js';
import type { EtcdStoreOptions } from './etcd/etcd-options.js';
import type { Store } from './store.js';

/** The backends `openStore` knows, by the name a `StoreSpec` gives. */
export const STORE_BACKENDS = ['etcd'] as const;

/**
 * Which store to open: a backend's name and that backend's own options. etcd: `EtcdStoreOptions`
 * (endpoints, TLS, auth, `opTimeoutMs`, …; docs/store.md, "Backend notes").
 */
export type StoreSpec = { readonly backend: 'etcd' } & EtcdStoreOptions;

/**
 * Opens the store `spec` describes (connections are made lazily, on the first call, as each backend
 * does). Rejects with INVALID_CONFIG for a backend it does not know, and with whatever the backend's
 * constructor refuses (etcd: no endpoint, a bad `opTimeoutMs`, unusable TLS material).
 */
export async function openStore(spec: StoreSpec): Promise<Store> {
  const { backend, ...options } = spec;
  switch (backend) {
    case 'etcd': {
      const { EtcdStore } = await import('./etcd/etcd.js');
      return new EtcdStore(options);
    }
    default:
      throw new SplitfleetError(
        'INVALID_CONFIG',
        `backend: must be one of ${STORE_BACKENDS.map((b) => `'${b}'`).join(', ')}; got ${JSON.stringify(backend satisfies never as unknown)}`,
      );
  }
}
