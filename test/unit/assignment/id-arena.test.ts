/**
 * IdArena (src/assignment/id-arena.ts) against the structures it replaced,
 * a Map id → row and an array row → id: any sequence of adds and removes
 * leaves both answering alike, through widening to two-byte units,
 * compactions and index growth; an arena rebuilt from its units answers as
 * the original did.
 */
import { fc, test } from '@fast-check/vitest';
import { describe, expect, it } from 'vitest';
import { IdArena } from '../../../src/assignment/id-arena.js';

type Op = { kind: 'add'; id: string } | { kind: 'remove'; pick: number } | { kind: 'reserve'; rows: number } | { kind: 'reserveUnits'; units: number }
  | { kind: 'touch'; pages: number };

// Few distinct ids, so that removes and re-adds of the same id are common; some wide, some long.
const idArb = fc.oneof(
  fc.constantFrom('a', 'b', 'c', 'ab', 'ba', 'key/0001', 'key/0002', 'é', 'Ω', '日本', '😀'),
  fc.string({ minLength: 1, maxLength: 6 }),
  fc.string({ minLength: 1, maxLength: 3, unit: 'binary' }),
  fc.nat(30).map((n) => `s3://bucket/${'x'.repeat(n)}/${n}`),
);
const opArb: fc.Arbitrary<Op> = fc.oneof(
  { weight: 3, arbitrary: idArb.map((id) => ({ kind: 'add' as const, id })) },
  { weight: 2, arbitrary: fc.nat().map((pick) => ({ kind: 'remove' as const, pick })) },
  { weight: 1, arbitrary: fc.nat(500).map((rows) => ({ kind: 'reserve' as const, rows })) },
  { weight: 1, arbitrary: fc.nat(5000).map((units) => ({ kind: 'reserveUnits' as const, units })) },
  { weight: 1, arbitrary: fc.nat(3).map((pages) => ({ kind: 'touch' as const, pages })) },
);

/** Applies `ops` to an arena and to the model, rows reused lowest-freed-last as ColumnarPool does. */
function run(ops: Op[]): { arena: IdArena; model: Map<string, number>; rows: (string | undefined)[] } {
  const arena = new IdArena();
  const model = new Map<string, number>();
  const rows: (string | undefined)[] = [];
  const free: number[] = [];
  for (const op of ops) {
    if (op.kind === 'add') {
      if (model.has(op.id)) continue;
      const r = free.pop() ?? rows.length;
      arena.add(r, op.id);
      model.set(op.id, r);
      rows[r] = op.id;
    } else if (op.kind === 'reserve') {
      arena.reserveRows(op.rows);
    } else if (op.kind === 'reserveUnits') {
      arena.reserveUnits(op.units);
    } else if (op.kind === 'touch') {
      arena.touchIndex(op.pages);
    } else if (model.size > 0) {
      const id = [...model.keys()][op.pick % model.size]!;
      const r = model.get(id)!;
      expect(arena.remove(r)).toBe(true);
      expect(arena.remove(r)).toBe(false);
      model.delete(id);
      rows[r] = undefined;
      free.push(r);
    }
  }
  return { arena, model, rows };
}

function expectSame(arena: IdArena, model: Map<string, number>, rows: (string | undefined)[], probes: readonly string[]): void {
  expect(arena.size).toBe(model.size);
  let units = 0;
  for (let r = 0; r < rows.length + 2; r++) {
    expect(arena.idAt(r)).toBe(rows[r]);
    expect(arena.has(r)).toBe(rows[r] !== undefined);
    units += rows[r]?.length ?? 0;
  }
  expect(arena.unitCount).toBe(units);
  for (const [id, r] of model) expect(arena.rowOf(id)).toBe(r);
  for (const p of probes) expect(arena.rowOf(p)).toBe(model.get(p) ?? -1);
  const wide = [...model.keys()].some((id) => [...id].some((ch) => ch.charCodeAt(0) > 0xff || ch.length > 1));
  if (wide) expect(arena.narrow).toBe(false);
}

