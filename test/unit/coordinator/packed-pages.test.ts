/**
 * PackedPages' location by pool row (packed-pages.ts): stored as location + 1
 * so that reserving rows writes nothing. Location 0 (the first page's first
 * slot) must read back as a location, and rows reserved, parked or cleared
 * as none.
 */
import { describe, expect, it } from 'vitest';
import { PackedPages } from '../../../src/coordinator/leader/packed-pages.js';
import { FoldedBits } from '../../../src/protocol/packed.js';

describe('PackedPages locations by row', () => {
  it('reads back every location set, location 0 included, and none elsewhere', () => {
    const p = new PackedPages();
    const first = p.addPage(0, 0, 1);
    const second = p.addPage(3, 1, 1);
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
    p.addPage(0, 0, 1);
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
    p.addPage(0, 0, 1);
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

describe('PackedPages page numbers', () => {
  // A queue page deleted by hand before a new leader's listing leaves its folded record behind. Seeding
  // gave the deleted page's number to the page it wrote for those splits, and the old folded bits then
  // marked that new page's slots done: splits lost (found by the hostile simulation's page deletion).
  it('never gives a new page the number of a page whose folded record exists without it', () => {
    const p = new PackedPages();
    p.addPage(1, 0, 1);
    expect(p.nextPage(1)).toBe(1);
    p.setFolded(1, 1, FoldedBits.empty().with([0]), 7, 1); // page 1.1 is gone; its folded record is not
    expect(p.nextPage(1)).toBe(2);
    expect(p.nextPage(0)).toBe(0);
  });
});
