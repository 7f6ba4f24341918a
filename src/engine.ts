/**
 * `splitfleet/engine`: the desired assignment as a plain function of its
 * input (`desiredAssignment`, reference or WASM engine), the thread pool that
 * runs it off the event loop (`AssignmentPool`), the columnar form the leader
 * decides on, and the quality figures (balance, churn). For planning
 * capacity, benchmarks and tools (`splitfleet plan`); a coordinator needs
 * none of it. Add new exports as one line each.
 */
export { desiredAssignment } from './assignment/engine.js';
export type { DesiredAssignmentOptions, EngineName } from './assignment/engine.js';
export { DEFAULT_CAP } from './assignment/types.js';
export { AssignmentPool } from './assignment/pool.js';
export type { AssignmentPoolOptions } from './assignment/pool.js';
export { ColumnarPool } from './assignment/codec.js';
export type { ColumnarDecision } from './assignment/codec.js';
export { columnarAssignment } from './assignment/wasm.js';
export type {
  AssignmentInput,
  AssignmentResult,
  AssignmentStats,
  MemberInput,
  SplitInput,
  SplitStatus,
} from './assignment/types.js';

// Quality figures: balance and churn.
export { churn, loadFigures, lowerBound } from './assignment/quality.js';
export type { Churn, LoadFigures } from './assignment/quality.js';
