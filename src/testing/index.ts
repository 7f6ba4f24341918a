/**
 * `splitfleet/testing`: unit-test a split handler without a fleet or a store.
 * `runHandler(handler, { descriptor, progress, drainAt, abortAt })` runs it
 * once on a fake handle and records its commits, the drain and the outcome;
 * `fakeSplitHandle` gives the handle and its controls to drive by hand.
 * Add new exports as one line each.
 */
export { fakeSplitHandle } from './fake-handle.js';
export type { FakeHandleEnd, FakeHandleEvent, FakeSplit, FakeSplitOptions } from './fake-handle.js';
export { runHandler } from './run-handler.js';
export type { CommitTrigger, HandlerOutcome, HandlerRun, RunHandlerOptions } from './run-handler.js';
