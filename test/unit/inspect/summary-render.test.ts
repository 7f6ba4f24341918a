/**
 * `inspect` from the leader's summary (summary-render.ts): the text an
 * operator reads, with the plan, progress and operator lines it shares with
 * the full report (render.ts planLines), and every store text escaped.
 */
import { expect, test } from 'vitest';
import { planLines } from '../../../src/inspect/render.js';
import { renderSummaryReport } from '../../../src/inspect/summary-render.js';
import type { SummaryReport } from '../../../src/inspect/summary-read.js';

function report(over: Partial<SummaryReport> = {}): SummaryReport {
  return {
    source: 'summary', root: 'splitfleet', job: 'j', prefix: 'splitfleet/j/', revision: 42, fingerprintHash: 'h', exists: true,
    summary: { generation: 3, writtenAt: 1000, ageMs: 1500 },
    leader: { instance: 'w0', generation: 3, live: true },
    plan: { generation: 3, final: true, planned: 10, seeded: 10 },
    members: [{ instance: 'w0', leader: true, maxInFlight: 4 }, { instance: 'w1', leader: false, maxInFlight: 2 }],
    splits: { queued: 2, backoff: 1, held: 3, revoking: 1, completed: 4, quarantined: 1, parked: 0, total: 10 },
    weights: { queued: 20, backoff: 10, held: 30, completed: 40, quarantined: 10, total: 100 },
    lanes: { members: 2, total: 6 },
    progress: { completed: 4, planned: 10, completedWeight: 40, totalWeight: 100, fraction: 0.4, verdict: null },
    paused: false, evacuated: [], problems: [],
    ...over,
  };
}

test('the summary report names its source and age, and carries the plan, progress and state lines', () => {
  const text = renderSummaryReport(report(), { barWidth: 10 });
  expect(text).toContain("source     the leader's summary (generation 3, written");
  expect(text).toMatch(/^plan       final, 10 planned, 10 seeded, generation 3$/m);
  expect(text).toMatch(/^progress   .* 40\.0% by weight, 4\/10 splits completed$/m);
  expect(text).toMatch(/^splits     queued 2  backoff 1  held 3  completed 4  quarantined 1  \(total 10\)$/m);
  expect(text).toContain('1 revocation (held, no longer assigned)');
  expect(text).not.toContain('operators');
});

test('plan, progress and operator lines are the full report\'s own (planLines), paused and evacuated included', () => {
  const r = report({ paused: true, evacuated: [{ instance: 'w1', inForce: false }], plan: null, progress: { ...report().progress, verdict: 'stalled' } });
  const text = renderSummaryReport(r, { barWidth: 10 });
  const shared = planLines(r, (_c, s) => s, 10);
  expect(shared).toHaveLength(3);
  for (const line of shared) expect(text.split('\n')).toContain(line);
  expect(shared[0]).toBe('plan       none yet (no leader has planned)');
  expect(shared[1]).toContain('STALLED (quarantined splits)');
  expect(shared[2]).toBe('operators  PAUSED (every assignment empty; `splitfleet resume` undoes it); evacuated w1 (restarted or gone: no longer held)');
});

test('store texts are escaped before they are printed', () => {
  const text = renderSummaryReport(report({ leader: { instance: 'w\x1b]0;pwned\x07', generation: 3, live: true } }));
  expect(text).not.toContain('\x1b');
  expect(text).not.toContain('\x07');
});

test('a finished job whose fleet has stopped has no leader, and the report says so', () => {
  const text = renderSummaryReport(report({ leader: null, progress: { ...report().progress, verdict: 'complete' } }));
  expect(text).toMatch(/^leader     none: the job has finished and its fleet has stopped$/m);
  expect(renderSummaryReport(report())).toMatch(/^leader     w0, generation 3$/m);
});

test('a part of the job that cannot move is named in the leader\'s words (issue 49, partial stalls); nothing when all of it can', () => {
  const reason = 'part of the job cannot move: 1 split parked ("s-7": spec.s-7 was deleted: put it back)';
  expect(renderSummaryReport(report({ stuck: reason }))).toMatch(/^stuck {6}part of the job cannot move: 1 split parked \("s-7"/m);
  expect(renderSummaryReport(report({ stuck: null }))).not.toMatch(/^stuck/m);
});
