/**
 * Display width: how many terminal cells a string takes, so that tables line
 * up whatever their ids are (decision 0035). `.length` counts UTF-16 code
 * units: a CJK id is 1 per character but takes 2 cells, an emoji 2 units (or
 * 11, with a ZWJ sequence) but 2 cells, a combining accent 1 unit and 0 cells.
 *
 * Rules, per grapheme cluster (Intl.Segmenter, what a terminal draws as one):
 * - 0: a cluster of only zero-width code points (combining marks \p{M},
 *   format characters \p{Cf} such as ZWJ, variation selectors) or controls;
 * - 2: an emoji shown as emoji (\p{Emoji_Presentation}, or any pictograph
 *   followed by VS16, U+FE0F; regional-indicator flags), or a base character
 *   whose East Asian Width is Wide or Fullwidth (Unicode UAX #11);
 * - 1: anything else. Marks after a base add nothing.
 *
 * The Wide/Fullwidth ranges below are UAX #11's blocks, not its every code
 * point: close enough for ids and names, and no dependency (decision 0035).
 *
 * Pure: no I/O.
 */

// [start, end] inclusive, sorted: East Asian Wide (W) and Fullwidth (F) blocks.
const WIDE: readonly (readonly [number, number])[] = [
  [0x1100, 0x115f], // Hangul Jamo initial consonants
  [0x231a, 0x231b], [0x2329, 0x232a], [0x23e9, 0x23ec], [0x23f0, 0x23f0], [0x23f3, 0x23f3],
  [0x25fd, 0x25fe], [0x2614, 0x2615], [0x2648, 0x2653], [0x267f, 0x267f], [0x2693, 0x2693],
  [0x26a1, 0x26a1], [0x26aa, 0x26ab], [0x26bd, 0x26be], [0x26c4, 0x26c5], [0x26ce, 0x26ce],
  [0x26d4, 0x26d4], [0x26ea, 0x26ea], [0x26f2, 0x26f3], [0x26f5, 0x26f5], [0x26fa, 0x26fa],
  [0x26fd, 0x26fd], [0x2705, 0x2705], [0x270a, 0x270b], [0x2728, 0x2728], [0x274c, 0x274c],
  [0x274e, 0x274e], [0x2753, 0x2755], [0x2757, 0x2757], [0x2795, 0x2797], [0x27b0, 0x27b0],
  [0x27bf, 0x27bf], [0x2b1b, 0x2b1c], [0x2b50, 0x2b50], [0x2b55, 0x2b55],
  [0x2e80, 0x303e], // CJK radicals, Kangxi, ideographic description, CJK symbols and punctuation
  [0x3041, 0x33ff], // Hiragana, Katakana, Bopomofo, Hangul compatibility Jamo, Kanbun, CJK compatibility
  [0x3400, 0x4dbf], // CJK extension A
  [0x4e00, 0x9fff], // CJK unified ideographs
  [0xa000, 0xa4cf], // Yi
  [0xa960, 0xa97f], // Hangul Jamo extended A
  [0xac00, 0xd7a3], // Hangul syllables
  [0xf900, 0xfaff], // CJK compatibility ideographs
  [0xfe10, 0xfe19], // vertical forms
  [0xfe30, 0xfe6f], // CJK compatibility forms, small form variants
  [0xff00, 0xff60], // fullwidth forms
  [0xffe0, 0xffe6], // fullwidth signs
  [0x16fe0, 0x16fe4], [0x17000, 0x18cff], [0x1b000, 0x1b2ff], // Tangut, Kana supplement and extensions
  [0x1f004, 0x1f004], [0x1f0cf, 0x1f0cf], [0x1f18e, 0x1f18e], [0x1f191, 0x1f19a],
  [0x1f200, 0x1f2ff], // enclosed ideographic supplement
  [0x1f300, 0x1f64f], [0x1f680, 0x1f6ff], [0x1f7e0, 0x1f7eb], [0x1f90c, 0x1f9ff], [0x1fa70, 0x1faff], // pictographs
  [0x20000, 0x2fffd], // CJK extensions B to F, compatibility supplement
  [0x30000, 0x3fffd], // CJK extensions G, H
];

function isWide(cp: number): boolean {
  let lo = 0;
  let hi = WIDE.length - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    const [a, b] = WIDE[mid]!;
    if (cp < a) hi = mid - 1;
    else if (cp > b) lo = mid + 1;
    else return true;
  }
  return false;
}

const ZERO_WIDTH = /^[\p{M}\p{Cf}\p{Cc}\u{FE00}-\u{FE0F}\u{E0100}-\u{E01EF}]$/u;
const EMOJI = /\p{Emoji_Presentation}|\p{Extended_Pictographic}\u{FE0F}|\p{Regional_Indicator}{2}/u;
const segmenter = new Intl.Segmenter(undefined, { granularity: 'grapheme' });
// Printable ASCII only: the common case, measured without segmenting.
const ASCII = /^[\x20-\x7e]*$/;

/** The width of one grapheme cluster, in cells. */
function clusterWidth(cluster: string): number {
  if (EMOJI.test(cluster)) return 2;
  for (const ch of cluster) {
    if (ZERO_WIDTH.test(ch)) continue;
    return isWide(ch.codePointAt(0)!) ? 2 : 1;
  }
  return 0;
}

/** Terminal cells `text` takes (see the rules above). Escape sequences are not parsed: measure text before colouring it. */
export function displayWidth(text: string): number {
  if (ASCII.test(text)) return text.length;
  let width = 0;
  for (const { segment } of segmenter.segment(text)) width += clusterWidth(segment);
  return width;
}

/** `text` padded on the right with spaces to `width` cells (unchanged when already as wide). */
export function padEndDisplay(text: string, width: number): string {
  const w = displayWidth(text);
  return w >= width ? text : text + ' '.repeat(width - w);
}

/** `text` padded on the left with spaces to `width` cells. */
export function padStartDisplay(text: string, width: number): string {
  const w = displayWidth(text);
  return w >= width ? text : ' '.repeat(width - w) + text;
}

/**
 * Rows of cells as aligned lines: each column as wide as its widest cell in
 * display cells, columns two spaces apart, trailing spaces trimmed. `right`
 * lists the columns aligned to the right (numbers). Cells must already be
 * printable (decision 0030) and uncoloured.
 */
export function alignColumns(rows: readonly (readonly string[])[], right: ReadonlySet<number> = new Set()): string[] {
  const columns = Math.max(0, ...rows.map((r) => r.length));
  const widths = Array.from({ length: columns }, (_, i) => Math.max(0, ...rows.map((r) => displayWidth(r[i] ?? ''))));
  return rows.map((r) => r
    .map((cell, i) => (right.has(i) ? padStartDisplay(cell, widths[i]!) : padEndDisplay(cell, widths[i]!)))
    .join('  ')
    .trimEnd());
}

/** `text` cut to at most `width` cells, ending in '…' when cut (whole grapheme clusters only). */
export function truncateDisplay(text: string, width: number): string {
  if (displayWidth(text) <= width) return text;
  let out = '';
  let used = 0;
  for (const { segment } of segmenter.segment(text)) {
    const w = clusterWidth(segment);
    if (used + w > width - 1) break;
    out += segment;
    used += w;
  }
  return `${out}…`;
}
