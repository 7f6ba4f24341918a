/** The job summary (protocol/summary.ts, decision 0040): the record built from the leader's figures, its bounds, its write, and when a reader trusts it. */
import { MAX_STUCK_CHARS } from '../../../src/protocol/record-schemas.js';
import { describe, expect, it } from 'vitest';
import { summaryFigures, type SummaryView } from '../../../src/coordinator/leader/job-summary.js';
import { isSplitfleetError } from '../../../src/errors.js';
import { jobPrefix, parseKey, summaryKey } from '../../../src/protocol/keys.js';
import { decodeRecord, encodeRecord, type LeaderRecord, type PlanRecord, type SummaryRecord } from '../../../src/protocol/records.js';
import { inJobScope, jobKeyRanges } from '../../../src/protocol/scope.js';
import {
  decodeSummary, MAX_SUMMARY_BYTES, sameSummary, summaryRecord, summaryTrust, summaryTxn, type SummaryFigures,
} from '../../../src/protocol/summary.js';
import { checkTxn } from '../../../src/store/base.js';
import { cmp, DEFAULT_LIMITS } from '../../../src/store/store.js';

const fp = '0123456789abcdef';
const P = jobPrefix('sf', 'job');
const K = summaryKey(P);

const figures = (o: Partial<SummaryFigures> = {}): SummaryFigures => ({
  fp, generation: 3, writtenAt: 1_700_000_000_000, plan: { planned: 100, final: true }, seeded: 100,
  queued: { splits: 60, weight: 600 }, backoff: { splits: 5, weight: 50 },
  running: { splits: 10, weight: 100 }, draining: { splits: 2, weight: 20 },
  completed: { splits: 20, weight: 200 }, quarantined: { splits: 3, weight: 30 }, parked: 1, lanes: [8, 4],
  ...o,
});

function refused(fn: () => unknown): string {
  try {
    fn();
  } catch (e) {
    expect(isSplitfleetError(e, 'INVALID_RECORD')).toBe(true);
    return (e as Error).message;
  }
  throw new Error('not refused');
}

describe('summaryRecord', () => {
  it('splits the backlog by state: queued without the waiting failures, held = running + draining, revocations = draining', () => {
    const r = summaryRecord(figures());
    expect(r).toMatchObject({
      v: 1, fp, generation: 3, planned: 100, final: true, seeded: 100,
      queued: 55, queuedWeight: 550, backoff: 5, backoffWeight: 50, held: 12, heldWeight: 120, revoking: 2,
      completed: 20, completedWeight: 200, quarantined: 3, quarantinedWeight: 30, parked: 1, members: 2, lanes: 12,
    });
    // What it encodes decodes to the same record.
    expect(decodeRecord('summary', K, encodeRecord('summary', r), fp)).toEqual(r);
  });

  it('stays small whatever the job: a thousand members and counts in the billions fit in a few hundred bytes', () => {
    const big = summaryRecord(figures({
      queued: { splits: 4e9, weight: 2 ** 60 }, completed: { splits: 4e9, weight: 2 ** 62 }, lanes: Array.from({ length: 1000 }, () => 64),
    }));
    const bytes = encodeRecord('summary', big).length;
    expect(bytes).toBeLessThan(800);
    expect(bytes).toBeLessThan(MAX_SUMMARY_BYTES);
    expect(big.members).toBe(1000);
  });

  it('clamps figures out of range rather than writing a record it cannot read back', () => {
    const r = summaryRecord(figures({ backoff: { splits: 99, weight: 1e9 }, queued: { splits: 3, weight: Number.NaN }, parked: -4 }));
    expect(r.backoff).toBe(3);
    expect(r.queued).toBe(0);
    expect(r.queuedWeight).toBe(0);
    expect(r.parked).toBe(0);
    expect(() => encodeRecord('summary', r)).not.toThrow();
  });

  it('carries why part of the job cannot move, cut to its bound, and nothing when all of it can', () => {
    expect(summaryRecord(figures()).stuck).toBeUndefined();
    expect(summaryRecord(figures({ stuck: 'part of the job cannot move: 1 split parked' })).stuck).toBe('part of the job cannot move: 1 split parked');
    const long = summaryRecord(figures({ stuck: 'x'.repeat(5000) }));
    expect(long.stuck).toHaveLength(MAX_STUCK_CHARS);
    expect(long.stuck!.endsWith('…')).toBe(true);
    expect(() => encodeRecord('summary', long)).not.toThrow();
    expect(() => encodeRecord('summary', { ...long, stuck: 'x'.repeat(MAX_STUCK_CHARS + 1) })).toThrow(/stuck: must be at most 600 characters/);
    expect(sameSummary(summaryRecord(figures()), summaryRecord(figures({ stuck: 'a reason' })))).toBe(false);
  });

  it('sameSummary ignores when it was written, and nothing else', () => {
    const a = summaryRecord(figures());
    expect(sameSummary(a, { ...a, writtenAt: a.writtenAt + 5000 })).toBe(true);
    expect(sameSummary(a, { ...a, completed: a.completed + 1 })).toBe(false);
    expect(sameSummary(a, { ...a, generation: 4 })).toBe(false);
    expect(sameSummary(a, undefined)).toBe(false);
  });
});

