/**
 * The leader's default engine (decide.ts) on a pool of OFF_THREAD_SPLITS or
 * more: every decision is taken on the pool's slice (decision 0045), read
 * from the queue's head (decision 0047), with the whole pool's result, also
 * while splits are being added; no thread is started for it. A slice of
 * OFF_THREAD_SPLITS rows or more (a fleet of that many lanes) is decided on
 * the pool thread, which is ended after IDLE_THREAD_SLICES small ones.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { ColumnarPool } from '../../../src/assignment/codec.js';
import { assignedRowsOf } from '../../../src/assignment/wire.js';
import { columnarAssignment } from '../../../src/assignment/wasm.js';
import { DefaultEngine, IDLE_THREAD_SLICES, OFF_THREAD_SPLITS } from '../../../src/assignment/front-door.js';

const engine = new DefaultEngine();
afterAll(() => engine.close());

describe('the default engine on a large pool', () => {
  it('decides on slices as the whole pool would, while splits are added too, with no thread', async () => {
    const pool = new ColumnarPool('engine-seed', { defaultCap: 2 });
    pool.setMembers(Array.from({ length: 8 }, (_, j) => ({ id: `m${j}` })));
    for (let i = 0; i < OFF_THREAD_SPLITS + 10; i++) pool.upsertSplit(`s${i}`, 1 + (i % 97));
    const first = await engine.decide(pool);
    expect(first.rows.length).toBe(16);
    for (let k = 0; k < 60; k++) {
      // What a leader sees between decisions: an assigned split leased, one completed, and (seeding) new splits.
      const d = await engine.decide(pool);
      const whole = assignedRowsOf(columnarAssignment(pool).assignee);
      expect([...d.rows]).toEqual([...whole.rows]);
      pool.setLeaseOwner(pool.idAt(d.rows[k % d.rows.length]!)!, d.members[d.assignees[k % d.rows.length]!]!);
      pool.upsertSplit(pool.idAt(d.rows[(k + 1) % d.rows.length]!)!, pool.weightAt(d.rows[(k + 1) % d.rows.length]!)!, 'completed');
      for (let i = 0; i < 50; i++) pool.upsertSplit(`new-${k}-${i}`, 1 + ((k * 50 + i) % 211));
    }
    expect(engine.threadOpen).toBe(false);
  }, 60_000);

  it('sends a slice of OFF_THREAD_SPLITS rows to the thread, and ends it when slices are small again', async () => {
    const big = new ColumnarPool('engine-seed');
    big.setMembers([{ id: 'a', cap: OFF_THREAD_SPLITS }, { id: 'b', cap: 8 }]);
    for (let i = 0; i < OFF_THREAD_SPLITS + 100; i++) big.upsertSplit(`s${i}`, 1 + (i % 13));
    const d = await engine.decide(big);
    expect(engine.threadOpen).toBe(true);
    expect([...d.rows]).toEqual([...assignedRowsOf(columnarAssignment(big).assignee).rows]);
    big.setMembers([{ id: 'a', cap: 4 }, { id: 'b', cap: 4 }]);
    for (let k = 0; k < IDLE_THREAD_SLICES; k++) await engine.decide(big);
    expect(engine.threadOpen).toBe(false);
  }, 60_000);
});

describe('readying the default engine', () => {
  it('builds a large pool\'s queue head before a decision, and leaves a small pool alone', async () => {
    const e = new DefaultEngine();
    const small = new ColumnarPool('engine-seed');
    for (let i = 0; i < 100; i++) small.upsertSplit(`s${i}`, 1);
    await e.ready(small);
    expect(small.sliceSource().head).toBeNull();
    const large = new ColumnarPool('engine-seed');
    large.setMembers([{ id: 'm0', cap: 4 }]);
    for (let i = 0; i < OFF_THREAD_SPLITS + 1; i++) large.upsertSplit(`s${i}`, 1 + (i % 5));
    await e.ready(large);
    const head = large.sliceSource().head!;
    expect(head.ready).toBe(true);
    expect(head.refilling).toBe(false);
    const d = await e.decide(large);
    expect([...d.rows]).toEqual([...assignedRowsOf(columnarAssignment(large).assignee).rows]);
    await e.close();
  });
});

describe('what the default engine reads', () => {
  it('decides on the pool as it was when called, also when its queue head was not built (the publisher restores its inputs right after the call)', async () => {
    const e = new DefaultEngine();
    const pool = new ColumnarPool('engine-seed', { defaultCap: 2 });
    pool.setMembers(Array.from({ length: 4 }, (_, j) => ({ id: `m${j}` })));
    for (let i = 0; i < OFF_THREAD_SPLITS + 5; i++) pool.upsertSplit(`s${i}`, 1 + (i % 31));
    const want = assignedRowsOf(columnarAssignment(pool).assignee);
    const pending = e.decide(pool);
    // Right after the call, before it settles: the wanted splits completed (a later read would pick others).
    for (const r of want.rows) pool.upsertSplit(pool.idAt(r)!, pool.weightAt(r)!, 'completed');
    const got = await pending;
    expect([...got.rows]).toEqual([...want.rows]);
    expect([...got.assignees]).toEqual([...want.assignees]);
    await e.close();
  });
});
