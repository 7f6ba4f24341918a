/** SplitColumns: a split is a row only with both halves and no problem; counts and weights follow incrementally. */
import { describe, expect, it } from 'vitest';
import { columnarAssignment } from '../../../src/assignment/wasm.js';
import { SplitColumns } from '../../../src/coordinator/leader/split-columns.js';
import type { SplitStatus } from '../../../src/protocol/records.js';

/** Both halves of a split seen, its spec first (as a listing brings them). */
function seen(c: SplitColumns, id: string, weight: number, status: SplitStatus): void {
  c.specSeen(id, weight);
  c.recordSeen(id, status);
}

describe('SplitColumns', () => {
  it('a split joins the pool once its spec and its record are both known; counts follow every readable record', () => {
    const c = new SplitColumns('seed', new Map(), new Map());
    c.specSeen('a', 5);
    expect(c.pool.rowOf('a')).toBe(-1);
    expect(c.hasSpec('a')).toBe(true);
    expect(c.unrecorded(10)).toEqual(['a']);
    c.recordSeen('a', 'runnable');
    expect(c.pool.rowOf('a')).toBeGreaterThanOrEqual(0);
    expect(c.statusOf('a')).toBe('runnable');
    c.recordSeen('a', 'completed');
    expect(c.statusCounts).toEqual({ runnable: 0, completed: 1, quarantined: 0 });
    expect(c.statusWeights).toEqual({ runnable: 0, completed: 5, quarantined: 0 });
    c.recordSeen('b', 'quarantined');
    expect(c.splitCount).toBe(2);
    expect(c.specCount).toBe(1);
  });

  it('reads a row\'s weight and status from the pool: a change of either moves the weight between the tallies and reaches the engine', () => {
    const c = new SplitColumns('seed', new Map(), new Map());
    seen(c, 'a', 5, 'runnable');
    seen(c, 'b', 3, 'runnable');
    const r = c.pool.rowOf('a');
    expect([c.pool.weightAt(r), c.pool.statusAt(r)]).toEqual([5, 'runnable']);
    c.specSeen('a', 9);
    expect(c.weightOf('a')).toBe(9);
    expect(c.statusWeights).toEqual({ runnable: 12, completed: 0, quarantined: 0 });
    c.recordSeen('a', 'quarantined');
    expect([c.pool.weightAt(r), c.pool.statusAt(r), c.statusOf('a')]).toEqual([9, 'quarantined', 'quarantined']);
    expect(c.statusWeights).toEqual({ runnable: 3, completed: 0, quarantined: 9 });
    expect(c.pool.toInput().splits.find((s) => s.id === 'a')).toMatchObject({ weight: 9, status: 'quarantined' });
    // Its record gone, the split leaves the pool: the row holds nothing, the spec waits.
    c.recordForgotten('a');
    expect([c.pool.rowOf('a'), c.pool.weightAt(r), c.pool.statusAt(r)]).toEqual([-1, undefined, undefined]);
    expect([c.weightOf('a'), c.statusOf('a')]).toEqual([9, undefined]);
    expect(c.statusWeights).toEqual({ runnable: 3, completed: 0, quarantined: 0 });
    expect(c.statusCounts).toEqual({ runnable: 1, completed: 0, quarantined: 0 });
  });

  it('a parked split leaves the pool, its readable record still counted', () => {
    const c = new SplitColumns('seed', new Map(), new Map());
    seen(c, 'a', 2, 'runnable');
    c.setProblem('a', 'spec', 'bad');
    c.specSeen('a', undefined);
    expect(c.pool.rowOf('a')).toBe(-1);
    expect(c.parked.get('a')?.get('spec')).toBe('bad');
    expect(c.statusCounts.runnable).toBe(1);
    c.clearProblem('a', 'spec');
    c.specSeen('a', 2);
    expect(c.parked.has('a')).toBe(false);
    expect(c.pool.rowOf('a')).toBeGreaterThanOrEqual(0);
  });

  it('a new row gets the owners the sparse maps know', () => {
    const owners = new Map([['a', 'w0']]);
    const leases = new Map([['a', { rec: { v: 1 as const, fp: 'f', id: 'a', owner: 'w1', nonce: 'n', epoch: 1 }, modRevision: 3 }]]);
    const c = new SplitColumns('seed', owners, leases);
    seen(c, 'a', 1, 'runnable');
    expect(c.pool.toInput().splits.find((s) => s.id === 'a')).toMatchObject({ recordOwner: 'w0', leaseOwner: 'w1' });
  });

  it('clear forgets every split, weights included (a listing after a restart counts each once)', () => {
    const c = new SplitColumns('seed', new Map(), new Map());
    seen(c, 'a', 7, 'runnable');
    c.clear();
    expect(c.statusCounts).toEqual({ runnable: 0, completed: 0, quarantined: 0 });
    expect(c.statusWeights).toEqual({ runnable: 0, completed: 0, quarantined: 0 });
    seen(c, 'a', 7, 'runnable');
    expect(c.statusWeights.runnable).toBe(7);
    expect(c.pool.size).toBe(1);
  });

  it('reserve makes room without changing what is held or what is decided', () => {
    const grown = new SplitColumns('seed', new Map(), new Map());
    const reserved = new SplitColumns('seed', new Map(), new Map());
    for (const c of [grown, reserved]) c.pool.setMembers([{ id: 'm0', cap: 3 }, { id: 'm1', cap: 2 }]);
    const place = (c: SplitColumns, from: number, to: number) => {
      for (let i = from; i < to; i++) seen(c, `s-${i}`, (i * 37) % 101, i % 9 === 0 ? 'completed' : 'runnable');
    };
    place(grown, 0, 3000);
    place(reserved, 0, 10);
    reserved.reserve(5000); // more than will be used, after some rows exist
    place(reserved, 10, 3000);
    expect(reserved.pool.toInput()).toEqual(grown.pool.toInput());
    expect(reserved.statusCounts).toEqual(grown.statusCounts);
    expect(reserved.statusWeights).toEqual(grown.statusWeights);
    const decided = (c: SplitColumns) => { const d = columnarAssignment(c.pool); return Array.from(d.assignee); };
    expect(decided(reserved)).toEqual(decided(grown));
  });
});
