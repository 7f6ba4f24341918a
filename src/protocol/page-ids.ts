/**
 * A queue page's ids, read from the record's text instead of by JSON.parse
 * (decision 0048). V8's JSON.parse internalizes every one-byte string value
 * shorter than 10 characters: each short id of a page becomes an entry of
 * the string table. A leader reads pages by the thousand (promotions, a new
 * term's listing), each of 1,024 ids it has not seen, and each time the
 * table doubled it was rehashed whole inside a page's parse (16-224 ms of
 * CPU, against well under 1 ms for the other pages). Ids sliced from the
 * text are ordinary young strings, never internalized.
 *
 * Invariants:
 * - Either the ids are exactly what JSON.parse would give for the one
 *   top-level `ids` member, with that member's span in the text, or the
 *   answer is undefined and the caller parses the whole text as before
 *   (anything but a well-formed array of strings, an escaped `ids` key, no
 *   `ids` member or two of them).
 * - `parsePageText(text)` gives what `JSON.parse(text)` gives, error included.
 * - Never throws, whatever the text: refusing is the full parse's job, so
 *   a record's errors read the same either way.
 *
 * Pure: no I/O, no clock.
 */
import { BACKSLASH, CLOSE_ARRAY, CLOSE_OBJECT, COLON, COMMA, OPEN_ARRAY, OPEN_OBJECT, QUOTE } from './json-chars.js';

/** V8's JSON.parse internalizes one-byte string values shorter than this (json-parser.cc). */
const INTERNALIZED_BELOW = 10;
/** How many of a page's first ids `idsLookShort` looks at. */
const SAMPLED_IDS = 8;

/** The ids of a page's text and the span of their array, `[start, end)`. */
export interface PageIds {
  readonly ids: string[];
  readonly start: number;
  readonly end: number;
}

/** JSON's whitespace: space, tab, line feed, carriage return. */
function skipSpace(text: string, i: number): number {
  for (;;) {
    const c = text.charCodeAt(i);
    if (c !== 0x20 && c !== 0x09 && c !== 0x0a && c !== 0x0d) return i;
    i++;
  }
}

/** The index of the closing quote of the string opening at `i`, and whether it holds an escape; -1 when malformed. */
function stringEnd(text: string, i: number): { end: number; escaped: boolean } {
  let escaped = false;
  for (let k = i + 1; k < text.length; k++) {
    const c = text.charCodeAt(k);
    if (c === QUOTE) return { end: k, escaped };
    if (c === BACKSLASH) {
      escaped = true;
      k++; // the escaped character (of `\uXXXX`, the hex digits are plain characters)
    } else if (c < 0x20) {
      return { end: -1, escaped };
    }
  }
  return { end: -1, escaped };
}

/** The index just past the value starting at `i` (any JSON value, nested ones skipped by depth); -1 when malformed. */
function valueEnd(text: string, i: number): number {
  const c = text.charCodeAt(i);
  if (c === QUOTE) {
    const s = stringEnd(text, i);
    return s.end < 0 ? -1 : s.end + 1;
  }
  if (c === OPEN_OBJECT || c === OPEN_ARRAY) {
    let depth = 0;
    for (let k = i; k < text.length; k++) {
      const d = text.charCodeAt(k);
      if (d === QUOTE) {
        const s = stringEnd(text, k);
        if (s.end < 0) return -1;
        k = s.end;
      } else if (d === OPEN_OBJECT || d === OPEN_ARRAY) {
        depth++;
      } else if (d === CLOSE_OBJECT || d === CLOSE_ARRAY) {
        if (--depth === 0) return k + 1;
      }
    }
    return -1;
  }
  let k = i;
  for (; k < text.length; k++) {
    const d = text.charCodeAt(k);
    if (d === COMMA || d === CLOSE_OBJECT || d === CLOSE_ARRAY || d === 0x20 || d === 0x09 || d === 0x0a || d === 0x0d) break;
  }
  return k === i ? -1 : k;
}

