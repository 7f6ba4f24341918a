/** The job's event history (protocol/job-history.ts, decision 0070): its bounds, its order, and the summary that carries it, old and new. */
import { describe, expect, it } from 'vitest';
import {
  appendHistory, historyEntry, MAX_HISTORY_BYTES, MAX_HISTORY_ENTRIES, MAX_HISTORY_REASON, readHistory, trimHistory, type HistoryEntry,
} from '../../../src/protocol/job-history.js';
import { jobPrefix, summaryKey, utf8ByteLength } from '../../../src/protocol/keys.js';
import { encodeRecord, type StoredHistoryEntry, type SummaryRecord } from '../../../src/protocol/records.js';
import { decodeSummary, MAX_SUMMARY_BYTES, sameSummary, summaryRecord, summaryWithinBound, type SummaryFigures } from '../../../src/protocol/summary.js';

const fp = '0123456789abcdef';
const K = summaryKey(jobPrefix('sf', 'job'));

const figures = (o: Partial<SummaryFigures> = {}): SummaryFigures => ({
  fp, generation: 3, writtenAt: 1_700_000_000_000, plan: { planned: 100, final: true }, seeded: 100,
  queued: { splits: 60, weight: 600 }, backoff: { splits: 5, weight: 50 },
  running: { splits: 10, weight: 100 }, draining: { splits: 2, weight: 20 },
  completed: { splits: 20, weight: 200 }, quarantined: { splits: 3, weight: 30 }, parked: 1, lanes: [8, 4],
  ...o,
});

const join = (rev: number, instance = `w-${rev}`): HistoryEntry => historyEntry({ kind: 'join', instance, lanes: 4 }, rev, 1000 + rev);
const failed = (rev: number, reason: string): HistoryEntry => historyEntry({ kind: 'failed', split: `s-${rev}`, attempts: 1, reason }, rev, 1000 + rev);

describe('the bounded history', () => {
  it('keeps the newest MAX_HISTORY_ENTRIES entries', () => {
    const many = Array.from({ length: MAX_HISTORY_ENTRIES + 30 }, (_, i) => join(i + 1));
    const kept = appendHistory([], many);
    expect(kept).toHaveLength(MAX_HISTORY_ENTRIES);
    expect(kept[0]!.rev).toBe(31);
    expect(kept[kept.length - 1]!.rev).toBe(MAX_HISTORY_ENTRIES + 30);
  });

  it('keeps the newest entries that fit in MAX_HISTORY_BYTES, however few', () => {
    // Long ids: far fewer than MAX_HISTORY_ENTRIES fit.
    const big = Array.from({ length: 60 }, (_, i) => join(i + 1, `w-${i + 1}-${'x'.repeat(300)}`));
    const kept = trimHistory(big);
    expect(kept.length).toBeLessThan(60);
    expect(kept.length).toBeGreaterThan(10);
    expect(utf8ByteLength(JSON.stringify(kept))).toBeLessThanOrEqual(MAX_HISTORY_BYTES);
    expect(kept[kept.length - 1]!.rev).toBe(60);
    // Counted in UTF-8 bytes, not characters.
    const wide = trimHistory(Array.from({ length: 60 }, (_, i) => join(i + 1, `w-${i + 1}-${'é'.repeat(150)}`)));
    expect(utf8ByteLength(JSON.stringify(wide))).toBeLessThanOrEqual(MAX_HISTORY_BYTES);
    expect(wide.length).toBe(kept.length);
  });

  it('cuts a long reason, so one failure cannot crowd out the rest', () => {
    const e = failed(1, 'y'.repeat(5000));
    expect(e.kind === 'failed' && e.reason!.length).toBe(MAX_HISTORY_REASON);
    expect(e.kind === 'failed' && e.reason!.endsWith('…')).toBe(true);
    // Never half a surrogate pair.
    const pair = failed(2, `${'y'.repeat(MAX_HISTORY_REASON - 2)}😀${'z'.repeat(10)}`);
    expect(pair.kind === 'failed' && pair.reason!.isWellFormed()).toBe(true);
  });

  it('orders entries by revision, an earlier one arriving late included, and takes each event once', () => {
    let h = appendHistory([], [join(5), join(9)]);
    // The other watch range's change of revision 7 arrives after 9.
    h = appendHistory(h, [failed(7, 'boom')]);
    // A new term's seed, told again: nothing repeats.
    h = appendHistory(h, [join(5), failed(7, 'boom'), join(9)]);
    expect(h.map((e) => `${e.rev}:${e.kind}`)).toEqual(['5:join', '7:failed', '9:join']);
    // Two events of one transaction share a revision: both stay.
    h = appendHistory(h, [join(9, 'w-other')]);
    expect(h.filter((e) => e.rev === 9)).toHaveLength(2);
  });

  it('reads the kinds it knows and skips a newer build\'s', () => {
    const stored: StoredHistoryEntry[] = [
      { rev: 3, at: 1, kind: 'join', instance: 'w-1', lanes: 2 },
      { rev: 4, at: 2, kind: 'teleported', split: 's-1' },
      { rev: 5, at: 3, kind: 'join', instance: 7 },
      { rev: 2, at: 0, kind: 'verdict', verdict: 'complete' },
    ];
    expect(readHistory(stored)).toEqual([
      { rev: 2, at: 0, kind: 'verdict', verdict: 'complete' },
      { rev: 3, at: 1, kind: 'join', instance: 'w-1', lanes: 2 },
    ]);
    expect(readHistory(undefined)).toEqual([]);
  });
});

