/**
 * The set-up every suite shares that runs real coordinators in this process on a
 * MemoryStore (or a store the test gives, a MemoryStore that counts or refuses):
 * each starts with the fast knobs and a silent logger unless the test says
 * otherwise, and every one a test started is closed after it, whatever happened.
 * A test still writes its own scenario: which members, which store, which knobs
 * differ from `FAST`.
 */
import { afterEach } from 'vitest';
import { startCoordinator, type Coordinator, type CoordinatorOptions } from '../../src/coordinator/coordinator.js';
import { silentLogger } from '../../src/coordinator/log.js';
import { MemoryStore } from '../../src/store/memory.js';
import type { Store } from '../../src/store/store.js';
import type { Json } from '../../src/coordinator/types.js';

/** The knobs these tests use unless a test says otherwise. */
export const FAST = Object.freeze({
  leaseDurationMs: 2000,
  opTimeoutMs: 500,
  rebalanceDelayMs: 0,
  drainDeadlineMs: 1000,
  reconcileIntervalMs: 2000,
});

/** A member's options: a coordinator's, the store optional (a fresh MemoryStore when left out). */
export type MemberOptions<Descriptor extends Json = Json, Progress extends Json = Json> = Omit<CoordinatorOptions<Descriptor, Progress>, 'store'> & { store?: Store };

export interface MemoryFleet {
  /** Starts a coordinator with `FAST` and `silentLogger` under `options`; it is closed after the test. */
  start<Descriptor extends Json = Json, Progress extends Json = Json>(options: MemberOptions<Descriptor, Progress>): Promise<Coordinator>;
}

/** Registers the hook that closes, after each test, every coordinator the test started through `start`. */
export function useMemoryFleet(): MemoryFleet {
  const open: Coordinator[] = [];
  afterEach(async () => {
    for (const c of open.splice(0)) await c.close().catch(() => undefined);
  });
  return {
    async start({ store = new MemoryStore(), ...options }) {
      const c = await startCoordinator({ logger: silentLogger, ...FAST, ...options, store });
      open.push(c);
      return c;
    },
  };
}
