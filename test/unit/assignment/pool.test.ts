/**
 * AssignmentPool: the pool's threads (the compiled dist/ thread file) and its
 * in-thread fallback return exactly what `desiredAssignment` and
 * `columnarAssignment` return; latest-wins, errors rebuilt with code and
 * message, close(), fallback. Needs `npm run build` first.
 * A failing property prints its seed; replay with { seed, path } in fc.assert.
 */
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ColumnarDecision, ColumnarPool } from '../../../src/assignment/codec.js';
import { desiredAssignment } from '../../../src/assignment/engine.js';
import { AssignmentPool, defaultThreadFile } from '../../../src/assignment/pool.js';
import type { AssignmentInput, AssignmentResult } from '../../../src/assignment/types.js';
import { columnarAssignment } from '../../../src/assignment/wasm.js';
import { isSplitfleetError, SplitfleetError } from '../../../src/errors.js';
import { assignmentInput, mulberry32, settle } from './generators.js';
import { poolOf } from './wasm-compare.js';

const threadFile = defaultThreadFile();

/** The result without its timing, with the key order made visible. */
function comparable(r: AssignmentResult): unknown {
  const { computeMs: _, ...stats } = r.stats;
  return { keys: Object.keys(r.assignment), assignment: r.assignment, stats };
}

function columnarComparable(d: ColumnarDecision): unknown {
  const { computeMs: _, ...stats } = d.stats;
  return { members: [...d.members], assignee: Array.from(d.assignee), stats };
}

function thrown(f: () => unknown): SplitfleetError {
  try {
    f();
  } catch (e) {
    if (e instanceof SplitfleetError) return e;
    throw e;
  }
  throw new Error('expected a throw');
}

function bigInput(n: number, m: number, seed: number): AssignmentInput {
  const rand = mulberry32(seed);
  const members = Array.from({ length: m }, (_, j) => ({ id: `m-${j}`, cap: Math.ceil((1.25 * n) / m) }));
  const splits = Array.from({ length: n }, (_, i) => {
    const o = rand() < 0.5 ? `m-${Math.floor(rand() * (m + 5))}` : null;
    return { id: `s-${i}`, weight: Math.floor(rand() * 1e9), leaseOwner: o, previous: o, recordOwner: rand() < 0.1 ? o : null };
  });
  return { seed: `big-${seed}`, members, splits, reserved: splits.filter(() => rand() < 0.01).map((s) => s.id) };
}

/** The rejection of `p` (handled at once), or null when it resolves. */
const outcome = (p: Promise<unknown>): Promise<unknown> => p.then(() => null, (e: unknown) => e);

let pool: AssignmentPool;
let local: AssignmentPool;

beforeAll(() => {
  if (!existsSync(threadFile)) {
    throw new Error(`pool.test needs the compiled thread file ${threadFile}: run "npm run build" first`);
  }
  pool = new AssignmentPool({ threads: 1, fallback: false });
  local = new AssignmentPool({ threads: 0 });
});

afterAll(async () => {
  await pool?.close();
  await local?.close();
});