describe('the summary carrying it', () => {
  it('an older build\'s summary, without a history, still decodes (no history)', () => {
    const old = encodeRecord('summary', summaryRecord(figures()));
    expect(old).not.toContain('history');
    const r = decodeSummary(K, old, fp);
    expect(r.history).toBeUndefined();
    expect(readHistory(r.history)).toEqual([]);
  });

  it('round-trips, and a summary whose history changed is written again', () => {
    const h = [join(3), failed(4, 'boom')];
    const r = summaryRecord(figures({ history: h }));
    const back = decodeSummary(K, encodeRecord('summary', r), fp);
    expect(readHistory(back.history)).toEqual(h);
    expect(sameSummary(r, summaryRecord(figures({ history: h })))).toBe(true);
    expect(sameSummary(r, summaryRecord(figures({ history: [...h, join(5)] })))).toBe(false);
  });

  it('a newer build\'s entry kinds and fields do not make the summary unreadable', () => {
    const r = { ...summaryRecord(figures()), history: [{ rev: 1, at: 1, kind: 'teleported', split: 's', extra: { deep: [1] } }] };
    const text = JSON.stringify(r);
    expect(decodeSummary(K, text, fp).history).toHaveLength(1);
    expect(() => decodeSummary(K, JSON.stringify({ ...r, history: [{ at: 1, kind: 'join' }] }), fp)).toThrow(/history\.0\.rev/);
    expect(() => decodeSummary(K, JSON.stringify({ ...r, history: 'none' }), fp)).toThrow(/history: must be an array/);
  });

  it('stays under MAX_SUMMARY_BYTES with the largest history and the largest figures', () => {
    const big = Array.from({ length: 500 }, (_, i) => failed(i + 1, `${'é'.repeat(400)}`));
    // Every field at its widest: counts of 16 digits, weights of 20 characters.
    const huge = { splits: 2 ** 50, weight: 1.2345678901234567e300 };
    const r = summaryRecord(figures({
      history: big, generation: Number.MAX_SAFE_INTEGER, writtenAt: Number.MAX_SAFE_INTEGER, seeded: Number.MAX_SAFE_INTEGER,
      queued: huge, running: huge, draining: huge, completed: huge, quarantined: huge, parked: Number.MAX_SAFE_INTEGER, residuals: Number.MAX_SAFE_INTEGER,
    }));
    const text = encodeRecord('summary', r);
    expect(utf8ByteLength(text)).toBeLessThanOrEqual(MAX_SUMMARY_BYTES);
    expect(decodeSummary(K, text, fp).history!.length).toBeGreaterThan(5);
  });

  it('drops the oldest entries when the rest of the record leaves the history less room than its own bound', () => {
    const h = Array.from({ length: 100 }, (_, i) => join(i + 1, `w${i + 1}`));
    // A newer minor's field of 2 KiB rides along in the record.
    const wide = { ...summaryRecord(figures({ history: h })), minor: 1, note: 'n'.repeat(2048) } as SummaryRecord;
    expect(utf8ByteLength(encodeRecord('summary', wide))).toBeGreaterThan(MAX_SUMMARY_BYTES);
    const bounded = summaryWithinBound(wide);
    expect(utf8ByteLength(encodeRecord('summary', bounded))).toBeLessThanOrEqual(MAX_SUMMARY_BYTES);
    expect(bounded.history!.length).toBeLessThan(100);
    expect(bounded.history![bounded.history!.length - 1]!.rev).toBe(100);
  });
});
