/**
 * Store text made safe to print on a terminal (decision 0030). Anything
 * read from the store (split ids, instance names, failure reasons, decode
 * errors quoting a key) may have been written by anyone who can write to
 * etcd: printed raw, `\x1b]0;…\x07` retitles the terminal, `\x1b[2K\r` and a
 * newline forge report lines, a bidi override reorders what is read.
 *
 * Invariants:
 * - The output holds no C0 or C1 control, no DEL, no bidi control
 *   (Unicode Bidi_Control: U+061C, U+200E–200F, U+202A–202E, U+2066–2069)
 *   and no line or paragraph separator (U+2028, U+2029). Each is written as
 *   a visible escape: `\n`, `\r`, `\t`, else `\uXXXX`.
 * - Injective: distinct inputs print distinctly. A backslash is doubled
 *   exactly when what follows it would otherwise read as an escape (one of
 *   `\ n r t u`, or a character that is escaped), so `C:\data` prints as it
 *   is and `\u001b` typed by hand is told from an escaped ESC.
 * - Text with nothing to escape is returned as it is (the common case costs
 *   one regex test).
 * - Applied where text is printed (render.ts, changes.ts, the CLI), never to
 *   the data: records, reports and `--json` keep the raw values.
 */

/** What is escaped: controls, bidi controls, line and paragraph separators. */
const UNSAFE = /[\p{Cc}\p{Bidi_Control}\u2028\u2029]/u;
const UNSAFE_ALL = /[\p{Cc}\p{Bidi_Control}\u2028\u2029]/gu;
/** A backslash followed by what would read as an escape (or by a character that is escaped, whose escape starts with one). */
const AMBIGUOUS_BACKSLASH = /\\(?=[\\nrtu\p{Cc}\p{Bidi_Control}\u2028\u2029])/gu;

const NAMED: Record<string, string> = { '\n': '\\n', '\r': '\\r', '\t': '\\t' };

function escapeChar(c: string): string {
  return NAMED[c] ?? `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`;
}

/** `text` with every control and bidi control written as a visible escape (see the file header). */
export function printable(text: string): string {
  if (!UNSAFE.test(text) && !text.includes('\\')) return text;
  return text.replace(AMBIGUOUS_BACKSLASH, '\\\\').replace(UNSAFE_ALL, escapeChar);
}

/**
 * A copy of `value` with {@link printable} applied to every string in it
 * (plain objects and arrays, recursively; other values as they are). For a
 * report about to be rendered: no field can be forgotten, and the caller's
 * object is left alone.
 */
export function printableDeep<T>(value: T): T {
  if (typeof value === 'string') return printable(value) as T;
  if (Array.isArray(value)) return value.map((v: unknown) => printableDeep(v)) as T;
  if (value !== null && typeof value === 'object' && Object.getPrototypeOf(value) === Object.prototype) {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) out[k] = printableDeep(v);
    return out as T;
  }
  return value;
}

/** Characters JSON.stringify leaves raw that a terminal may act on: DEL, C1, bidi controls, U+2028/2029. */
const JSON_UNSAFE = /[\u007f-\u009f\p{Bidi_Control}\u2028\u2029]/gu;

/**
 * `JSON.stringify(value)` with DEL, C1 and bidi controls written as `\uXXXX` too (JSON.stringify
 * escapes only C0). The same JSON value: those characters can only stand inside strings, where
 * the escape means the character.
 */
export function printableJson(value: unknown): string {
  return JSON.stringify(value).replace(JSON_UNSAFE, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}