describe('summaryTxn', () => {
  it('is guarded by leadership and puts the summary key only', () => {
    const guard = cmp.modRevision(`${P}leader`, 42);
    const t = summaryTxn(P, guard, summaryRecord(figures()));
    expect(t.compares).toEqual([guard]);
    expect(t.success).toHaveLength(1);
    expect(t.success[0]).toMatchObject({ op: 'put', key: K });
    expect(() => checkTxn(t, DEFAULT_LIMITS)).not.toThrow();
  });
});

describe('the summary key', () => {
  it('is a singleton of the job\'s scope: parsed, ranged, and never a nested job\'s', () => {
    expect(parseKey(P, K)).toEqual({ kind: 'summary' });
    expect(parseKey(P, `${K}.x`)).toEqual({ kind: 'unknown' });
    expect(inJobScope(P, K)).toBe(true);
    expect(inJobScope(P, `${P}summary/x/plan`)).toBe(false);
    expect(jobKeyRanges(P, ['summary'])).toEqual([{ kind: 'summary', rangeStart: K, rangeEnd: `${K}\0` }]);
    expect(jobKeyRanges(P).map((r) => r.kind)).toContain('summary');
  });
});

describe('decoding a summary', () => {
  const text = encodeRecord('summary', summaryRecord(figures()));
  const withField = (field: string, value: unknown) => JSON.stringify({ ...JSON.parse(text), [field]: value });

  it('a field of the wrong type is refused naming the field and the rule', () => {
    expect(refused(() => decodeSummary(K, withField('queued', 'many'), fp))).toMatch(/summary record at .*summary: queued: must be an integer/);
    expect(refused(() => decodeSummary(K, withField('heldWeight', -1), fp))).toMatch(/heldWeight: must be a finite number ≥ 0/);
    expect(refused(() => decodeSummary(K, withField('final', 'yes'), fp))).toMatch(/final: must be a boolean/);
    const { members: _, ...missing } = JSON.parse(text) as Record<string, unknown>;
    expect(refused(() => decodeSummary(K, JSON.stringify(missing), fp))).toMatch(/members: must be an integer/);
  });

  it('more revocations than held splits is refused', () => {
    expect(refused(() => decodeSummary(K, withField('revoking', 1000), fp))).toMatch(/revoking: must be at most held/);
  });

  it('one over the summary\'s bound is refused before it is parsed; the record bounds apply too', () => {
    const padded = withField('x-pad', 'y'.repeat(MAX_SUMMARY_BYTES));
    expect(refused(() => decodeSummary(K, padded, fp))).toMatch(new RegExp(`over the summary's limit of ${MAX_SUMMARY_BYTES}`));
    expect(refused(() => decodeSummary(K, new TextEncoder().encode(padded), fp))).toMatch(/over the summary's limit/);
    const deep = `${text.slice(0, -1)},"x-deep":${'['.repeat(500)}${']'.repeat(500)}}`;
    expect(refused(() => decodeSummary(K, deep, fp))).toMatch(/nest|deep/i);
    // A newer minor's small field is kept, as for every record.
    expect(decodeSummary(K, JSON.stringify({ ...JSON.parse(text), minor: 2, 'x-new': 1 }), fp)).toMatchObject({ minor: 2, 'x-new': 1 });
  });

  it('another job\'s summary is refused as such', () => {
    expect(() => decodeSummary(K, text, 'ffffffffffffffff')).toThrow(expect.objectContaining({ code: 'FINGERPRINT_MISMATCH' }));
  });
});

describe('summaryTrust', () => {
  const summary = summaryRecord(figures());
  const leader = (generation: number): LeaderRecord => ({ v: 1, fp, instance: 'a', generation });
  const plan = (generation: number): PlanRecord => ({ v: 1, fp, generation, final: true, planned: 100 });
  const now = summary.writtenAt + 1500;

  it('trusts a summary of the generation in office, and says how old it is', () => {
    expect(summaryTrust(summary, leader(3), plan(3), now)).toEqual({ trusted: true, ageMs: 1500 });
  });

  it('with no leader, trusts only a finished job\'s summary: the final plan of its generation with a verdict, nothing queued, waiting or held', () => {
    const nothing = { splits: 0, weight: 0 };
    const done = summaryRecord(figures({ queued: nothing, backoff: nothing, running: nothing, draining: nothing }));
    const finished = { ...plan(3), verdict: 'complete' as const };
    expect(summaryTrust(done, undefined, finished, now)).toEqual({ trusted: true, ageMs: 1500 });
    expect(summaryTrust(done, undefined, { ...finished, verdict: 'stalled' }, now)).toMatchObject({ trusted: true });
    // No verdict yet, another generation's plan, or anything left to run: the summary may be out of date.
    expect(summaryTrust(done, undefined, plan(3), now)).toMatchObject({ trusted: false, reason: expect.stringMatching(/no leader/) });
    expect(summaryTrust(done, undefined, { ...finished, generation: 4 }, now)).toMatchObject({ trusted: false, reason: expect.stringMatching(/no leader/) });
    expect(summaryTrust(done, undefined, undefined, now)).toMatchObject({ trusted: false });
    const one = { splits: 1, weight: 1 };
    // A waiting failure is one of the queued splits (summaryRecord counts it as backoff, not queued).
    for (const [left, o] of [['queued', { queued: one }], ['backoff', { queued: one, backoff: one }], ['running', { running: one }], ['draining', { draining: one }]] as const) {
      const running = summaryRecord(figures({ queued: nothing, backoff: nothing, running: nothing, draining: nothing, ...o }));
      expect(summaryTrust(running, undefined, finished, now), left).toMatchObject({ trusted: false, reason: expect.stringMatching(/no leader/) });
    }
  });

  it('distrusts no summary, no leader, and a summary of another term, saying why', () => {
    expect(summaryTrust(undefined, leader(3), plan(3), now)).toMatchObject({ trusted: false, reason: expect.stringMatching(/no summary record/) });
    expect(summaryTrust(summary, undefined, plan(3), now)).toMatchObject({ trusted: false, reason: expect.stringMatching(/no leader/) });
    expect(summaryTrust(summary, leader(4), plan(4), now)).toMatchObject({ trusted: false, reason: expect.stringMatching(/generation 3, the leader's is 4/) });
    expect(summaryTrust(summary, leader(3), plan(4), now)).toMatchObject({ trusted: false, reason: expect.stringMatching(/the plan's is 4/) });
  });
});

describe('summaryFigures (the leader view\'s side)', () => {
  const tally = (splits: number, weight: number) => ({ splits, weight });
  const view = (): SummaryView => ({
    fp,
    backlog: () => ({ queued: tally(7, 70), running: tally(2, 20), draining: tally(1, 10), completed: tally(4, 40), quarantined: tally(1, 10) }),
    // wait: waiting out its backoff; held: waiting but claimed again; past: backoff over; done: not runnable.
    notBefore: new Map([['wait', 2000], ['held', 2000], ['past', 500], ['done', 2000]]),
    leases: new Map([['held', { rec: { v: 1, fp, id: 'held', owner: 'a', nonce: 'n', epoch: 2 }, modRevision: 5 }]]) as SummaryView['leases'],
    statusOf: (id: string) => (id === 'done' ? 'completed' : 'runnable'),
    weightOf: (id: string) => (id === 'wait' ? 13 : 1),
    workers: new Map([['a', { rec: { v: 1, fp, instance: 'a', maxInFlight: 8, nonce: 'n' }, modRevision: 3 }]]) as SummaryView['workers'],
    plan: { rec: { v: 1, fp, generation: 3, final: false, planned: 15 }, modRevision: 2 },
    specCount: 15,
    parked: new Map(),
  } as unknown as SummaryView);

  it('counts a failure as waiting only while its backoff runs, nobody holds it and it is runnable', () => {
    const f = summaryFigures(view(), 3, 1000);
    expect(f.backoff).toEqual({ splits: 1, weight: 13 });
    expect(summaryRecord(f)).toMatchObject({ queued: 6, queuedWeight: 57, backoff: 1, held: 3, revoking: 1, members: 1, lanes: 8, planned: 15, final: false });
  });
});
