/**
 * The engines every property and differential test runs against. An engine
 * joins this list once `desiredAssignment(input, { engine })` serves it; each
 * suite then runs once per entry under the spec's test names.
 */
import { desiredAssignment, type EngineName } from '../../../src/assignment/engine.js';
import type { AssignmentInput, AssignmentResult } from '../../../src/assignment/types.js';

export const ENGINES: readonly EngineName[] = ['reference', 'wasm'];

/** One decision by `engine`: the single call site, should an engine need setup. */
export function decide(engine: EngineName, input: AssignmentInput): AssignmentResult {
  return desiredAssignment(input, { engine });
}