/** The strings of the array opening at `i`, and the index past it; undefined unless it is a well-formed array of strings. */
function stringArray(text: string, i: number): { ids: string[]; end: number } | undefined {
  const ids: string[] = [];
  let k = skipSpace(text, i + 1);
  if (text.charCodeAt(k) === CLOSE_ARRAY) return { ids, end: k + 1 };
  for (;;) {
    if (text.charCodeAt(k) !== QUOTE) return undefined;
    const s = stringEnd(text, k);
    if (s.end < 0) return undefined;
    if (s.escaped) {
      // Rare in ids: the parser decodes the escapes (and refuses a bad one).
      try {
        ids.push(JSON.parse(text.slice(k, s.end + 1)) as string);
      } catch {
        return undefined;
      }
    } else {
      ids.push(text.slice(k + 1, s.end));
    }
    k = skipSpace(text, s.end + 1);
    const c = text.charCodeAt(k);
    if (c === CLOSE_ARRAY) return { ids, end: k + 1 };
    if (c !== COMMA) return undefined;
    k = skipSpace(text, k + 1);
  }
}

/**
 * The top-level `ids` member of a queue page's text, read without JSON.parse,
 * or undefined when the text is not a JSON object whose `ids` member is an
 * array of strings written plainly (the caller then parses it all).
 */
export function readPageIds(text: string): PageIds | undefined {
  let found: PageIds | undefined;
  let i = skipSpace(text, 0);
  if (text.charCodeAt(i) !== OPEN_OBJECT) return undefined;
  i = skipSpace(text, i + 1);
  for (;;) {
    if (text.charCodeAt(i) !== QUOTE) return undefined;
    const key = stringEnd(text, i);
    if (key.end < 0) return undefined;
    const isIds = !key.escaped && key.end === i + 4 && text.startsWith('ids', i + 1);
    // A second `ids` key: the full parse keeps the last, and the record is refused for it anyway.
    if (isIds && found !== undefined) return undefined;
    i = skipSpace(text, key.end + 1);
    if (text.charCodeAt(i) !== COLON) return undefined;
    i = skipSpace(text, i + 1);
    let end: number;
    if (isIds) {
      if (text.charCodeAt(i) !== OPEN_ARRAY) return undefined;
      const read = stringArray(text, i);
      if (read === undefined) return undefined;
      found = { ids: read.ids, start: i, end: read.end };
      end = read.end;
    } else {
      end = valueEnd(text, i);
      if (end < 0) return undefined;
    }
    i = skipSpace(text, end);
    const c = text.charCodeAt(i);
    if (c === CLOSE_OBJECT) return found;
    if (c !== COMMA) return undefined;
    i = skipSpace(text, i + 1);
  }
}

/**
 * Whether most of a page's first ids are shorter than JSON.parse's
 * internalizing length: a guess from the text (either answer parses the
 * same). Long ids are left to JSON.parse, which copies them faster than a
 * reader can, and flat: a slice of 13 characters or more is a view of the
 * whole page text, and checking a page's ids cost half as much again on
 * views.
 */
function idsLookShort(text: string): boolean {
  const at = text.indexOf('"ids":[');
  if (at < 0) return true; // readPageIds decides
  let k = at + 7;
  let seen = 0;
  let short = 0;
  for (; seen < SAMPLED_IDS; seen++) {
    if (text.charCodeAt(k) !== QUOTE) break;
    const q = text.indexOf('"', k + 1);
    if (q < 0) break;
    if (q - k - 1 < INTERNALIZED_BELOW) short++;
    k = q + 2; // past the quote and the comma
  }
  return short * 2 >= seen;
}

/**
 * JSON.parse of a queue page's text, its ids read by `readPageIds` and the
 * rest parsed. Gives what JSON.parse(text) gives; a text that does not parse
 * throws JSON.parse's error for the text as stored, never for the text with
 * its ids taken out.
 */
export function parsePageText(text: string): unknown {
  const page = idsLookShort(text) ? readPageIds(text) : undefined;
  if (page === undefined) return JSON.parse(text);
  let value: unknown;
  try {
    value = JSON.parse(`${text.slice(0, page.start)}[]${text.slice(page.end)}`);
  } catch {
    return JSON.parse(text);
  }
  // One top-level `ids` member was found, so the value is an object holding it.
  (value as { ids: unknown }).ids = page.ids;
  return value;
}
