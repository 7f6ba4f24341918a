/**
 * jobReport and renderReport on hand-made records: split states (queued,
 * running, draining, completed, quarantined), assignment against holdings
 * (claiming, revoking), departed instances, progress and verdict, and
 * problems (a broken record, another job's fingerprint) reported without
 * throwing.
 */
import { describe, expect, test } from 'vitest';
import { bar, formatWeight, idList, renderReport } from '../../../src/inspect/render.js';
import { detectFingerprintHash, jobReport, readJobRecords, type JobReport } from '../../../src/inspect/report.js';
import { assignKey, jobPrefix, leaderKey, leaseKey, planKey, progressKey, specKey, splitKey, workerKey } from '../../../src/protocol/keys.js';
import { encodeRecord, fingerprintHash, SCHEMA_VERSION, type SplitRecord } from '../../../src/protocol/records.js';
import { summaryRecord } from '../../../src/protocol/summary.js';
import type { KeyValue } from '../../../src/store/store.js';

const ROOT = 'splitfleet';
const JOB = 'unit';
const P = jobPrefix(ROOT, JOB);
const FP = fingerprintHash('splitfleet-v1:splitfleet/unit');
const v = SCHEMA_VERSION;

let rev = 1;
const kv = (key: string, value: string, lease?: string): KeyValue => ({
  key, value, createRevision: rev, modRevision: rev++, ...(lease ? { lease } : {}),
});

function split(id: string, status: SplitRecord['status'], owner = '', extra: Partial<SplitRecord> = {}): KeyValue {
  const epoch = owner === '' ? (status === 'runnable' ? 0 : 1) : 1;
  return kv(splitKey(P, id), encodeRecord('split', { v, fp: FP, id, epoch, status, owner, attempts: 0, ...extra }));
}

/**
 * A job: w1 (leader, 2 lanes) and w2 (3 lanes) live; w3 departed but still
 * named by a record. s1 running on w1; s2 held by w1 but now assigned to w2
 * (draining); s3 assigned to w2, not yet claimed; s4 completed; s5
 * quarantined; s6 queued (unassigned); s7 withheld for w3.
 */
function job(): KeyValue[] {
  rev = 1;
  const weights: Record<string, number> = { s1: 100, s2: 200, s3: 300, s4: 400, s5: 5, s6: 60, s7: 7 };
  const kvs: KeyValue[] = [
    kv(planKey(P), encodeRecord('plan', { v, fp: FP, generation: 2, final: true, planned: 7 })),
    kv(leaderKey(P), encodeRecord('leader', { v, fp: FP, instance: 'w1', generation: 2 }), '11'),
    kv(workerKey(P, 'w1'), encodeRecord('worker', { v, fp: FP, instance: 'w1', maxInFlight: 2, nonce: 'n1' }), '11'),
    kv(workerKey(P, 'w2'), encodeRecord('worker', { v, fp: FP, instance: 'w2', maxInFlight: 3, nonce: 'n2' }), '22'),
    kv(assignKey(P, 'w1'), encodeRecord('assign', { v, fp: FP, instance: 'w1', generation: 2, splits: ['s1'] })),
    kv(assignKey(P, 'w2'), encodeRecord('assign', { v, fp: FP, instance: 'w2', generation: 2, splits: ['s2', 's3'] })),
    kv(assignKey(P, 'w3'), encodeRecord('assign', { v, fp: FP, instance: 'w3', generation: 1, splits: ['s7'] })),
  ];
  for (const [id, weight] of Object.entries(weights)) {
    kvs.push(kv(specKey(P, id), encodeRecord('spec', { v, fp: FP, id, weight, descriptor: null, generation: 1 })));
  }
  kvs.push(
    split('s1', 'runnable', 'w1'),
    split('s2', 'runnable', 'w1'),
    split('s3', 'runnable'),
    split('s4', 'completed'),
    split('s5', 'quarantined', '', { attempts: 4, reason: 'max_attempts (4) reached' }),
    split('s6', 'runnable'),
    split('s7', 'runnable', 'w3'),
    kv(leaseKey(P, 's1'), encodeRecord('lease', { v, fp: FP, id: 's1', owner: 'w1', nonce: 'n1', epoch: 1 }), '11'),
    kv(leaseKey(P, 's2'), encodeRecord('lease', { v, fp: FP, id: 's2', owner: 'w1', nonce: 'n1', epoch: 1 }), '11'),
  );
  return kvs;
}

function report(kvs: KeyValue[]): JobReport {
  const { records, fp, problems } = readJobRecords(P, kvs);
  return jobReport(records, { root: ROOT, job: JOB, prefix: P, revision: rev, fingerprintHash: fp, problems });
}

