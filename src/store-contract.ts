/**
 * `splitfleet/store-contract`: the store contract's behavioural suite, for a
 * backend written outside this repository (a class over `BaseStore`, from
 * `splitfleet`). In a vitest file: `storeContract('mine', async () => ({
 * store, connect, passTime, close }))` registers every test of the contract
 * against it, as this repository runs it on MemoryStore and etcd
 * (docs/backends.md). Loads vitest (an optional peer
 * dependency of this entry alone), never etcd3 or hono. Add new exports as
 * one line each.
 */
export { storeContract } from './store/contract.js';
export { expectCode, memoryContractFixture } from './store/contract-fixture.js';
export type { ContractFixture } from './store/contract-fixture.js';
