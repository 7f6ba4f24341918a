/**
 * `splitfleet/testing`: unit-test a split handler without a fleet or a store.
 * `runHandler(handler, { descriptor, progress, drainAt, abortAt })` runs it
 * once on a fake handle and records its commits, the drain and the outcome;
 * `fakeSplitHandle` gives the handle and its controls to drive by hand.
 * For a fleet test: the synthetic job (`syntheticPlanner`, `pacedHandler`)
 * reports every processed unit to a `Ledger`, whose `check` counts units lost
 * (never allowed) and duplicated (allowed: at least once). The fleet member
 * process, its spawner and the fault facade beside them are internal: the
 * demo's and this repository's suites', not API.
 * Add new exports as one line each.
 */
export { fakeSplitHandle } from './fake-handle.js';
export type { FakeDivision, FakeHandleEnd, FakeHandleEvent, FakeSplit, FakeSplitOptions } from './fake-handle.js';
export { runHandler } from './run-handler.js';
export type { CommitTrigger, HandlerOutcome, HandlerRun, RunHandlerOptions } from './run-handler.js';
export { Ledger } from './ledger.js';
export type { LaneEvent, LedgerCheck, LedgerLine, LedgerSource, UnitEntry } from './ledger.js';
export { pacedHandler, syntheticPlanner, syntheticSplits } from './synthetic.js';
export type { DrainBehaviour, PacedHandlerOptions, SyntheticJob, SyntheticSplit } from './synthetic.js';
