/**
 * The bounds every stored record is held to, so that a record that decodes
 * can always be written back (decision 0026). A hand-written value can be
 * valid JSON and still break a process: a 20,000-deep array decodes (as a
 * newer minor's field) and then overflows the stack of `JSON.stringify` when
 * the record is rewritten. So a record is refused, as INVALID_RECORD naming
 * the field and the rule, when it is:
 * - larger than MAX_RECORD_BYTES (one store request: etcd's default limit);
 * - nested deeper than MAX_RECORD_DEPTH (checked on the raw text by a linear
 *   scan, before JSON.parse ever recurses into it);
 * - an object with a key twice (JSON.parse would keep the last silently, so
 *   two readers of other parsers could disagree on what the record says);
 * - carrying more than MAX_UNKNOWN_FIELDS fields this build does not know, or
 *   more than MAX_UNKNOWN_BYTES of them, or one that is not JSON this build
 *   can write back (1e999 parses to Infinity).
 *
 * Pure: no I/O, no clock.
 */
import { DEFAULT_LIMITS } from '../store/store.js';
import { utf8ByteLength } from './keys.js';
import { BACKSLASH, CLOSE_ARRAY, CLOSE_OBJECT, COLON, COMMA, OPEN_ARRAY, OPEN_OBJECT, QUOTE } from './json-chars.js';

/** The largest record, in UTF-8 bytes: one store request (etcd's `--max-request-bytes` default, 1.5 MiB). */
export const MAX_RECORD_BYTES = DEFAULT_LIMITS.maxRequestBytes;
/** The deepest nesting of arrays and objects in a record, the record's own object counting 1 (serde_json's default limit). */
export const MAX_RECORD_DEPTH = 128;
/** The most fields a record may carry that this build does not know (a newer minor's). */
export const MAX_UNKNOWN_FIELDS = 64;
/** The most UTF-8 bytes those fields may take, encoded (names and values): a newer minor adds metadata, not payload. */
export const MAX_UNKNOWN_BYTES = 64 * 1024;

/**
 * Below this many UTF-16 units, a record's canonical re-encoding cannot
 * exceed MAX_RECORD_BYTES. Re-encoding lengthens only numbers written short
 * (`1e20` comes back as 21 digits: 5.25 bytes a unit) and lone surrogates
 * given raw (one unit comes back as a 6-byte escape); any other unit is at
 * most 3 UTF-8 bytes. Longer records are re-encoded once at decode to check.
 */
export const REENCODE_CHECK_UNITS = Math.floor(MAX_RECORD_BYTES / 6);

/** What the scan before JSON.parse found: a problem, or the key count to check the parsed value against. */
export interface TextScan {
  problem: string | undefined;
  /** Object keys in the text, at every depth (a key is what precedes a ':' outside strings). */
  keys: number;
  /** Keys of the outermost object. */
  topKeys: number;
}

/**
 * Scans JSON text for nesting deeper than `maxDepth`, in one pass that tracks
 * structure outside strings (iterative: no recursion, linear in the text), and
 * counts its keys, which `duplicateKeysProblem` checks once it is parsed.
 * Malformed text is scanned without complaint (JSON.parse reports it next),
 * but a hostile text never reaches JSON.parse with more than `maxDepth` of
 * nesting. As cheap as a scan can be: about a third of JSON.parse's time.
 */
export function scanJsonText(text: string, maxDepth = MAX_RECORD_DEPTH): TextScan {
  let depth = 0;
  let keys = 0;
  let topKeys = 0;
  let field = -1;
  const hasEscapes = text.indexOf('\\') >= 0;
  const n = text.length;
  for (let i = 0; i < n; i++) {
    const c = text.charCodeAt(i);
    if (c === QUOTE) {
      if (depth === 1) field = i;
      i = stringEnd(text, i, hasEscapes);
    } else if (c === OPEN_OBJECT || c === OPEN_ARRAY) {
      if (++depth > maxDepth) {
        const name = field < 0 ? 'the record' : `field ${JSON.stringify(readKey(text, field) ?? '?')}`;
        const problem = `${name} nests arrays and objects deeper than ${maxDepth} levels (rule: a record nests at most ${maxDepth} deep, its own object counting 1)`;
        return { problem, keys, topKeys };
      }
    } else if (c === CLOSE_OBJECT || c === CLOSE_ARRAY) {
      depth--;
    } else if (c === COLON) {
      keys++;
      if (depth === 1) topKeys++;
    }
  }
  return { problem: undefined, keys, topKeys };
}

