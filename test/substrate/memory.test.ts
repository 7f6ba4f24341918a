/**
 * The substrate suite on `MemoryStore` (real time: leases expire on the
 * system clock, as they do on etcd). One store is shared by every coordinator,
 * as one etcd is shared by a fleet.
 */

import { MemoryStore } from '../../src/store/memory.js';
import { substrateSuite } from './substrate-suite.js';

substrateSuite('memory', async () => {
  const store = new MemoryStore();
  return {
    store,
    connect: async () => store,
    close: () => store.close(),
  };
});
