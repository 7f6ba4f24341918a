/**
 * Store text as the CLI prints it (decision 0030):
 * - printable(): no control (\p{Cc}), no bidi control, no U+2028/2029 in its
 *   output, for any string; injective (a decoder gives every input back, so
 *   distinct inputs print distinctly); text with nothing to escape unchanged;
 * - printableJson(): the same JSON value, with no C1 or bidi control raw;
 * - renderReport() on a quarantined split whose reason carries terminal
 *   escapes and a forged line: no ESC, BEL, CR or extra line in the text, the
 *   forged line never at a line start, and the table padded by the escaped
 *   width; describeChange() likewise.
 */
import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import { describeChange } from '../../../src/inspect/changes.js';
import { printable, printableDeep, printableJson } from '../../../src/inspect/printable.js';
import { renderReport } from '../../../src/inspect/render.js';
import { jobReport, readJobRecords } from '../../../src/inspect/report.js';
import { jobPrefix, planKey, specKey, splitKey, workerKey } from '../../../src/protocol/keys.js';
import { encodeRecord, fingerprintHash, SCHEMA_VERSION } from '../../../src/protocol/records.js';
import type { KeyValue } from '../../../src/store/store.js';

const UNSAFE = /[\p{Cc}\p{Bidi_Control}\u2028\u2029]/u;
const UNSAFE_EXCEPT_NEWLINE = /[\0-\x09\x0b-\x1f\x7f-\x9f\p{Bidi_Control}\u2028\u2029]/u;
const BIDI = ['\u202a', '\u202b', '\u202c', '\u202d', '\u202e', '\u2066', '\u2067', '\u2068', '\u2069', '\u200e', '\u200f', '\u061c'];

/** The inverse of printable(), as its header describes the escapes. */
function unprintable(text: string): string {
  return text.replace(/\\(\\|n|r|t|u[0-9a-f]{4})/g, (_, e: string) => {
    if (e === '\\') return '\\';
    if (e === 'n') return '\n';
    if (e === 'r') return '\r';
    if (e === 't') return '\t';
    return String.fromCharCode(parseInt(e.slice(1), 16));
  });
}

/** Strings rich in what printable() must handle: controls, bidi, backslashes, escape look-alikes, astral and lone surrogates. */
const hostile = fc.array(fc.oneof(
  fc.constantFrom('\\', 'n', 'u', 'r', 't', '0', '1', 'b', '\\u001b', '\\n', '\\\\', '\u2028', '\u2029', '\ud83d\ude00', '\ud800', ...BIDI),
  fc.integer({ min: 0, max: 0x9f }).map((c) => String.fromCharCode(c)),
  fc.string({ unit: 'binary' }),
), { maxLength: 30 }).map((parts) => parts.join(''));

describe('printable', () => {
  test('its output has no control, no bidi control and no line separator', () => {
    fc.assert(fc.property(hostile, (s) => {
      expect(printable(s)).not.toMatch(UNSAFE);
    }), { numRuns: 2000 });
  });

  test('is injective: the escapes decode back to the input', () => {
    fc.assert(fc.property(hostile, (s) => {
      expect(unprintable(printable(s))).toBe(s);
    }), { numRuns: 2000 });
    fc.assert(fc.property(hostile, hostile, (a, b) => {
      fc.pre(a !== b);
      expect(printable(a)).not.toBe(printable(b));
    }), { numRuns: 2000 });
  });

  test('names the escapes and leaves plain text alone', () => {
    expect(printable('\x1b]0;pwned\x07')).toBe('\\u001b]0;pwned\\u0007');
    expect(printable('a\nb\r\tc\x7f\x9b')).toBe('a\\nb\\r\\tc\\u007f\\u009b');
    expect(printable('abc\u202edcba')).toBe('abc\\u202edcba');
    expect(printable('logs/2026/01/a b.gz · ünï ✓')).toBe('logs/2026/01/a b.gz · ünï ✓');
    expect(printable('C:\\data\\x')).toBe('C:\\data\\x');
    // A hand-typed escape is told from an escaped character.
    expect(printable('\\u001b')).toBe('\\\\u001b');
    expect(printable('\\\x1b')).toBe('\\\\\\u001b');
  });

  test('printableDeep copies, escaping every string, leaving the input alone', () => {
    const input = { a: 'x\ny', b: [1, 'z\x1b', null, { c: '\u202e' }], d: true };
    expect(printableDeep(input)).toEqual({ a: 'x\\ny', b: [1, 'z\\u001b', null, { c: '\\u202e' }], d: true });
    expect(input.a).toBe('x\ny');
  });

  test('printableJson is the same JSON value, with no control or bidi character raw', () => {
    fc.assert(fc.property(fc.dictionary(hostile, hostile), (o) => {
      const text = printableJson(o);
      expect(text).not.toMatch(UNSAFE);
      expect(JSON.parse(text)).toEqual(o);
    }), { numRuns: 500 });
  });
});

