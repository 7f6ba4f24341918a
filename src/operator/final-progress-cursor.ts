/**
 * The cursor of `readFinalProgress` (final-progress.ts): where the next page
 * starts. A job's final progress is read in two passes, and the cursor says
 * which and where:
 * - `split`: the splits with a record of their own, in key order (every split
 *   of a `keys` job; a packed job's departed, quarantined or not yet folded
 *   ones), after the key `after` (under the job prefix: `split.{id}`);
 * - `result`: a packed job's fold-back results (decision 0069), in fold order,
 *   from the first record, or from `at`'s record (`result.{generation}.{seq}`)
 *   after `skip` of its entries.
 *
 * The text is opaque to callers (base64url of JSON) and checked when read
 * back: a cursor this reader did not write is refused naming the field.
 *
 * Pure: no I/O.
 */
import { SplitfleetError } from '../errors.js';
import { MAX_FOLD_NUMBER, MAX_ID_BYTES } from '../protocol/keys.js';

export type FinalProgressCursor =
  | { readonly pass: 'split'; readonly after: string }
  | { readonly pass: 'result'; readonly at?: ResultPosition };

/** A place in a result record: its key's numbers and how many of its entries were read. */
export interface ResultPosition {
  readonly generation: number;
  readonly seq: number;
  readonly skip: number;
}

/** The text of a cursor, as a page's `next` carries it. */
export function encodeCursor(c: FinalProgressCursor): string {
  const parts = c.pass === 'split' ? ['s', c.after] : c.at === undefined ? ['r'] : ['r', c.at.generation, c.at.seq, c.at.skip];
  return Buffer.from(JSON.stringify(parts), 'utf8').toString('base64url');
}

function refuse(field: string, rule: string): SplitfleetError {
  return new SplitfleetError('INVALID_INPUT', `${field}: ${rule} (pass the \`next\` of the page before, unchanged)`);
}

const isCount = (n: unknown, max: number): n is number => typeof n === 'number' && Number.isInteger(n) && n >= 0 && n <= max;

/** The cursor `text` encodes; INVALID_INPUT naming `field` when it is not one this reader wrote. */
export function decodeCursor(text: unknown, field = 'after'): FinalProgressCursor {
  if (typeof text !== 'string' || text.length === 0 || !/^[A-Za-z0-9_-]+$/.test(text)) {
    throw refuse(field, 'must be a non-empty cursor string from a previous page');
  }
  let parts: unknown;
  try {
    parts = JSON.parse(Buffer.from(text, 'base64url').toString('utf8'));
  } catch {
    throw refuse(field, 'is not a cursor this reader wrote');
  }
  // A key of the split pass: `split.` and an encoded id (at most 3 bytes a byte of the id).
  if (Array.isArray(parts) && parts.length === 2 && parts[0] === 's' && typeof parts[1] === 'string'
    && parts[1].startsWith('split.') && parts[1].length <= 'split.'.length + 3 * MAX_ID_BYTES) {
    return { pass: 'split', after: parts[1] as string };
  }
  if (Array.isArray(parts) && parts.length === 1 && parts[0] === 'r') return { pass: 'result' };
  if (Array.isArray(parts) && parts.length === 4 && parts[0] === 'r'
    && isCount(parts[1], MAX_FOLD_NUMBER) && isCount(parts[2], MAX_FOLD_NUMBER) && isCount(parts[3], Number.MAX_SAFE_INTEGER)) {
    return { pass: 'result', at: { generation: parts[1], seq: parts[2], skip: parts[3] } };
  }
  throw refuse(field, 'is not a cursor this reader wrote');
}
