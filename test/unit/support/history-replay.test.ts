/**
 * The one replay of a history (test/support/history-replay.ts) and the shared
 * invariant checkers that plug into it (test/support/invariants.ts): the
 * checkers every chaos and simulation run relies on are shown failing here on
 * histories written by hand, so a checker that stopped seeing its events
 * would be caught.
 */
import { describe, expect, it } from 'vitest';
import type { HistoryEvent } from '../../support/history.js';
import { onlyRevisions, replayHistory, revisionsOf, type Revision } from '../../support/history-replay.js';
import { fenceProblems, invariantCheckers, noSplitHeldTwice, progressNeverRegresses, splitFence } from '../../support/invariants.js';

const put = (rev: number, kind: 'split' | 'lease' | 'progress', id: string, rec: Record<string, unknown>): HistoryEvent => ({
  // A lease key is put on an etcd lease (one put with none is no tenancy: leaseless below).
  rev, type: 'put', key: `/j/${kind}.${id}`, kind, id, rec, lease: kind === 'lease' ? 'L1' : undefined, at: 0,
});
const del = (rev: number, kind: 'lease', id: string): HistoryEvent => ({ rev, type: 'delete', key: `/j/${kind}.${id}`, kind, id, rec: undefined, lease: undefined, at: 0 });

describe('replayHistory', () => {
  it('cuts the history into revisions, oldest first, keeping a revision whole even when recorded apart', () => {
    const h = [put(5, 'split', 'a', {}), put(3, 'lease', 'a', {}), put(5, 'lease', 'a', {}), put(3, 'split', 'a', {})];
    expect(revisionsOf(h).map((r) => [r.rev, r.events.map((e) => e.kind)])).toEqual([[3, ['lease', 'split']], [5, ['split', 'lease']]]);
  });

  it('hands every revision to every checker, in order, and onlyRevisions skips what it is told to', () => {
    const seen: string[] = [];
    const checker = (name: string) => ({ revision: (r: Revision) => void seen.push(`${name}@${r.rev}`) });
    replayHistory([put(1, 'split', 'a', {}), put(2, 'split', 'a', {})], [checker('x'), onlyRevisions((rev) => rev !== 1, checker('y'))]);
    expect(seen).toEqual(['x@1', 'x@2', 'y@2']);
  });
});

describe('the shared invariants, as checkers of the replay', () => {
  const fenced = [
    put(1, 'split', 'a', { epoch: 0, owner: '' }),
    put(2, 'split', 'a', { epoch: 1, owner: 'w1' }),
    put(2, 'lease', 'a', { owner: 'w1', epoch: 1 }),
    put(3, 'progress', 'a', { progress: 5, epoch: 1 }),
  ];

  it('find nothing in a fenced history', () => {
    expect([...splitFence(fenced), ...noSplitHeldTwice(fenced), ...progressNeverRegresses(fenced)]).toEqual([]);
  });

  it('splitFence: an epoch that jumps, an owner changed without a claim, a claim with no owner', () => {
    expect(splitFence([...fenced, put(4, 'split', 'a', { epoch: 3, owner: 'w2' })]).map((p) => p.rule)).toEqual(['epoch-moved']);
    expect(splitFence([...fenced, put(4, 'split', 'a', { epoch: 1, owner: 'w2' })]).map((p) => p.rule)).toEqual(['owner-changed-without-claim']);
    expect(splitFence([...fenced, put(4, 'split', 'a', { epoch: 2, owner: '' })])).toMatchObject([{ rule: 'claim-without-owner', split: 'a', revisions: [2, 4] }]);
  });

  it('noSplitHeldTwice: a live lease key overwritten by another owner, and not one deleted first', () => {
    expect(noSplitHeldTwice([...fenced, put(4, 'lease', 'a', { owner: 'w2', epoch: 2 })])).toMatchObject([{ rule: 'lease-overwritten', revisions: [2, 4] }]);
    expect(noSplitHeldTwice([...fenced, del(4, 'lease', 'a'), put(5, 'lease', 'a', { owner: 'w2', epoch: 2 })])).toEqual([]);
    // Written again with no etcd lease (by hand, decision 0059): no longer live, so a claim over it is no overwrite.
    const leaseless = { ...put(4, 'lease', 'a', { owner: 'w1', epoch: 1 }), lease: undefined };
    expect(noSplitHeldTwice([...fenced, leaseless, put(5, 'lease', 'a', { owner: 'w2', epoch: 2 })])).toEqual([]);
  });

  it('progressNeverRegresses: progress or its epoch going back', () => {
    expect(progressNeverRegresses([...fenced, put(4, 'progress', 'a', { progress: 4, epoch: 0 })]).map((p) => p.rule)).toEqual(['progress-regressed', 'progress-epoch-regressed']);
  });

  it('plugged into one replay they find what each finds alone, and fenceProblems keeps to its split', () => {
    const broken = [...fenced, put(4, 'progress', 'a', { progress: 1, epoch: 1 }), put(4, 'split', 'b', { epoch: 0, owner: '' }), put(5, 'split', 'b', { epoch: 2, owner: 'w1' })];
    const checkers = invariantCheckers();
    replayHistory(broken, checkers);
    expect(checkers.flatMap((c) => c.problems)).toEqual([...progressNeverRegresses(broken), ...splitFence(broken), ...noSplitHeldTwice(broken)]);
    expect(checkers.flatMap((c) => c.problems).map((p) => `${p.rule}:${p.split}`)).toEqual(['progress-regressed:a', 'epoch-moved:b']);
    expect(fenceProblems(broken, 'b')).toEqual(['b@5: split.b epoch 0 → 2']);
  });
});
