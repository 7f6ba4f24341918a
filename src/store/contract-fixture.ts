/**
 * What the store contract suite (contract.ts) is given and uses: the
 * fixture a backend provides, the MemoryStore fixture (optionally through a
 * decorator, so a decorator is held to the same contract), and the assertion
 * that a call fails with a given SplitfleetError code.
 */
import { expect } from 'vitest';
import { VirtualClock } from '../clock.js';
import { isSplitfleetError } from '../errors.js';
import { MemoryStore } from './memory.js';
import type { Store } from './store.js';

/** What a backend provides to the suite. */
export interface ContractFixture {
  store: Store;
  /** Another client of the same backend (etcd: a second connection; memory: the same store). */
  connect(): Promise<Store>;
  /** Lets `seconds` of lease time pass (virtual clock advance, or a real sleep). */
  passTime(seconds: number): Promise<void>;
  /** Releases everything the fixture made. */
  close(): Promise<void>;
}

/** Awaits `p` and asserts it rejected with a SplitfleetError of `code`, whose message mentions `mentions`. */
export async function expectCode(p: Promise<unknown>, code: string, mentions?: string): Promise<Error> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(isSplitfleetError(err), `expected a SplitfleetError ${code}, got ${String(err)}`).toBe(true);
  expect((err as { code: string }).code).toBe(code);
  if (mentions !== undefined) expect((err as Error).message).toContain(mentions);
  return err as Error;
}

/**
 * The fixture of a MemoryStore on a VirtualClock (leases expire as the test passes time),
 * optionally seen through a decorator (`wrap`), so a decorator is held to the same contract.
 */
export function memoryContractFixture(wrap: (store: MemoryStore) => Store = (s) => s): () => Promise<ContractFixture> {
  return async () => {
    const clock = new VirtualClock();
    const store = wrap(new MemoryStore({ clock }));
    return {
      store,
      connect: async () => store,
      passTime: async (seconds) => {
        clock.advance(seconds * 1000);
        await new Promise<void>((r) => setImmediate(r)); // queued microtasks and timers run
      },
      close: () => store.close(),
    };
  };
}

