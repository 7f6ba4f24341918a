/**
 * Residual ids (decision 0063): the id of the split a division creates is a
 * function of its parent's id and the division's sequence number, so a
 * division sent twice (a reply lost) names the same residual, and a reader
 * tells a residual from a planned split by its id alone.
 *
 * Invariants:
 * - `residualId(parent, seq)` is a valid split id (1 to 1,024 UTF-8 bytes,
 *   well-formed) for every valid parent id and seq ≥ 1.
 * - Every residual id ends in `÷` and a canonical decimal; a planner may not
 *   plan such an id (`reservedIdProblem`), so a residual never collides with
 *   a planned split, and two divisions of one parent never collide.
 * - A parent too long for the suffix is replaced by a 128-bit hash of it, the
 *   residual keeping its parent in its spec (`parent`).
 *
 * Pure: no I/O, no clock.
 */
import { createHash } from 'node:crypto';
import { MAX_ID_BYTES, utf8ByteLength } from './keys.js';

/** What separates a residual's parent from its sequence number: U+00F7, rare in object keys and file names. */
export const RESIDUAL_MARK = '÷';
const RESIDUAL_FORM = /÷[1-9][0-9]*$/u;

/** The id of the `seq`-th residual divided from split `parent`. */
export function residualId(parent: string, seq: number): string {
  if (!Number.isSafeInteger(seq) || seq < 1) throw new RangeError(`a division's sequence number must be an integer ≥ 1 (got ${seq})`);
  const suffix = `${RESIDUAL_MARK}${seq}`;
  if (utf8ByteLength(parent) + utf8ByteLength(suffix) <= MAX_ID_BYTES) return `${parent}${suffix}`;
  // Too long to extend: a fixed-size stand-in for the parent, still unique per parent and seq.
  const h = createHash('sha256').update(parent, 'utf8').digest('hex').slice(0, 32);
  return `${RESIDUAL_MARK}h${h}${suffix}`;
}

/** Whether `id` has a residual's form (ends in `÷` and a canonical decimal). */
export function isResidualId(id: string): boolean {
  // indexOf first: seeding asks this of every planned id (10M at a time), and almost none has the mark.
  return id.indexOf(RESIDUAL_MARK) >= 0 && RESIDUAL_FORM.test(id);
}

/** The parent a residual id names, or undefined (not a residual, or one whose parent was too long and is hashed). */
export function parentOf(id: string): string | undefined {
  if (!isResidualId(id) || id.startsWith(`${RESIDUAL_MARK}h`)) return undefined;
  return id.slice(0, id.lastIndexOf(RESIDUAL_MARK));
}

/** Why a planner may not plan `id` (it has a residual's form), or undefined. */
export function reservedIdProblem(id: string): string | undefined {
  return isResidualId(id)
    ? `must not end in '${RESIDUAL_MARK}' and a number: that form is reserved for the residuals of divided splits (decision 0063)`
    : undefined;
}
