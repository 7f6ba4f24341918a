/**
 * `desiredAssignment`: the leader's decision, dispatched to an engine.
 * Both engines return the same output for the same input (differential
 * tests hold them to it); this wrapper only chooses one and times it.
 */
import { referenceAssignment } from './reference.js';
import type { AssignmentInput, AssignmentResult } from './types.js';
import { wasmAssignment } from './wasm.js';

export type EngineName = 'reference' | 'wasm';

export interface DesiredAssignmentOptions {
  /** Default 'wasm'; 'reference' is the readable oracle. */
  engine?: EngineName;
}

/** Computes the desired assignment (instance → split ids) for `input`. */
export function desiredAssignment(input: AssignmentInput, options: DesiredAssignmentOptions = {}): AssignmentResult {
  const engine = options.engine ?? 'wasm';
  const started = performance.now();
  let result: AssignmentResult;
  switch (engine) {
    case 'reference':
      result = referenceAssignment(input);
      break;
    case 'wasm':
      result = wasmAssignment(input);
      break;
  }
  result.stats.computeMs = performance.now() - started;
  return result;
}
