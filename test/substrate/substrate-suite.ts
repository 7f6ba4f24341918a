/**
 * THE behavioural suite of the coordination substrate (substrate.md), run on
 * every backend: test/substrate/memory.test.ts (MemoryStore) and
 * test/substrate/etcd.test.ts (a real etcd). The same assertions must hold on
 * both; what needs real processes (SIGKILL, SIGSTOP) lives in
 * test/etcd/substrate-processes.test.ts.
 */

import { afterAll, beforeAll } from 'vitest';
import type { SubstrateFixture } from './fixture.js';
import { ownershipSuite } from './ownership.js';
import { refusalSuite } from './refusals.js';

/** Runs the whole suite against the backend made by `setup` (once for the file). */
export function substrateSuite(backend: string, setup: () => Promise<SubstrateFixture>): void {
  let fixture: SubstrateFixture | undefined;
  beforeAll(async () => {
    fixture = await setup();
  });
  afterAll(async () => {
    await fixture?.close();
  });
  const get = (): SubstrateFixture => {
    if (!fixture) throw new Error('the substrate fixture was not set up');
    return fixture;
  };
  ownershipSuite(backend, get);
  refusalSuite(backend, get);
}
