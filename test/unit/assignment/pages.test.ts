/**
 * pages.ts: a paged list reads as the flat list it stands for (slices,
 * flattening), pages are allocated where a read reaches them, and
 * `pagesInSlices` yields between pages, never inside one.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { fieldPage, readSplits, splitFields } from '../../../src/assignment/object/fields.js';
import { flatten, PAGE_ROWS, pageCount, pagedSlice, pageLength, pagesInSlices } from '../../../src/assignment/object/pages.js';

/** A paged copy of `flat`, with room for `capacity` rows (≥ flat.length). */
function paged(flat: readonly number[], capacity: number): number[][] {
  const pages = Array.from({ length: pageCount(capacity) }, (_, p) => new Array<number>(pageLength(capacity, p)).fill(-1));
  flat.forEach((x, i) => {
    pages[Math.floor(i / PAGE_ROWS)]![i % PAGE_ROWS] = x;
  });
  return pages;
}

describe('pages.ts', () => {
  it('pages span the capacity; every page but the last is full', () => {
    for (const capacity of [0, 1, PAGE_ROWS - 1, PAGE_ROWS, PAGE_ROWS + 1, 3 * PAGE_ROWS + 17]) {
      const count = pageCount(capacity);
      expect(count * PAGE_ROWS).toBeGreaterThanOrEqual(capacity);
      expect((count - 1) * PAGE_ROWS).toBeLessThan(Math.max(1, capacity));
      let rows = 0;
      for (let p = 0; p < count; p++) {
        if (p < count - 1) expect(pageLength(capacity, p)).toBe(PAGE_ROWS);
        rows += pageLength(capacity, p);
      }
      expect(rows).toBe(capacity);
    }
  });

  it('pagedSlice and flatten read as the flat list, across page boundaries', () => {
    const n = 2 * PAGE_ROWS + 300;
    const flat = Array.from({ length: n }, (_, i) => i * 7);
    const pages = paged(flat, n + 1000);
    expect(flatten(pages, n)).toEqual(flat);
    expect(flatten(pages, PAGE_ROWS)).toEqual(flat.slice(0, PAGE_ROWS));
    expect(flatten(pages, 0)).toEqual([]);
    fc.assert(
      fc.property(fc.nat({ max: n }), fc.nat({ max: 2 * PAGE_ROWS }), (from, len) => {
        const to = Math.min(n, from + len);
        expect(pagedSlice(pages, from, to)).toEqual(flat.slice(from, to));
      }),
      { numRuns: 200, examples: [[PAGE_ROWS - 1, 2], [PAGE_ROWS, 0], [n, 0], [0, n], [PAGE_ROWS - 5, PAGE_ROWS + 10]] },
    );
  });

  it('pagesInSlices fills every page and starts a turn only between pages, when due', async () => {
    const capacity = 3 * PAGE_ROWS + 5;
    const log: string[] = [];
    const pages = await pagesInSlices(capacity, 'x', { due: () => true, next: async () => void log.push('turn') });
    expect(pages.map((p) => p.length)).toEqual([PAGE_ROWS, PAGE_ROWS, PAGE_ROWS, 5]);
    expect(pages.every((p) => p.every((x) => x === 'x'))).toBe(true);
    expect(log).toEqual(['turn', 'turn', 'turn']);
    const none: string[] = [];
    await pagesInSlices(capacity, '', { due: () => false, next: async () => void none.push('turn') });
    expect(none).toEqual([]);
  });

  it('a read allocates the pages of the rows it reaches, and only those', () => {
    const n = 3 * PAGE_ROWS;
    const splits = Array.from({ length: n }, (_, i) => ({ id: `s${i}`, weight: i, leaseOwner: i % 3 === 0 ? 'a' : null }));
    const f = splitFields(n);
    expect(f.pages).toEqual([null, null, null]);
    // Rows that straddle the first page boundary.
    expect(readSplits(splits, PAGE_ROWS - 10, PAGE_ROWS + 10, f)).toBe(-1);
    expect(f.pages.map((p) => p !== null)).toEqual([true, true, false]);
    expect(f.pages[0]!.ids.slice(PAGE_ROWS - 10)).toEqual(splits.slice(PAGE_ROWS - 10, PAGE_ROWS).map((s) => s.id));
    expect(f.pages[1]!.ids.slice(0, 10)).toEqual(splits.slice(PAGE_ROWS, PAGE_ROWS + 10).map((s) => s.id));
    expect(f.pages[1]!.lease.slice(0, 10)).toEqual(splits.slice(PAGE_ROWS, PAGE_ROWS + 10).map((s) => s.leaseOwner));
    // A page a read has not reached is allocated empty on demand.
    expect(fieldPage(f, 2).ids.every((id) => id === '')).toBe(true);
  });
});
