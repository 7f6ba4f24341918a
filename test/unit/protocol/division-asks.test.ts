/**
 * The leader's division asks (protocol/division-asks.ts, decision 0063): nothing while no lane
 * would idle; the splits with the most weight left first; one ask per split outstanding until it
 * is answered or its tenancy ends; never a split that cannot leave both parts `minWeight`.
 */
import { describe, expect, it } from 'vitest';
import { test, fc } from '@fast-check/vitest';
import { DIVISION_SHARE, divisionAsks, weightLeft, type RunningSplit } from '../../../src/protocol/division-asks.js';

const split = (id: string, weight: number, extra: Partial<RunningSplit> = {}): RunningSplit => ({ id, owner: 'w0', epoch: 1, weight, done: 0, divisions: 0, ...extra });
const none = new Map();

describe('divisionAsks', () => {
  it('asks nothing while no lane would idle', () => {
    expect(divisionAsks({ idleLanes: 0, running: [split('a', 1000)], outstanding: none, minWeight: 1 }).size).toBe(0);
    expect(divisionAsks({ idleLanes: -3, running: [split('a', 1000)], outstanding: none, minWeight: 1 }).size).toBe(0);
  });

  it('asks the splits with the most weight left, one per idle lane, ties by id', () => {
    const running = [split('a', 100), split('b', 1000, { done: 0.95 }), split('c', 500), split('d', 500, { owner: 'w1' })];
    const asks = divisionAsks({ idleLanes: 2, running, outstanding: none, minWeight: 1 });
    // Left: a 100, b 50, c 500, d 500 → c and d (ties by id), half of it each.
    expect(asks.get('w0')).toEqual([{ id: 'c', epoch: 1, seq: 1, share: DIVISION_SHARE }]);
    expect(asks.get('w1')).toEqual([{ id: 'd', epoch: 1, seq: 1, share: DIVISION_SHARE }]);
  });

  it('never asks a split with less than twice minWeight left', () => {
    const asks = divisionAsks({ idleLanes: 4, running: [split('a', 199), split('b', 200), split('c', 1000, { done: 0.81 })], outstanding: none, minWeight: 100 });
    expect([...asks.values()].flat().map((a) => a.id)).toEqual(['b']);
  });

  it('keeps an outstanding ask until it lands, is declined, or its tenancy ends; asks the next seq after', () => {
    const ask = { id: 'a', epoch: 1, seq: 1, share: DIVISION_SHARE, owner: 'w0' };
    const outstanding = new Map([['a', ask]]);
    const pending = divisionAsks({ idleLanes: 1, running: [split('a', 1000), split('b', 900)], outstanding, minWeight: 1 });
    // While it is expected to be answered, the ask outstanding takes the one idle lane: b waits.
    expect(divisionAsks({ idleLanes: 1, running: [split('a', 1000), split('b', 900)], outstanding, minWeight: 1, answering: 1 }).get('w0'))
      .toEqual([{ id: 'a', epoch: 1, seq: 1, share: DIVISION_SHARE }]);
    // Unanswered past that (a handler that never divides), it stands but no longer keeps b from being asked.
    expect(pending.get('w0')).toEqual([{ id: 'a', epoch: 1, seq: 1, share: DIVISION_SHARE }, { id: 'b', epoch: 1, seq: 1, share: DIVISION_SHARE }]);
    const landed = divisionAsks({ idleLanes: 1, running: [split('a', 500, { divisions: 1 })], outstanding, minWeight: 1 });
    expect(landed.get('w0')).toEqual([{ id: 'a', epoch: 1, seq: 2, share: DIVISION_SHARE }]);
    const declined = divisionAsks({ idleLanes: 1, running: [split('a', 1000, { declined: { seq: 1, epoch: 1 } })], outstanding, minWeight: 1 });
    expect(declined.size).toBe(0); // declined in this tenancy: not asked again in it
    const moved = divisionAsks({ idleLanes: 1, running: [split('a', 1000, { epoch: 2, owner: 'w1', declined: { seq: 1, epoch: 1 } })], outstanding, minWeight: 1 });
    // Another tenancy: the old ask lapsed, and an old decline does not hold for the new owner.
    expect(moved.get('w1')).toEqual([{ id: 'a', epoch: 2, seq: 1, share: DIVISION_SHARE }]);
    expect(moved.has('w0')).toBe(false);
  });

  test.prop([
    fc.integer({ min: -4, max: 12 }),
    fc.array(fc.record({ weight: fc.integer({ min: 0, max: 10_000 }), done: fc.double({ min: 0, max: 1, noNaN: true }), owner: fc.constantFrom('w0', 'w1', 'w2') }), { maxLength: 20 }),
    fc.integer({ min: 1, max: 2000 }),
  ])('at most one ask per split, at most the idle lanes, each of a split with 2 × minWeight left, in record order', (idleLanes, raw, minWeight) => {
    const running = raw.map((r, i) => split(`s${String(i).padStart(2, '0')}`, r.weight, { done: r.done, owner: r.owner }));
    const asks = divisionAsks({ idleLanes, running, outstanding: none, minWeight });
    const all = [...asks.values()].flat();
    expect(new Set(all.map((a) => a.id)).size).toBe(all.length);
    expect(all.length).toBeLessThanOrEqual(Math.max(0, idleLanes)); // none outstanding here: new asks only
    const byId = new Map(running.map((s) => [s.id, s]));
    for (const a of all) expect(weightLeft(byId.get(a.id)!)).toBeGreaterThanOrEqual(2 * minWeight);
    for (const [owner, list] of asks) {
      expect(list.every((a) => byId.get(a.id)!.owner === owner)).toBe(true);
      expect([...list].sort((x, y) => (x.id < y.id ? -1 : 1))).toEqual(list);
    }
    // Nothing heavier left unasked while a lighter one is asked.
    const asked = new Set(all.map((a) => a.id));
    const eligible = running.filter((s) => weightLeft(s) >= 2 * minWeight);
    for (const s of eligible) if (!asked.has(s.id)) for (const a of all) expect(weightLeft(byId.get(a.id)!)).toBeGreaterThanOrEqual(weightLeft(s));
  });
});
