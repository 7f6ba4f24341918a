/** leader/unclaimed.ts: splits named for a member with a free lane and left unclaimed, reported after the limit. */
import { describe, expect, it } from 'vitest';
import { UnclaimedWatch, type UnclaimedView } from '../../../src/coordinator/leader/unclaimed.js';
import type { SplitStatus } from '../../../src/protocol/records.js';

const fp = '0123456789abcdef';
function view(o: { workers: Record<string, number>; assigns: Record<string, string[]>; held?: Record<string, string>; status?: Record<string, SplitStatus>; notBefore?: Record<string, number> }): UnclaimedView {
  return {
    workers: new Map(Object.entries(o.workers).map(([instance, maxInFlight]) => [instance, { rec: { v: 1, fp, instance, maxInFlight, nonce: 'n' }, modRevision: 1 }])),
    assigns: new Map(Object.entries(o.assigns).map(([instance, splits]) => [instance, { rec: { v: 1, fp, instance, generation: 1, splits }, modRevision: 1 }])),
    leases: new Map(Object.entries(o.held ?? {}).map(([id, owner]) => [id, { rec: { v: 1, fp, id, owner, nonce: 'n', epoch: 1 }, modRevision: 1, lease: '7' }])),
    notBefore: new Map(Object.entries(o.notBefore ?? {})),
    statusOf: (id) => o.status?.[id] ?? 'runnable',
  };
}

describe('UnclaimedWatch', () => {
  it('reports a split named for a member with a free lane once it stays unclaimed past the limit, and forgets it once claimed', () => {
    const w = new UnclaimedWatch();
    const v = view({ workers: { a: 2, b: 1 }, assigns: { a: ['s1', 's2'], b: ['s3'] }, held: { s1: 'a', s3: 'b' } });
    expect(w.look(v, 0, 0, 3000)).toBeUndefined(); // s2: a has a free lane; first seen now
    expect(w.look(v, 2999, 0, 3000)).toBeUndefined();
    expect(w.look(v, 3000, 0, 3000)).toBe('1 split named but not claimed for over 3 s by a member with a free lane ("s2" at "a": its claims fail, or it cannot read the split\'s records)');
    // Claimed: gone from the watch at once.
    expect(w.look(view({ workers: { a: 2, b: 1 }, assigns: { a: ['s1', 's2'], b: ['s3'] }, held: { s1: 'a', s2: 'a', s3: 'b' } }), 4000, 0, 3000)).toBeUndefined();
  });

  it('says nothing of prefetched splits at a member whose lanes are all busy, of waiting, finished or gone members\' splits', () => {
    const w = new UnclaimedWatch();
    const v = view({
      workers: { a: 1, b: 2 }, assigns: { a: ['s1', 's2'], b: ['s3', 's4'], gone: ['s5'] }, held: { s1: 'a' },
      status: { s4: 'completed' }, notBefore: { s3: 10_000 },
    });
    w.look(v, 0, 0, 3000);
    expect(w.look(v, 9000, 9000, 3000)).toBeUndefined(); // s2: a's one lane is busy; s3 waits till 10 s; s4 completed; s5: no such member
    expect(w.look(v, 12_000, 12_000, 3000)).toBeUndefined(); // s3 due at 10 s: seen from the 12 s look
    expect(w.look(v, 15_000, 15_000, 3000)).toMatch(/^1 split named but not claimed .*\("s3" at "b"/);
  });

  it('a split moved to another member starts its wait again', () => {
    const w = new UnclaimedWatch();
    w.look(view({ workers: { a: 1, b: 1 }, assigns: { a: ['s1'], b: [] } }), 0, 0, 3000);
    expect(w.look(view({ workers: { a: 1, b: 1 }, assigns: { a: [], b: ['s1'] } }), 3000, 0, 3000)).toBeUndefined();
    expect(w.look(view({ workers: { a: 1, b: 1 }, assigns: { a: [], b: ['s1'] } }), 6000, 0, 3000)).toMatch(/"s1" at "b"/);
  });
});