describe('a hostile reason in a quarantined split', () => {
  const P = jobPrefix('splitfleet', 'evil');
  const base = { v: SCHEMA_VERSION, fp: fingerprintHash('splitfleet-v1:splitfleet/evil') };
  const FORGED = 'progress   ██████████████████████████████ 100.0% by weight, 2/2 splits completed complete';
  const REASON = `boom\x1b]0;pwned\x07\x1b[2K\r\n${FORGED}\n\u202eevil`;
  let rev = 1;
  const kv = (key: string, value: string): KeyValue => ({ key, value, createRevision: rev, modRevision: rev++ });
  const kvs = [
    kv(planKey(P), encodeRecord('plan', { ...base, generation: 1, final: true, planned: 2 })),
    kv(workerKey(P, 'w\x1b[31m1'), encodeRecord('worker', { ...base, instance: 'w\x1b[31m1', maxInFlight: 2, nonce: 'n' })),
    kv(specKey(P, 's1'), encodeRecord('spec', { ...base, id: 's1', weight: 1, descriptor: null, generation: 1 })),
    kv(splitKey(P, 's1'), encodeRecord('split', { ...base, id: 's1', epoch: 1, status: 'quarantined', owner: '', attempts: 4, reason: REASON })),
  ];
  const { records, fp, problems } = readJobRecords(P, kvs);
  const report = jobReport(records, { root: 'splitfleet', job: 'evil', prefix: P, revision: rev, fingerprintHash: fp, problems });

  test('the report keeps the raw reason (escaping is the renderer\'s)', () => {
    expect(report.quarantined[0]!.reason).toBe(REASON);
  });

  test('the rendered text has no ESC, BEL, CR or bidi control, and the forged line is not a line', () => {
    const text = renderReport(report);
    expect(text).not.toMatch(/[\x1b\x07\r\u202e]/);
    expect(text).not.toMatch(UNSAFE_EXCEPT_NEWLINE);
    const lines = text.split('\n');
    expect(lines.filter((l) => l.startsWith('progress'))).toHaveLength(1);
    expect(lines.some((l) => l.trimStart().startsWith(FORGED))).toBe(false);
    expect(text).toContain('s1  after 4 attempts: boom\\u001b]0;pwned\\u0007\\u001b[2K\\r\\nprogress');
    // The members table is padded by the escaped width: its header and row line up.
    const header = lines.find((l) => l.trimStart().startsWith('instance'))!;
    const row = lines.find((l) => l.includes('w\\u001b[31m1') && l.includes('0/2'))!;
    expect(row.indexOf('0/2') + 3).toBe(header.indexOf('lanes') + 5);
  });

  test('in colour, the only escapes are the renderer\'s own SGR codes', () => {
    const text = renderReport(report, { color: true });
    expect(text.replace(/\x1b\[[0-9;]*m/g, '')).not.toMatch(UNSAFE_EXCEPT_NEWLINE);
    expect(text).not.toContain('\x1b]');
  });

  test('describeChange escapes the reason too', () => {
    const line = describeChange({ kind: 'quarantine', split: 's\x1b1', attempts: 4, reason: REASON });
    expect(line).not.toMatch(UNSAFE);
    expect(line.startsWith('s\\u001b1 quarantined after 4 attempts: boom\\u001b]0;')).toBe(true);
  });
});
