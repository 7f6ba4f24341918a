/**
 * `splitfleet/etcd`: the store over a real etcd. Its own entry point so that
 * `import 'splitfleet'` (a `MemoryStore` test, a handler's unit test) never
 * loads etcd3 and gRPC; a production process imports both. Add new exports
 * as one line each.
 */
export { EtcdStore } from './store/etcd/etcd.js';
export type { EtcdStoreOptions } from './store/etcd/etcd.js';
export { sendsPasswordInClear } from './store/etcd/etcd-options.js';