describe('IdArena', () => {
  test.prop([fc.array(opArb, { maxLength: 300 }), fc.array(idArb, { maxLength: 20 })])(
    'answers as a Map and an array do over any adds and removes', (ops, probes) => {
      const { arena, model, rows } = run(ops);
      expectSame(arena, model, rows, probes);
    });

  test.prop([fc.array(opArb, { maxLength: 200 })])('an arena rebuilt from its units answers as the original', (ops) => {
    const { arena, model, rows } = run(ops);
    const off = new Uint32Array(rows.length + 1);
    const units = new Uint16Array(arena.unitCount);
    let at = 0;
    for (let r = 0; r < rows.length; r++) {
      off[r] = at;
      at += arena.copyUnits(r, units, at);
    }
    off[rows.length] = at;
    const rebuilt = IdArena.fromUnits(units, off, rows.length);
    expectSame(rebuilt, model, rows, ['a', 'zz']);
  });

  it('keeps its units bounded by the live ids under churn (compaction)', () => {
    const arena = new IdArena();
    for (let round = 0; round < 50; round++) {
      for (let r = 0; r < 1000; r++) arena.add(r, `round-${round}/split-${r}`);
      expect(arena.rowOf(`round-${round}/split-999`)).toBe(999);
      if (round > 0) expect(arena.rowOf(`round-${round - 1}/split-1`)).toBe(-1);
      for (let r = 0; r < 1000; r++) arena.remove(r);
    }
    arena.add(7, 'last');
    expect(arena.size).toBe(1);
    expect(arena.idAt(7)).toBe('last');
    // The buffer never held much more than one round's ids (≈ 19 units × 1000), however many rounds passed.
    expect((arena as unknown as { units: Uint8Array }).units.length).toBeLessThanOrEqual(64 * 1024);
  });

  it('adds as many units as it reserved without growing its buffer again', () => {
    const arena = new IdArena();
    arena.add(0, 'seed');
    arena.reserveUnits(100_000);
    const buffer = (arena as unknown as { units: Uint8Array }).units;
    expect(buffer.length).toBeGreaterThanOrEqual(100_000);
    for (let r = 1; r <= 9_000; r++) arena.add(r, `s-${String(r).padStart(8, '0')}`); // 10 units each
    expect((arena as unknown as { units: Uint8Array }).units).toBe(buffer);
    expect(arena.rowOf('s-00004567')).toBe(4567);
  });

  it('touches a reserved index a page at a time, and again after the index grows', () => {
    const arena = new IdArena();
    arena.reserveRows(10_000); // 32,768 slots: 32 pages
    let calls = 1;
    while (!arena.touchIndex(5)) calls++;
    expect(calls).toBe(7);
    expect(arena.touchIndex(5)).toBe(true);
    for (let r = 0; r < 20_000; r++) arena.add(r, `id-${r}`); // past half full: a new index of 65,536 slots
    expect(arena.touchIndex(63)).toBe(false);
    expect(arena.touchIndex(1)).toBe(true);
    for (let r = 0; r < 20_000; r += 997) expect(arena.rowOf(`id-${r}`)).toBe(r);
    expect(arena.rowOf('id-20000')).toBe(-1);
  });

  it('refuses an empty id and a row that holds one already', () => {
    const arena = new IdArena();
    expect(() => arena.add(0, '')).toThrow(/never empty/);
    arena.add(0, 'a');
    expect(() => arena.add(0, 'b')).toThrow(/row 0 holds an id already/);
    expect(arena.rowOf('b')).toBe(-1);
  });

  it('reads back an id longer than one call of String.fromCharCode takes', () => {
    const arena = new IdArena();
    const long = 'é'.repeat(5000) + '日'.repeat(5000);
    arena.add(3, long);
    expect(arena.idAt(3)).toBe(long);
    expect(arena.rowOf(long)).toBe(3);
  });
});