/** The index of the quote closing the string opened at `i` (text.length when unterminated). */
function stringEnd(text: string, i: number, hasEscapes: boolean): number {
  const n = text.length;
  let j = text.indexOf('"', i + 1);
  if (j < 0) return n;
  // A quote preceded by an odd run of backslashes is inside the string.
  while (hasEscapes && oddBackslashesBefore(text, j)) {
    j = text.indexOf('"', j + 1);
    if (j < 0) return n;
  }
  return j;
}

/** The string whose opening quote is at `i`, decoded (undefined when malformed). */
function readKey(text: string, i: number): string | undefined {
  const j = stringEnd(text, i, true);
  const quoted = text.slice(i, j + 1);
  return quoted.includes('\\') ? unescapeKey(quoted) : quoted.slice(1, -1);
}

/**
 * A key given twice in one object, or undefined. JSON.parse keeps the last
 * of them silently, so the parsed value has fewer keys than the text: the
 * outermost object's are counted for free, nested ones (only where the text
 * has any) by one walk of the parsed value. The slow scan that names the key
 * runs only when a count disagrees.
 */
export function duplicateKeysProblem(text: string, parsed: object, topKeyCount: number, scan: TextScan): string | undefined {
  let same = topKeyCount === scan.topKeys;
  if (same && scan.keys > scan.topKeys) same = countKeys(parsed) === scan.keys;
  if (same) return undefined;
  return findDuplicateKey(text) ?? 'an object holds a key twice (rule: no duplicate keys; JSON.parse would keep the last silently)';
}

/** Own keys of every object in a parsed JSON value, iteratively (its nesting is bounded, but stay cheap on the stack). */
function countKeys(value: object): number {
  let n = 0;
  const stack: unknown[] = [value];
  while (stack.length > 0) {
    const v = stack.pop();
    if (typeof v !== 'object' || v === null) continue;
    if (Array.isArray(v)) {
      for (const x of v) if (typeof x === 'object' && x !== null) stack.push(x);
      continue;
    }
    for (const k in v) {
      if (!Object.hasOwn(v, k)) continue;
      n++;
      const x = (v as Record<string, unknown>)[k];
      if (typeof x === 'object' && x !== null) stack.push(x);
    }
  }
  return n;
}

/**
 * Names the first key given twice in one object, or undefined: the slow scan
 * (it keeps every open object's keys), run only once a duplicate is known.
 */
function findDuplicateKey(text: string): string | undefined {
  // The keys of every open object, flat: an object's keys start at its entry of `starts`
  // (-1 for an array), and go when it closes. Searched linearly while an object is small,
  // through a Set once it is not.
  const keys: string[] = [];
  const starts: number[] = [];
  const sets: (Set<string> | undefined)[] = [];
  let expectKey = false;
  let field: string | undefined;
  const n = text.length;
  for (let i = 0; i < n; i++) {
    const c = text.charCodeAt(i);
    if (c === QUOTE) {
      const j = stringEnd(text, i, true);
      const depth = starts.length;
      if (expectKey && depth > 0 && starts[depth - 1]! >= 0) {
        const key = readKey(text, i);
        if (key !== undefined) {
          if (hasKey(keys, starts[depth - 1]!, sets, depth - 1, key)) {
            return depth === 1
              ? `field ${JSON.stringify(key)} appears twice (rule: no duplicate keys; JSON.parse would keep the last silently)`
              : `field ${JSON.stringify(field ?? '?')} holds an object with key ${JSON.stringify(key)} twice (rule: no duplicate keys; JSON.parse would keep the last silently)`;
          }
          keys.push(key);
          sets[depth - 1]?.add(key);
          if (depth === 1) field = key;
        }
        expectKey = false;
      }
      i = j;
    } else if (c === OPEN_OBJECT || c === OPEN_ARRAY) {
      starts.push(c === OPEN_OBJECT ? keys.length : -1);
      sets.push(undefined);
      expectKey = c === OPEN_OBJECT;
    } else if (c === CLOSE_OBJECT || c === CLOSE_ARRAY) {
      const start = starts.pop();
      sets.pop();
      if (start !== undefined && start >= 0) keys.length = start;
      expectKey = false;
    } else if (c === COMMA) {
      expectKey = starts.length > 0 && starts[starts.length - 1]! >= 0;
    }
  }
  return undefined;
}

