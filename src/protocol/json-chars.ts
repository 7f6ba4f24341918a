/**
 * The character codes of JSON's structure, for the scanners that read a
 * record's text before (record-bounds.ts) or instead of (page-ids.ts)
 * JSON.parse.
 *
 * Pure: constants only.
 */
export const QUOTE = 0x22;
export const BACKSLASH = 0x5c;
export const OPEN_OBJECT = 0x7b;
export const CLOSE_OBJECT = 0x7d;
export const OPEN_ARRAY = 0x5b;
export const CLOSE_ARRAY = 0x5d;
export const COMMA = 0x2c;
export const COLON = 0x3a;
