/**
 * What a division writes (protocol/division.ts, decision 0063): the proposal's rules, the commit
 * past the end, the parent's progress record and the residual's records in the lane's fenced
 * transaction (txns.ts laneTxn with `also`), a decline's record.
 */
import { describe, expect, it } from 'vitest';
import { progressRecord } from '../../../src/protocol/claims.js';
import { commitProblem, declineRecord, divisionWrite, proposalProblem } from '../../../src/protocol/division.js';
import { laneWrite } from '../../../src/protocol/lanes.js';
import { progressKey, specKey, splitKey } from '../../../src/protocol/keys.js';
import { decodeRecord, SCHEMA_VERSION, type SpecRecord, type SplitRecord } from '../../../src/protocol/records.js';
import { laneTxn } from '../../../src/protocol/txns.js';

const fp = '0123456789abcdef';
const prefix = 'splitfleet/j/';
const record: SplitRecord = { v: SCHEMA_VERSION, fp, id: 'big', epoch: 3, status: 'runnable', owner: 'w0', attempts: 1 };
const spec: SpecRecord = { v: SCHEMA_VERSION, fp, id: 'big', weight: 1000, descriptor: { from: 0, to: 1000 }, generation: 2 };
const lane = { prefix, me: 'w0', record, spec, progressRecord: undefined, committed: 300 };

describe('a division', () => {
  it('refuses a bad proposal, naming the field', () => {
    expect(proposalProblem(null)).toMatch(/must be an object/);
    expect(proposalProblem({ residual: { descriptor: 1, weight: 1 } })).toMatch(/^proposal\.end/);
    expect(proposalProblem({ end: 5, residual: { weight: 1 } })).toMatch(/^proposal\.residual\.descriptor/);
    expect(proposalProblem({ end: 5, residual: { descriptor: {}, weight: 0 } })).toMatch(/^proposal\.residual\.weight: must be an integer ≥ 1/);
    expect(proposalProblem({ end: 5, residual: { descriptor: {}, weight: 1.5 } })).toMatch(/^proposal\.residual\.weight/);
    expect(proposalProblem({ end: 5, residual: { descriptor: {}, weight: 2 }, weight: -1 })).toMatch(/^proposal\.weight/);
    expect(proposalProblem({ end: 5, residual: { descriptor: {}, weight: 2 }, done: 2 })).toMatch(/^proposal\.done/);
    expect(proposalProblem({ end: 5, residual: { descriptor: () => 1, weight: 2 } })).toMatch(/^proposal\.residual\.descriptor/);
    expect(proposalProblem({ end: 5, residual: { descriptor: { key: 'a' }, weight: 2 } })).toBeUndefined();
  });

  it('refuses a number commit past a number end, and a done outside [0, 1]', () => {
    expect(commitProblem(501, undefined, 500)).toMatch(/past the split's end 500/);
    expect(commitProblem(500, undefined, 500)).toBeUndefined();
    expect(commitProblem({ at: 900 }, undefined, 500)).toBeUndefined(); // not numbers: the handler's business
    expect(commitProblem(10, { done: 1.2 }, undefined)).toMatch(/done: must be a number 0 ≤ x ≤ 1/);
  });

  it('writes the parent\'s end and weight with its progress unchanged, and creates the residual only where absent', () => {
    const w = divisionWrite(lane, { seq: 1 }, { end: 650, residual: { descriptor: { from: 650, to: 1000 }, weight: 350 } });
    expect(w.residualId).toBe('big÷1');
    expect(w.committed).toMatchObject({ id: 'big', epoch: 3, progress: 300, divisions: 1, end: 650, weight: 650 });
    expect(w.committed.done).toBeUndefined();
    const txn = laneTxn({ prefix, id: 'big', splitRevision: 10, progressRevision: 0, sessionLease: '7' }, laneWrite('divide', { me: 'w0', record, progressRecord: undefined, maxAttempts: 4, retryBackoff: { baseMs: 1, maxMs: 1, jitter: 0 } as never, now: 0, draw: 0 }, { division: w }));
    // The commit's three compares, and the residual's two keys compared absent.
    expect(txn.compares).toEqual([
      { target: 'modRevision', key: splitKey(prefix, 'big'), equals: 10 },
      { target: 'modRevision', key: progressKey(prefix, 'big'), equals: 0 },
      { target: 'lease', key: 'splitfleet/j/lease.big', equals: '7' },
      { target: 'absent', key: specKey(prefix, 'big÷1') },
      { target: 'absent', key: splitKey(prefix, 'big÷1') },
    ]);
    const puts = txn.success.filter((o) => o.op === 'put') as { key: string; value: string }[];
    expect(puts.map((o) => o.key)).toEqual([progressKey(prefix, 'big'), specKey(prefix, 'big÷1'), splitKey(prefix, 'big÷1')]);
    expect(txn.success.some((o) => o.op === 'delete')).toBe(false); // not terminal: the lease key stays
    const rspec = decodeRecord('spec', specKey(prefix, 'big÷1'), puts[1]!.value, fp);
    expect(rspec).toMatchObject({ id: 'big÷1', weight: 350, descriptor: { from: 650, to: 1000 }, generation: 2, parent: 'big' });
    const rsplit = decodeRecord('split', splitKey(prefix, 'big÷1'), puts[2]!.value, fp);
    expect(rsplit).toMatchObject({ epoch: 0, status: 'runnable', owner: '', attempts: 0 });
  });

  it('a second division builds on the first: the next seq, the part\'s weight less the residual\'s', () => {
    const first = divisionWrite(lane, { seq: 1 }, { end: 650, residual: { descriptor: 1, weight: 350 } });
    const second = divisionWrite({ ...lane, progressRecord: first.committed, committed: 400 }, { seq: 2 }, { end: 500, residual: { descriptor: 2, weight: 150 }, done: 0.8 });
    expect(second.residualId).toBe('big÷2');
    expect(second.committed).toMatchObject({ divisions: 2, end: 500, weight: 500, done: 0.8, progress: 400 });
  });

  it('a decline holds for its tenancy only', () => {
    const declined = declineRecord(lane, 1);
    expect(declined).toMatchObject({ declined: 1, epoch: 3, progress: 300 });
    // The same tenancy's next commit keeps it; the next tenancy's first commit drops it.
    expect(progressRecord(record, 'w0', 310, declined).declined).toBe(1);
    const next = { ...record, epoch: 4, owner: 'w1' };
    expect(progressRecord(next, 'w1', 320, declined).declined).toBeUndefined();
    // A division's end and weight hold for every tenancy.
    const divided = divisionWrite(lane, { seq: 1 }, { end: 650, residual: { descriptor: 1, weight: 350 } }).committed;
    expect(progressRecord(next, 'w1', 320, divided)).toMatchObject({ end: 650, weight: 650, divisions: 1 });
  });
});
