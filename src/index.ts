/**
 * The public surface of splitfleet, exported by name (no `export *`): what a
 * user may import, and all the CLI imports. Add new exports as one line each
 * in the section they belong to.
 */

// The desired assignment.
export { desiredAssignment } from './assignment/engine.js';
export type { DesiredAssignmentOptions, EngineName } from './assignment/engine.js';
export { DEFAULT_CAP } from './assignment/types.js';
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

// Errors.
export { isSplitfleetError, SplitfleetError } from './errors.js';
export type { SplitfleetErrorCode } from './errors.js';
