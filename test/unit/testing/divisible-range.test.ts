/**
 * divisibleRange (src/divisible-range.ts) through runHandler's `divideAt` (splitfleet/testing):
 * a handler that divides, both parts run as a worker would run them, every unit exactly once;
 * a division in flight holds back units past its proposed end; a takeover resumes at the
 * committed position and stops at the divided end.
 */
import { describe, expect, it } from 'vitest';
import { test, fc } from '@fast-check/vitest';
import type { SplitHandle } from '../../../src/coordinator/types.js';
import { divisibleRange } from '../../../src/divisible-range.js';
import { fakeSplitHandle } from '../../../src/testing/fake-handle.js';
import { runHandler } from '../../../src/testing/run-handler.js';

type Range = { key: string; from: number; to: number };

/** A handler over units [from, to) of `key`, `chunk` at a time, recording every unit it processes. */
function handlerOf(seen: number[], chunk: number) {
  return async (split: SplitHandle<Range, number>) => {
    const range = divisibleRange(split);
    for (let run; (run = await range.next(chunk)); ) {
      await Promise.resolve(); // the unit's work; a division request may come in between
      for (let u = run.from; u < run.to; u++) seen.push(u);
      await range.commit();
    }
    await range.complete();
  };
}

describe('divisibleRange', () => {
  it('advance() reports the position as commit() does, without waiting: a division still cuts at it and every unit runs once', async () => {
    const seen: number[] = [];
    const handler = async (split: SplitHandle<Range, number>) => {
      const range = divisibleRange(split);
      for (let run; (run = await range.next(10)); ) {
        await Promise.resolve();
        for (let u = run.from; u < run.to; u++) seen.push(u);
        expect(range.advance()).toBeUndefined(); // nothing to await
      }
      await range.complete();
    };
    const run = await runHandler(handler, { id: 'obj', descriptor: { key: 'a.gz', from: 0, to: 100 }, weight: 1000, divideAt: 3 });
    expect(run.commits.slice(0, 3)).toEqual([10, 20, 30]);
    const d = run.divisions[0]!;
    expect(d.kind).toBe('divided');
    if (d.kind !== 'divided') return;
    expect(d.end).toBe(65);
    expect(run.outcome).toEqual({ kind: 'completed', progress: 65 });
    const rest = await runHandler(handler, { id: d.residual.id, descriptor: d.residual.descriptor as Range, weight: d.residual.weight });
    expect(rest.outcome).toEqual({ kind: 'completed', progress: 100 });
    expect([...seen].sort((a, b) => a - b)).toEqual(Array.from({ length: 100 }, (_, i) => i));
  });

  it('divides at the leader\'s share of what is left; the residual carries the rest, both parts cover the range once', async () => {
    const seen: number[] = [];
    const run = await runHandler(handlerOf(seen, 10), { id: 'obj', descriptor: { key: 'a.gz', from: 0, to: 100 }, weight: 1000, divideAt: 3 });
    expect(run.divisions).toHaveLength(1);
    const d = run.divisions[0]!;
    expect(d.kind).toBe('divided');
    if (d.kind !== 'divided') return;
    // After 3 commits 30 units were handed out: half of the 70 left moves.
    expect(d.end).toBe(65);
    expect(run.end).toBe(65);
    expect(d.residual).toEqual({ id: 'obj÷1', descriptor: { key: 'a.gz', from: 65, to: 100 }, weight: 350 });
    expect(d.weight).toBe(650);
    expect(run.outcome).toEqual({ kind: 'completed', progress: 65 });
    // The residual, run as a worker would run it.
    const rest = await runHandler(handlerOf(seen, 10), { id: d.residual.id, descriptor: d.residual.descriptor as Range, weight: d.residual.weight });
    expect(rest.outcome).toEqual({ kind: 'completed', progress: 100 });
    expect([...seen].sort((a, b) => a - b)).toEqual(Array.from({ length: 100 }, (_, i) => i));
  });

  test.prop([fc.integer({ min: 1, max: 400 }), fc.integer({ min: 1, max: 37 }), fc.array(fc.integer({ min: 0, max: 40 }), { maxLength: 4 }), fc.double({ min: 0.05, max: 0.95, noNaN: true })])(
    'any chunk size, divisions at any commits, any share: every unit exactly once over the parent and its residuals',
    async (units, chunk, at, share) => {
      const seen: number[] = [];
      const queue: { id: string; descriptor: Range; weight: number }[] = [{ id: 'p', descriptor: { key: 'k', from: 0, to: units }, weight: units }];
      const asks = new Set(at);
      while (queue.length > 0) {
        const s = queue.shift()!;
        const run = await runHandler(handlerOf(seen, chunk), { ...s, divideAt: (count) => asks.has(count), divideShare: share });
        for (const d of run.divisions) if (d.kind === 'divided') queue.push({ id: d.residual.id, descriptor: d.residual.descriptor as Range, weight: d.residual.weight });
        expect(run.outcome.kind).toBe('completed');
      }
      expect([...seen].sort((a, b) => a - b)).toEqual(Array.from({ length: units }, (_, i) => i));
    },
  );

  it('holds back units past a division in flight until its outcome is known', async () => {
    const fake = fakeSplitHandle<Range, number>({ id: 's', descriptor: { key: 'k', from: 0, to: 10 }, weight: 10 });
    const range = divisibleRange(fake.handle);
    expect(await range.next(2)).toEqual({ from: 0, to: 2 });
    const division = fake.divide(0.5); // proposes 6: [2, 6) stays, [6, 10) would move
    expect(await range.next(10)).toEqual({ from: 2, to: 6 });
    const after = range.next(10);
    const d = await division;
    expect(d.kind).toBe('divided');
    expect(await after).toBeUndefined(); // landed: the part ends at 6
    expect(range.end).toBe(6);
  });

  it('declines what would leave a part under minUnits, and a handle without onDivide declines', async () => {
    const fake = fakeSplitHandle<Range, number>({ descriptor: { key: 'k', from: 0, to: 10 }, weight: 10 });
    const range = divisibleRange(fake.handle, { minUnits: 4 });
    await range.next(4);
    expect(await fake.divide(0.5)).toEqual({ kind: 'declined', seq: 1 }); // 6 left: 3 and 3
    const plain = fakeSplitHandle({ descriptor: null });
    expect(await plain.divide()).toEqual({ kind: 'declined', seq: 1 });
  });

  it('a takeover of a divided split resumes at its committed position and stops at its end; a commit past the end is refused', async () => {
    const seen: number[] = [];
    const run = await runHandler(handlerOf(seen, 5), { descriptor: { key: 'k', from: 0, to: 100 }, progress: 40, end: 60, weight: 600 });
    expect(seen).toEqual(Array.from({ length: 20 }, (_, i) => 40 + i));
    expect(run.outcome).toEqual({ kind: 'completed', progress: 60 });
    const fake = fakeSplitHandle<Range, number>({ descriptor: { key: 'k', from: 0, to: 100 }, end: 60 });
    await expect(fake.handle.commit(61)).rejects.toMatchObject({ code: 'INVALID_INPUT' });
  });

  it('refuses a descriptor without an integer range, naming the fields', () => {
    const fake = fakeSplitHandle({ descriptor: { from: 'a', to: 3 } });
    expect(() => divisibleRange(fake.handle)).toThrow(/descriptor\.from and descriptor\.to must be integers/);
  });
});
