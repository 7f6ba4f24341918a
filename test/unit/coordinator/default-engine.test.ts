/**
 * The leader's default engine (decide.ts) on a pool of OFF_THREAD_SPLITS or
 * more: the first decision sorts on the pool thread, the next ones decide
 * on the pool's slice (decision 0045) with the same result, and after
 * IDLE_THREAD_SLICES of them the idle thread is ended (its engine memory is
 * the size of the whole pool); a pool that loses its cached order starts
 * one again.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { ColumnarPool } from '../../../src/assignment/codec.js';
import { assignedRowsOf } from '../../../src/assignment/wire.js';
import { columnarAssignment } from '../../../src/assignment/wasm.js';
import { DefaultEngine, IDLE_THREAD_SLICES, OFF_THREAD_SPLITS } from '../../../src/coordinator/leader/decide.js';

const engine = new DefaultEngine();
afterAll(() => engine.close());

describe('the default engine on a large pool', () => {
  it('decides on the thread, then on slices as the whole pool would, and ends the idle thread', async () => {
    const pool = new ColumnarPool('engine-seed', { defaultCap: 2 });
    pool.setMembers(Array.from({ length: 8 }, (_, j) => ({ id: `m${j}` })));
    for (let i = 0; i < OFF_THREAD_SPLITS + 10; i++) pool.upsertSplit(`s${i}`, 1 + (i % 97));
    const first = await engine.decide(pool);
    expect(engine.threadOpen).toBe(true);
    expect(first.rows.length).toBe(16);
    for (let k = 0; k < IDLE_THREAD_SLICES; k++) {
      // What a leader sees between decisions: an assigned split leased, one completed.
      const d = await engine.decide(pool);
      const whole = assignedRowsOf(columnarAssignment(pool).assignee);
      expect([...d.rows]).toEqual([...whole.rows]);
      pool.setLeaseOwner(pool.idAt(d.rows[k % d.rows.length]!)!, d.members[d.assignees[k % d.rows.length]!]!);
      pool.upsertSplit(pool.idAt(d.rows[(k + 1) % d.rows.length]!)!, pool.weightAt(d.rows[(k + 1) % d.rows.length]!)!, 'completed');
    }
    expect(engine.threadOpen).toBe(false);
    pool.upsertSplit('new-split', 5); // the cached order is dropped: the whole pool is sorted again, on a thread
    await engine.decide(pool);
    expect(engine.threadOpen).toBe(true);
  }, 60_000);
});