describe('AssignmentPool equals desiredAssignment', () => {
  it('runs on threads', () => {
    expect(pool.mode).toBe('threads');
    expect(local.mode).toBe('in-thread');
  });

  it('object form: pool = in-thread = wasm = reference on fast-check inputs', async () => {
    await fc.assert(
      fc.asyncProperty(assignmentInput(), async (input) => {
        const want = comparable(desiredAssignment(input, { engine: 'reference' }));
        expect(comparable(desiredAssignment(input))).toEqual(want);
        expect(comparable(await pool.assign(input))).toEqual(want);
        expect(comparable(await local.assign(input))).toEqual(want);
      }),
      { numRuns: 150 },
    );
  });

  it('object form: a repeated task reuses the last decision, and any changed column does not', async () => {
    await fc.assert(
      fc.asyncProperty(assignmentInput(), fc.nat(), async (input, seed) => {
        const rand = mulberry32(seed);
        const settled = settle(input, desiredAssignment(input, { engine: 'reference' }).assignment);
        const first = settled.splits[0];
        const other = settled.members.at(-1)?.id ?? null;
        const another = settled.members[0]?.id ?? null;
        // The last split: owners named before it keep their handles, so only its own column differs.
        const last = settled.splits.at(-1);
        const withLast = (f: Partial<AssignmentInput['splits'][number]>): AssignmentInput =>
          last === undefined ? settled : { ...settled, splits: [...settled.splits.slice(0, -1), { ...last, ...f }] };
        const variants: AssignmentInput[] = [
          settled, settled, // the second is the reuse
          // Each differs from the one before in one thing only: the seed, one member's id, the last split gone.
          input, { ...input, seed: `${input.seed}-2` },
          settled, { ...settled, members: settled.members.map((mm, i) => (i === 0 ? { ...mm, id: `${mm.id}-renamed` } : mm)) },
          settled, { ...settled, splits: settled.splits.slice(0, -1) },
          // Pairs that differ in one owner column only (lease, then previous, then record).
          withLast({ leaseOwner: other }), withLast({ leaseOwner: another }),
          withLast({ leaseOwner: null, previous: other }), withLast({ leaseOwner: null, previous: another }),
          withLast({ leaseOwner: null, previous: null, recordOwner: other }), withLast({ leaseOwner: null, previous: null, recordOwner: another }),
          first === undefined ? settled : { ...settled, splits: [{ ...first, weight: first.weight === 0 ? 1 : first.weight - 1 }, ...settled.splits.slice(1)] },
          { ...settled, reserved: settled.splits.filter(() => rand() < 0.3).map((s) => s.id) },
          { ...settled, members: settled.members.map((mm) => ({ id: mm.id, cap: 1 + (mm.cap ?? 1) })) },
          { ...settled, seed: `${settled.seed}-other` },
          settled, settled,
          // The caller writes each task into the same shared columns (TaskBuffers): the thread must compare the
          // next task with copies. Weights that reorder the pool, then claimability that grows it, each
          // following a task whose order the thread kept.
          first === undefined ? settled : { ...settled, splits: [{ ...first, weight: 2 ** 40 }, ...settled.splits.slice(1)] },
          settled,
          { ...settled, seed: `${settled.seed}-room`, reserved: settled.splits.filter((_, i) => i % 2 === 0).map((s) => s.id) },
          { ...settled, seed: `${settled.seed}-room` },
          // ...and ids that moved between rows (the same code units in all, in another order).
          { ...settled, seed: `${settled.seed}-room`, splits: settled.splits.map((s, i, a) => ({ ...s, id: a[a.length - 1 - i]!.id })) },
        ];
        for (const v of variants) {
          const got = await pool.assign(v);
          expect(comparable(got)).toEqual(comparable(desiredAssignment(v, { engine: 'reference' })));
          // What the caller does with a result must not reach the next one.
          for (const list of Object.values(got.assignment)) list.splice(0, list.length, 'junk');
        }
      }),
      { numRuns: 60 },
    );
  });

  it('object form: rows left in place from the last task (TaskBuffers) are right when ids diverge after wide code units', async () => {
    // The room keeps the last task's code units for the rows whose ids repeat; the task's narrow flag must still see
    // them. "ā" (0x101) sorts after "b", but read as 8 bits (0x01) it would sort first.
    const members = [{ id: 'a', cap: 8 }];
    const task = (ids: string[], seed: string): AssignmentInput => ({ seed, members, splits: ids.map((id) => ({ id, weight: 1 })) });
    // Last, ids whose code units outgrow the room: its new buffer holds none of the rows that repeat (ids of
    // distinct lengths, so that units left out would not collide into the duplicate-key fallback).
    const tasks = [task(['ā', 'b', 'c'], 's'), task(['ā', 'b', 'd'], 's'), task(['ā', 'b'], 's'), task(['ā', 'b', 'c', 'e'], 't'),
      task(['ā', 'bb', 'ccc'], 'u'), task(['ā', 'bb', 'ccc', 'x'.repeat(200)], 'u')];
    // A pool of its own: its room is sized by these tasks alone.
    const own = new AssignmentPool({ threads: 1, fallback: false });
    try {
      for (const t of tasks) {
        const got = await own.assign(t);
        expect(comparable(got)).toEqual(comparable(desiredAssignment(t, { engine: 'reference' })));
      }
    } finally {
      await own.close();
    }
  });

  it('object form: a room whose owner handles grew past their bound starts a new table, and repeated rows are rewritten under it', async () => {
    // Rows 0 and 1 repeat in every task (their handles are left in place); the other rows name fresh owners, so the
    // room's table grows by 24 a task and is replaced on the way. Each task is then repeated with another seed.
    const members = ['a', 'b', 'c', 'd'].map((id) => ({ id, cap: 10 }));
    const own = pool.mode === 'threads';
    expect(own).toBe(true);
    for (let k = 0; k < 60; k++) {
      const splits = [
        { id: 'r0', weight: 5, leaseOwner: 'a', previous: 'a', recordOwner: 'a' },
        { id: 'r1', weight: 5, leaseOwner: 'b', previous: 'c', recordOwner: 'd' },
        ...Array.from({ length: 8 }, (_, i) => ({
          id: `f${i}`, weight: 1 + i, leaseOwner: `x-${k}-${i}`, previous: `y-${k}-${i}`, recordOwner: i % 2 === 0 ? 'c' : `z-${k}-${i}`,
        })),
      ];
      for (const seed of [`s-${k}`, `t-${k}`]) {
        const t: AssignmentInput = { seed, members, splits };
        expect(comparable(await pool.assign(t))).toEqual(comparable(desiredAssignment(t, { engine: 'reference' })));
      }
    }
  });

  it('object form: a member table built ahead (MembersTask) is a hint, also for an input whose read fails', async () => {
    const a = bigInput(2000, 30, 3);
    const b = { ...bigInput(2000, 30, 4), members: a.members.slice(5).concat([{ id: 'late-joiner' }]) };
    // A bad input's members get their table built on the thread, then its read fails; the next task has the last
    // good input's members (so no table is built ahead for it) and must not take the bad one's.
    const bad = (x: AssignmentInput): AssignmentInput => ({ ...x, seed: `${x.seed}-bad`, splits: [...x.splits, { id: 'broken', weight: -1 }] });
    const changed = (x: AssignmentInput, w: number): AssignmentInput => ({ ...x, splits: [{ ...x.splits[0]!, weight: w }, ...x.splits.slice(1)] });
    for (const [next, seed] of [[a, 'x'], [b, 'y'], [a, 'y'], [b, 'x']] as const) {
      const other = next === a ? b : a;
      for (const v of [{ ...next, seed }, 'bad', changed({ ...next, seed }, 7), 'bad', changed({ ...next, seed }, 8)] as const) {
        if (v === 'bad') {
          await expect(pool.assign(bad(other))).rejects.toThrow(/weight/);
          continue;
        }
        expect(comparable(await pool.assign(v))).toEqual(comparable(desiredAssignment(v, { engine: 'reference' })));
      }
    }
  });

  it('object form on two threads: decisions read at once do not share a read buffer, and repeats stay right', async () => {
    // A small chunk: the two reads interleave turn by turn.
    const two = new AssignmentPool({ threads: 2, fallback: false, chunk: 64 });
    try {
      const a = bigInput(3000, 20, 1);
      const b = bigInput(3000, 20, 2);
      const wantA = comparable(desiredAssignment(a, { engine: 'reference' }));
      const wantB = comparable(desiredAssignment(b, { engine: 'reference' }));
      for (let round = 0; round < 3; round++) {
        const [ga, gb] = await Promise.all([two.assign(a), two.assign(b)]);
        expect(comparable(ga), `round ${round}, a`).toEqual(wantA);
        expect(comparable(gb), `round ${round}, b`).toEqual(wantB);
      }
      for (const [x, want] of [[a, wantA], [a, wantA], [b, wantB], [b, wantB]] as const) expect(comparable(await two.assign(x))).toEqual(want);
    } finally {
      await two.close();
    }
  });

  it('starts its threads when the parent runs with flags a Worker refuses (--expose-gc, --trace-gc)', () => {
    // The compiled pool, in a child started with those flags: it must not fall back to the calling thread.
    const url = new URL('../../../dist/src/assignment/pool.js', import.meta.url).href;
    const script = `import { AssignmentPool } from ${JSON.stringify(url)};
      const p = new AssignmentPool({ threads: 1, fallback: false });
      const r = await p.assign({ seed: 's', members: [{ id: 'a' }], splits: [{ id: 'x', weight: 1 }] });
      console.log(JSON.stringify({ mode: p.mode, assignment: r.assignment }));
      await p.close();`;
    const out = execFileSync(process.execPath, ['--expose-gc', '--trace-gc', '--input-type=module', '-e', script], { encoding: 'utf8' });
    expect(JSON.parse(out.trim().split('\n').filter((l) => l.startsWith('{')).pop()!)).toEqual({ mode: 'threads', assignment: { a: ['x'] } });
  });

  it('changes made while a thread sorts a snapshot are kept in the order the pool adopts', async () => {
    for (const [which, p] of [['threads', pool], ['in-thread', local]] as const) {
      const input = bigInput(4000, 20, 11);
      const cp = poolOf(input);
      const pending = p.assignColumnar(cp); // snapshot taken, no cached order yet
      input.splits.slice(0, 300).forEach((s, k) => {
        cp.setLeaseOwner(s.id, `m-${k % 23}`);
        cp.setPrevious(s.id, k % 3 === 0 ? null : `m-${k % 5}`);
        cp.setRecordOwner(s.id, `m-${k % 7}`);
        if (k % 11 === 0) cp.upsertSplit(s.id, s.weight, 'completed'); // same weight: the order holds
        if (k % 13 === 0) cp.removeSplit(s.id);
      });
      await pending;
      expect(cp.cachedOrder(), which).not.toBeNull();
      // The same state built afresh (sorted from scratch) must decide the same.
      const fresh = poolOf({ ...cp.toInput(), reserved: input.reserved ?? [] });
      const d = columnarAssignment(cp);
      const f = columnarAssignment(fresh);
      const byId = (dd: ColumnarDecision, q: ColumnarPool): Record<string, string | null> =>
        Object.fromEntries(input.splits.map((s) => [s.id, q.rowOf(s.id) < 0 ? null : q.assigneeOf(dd, s.id)]));
      expect(byId(d, cp), which).toEqual(byId(f, fresh));
      expect(d.stats, which).toEqual({ ...f.stats, computeMs: d.stats.computeMs });
    }
  });

  it('columnar snapshots taken while a decision runs or waits do not share its buffers (snapshot rooms)', async () => {
    for (const [which, p] of [['threads', pool], ['in-thread', local]] as const) {
      const input = bigInput(3000, 20, 12);
      const cp = poolOf(input);
      await p.assignColumnar(cp); // the order is cached: later snapshots carry the sorted columns
      // Each call's expected decision: the same pool, decided in this thread at the moment of the call.
      const wants: unknown[] = [];
      const calls: Promise<ColumnarDecision>[] = [];
      for (let round = 0; round < 4; round++) {
        calls.push(p.assignColumnar(cp));
        wants.push(columnarComparable(columnarAssignment(cp)));
        // Every owner changes between calls; round 2 also drops the order (a new split).
        input.splits.forEach((sp, k) => cp.setLeaseOwner(sp.id, `m-${(k + round) % 20}`));
        if (round === 2) cp.upsertSplit(`new-${round}`, 12345);
      }
      const got = await Promise.all(calls.map((c) => c.then(columnarComparable, (e: unknown) => (isSplitfleetError(e) ? e.code : e))));
      // Latest wins: the first runs, the middle two are superseded while waiting, the last runs.
      expect(got[0], which).toEqual(wants[0]);
      expect(got.slice(1, 3), which).toEqual(['SUPERSEDED', 'SUPERSEDED']);
      expect(got[3], which).toEqual(wants[3]);
      expect(columnarComparable(await p.assignColumnar(cp)), which).toEqual(columnarComparable(columnarAssignment(cp)));
    }
  });

  it('columnar form: pool = in-thread = columnarAssignment, cold then with the adopted order', async () => {
    await fc.assert(
      fc.asyncProperty(assignmentInput(), async (input) => {
        const want = columnarComparable(columnarAssignment(poolOf(input)));
        const p = poolOf(input);
        expect(columnarComparable(await pool.assignColumnar(p))).toEqual(want);
        if (p.size > 0) expect(p.cachedOrder()).not.toBeNull(); // the thread's sort was adopted
        expect(columnarComparable(await pool.assignColumnar(p))).toEqual(want);
        expect(columnarComparable(await local.assignColumnar(poolOf(input)))).toEqual(want);
      }),
      { numRuns: 100 },
    );
  });

  it('a 100k-split case, cold and settled, both forms', async () => {
    const input = bigInput(100_000, 1_000, 7);
    const cold = desiredAssignment(input);
    expect(comparable(await pool.assign(input))).toEqual(comparable(cold));
    const settled = settle(input, cold.assignment);
    expect(comparable(await pool.assign(settled))).toEqual(comparable(desiredAssignment(settled)));
    expect(comparable(await pool.assign(settled))).toEqual(comparable(desiredAssignment(settled, { engine: 'reference' })));
    const p = poolOf(settled);
    const want = columnarComparable(columnarAssignment(poolOf(settled)));
    const first = await pool.assignColumnar(p);
    expect(columnarComparable(first)).toEqual(want);
    // A thread's reply arrives moved, in buffers of its own (decision 0041: shared ones were never
    // collected by this thread, which drops them), and the pool adopted its sort.
    for (const a of [first.assignee, p.cachedOrder()]) {
      expect(a?.buffer).not.toBeInstanceOf(SharedArrayBuffer);
      expect(a?.buffer.byteLength).toBe(a?.byteLength);
    }
    expect(p.cachedOrder()).not.toBeNull();
    p.setLeaseOwner('s-5', 'm-1'); // an owner change keeps the cached order
    const again = poolOf(settled);
    again.setLeaseOwner('s-5', 'm-1');
    expect(columnarComparable(await pool.assignColumnar(p))).toEqual(columnarComparable(columnarAssignment(again)));
  }, 120_000);

  it('object form over several pages of rows (pages.ts): changes that start inside a page, past a page, and rows that shrink and grow', async () => {
    // 100k rows are six pages of 16,384 and part of a seventh; the caller reads and rebuilds them page by page.
    const input = bigInput(100_000, 300, 11);
    const settled = settle(input, desiredAssignment(input).assignment);
    const at = (k: number, f: Partial<AssignmentInput['splits'][number]>, base = settled): AssignmentInput =>
      ({ ...base, splits: base.splits.map((s, i) => (i === k ? { ...s, ...f } : s)) });
    const variants: AssignmentInput[] = [
      settled, settled,
      // An id that differs in the second page: the room's rows after it are rewritten, those before kept.
      at(40_000, { id: 'renamed-40000' }),
      // Owners that differ in the last row of a page and the first row of the next.
      at(65_535, { leaseOwner: 'm-7', previous: 'm-7' }), at(65_536, { leaseOwner: 'm-8', recordOwner: 'm-9' }),
      // Fewer rows (two pages and a part), then more again (the held read has no rows past its end).
      { ...settled, splits: settled.splits.slice(0, 70_000) }, settled,
      // A member joins: the change a leader decides, over every page.
      { ...settled, members: [...settled.members, { id: 'm-new', cap: settled.members[0]!.cap }] },
      settled,
    ];
    const fresh = new AssignmentPool({ threads: 1, fallback: false, chunk: 5_000 });
    try {
      for (const v of variants) {
        const want = comparable(desiredAssignment(v, { engine: 'reference' }));
        expect(comparable(await pool.assign(v))).toEqual(want);
        // A chunk that is not a whole number of pages: steps straddle page boundaries.
        expect(comparable(await fresh.assign(v))).toEqual(want);
        // ...and in-thread, whose reads are paged as well (marshal.ts).
        expect(comparable(desiredAssignment(v))).toEqual(want);
      }
    } finally {
      await fresh.close();
    }
  }, 240_000);
});