describe('jobReport', () => {
  test('finds the fingerprint hash on the plan record', () => {
    expect(detectFingerprintHash(P, job())).toBe(FP);
    expect(detectFingerprintHash(P, [])).toBeUndefined();
  });

  test('leader, plan, split states and progress', () => {
    const r = report(job());
    expect(r.exists).toBe(true);
    expect(r.fingerprintHash).toBe(FP);
    expect(r.leader).toEqual({ instance: 'w1', generation: 2, live: true });
    expect(r.plan).toEqual({ generation: 2, final: true, planned: 7, seeded: 7 });
    expect(r.splits).toEqual({ queued: 3, running: 1, draining: 1, completed: 1, quarantined: 1, total: 7 });
    expect(r.progress.completed).toBe(1);
    expect(r.progress.planned).toBe(7);
    expect(r.progress.completedWeight).toBe(400);
    expect(r.progress.totalWeight).toBe(1072);
    expect(r.progress.verdict).toBeNull();
    expect(r.problems).toEqual([]);
  });

  test('members: lane budgets, loads by weight, assignment against holdings', () => {
    const r = report(job());
    const [w1, w2, w3] = r.members;
    expect(w1).toMatchObject({
      instance: 'w1', live: true, leader: true, maxInFlight: 2, assigned: ['s1'], held: ['s1', 's2'],
      claiming: [], revoking: ['s2'], load: 300, assignedLoad: 100, assignmentGeneration: 2,
    });
    expect(w2).toMatchObject({
      instance: 'w2', live: true, leader: false, maxInFlight: 3, assigned: ['s2', 's3'], held: [],
      claiming: ['s2', 's3'], revoking: [], load: 0, assignedLoad: 500,
    });
    expect(w3).toMatchObject({ instance: 'w3', live: false, maxInFlight: null, assigned: ['s7'], held: [], assignmentGeneration: 1 });
  });

  test('revocations in flight: held, no longer assigned', () => {
    expect(report(job()).revocations).toEqual([{ id: 's2', weight: 200, holder: 'w1', assignedTo: 'w2' }]);
  });

  test('quarantined splits are listed with their reason', () => {
    expect(report(job()).quarantined).toEqual([{ id: 's5', attempts: 4, reason: 'max_attempts (4) reached' }]);
  });

  test('an instance without an assignment record holds what it has and revokes nothing', () => {
    const kvs = job().filter((x) => x.key !== assignKey(P, 'w1'));
    const w1 = report(kvs).members.find((m) => m.instance === 'w1')!;
    expect(w1.assigned).toBeNull();
    expect(w1.revoking).toEqual([]);
    expect(report(kvs).splits.draining).toBe(0);
  });

  test('a finished final plan has a verdict: complete, or stalled with a quarantined split', () => {
    rev = 1;
    const base = [
      kv(planKey(P), encodeRecord('plan', { v, fp: FP, generation: 1, final: true, planned: 2 })),
      kv(specKey(P, 'a'), encodeRecord('spec', { v, fp: FP, id: 'a', weight: 1, descriptor: null, generation: 1 })),
      kv(specKey(P, 'b'), encodeRecord('spec', { v, fp: FP, id: 'b', weight: 3, descriptor: null, generation: 1 })),
      split('a', 'completed'),
    ];
    const complete = report([...base, split('b', 'completed')]);
    expect(complete.progress.verdict).toBe('complete');
    expect(complete.progress.fraction).toBe(1);
    expect(report([...base, split('b', 'quarantined', '', { attempts: 4 })]).progress.verdict).toBe('stalled');
    expect(report([...base, split('b', 'runnable')]).progress.verdict).toBeNull();
  });

  test('the leader\'s verdict on the plan record wins over what the records add up to', () => {
    rev = 1;
    // The leader wrote 'stalled'; the split records a tool lists may lag or be trimmed.
    const kvs = [
      kv(planKey(P), encodeRecord('plan', { v, fp: FP, generation: 1, final: true, planned: 2, verdict: 'stalled' })),
      kv(specKey(P, 'a'), encodeRecord('spec', { v, fp: FP, id: 'a', weight: 1, descriptor: null, generation: 1 })),
      split('a', 'runnable'),
    ];
    expect(report(kvs).progress.verdict).toBe('stalled');
  });

  test('committed progress is read from progress.{id} into its own map', () => {
    const kvs = [...job(), kv(progressKey(P, 's1'), encodeRecord('progress', { v, fp: FP, id: 's1', epoch: 1, progress: { offset: 5 } }))];
    const { records, problems } = readJobRecords(P, kvs);
    expect(problems).toEqual([]);
    expect(records.progress.get('s1')).toEqual({ v, fp: FP, id: 's1', epoch: 1, progress: { offset: 5 } });
    expect(records.splits.get('s1')).not.toHaveProperty('progress');
    // A progress record cannot be read: a problem naming its key, like any other record.
    const broken = readJobRecords(P, [...job(), kv(progressKey(P, 's2'), '{"v":1}')]);
    expect(broken.problems).toHaveLength(1);
    expect(broken.problems[0]).toContain(progressKey(P, 's2'));
  });

  test('records it cannot read become problems naming the key; the rest is still reported', () => {
    const other = fingerprintHash('another job');
    const kvs = [
      ...job(),
      kv(workerKey(P, 'w9'), encodeRecord('worker', { v, fp: other, instance: 'w9', maxInFlight: 1, nonce: 'x' })),
      kv(splitKey(P, 's8'), '{not json'),
      kv(`${P}notes/readme`, 'ignored: not a key of the layout'),
    ];
    const r = report(kvs);
    expect(r.problems).toHaveLength(2);
    expect(r.problems[0]).toContain(workerKey(P, 'w9'));
    expect(r.problems[0]).toContain('FINGERPRINT_MISMATCH');
    expect(r.problems[1]).toContain(splitKey(P, 's8'));
    expect(r.problems[1]).toContain('INVALID_RECORD');
    expect(r.members.map((m) => m.instance)).toEqual(['w1', 'w2', 'w3']);
    expect(r.splits.total).toBe(7);
  });

  test('nothing stored: exists is false', () => {
    const r = report([]);
    expect(r.exists).toBe(false);
    expect(r.leader).toBeNull();
    expect(r.plan).toBeNull();
    expect(r.members).toEqual([]);
  });
});

