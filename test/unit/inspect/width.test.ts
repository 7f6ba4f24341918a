/**
 * Display width (src/inspect/width.ts) and the tables that pad by it: a CJK
 * or emoji id takes two cells a character, a combining mark none, so columns
 * after such an id still line up (the members table of `renderReport`, the
 * jobs table, the splits table all go through `alignColumns`).
 */
import { describe, expect, it } from 'vitest';
import { renderReport } from '../../../src/inspect/render.js';
import { jobReport, readJobRecords } from '../../../src/inspect/report.js';
import { alignColumns, displayWidth, padEndDisplay, truncateDisplay } from '../../../src/inspect/width.js';
import { assignKey, leaseKey, planKey, specKey, splitKey, workerKey } from '../../../src/protocol/keys.js';
import { encodeRecord, fingerprintHash, SCHEMA_VERSION } from '../../../src/protocol/records.js';
import type { KeyValue } from '../../../src/store/store.js';

describe('displayWidth', () => {
  it.each([
    ['pod-a', 5],
    ['', 0],
    ['東京', 4], // CJK ideographs: wide
    ['データ', 6], // katakana
    ['한국', 4], // Hangul syllables
    ['ＡＢ', 4], // fullwidth Latin
    ['e\u0301', 1], // e + combining acute: one cell
    ['👍', 2],
    ['👍🏽', 2], // with a skin-tone modifier: one cluster
    ['👨‍👩‍👧', 2], // a ZWJ family: one cluster
    ['🇯🇵', 2], // a flag: two regional indicators
    ['❤️', 2], // text-default pictograph + VS16: emoji presentation
    ['©', 1], // pictograph without emoji presentation
    ['a\u200bb', 2], // zero-width space
    ['数据-東京', 9],
  ])('%j is %i cells', (text, width) => {
    expect(displayWidth(text)).toBe(width);
  });

  it('pads and truncates by cells, whole clusters only', () => {
    expect(padEndDisplay('東京', 6)).toBe('東京  ');
    expect(truncateDisplay('東京大阪', 5)).toBe('東京…');
    expect(truncateDisplay('short', 10)).toBe('short');
    expect(displayWidth(truncateDisplay('👨‍👩‍👧👨‍👩‍👧👨‍👩‍👧', 5))).toBeLessThanOrEqual(5);
  });
});

/** The display column at which `needle` starts in `line`. */
const columnOf = (line: string, needle: string) => displayWidth(line.slice(0, line.indexOf(needle)));

describe('tables aligned by display width', () => {
  it('alignColumns puts every cell of a column at one display column', () => {
    const lines = alignColumns([['id', 'owner'], ['s-1', 'pod-a'], ['東京', 'pod-b'], ['👍🏽x', 'pod-c'], ['e\u0301', 'pod-d']]);
    const cols = lines.slice(1).map((l, i) => columnOf(l, `pod-${'abcd'[i]}`));
    expect(new Set(cols)).toEqual(new Set([columnOf(lines[0]!, 'owner')]));
  });

  it('renderReport: the members table lines up after CJK and emoji instance ids', () => {
    const prefix = 'splitfleet/j/';
    const fp = fingerprintHash('width-test');
    const v = SCHEMA_VERSION;
    const instances = ['pod-a', '東京-ポッド', '💾-pod'];
    const kvs: KeyValue[] = [];
    let rev = 1;
    const put = (key: string, value: string) => kvs.push({ key, value, createRevision: rev, modRevision: rev++ });
    put(planKey(prefix), encodeRecord('plan', { v, fp, generation: 1, final: true, planned: 3 }));
    instances.forEach((instance, i) => {
      const id = `split-${i}`;
      put(specKey(prefix, id), encodeRecord('spec', { v, fp, id, weight: 1000 * (i + 1), descriptor: null, generation: 1 }));
      put(splitKey(prefix, id), encodeRecord('split', { v, fp, id, epoch: 1, status: 'runnable', owner: instance, attempts: 1 }));
      put(leaseKey(prefix, id), encodeRecord('lease', { v, fp, id, owner: instance, nonce: `n${i}`, epoch: 1 }));
      put(workerKey(prefix, instance), encodeRecord('worker', { v, fp, instance, maxInFlight: 4, nonce: `n${i}` }));
      put(assignKey(prefix, instance), encodeRecord('assign', { v, fp, instance, generation: 1, splits: [id] }));
    });
    kvs.sort((a, b) => (Buffer.from(a.key) < Buffer.from(b.key) ? -1 : 1));
    const { records, problems } = readJobRecords(prefix, kvs, fp);
    expect(problems).toEqual([]);
    const text = renderReport(jobReport(records, { root: 'splitfleet', job: 'j', prefix, revision: rev, fingerprintHash: fp }));
    const lines = text.split('\n');
    const header = lines.findIndex((l) => l.trim().startsWith('instance'));
    const rows = lines.slice(header + 1, header + 4);
    expect(rows.map((r) => instances.find((i) => r.includes(i)))).toEqual([...instances].sort());
    // The 'lanes' column is right-aligned: every row's '1/4' ends where the header's 'lanes' does.
    const end = columnOf(lines[header]!, 'lanes') + 'lanes'.length;
    for (const row of rows) expect(columnOf(row, '1/4') + 3, row).toBe(end);
  });
});