describe('AssignmentPool.assignColumnarRows (the leader\'s form)', () => {
  it('is the dense decision\'s assigned rows, ascending, on a thread and in-thread, cached order or not', async () => {
    const input = settle(bigInput(50_000, 500, 11), desiredAssignment(bigInput(50_000, 500, 11)).assignment);
    const want = columnarAssignment(poolOf(input));
    const rows = Array.from(want.assignee.keys()).filter((r) => want.assignee[r]! >= 0);
    const { computeMs: _, ...stats } = want.stats;
    for (const p of [pool, local]) {
      const cp = poolOf(input);
      for (const pass of ['fresh', 'cached order']) {
        const got = await p.assignColumnarRows(cp);
        const { computeMs: __, ...gotStats } = got.stats;
        expect({ members: [...got.members], rows: Array.from(got.rows), assignees: Array.from(got.assignees), stats: gotStats }, `${p.mode}, ${pass}`)
          .toEqual({ members: [...want.members], rows, assignees: rows.map((r) => want.assignee[r]!), stats });
      }
    }
  }, 120_000);
});

describe('AssignmentPool semantics', () => {
  const small = (k: number): AssignmentInput => ({
    seed: `s${k}`, members: [{ id: 'a' }, { id: 'b' }], splits: [{ id: 'x', weight: k + 1 }, { id: 'y', weight: 2 }],
  });

  it('latest-wins: a queued request replaced by a newer one rejects with SUPERSEDED', async () => {
    const big = bigInput(50_000, 100, 1);
    const first = pool.assign(big);
    const second = outcome(pool.assign(small(2)));
    const third = pool.assign(small(3));
    expect(await second).toSatisfy((e) => isSplitfleetError(e, 'SUPERSEDED'));
    expect(comparable(await third)).toEqual(comparable(desiredAssignment(small(3))));
    expect(comparable(await first)).toEqual(comparable(desiredAssignment(big)));
  }, 60_000);

  it('latest-wins in-thread too', async () => {
    const first = local.assign(small(1));
    const second = local.assign(small(2));
    const third = local.assign(small(3));
    await expect(second).rejects.toSatisfy((e) => isSplitfleetError(e, 'SUPERSEDED'));
    expect(comparable(await first)).toEqual(comparable(desiredAssignment(small(1))));
    expect(comparable(await third)).toEqual(comparable(desiredAssignment(small(3))));
  });

  it('errors keep their code and message: caller-side, thread-side (duplicate ids) and shape', async () => {
    const bad: AssignmentInput[] = [
      { seed: 's', members: [{ id: 'a' }], splits: [{ id: 'x', weight: -1 }] },
      { seed: 's', members: [{ id: 'a' }], splits: [{ id: 'x', weight: 1.5 }] },
      { seed: 's', members: [{ id: 'a' }], splits: [{ id: 'x', weight: 1 }, { id: 'x', weight: 2 }] },
      { seed: 's', members: [{ id: 'a', cap: 0 }], splits: [] },
      { seed: 's', members: [{ id: 'a' }, { id: 'a' }], splits: [] },
      { seed: 's', members: [], splits: [{ id: 'x', weight: 1, status: 'done' as never }] },
      { seed: 1 as never, members: [], splits: [] },
      { seed: 's', members: [], splits: [{ id: 'x', weight: 1, leaseOwner: 5 as never }] },
    ];
    for (const input of bad) {
      const want = thrown(() => desiredAssignment(input));
      for (const p of [pool, local]) {
        const got = await p.assign(input).then(() => null, (e: unknown) => e);
        expect(got).toBeInstanceOf(SplitfleetError);
        expect({ code: (got as SplitfleetError).code, message: (got as SplitfleetError).message }).toEqual({ code: want.code, message: want.message });
      }
    }
  });

  it('close() rejects waiting and later requests with CLOSED', async () => {
    const p = new AssignmentPool({ threads: 1, fallback: false });
    const running = outcome(p.assign(bigInput(50_000, 100, 2)));
    const waiting = outcome(p.assign(small(1)));
    await p.close();
    expect(await waiting).toSatisfy((e) => isSplitfleetError(e, 'CLOSED'));
    expect(await running).toSatisfy((e) => isSplitfleetError(e, 'CLOSED'));
    await expect(p.assign(small(1))).rejects.toSatisfy((e) => isSplitfleetError(e, 'CLOSED'));
    await expect(p.assignColumnar(poolOf(small(1)))).rejects.toSatisfy((e) => isSplitfleetError(e, 'CLOSED'));
  });

  it('falls back to the calling thread when the thread file is missing, or refuses with fallback: false', async () => {
    const p = new AssignmentPool({ threadFile: '/nonexistent/thread.js' });
    expect(p.mode).toBe('in-thread');
    expect(p.fallbackReason).toMatch(/not found/);
    expect(comparable(await p.assign(small(4)))).toEqual(comparable(desiredAssignment(small(4))));
    await p.close();
    expect(() => new AssignmentPool({ threadFile: '/nonexistent/thread.js', fallback: false })).toThrow(/not found/);
    expect(() => new AssignmentPool({ threads: -1 })).toThrow(/threads must be an integer/);
  });

  it('is an Assigner: assign works detached from the pool', async () => {
    const assign = pool.assign;
    expect(comparable(await assign(small(5)))).toEqual(comparable(desiredAssignment(small(5))));
  });
});