describe('the leader\'s stuck reason (issue 49, partial stalls)', () => {
  const summary = (generation: number, stuck?: string) => kv(`${P}summary`, encodeRecord('summary', summaryRecord({
    fp: FP, generation, writtenAt: 1, plan: undefined, seeded: 7, queued: { splits: 0, weight: 0 }, backoff: { splits: 0, weight: 0 },
    running: { splits: 0, weight: 0 }, draining: { splits: 0, weight: 0 }, completed: { splits: 0, weight: 0 }, quarantined: { splits: 0, weight: 0 },
    parked: 1, lanes: [2], ...(stuck !== undefined ? { stuck } : {}),
  })));
  const reason = 'part of the job cannot move: 1 split parked ("s6": spec.s6 is missing (deleted by hand?))';

  test('comes from a summary of the leader\'s current term, and is printed', () => {
    const r = report([...job(), summary(2, reason)]);
    expect(r.stuck).toBe(reason);
    expect(renderReport(r)).toContain(`stuck      ${reason}`);
  });

  test('none from a summary of an earlier term, or one that names no reason', () => {
    expect(report([...job(), summary(1, reason)]).stuck).toBeNull();
    expect(report([...job(), summary(2)]).stuck).toBeNull();
    expect(report(job()).stuck).toBeNull();
    expect(renderReport(report(job()))).not.toMatch(/^stuck/m);
  });
});

describe('renderReport', () => {
  test('shows the leader, members, assignment against holdings, revocations and quarantine', () => {
    const text = renderReport(report(job()));
    expect(text).toContain('leader     w1, generation 2');
    expect(text).toContain('plan       final, 7 planned, 7 seeded, generation 2');
    expect(text).toContain('splits     queued 3  running 1  draining 1  completed 1  quarantined 1  (total 7)');
    expect(text).toMatch(/w1 \*\s+2\/2\s+2\s+300\s+1\s+100\s+leader/);
    expect(text).toMatch(/w3\s+—\s+0\s+0\s+1\s+7\s+departed/);
    expect(text).toContain('    revoking  s2');
    expect(text).toContain('    claiming  s2 s3');
    expect(text).toContain('    withheld  s7  (departed: kept for it during the rebalance delay)');
    expect(text).toContain('  s2  held by w1, now assigned to w2  (weight 200)');
    expect(text).toContain('  s5  after 4 attempts: max_attempts (4) reached');
    expect(text).not.toContain('\x1b[');
    expect(renderReport(report(job()), { color: true })).toContain('\x1b[');
  });

  test('says plainly when nothing is stored', () => {
    expect(renderReport(report([]))).toContain('nothing is stored under this prefix');
  });

  test('helpers', () => {
    expect(formatWeight(1234567)).toBe('1 234 567');
    expect(bar(0.5, 4)).toBe('██░░');
    expect(bar(Number.NaN, 2)).toBe('░░');
    expect(idList(['a', 'b', 'c'], 2)).toBe('a b +1 more');
    expect(idList([], 2)).toBe('—');
  });
});