const LINEAR_KEYS = 16;

/** Whether the open object at `level` (its keys from `start` on) has `key`; builds its Set once it grows. */
function hasKey(keys: string[], start: number, sets: (Set<string> | undefined)[], level: number, key: string): boolean {
  const set = sets[level];
  if (set) return set.has(key);
  if (keys.length - start < LINEAR_KEYS) {
    for (let k = start; k < keys.length; k++) if (keys[k] === key) return true;
    return false;
  }
  const built = new Set(keys.slice(start));
  sets[level] = built;
  return built.has(key);
}

function oddBackslashesBefore(text: string, j: number): boolean {
  let k = j - 1;
  while (text.charCodeAt(k) === BACKSLASH) k--;
  return (j - 1 - k) % 2 === 1;
}

/** A key string with escapes, decoded (undefined when malformed: JSON.parse reports it). */
function unescapeKey(quoted: string): string | undefined {
  try {
    const key: unknown = JSON.parse(quoted);
    return typeof key === 'string' ? key : undefined;
  } catch {
    return undefined;
  }
}

/** The size problem of a record's raw value, given its UTF-8 byte length. */
export function sizeProblem(bytes: number): string | undefined {
  return bytes > MAX_RECORD_BYTES
    ? `${bytes} bytes, over the limit of ${MAX_RECORD_BYTES} (rule: a record fits in one store request)`
    : undefined;
}

/**
 * The problem with a record's fields this build does not know (`names`, of
 * `record`), or undefined: too many, too large, a reserved name, or a value
 * that is not JSON this build can write back.
 */
export function unknownFieldsProblem(
  record: Readonly<Record<string, unknown>>, names: readonly string[], isJson: (v: unknown) => boolean,
): string | undefined {
  if (names.length > MAX_UNKNOWN_FIELDS) {
    return `${names.length} fields this build does not know (${names.slice(0, 5).map((f) => JSON.stringify(f)).join(', ')}, …), `
      + `over the limit of ${MAX_UNKNOWN_FIELDS} (rule: a newer minor adds at most ${MAX_UNKNOWN_FIELDS} fields)`;
  }
  let bytes = 0;
  for (const name of names) {
    if (name === '__proto__') return 'field "__proto__" is a name this build cannot keep (rule: no field named __proto__)';
    const value = record[name];
    if (!isJson(value)) {
      return `field ${JSON.stringify(name)} must be JSON this build can write back (finite numbers, nested at most ${MAX_RECORD_DEPTH - 1} deep)`;
    }
    // Nesting is bounded by now, so stringify cannot overflow.
    bytes += utf8ByteLength(JSON.stringify(name)) + 1 + utf8ByteLength(JSON.stringify(value));
    if (bytes > MAX_UNKNOWN_BYTES) {
      return `field ${JSON.stringify(name)} takes the fields this build does not know over ${MAX_UNKNOWN_BYTES} bytes `
        + `(rule: a newer minor's fields take at most ${MAX_UNKNOWN_BYTES} bytes, encoded)`;
    }
  }
  return undefined;
}
