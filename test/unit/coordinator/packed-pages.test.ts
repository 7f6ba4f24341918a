/**
 * PackedPages' location by pool row (packed-pages.ts): stored as location + 1
 * so that reserving rows writes nothing. Location 0 (the first page's first
 * slot) must read back as a location, and rows reserved, parked or cleared
 * as none.
 */
import { describe, expect, it } from 'vitest';
import { PackedPages } from '../../../src/coordinator/leader/packed-pages.js';

describe('PackedPages locations by row', () => {
  it('reads back every location set, location 0 included, and none elsewhere', () => {
    const p = new PackedPages();
    const first = p.addPage(0, 0);
    const second = p.addPage(3, 1);
    const at0 = PackedPages.location(first, 0);
    const at1023 = PackedPages.location(second, 1023);
    expect(at0).toBe(0);
    p.setRow(0, at0);
    p.setRow(5, at1023);
    expect(p.locationAt(0)).toBe(0);
    expect(p.locationAt(5)).toBe(at1023);
    expect(p.describe(p.locationAt(5)!)).toEqual({ bucket: 3, page: 1, pageIndex: second, slot: 1023 });
    for (const row of [1, 4, 6, 100]) expect(p.locationAt(row)).toBeUndefined();
  });

  it('reserving rows makes room without placing anything; rows past it grow on demand', () => {
    const p = new PackedPages();
    p.addPage(0, 0);
    p.setRow(2, PackedPages.location(0, 7));
    p.reserve(1_000_000);
    expect(p.locationAt(2)).toBe(PackedPages.location(0, 7));
    expect(p.locationAt(999_999)).toBeUndefined();
    p.setRow(2_000_000, PackedPages.location(0, 9));
    expect(p.locationAt(2_000_000)).toBe(PackedPages.location(0, 9));
    expect(p.locationAt(1_999_999)).toBeUndefined();
    expect(p.locationAt(2)).toBe(PackedPages.location(0, 7));
  });

  it('a parked row has no location, and its split keeps it until unparked; clear forgets every row', () => {
    const p = new PackedPages();
    p.addPage(0, 0);
    p.setRow(0, 0);
    p.setRow(1, PackedPages.location(0, 1));
    p.park('a', 0, 42);
    expect(p.locationAt(0)).toBeUndefined();
    expect(p.parkedOf('a')).toEqual({ location: 0, weight: 42 });
    expect(p.unpark('a')).toEqual({ location: 0, weight: 42 });
    p.clear();
    expect(p.locationAt(1)).toBeUndefined();
    expect(p.pageCount).toBe(0);
  });
});
