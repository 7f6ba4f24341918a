/**
 * The leader's own seeding writes (own-writes.ts): their echo is applied from
 * what was written, with the same outcome as decoding it, and only a put at
 * the revision of the leader's own transaction is taken for one.
 */
import { describe, expect, it } from 'vitest';
import { LeaderRecords } from '../../../src/coordinator/leader/leader-records.js';
import { OwnWrites, type OwnWrite } from '../../../src/coordinator/leader/own-writes.js';
import { seedWrites } from '../../../src/protocol/leader-txns.js';
import { fingerprintHash } from '../../../src/protocol/records.js';

const prefix = 'splitfleet/job/';
const fp = fingerprintHash('fingerprint');

/** The seeding puts of `splits` and what each wrote, as seeding.ts registers them. */
function seeded(splits: { id: string; weight: number }[]) {
  const ops = splits.flatMap((s) => seedWrites(prefix, fp, 1, { id: s.id, weight: s.weight, descriptor: { n: s.id } }, 1 << 20));
  const own = new Map<string, OwnWrite>();
  splits.forEach((s, i) => {
    own.set(ops[2 * i]!.key, { kind: 'spec', id: s.id, weight: s.weight });
    own.set(ops[2 * i + 1]!.key, { kind: 'split', id: s.id });
  });
  return { ops: ops as { key: string; value: string }[], own };
}

const figures = (r: LeaderRecords) => ({
  counts: { ...r.columns.statusCounts }, weights: { ...r.columns.statusWeights }, specs: r.columns.specCount, rows: r.columns.pool.size,
  parked: [...r.columns.parked.keys()], owners: [...r.owners], notBefore: [...r.notBefore],
});

describe('own seeding writes', () => {
  const splits = Array.from({ length: 40 }, (_, i) => ({ id: `s-${i}`, weight: i * 7 + 1 }));

  it('applying an echo from what was written equals decoding it', () => {
    const { ops, own } = seeded(splits);
    const decoded = new LeaderRecords(prefix, fp, 'seed', () => undefined);
    const shortcut = new LeaderRecords(prefix, fp, 'seed', () => undefined);
    shortcut.own.expect(10, own);
    for (const o of ops) {
      decoded.put(o.key, o.value, 10, undefined);
      shortcut.put(o.key, o.value, 10, undefined);
    }
    expect(figures(shortcut)).toEqual(figures(decoded));
    expect(shortcut.own.size).toBe(0); // every echo taken once
  });

  it('only a put at the own transaction\'s revision is taken for its write; any other is decoded', () => {
    const { ops, own } = seeded(splits.slice(0, 1));
    const unreadable: string[] = [];
    const r = new LeaderRecords(prefix, fp, 'seed', (key) => unreadable.push(key));
    r.own.expect(10, own);
    // At revision 10 the value is what the leader wrote: it is not read again (a revision is one transaction).
    r.put(ops[0]!.key, ops[0]!.value, 10, undefined);
    r.put(ops[1]!.key, ops[1]!.value, 10, undefined);
    expect(r.columns.statusOf('s-0')).toBe('runnable');
    // Garbage at another revision (a hand-written or hostile record) is decoded, and parks the split.
    r.put(ops[1]!.key, '{not json', 11, undefined);
    expect(unreadable).toEqual([ops[1]!.key]);
    expect(r.columns.parked.has('s-0')).toBe(true);
  });

  it('a write whose echo was delivered (or will not come) is dropped, and a listing clears them all', () => {
    const w = new OwnWrites();
    w.expect(5, new Map([['k5', { kind: 'split', id: 'a' }]]));
    w.expect(7, new Map([['k7', { kind: 'split', id: 'b' }]]));
    w.dropThrough(5);
    expect(w.size).toBe(1);
    expect(w.take(5, 'k5')).toBeUndefined();
    expect(w.take(7, 'k7')).toEqual({ kind: 'split', id: 'b' });
    expect(w.take(7, 'k7')).toBeUndefined(); // once
    w.expect(9, new Map([['k9', { kind: 'split', id: 'c' }]]));
    w.clear();
    expect(w.size).toBe(0);
  });

  it('atMost resolves once the echoes outstanding are down to the limit, or they are cleared (seeding\'s pace)', async () => {
    const w = new OwnWrites();
    for (const r of [1, 2, 3]) w.expect(r, new Map([[`k${r}`, { kind: 'split', id: `s${r}` }]]));
    let done = false;
    const waiting = w.atMost(1).then(() => (done = true));
    await Promise.resolve();
    expect(done).toBe(false);
    w.take(1, 'k1');
    await Promise.resolve();
    expect(done).toBe(false); // two outstanding
    w.take(2, 'k2');
    await waiting;
    expect(done).toBe(true);
    const cleared = w.atMost(0);
    w.clear();
    await cleared; // a listing (or the view's end) releases every waiter
    await w.atMost(0); // nothing outstanding: at once
  });
});
