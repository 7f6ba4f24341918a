/**
 * The packed queue's checker (test/support/packed-invariants.ts) on histories
 * written by hand: a clean packed run passes, and each rule of decision
 * 0037's "What the auditor checks" is shown failing on a history built to
 * break it (a folded bit cleared, a folded split promoted again, a leased or
 * assigned split folded, a record deleted by anything but a fold-back, a
 * split completed twice, a split lost), so a check that stopped seeing its
 * events would be caught here before a simulation or chaos run relied on it.
 * Also: a job of two buckets, each fold-back judged against its own page; a
 * hostile writer's assignment record, which names what a reader can decode;
 * and the records such a writer deletes (a split record, a folded record, a
 * queue page), each letting the splits it named run again once, no more.
 */
import { describe, expect, it } from 'vitest';
import { bucketOf } from '../../../src/protocol/packed.js';
import { replayHistory, revisionsOf } from '../../support/history-replay.js';
import { packedChecker, type PackedChecker } from '../../support/packed-invariants.js';
import { FP, History, P, type HandKind } from '../../support/hand-history.js';

const plan = (over: Record<string, unknown> = {}) => ({ v: 2, fp: FP, generation: 1, final: true, planned: 2, layout: 'packed', buckets: 1, ...over });
const page = (ids: string[], bucket = 0, n = 0) => ({
  v: 1, fp: FP, bucket, page: n, generation: 1, ids, weights: ids.map(() => 10), descriptors: ids.map((id) => ({ units: 1, id })),
});
/** `folded.0.0` with the given slots set. */
const folded = (...slots: number[]) => {
  const bytes = new Uint8Array(2);
  for (const s of slots) bytes[s >> 3]! |= 1 << (s & 7);
  return { v: 1, fp: FP, bucket: 0, page: 0, bits: Buffer.from(bytes).toString('base64'), pageGeneration: 1 };
};
const spec = (id: string, descriptor: unknown = { units: 1, id }) => ({ v: 1, fp: FP, id, weight: 10, descriptor, generation: 1 });
const split = (id: string, epoch: number, owner: string, status = 'runnable') => ({ v: 1, fp: FP, id, epoch, status, owner, attempts: 0 });
const lease = (id: string, owner: string, epoch: number) => ({ v: 1, fp: FP, id, owner, nonce: owner, epoch });
const assign = (instance: string, splits: string[]) => ({ v: 1, fp: FP, instance, generation: 1, splits });
let seqs = 0;
/** A fold-back's results record (decision 0069): each of `ids` with `progress` (what run() commits: 1). */
const kept = (ids: string[], progress: unknown = 1): [HandKind, string, Record<string, unknown>] => {
  const seq = seqs++;
  return ['result', `1.${seq}`, { v: 1, fp: FP, generation: 1, seq, splits: ids.map((id) => ({ id, progress })) }];
};

/** Promotes, assigns, claims and completes split `id` (slot in page 0.0, of `generation`). */
function run(h: History, id: string, generation = 1): void {
  h.write(['spec', id, { ...spec(id), generation }], ['split', id, split(id, 0, '')]);
  h.write(['assign', 'w', assign('w', [id])]);
  h.write(['split', id, split(id, 1, 'w')], ['lease', id, lease(id, 'w', 1)]);
  h.write(['split', id, split(id, 1, '', 'completed')], ['progress', id, { v: 1, fp: FP, id, epoch: 1, progress: 1 }], ['lease', id, 'delete']);
}

/** A clean run: page [a, b]; a runs, is unassigned and folded back; b runs and keeps its record. */
function clean(): History {
  const h = new History();
  h.write(['plan', '', plan({ buckets: undefined, planned: 0, final: false })]);
  h.write(['plan', '', plan({ planned: 0, final: false })]);
  h.write(['queue', '0.0', page(['a', 'b'])]);
  h.write(['plan', '', plan()]);
  run(h, 'a');
  h.write(['assign', 'w', assign('w', [])]);
  h.write(['folded', '0.0', folded(0)], ['split', 'a', 'delete'], ['spec', 'a', 'delete'], ['progress', 'a', 'delete'], kept(['a']));
  run(h, 'b');
  return h;
}

function check(h: History): PackedChecker {
  const c = packedChecker();
  replayHistory(h.events, [c]);
  return c;
}
const rules = (h: History, end = false): string[] => {
  const c = check(h);
  return [...c.problems, ...(end ? c.endProblems() : [])].map((p) => p.rule);
};

describe('the packed queue checker', () => {
  it('passes a clean packed run, and knows its pages, folds and layout', () => {
    const c = check(clean());
    expect([...c.problems, ...c.endProblems()]).toEqual([]);
    expect(c.layout).toBe('packed');
    expect([...c.planned.keys()]).toEqual(['a', 'b']);
    expect(c.folds.get('a')).toMatchObject({ rev: 10, split: { status: 'completed' }, progress: { progress: 1 } });
  });

  it('a folded bit cleared, or the folded record deleted', () => {
    const h = clean();
    h.write(['folded', '0.0', folded()]);
    expect(rules(h)).toEqual(['folded-bit-cleared']);
    const d = clean();
    d.write(['folded', '0.0', 'delete']);
    expect(rules(d)).toEqual(['folded-bit-cleared']);
  });

  it('a folded split promoted again, and completed a second time', () => {
    const h = clean();
    run(h, 'a');
    expect(rules(h)).toEqual(['promote-folded', 'completed-twice']);
  });

  it('a promotion of a split already keyed, of one no page holds, of half its keys, with a spec that is not its page\'s', () => {
    const keyed = clean();
    keyed.write(['spec', 'b', spec('b')]);
    expect(rules(keyed)).toEqual(['promote-keyed']);
    const unplanned = clean();
    unplanned.write(['spec', 'z', spec('z')], ['split', 'z', split('z', 0, '')]);
    expect(rules(unplanned)).toEqual(['promote-unplanned']);
    const half = new History();
    half.write(['plan', '', plan()]);
    half.write(['queue', '0.0', page(['a', 'b'])]);
    half.write(['split', 'a', split('a', 0, '')]);
    expect(rules(half)).toEqual(['promote-half']);
    const copied = new History();
    copied.write(['plan', '', plan()]);
    copied.write(['queue', '0.0', page(['a', 'b'])]);
    copied.write(['spec', 'a', spec('a', { units: 1, id: 'b' })], ['split', 'a', split('a', 0, '')]);
    expect(rules(copied)).toEqual(['promote-spec-mismatch']);
  });

  it('a fold-back of a leased, running split', () => {
    const leased = new History();
    leased.write(['plan', '', plan()]);
    leased.write(['queue', '0.0', page(['a', 'b'])]);
    leased.write(['spec', 'a', spec('a')], ['split', 'a', split('a', 0, '')]);
    leased.write(['split', 'a', split('a', 1, 'w')], ['lease', 'a', lease('a', 'w', 1)]);
    leased.write(['folded', '0.0', folded(0)], ['split', 'a', 'delete'], ['spec', 'a', 'delete'], kept(['a'], null));
    expect(rules(leased)).toEqual(['fold-not-completed', 'fold-leased']);
  });

  it('a fold-back of a split an assignment still names, and one that leaves its keys behind', () => {
    const h = new History();
    h.write(['plan', '', plan()]);
    h.write(['queue', '0.0', page(['a', 'b'])]);
    run(h, 'a');
    h.write(['folded', '0.0', folded(0)], ['split', 'a', 'delete'], ['progress', 'a', 'delete'], kept(['a']));
    expect(rules(h)).toEqual(['fold-assigned', 'fold-kept-keys']);
  });

  it('a split record deleted by anything but a fold-back; a bit set past the page', () => {
    const h = clean();
    h.write(['split', 'b', 'delete']);
    expect(rules(h, true)).toEqual(['deleted-without-fold', 'split-lost']);
    const past = clean();
    past.write(['folded', '0.0', folded(0, 9)]);
    expect(rules(past)).toEqual(['fold-of-unplanned']);
  });

  it('a split lost (queued, never completed) and a final plan that miscounts its pages', () => {
    const h = new History();
    h.write(['plan', '', plan({ planned: 3 })]);
    h.write(['queue', '0.0', page(['a', 'b'])]);
    run(h, 'a');
    expect(check(h).endProblems()).toMatchObject([{ rule: 'split-lost', split: 'b' }, { rule: 'planned-count' }]);
  });

  it('pages: written twice, a split in two pages, a split in the wrong bucket; a layout that changes', () => {
    const twice = clean();
    twice.write(['queue', '0.0', page(['a', 'b'])]);
    expect(rules(twice)).toEqual(['page-rewritten']);
    const dup = clean();
    dup.write(['queue', '0.1', page(['b'], 0, 1)]);
    expect(rules(dup)).toEqual(['page-misplaced']);
    const wrong = new History();
    wrong.write(['plan', '', plan({ buckets: 2 })]);
    const other = 1 - bucketOf(FP, 'a', 2);
    wrong.write(['queue', `${other}.0`, page(['a'], other)]);
    expect(rules(wrong)).toEqual(['page-misplaced']);
    const changed = clean();
    changed.write(['plan', '', { ...plan(), v: 1, layout: undefined }]);
    expect(rules(changed)).toEqual(['layout-changed']);
  });

  it('two buckets: each page is its own bucket\'s, and a fold-back names the split of its own page', () => {
    const ids = ['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h'];
    const x = ids.find((id) => bucketOf(FP, id, 2) === 0)!;
    const y = ids.find((id) => bucketOf(FP, id, 2) === 1)!;
    const foldedAt = (bucket: number, ...slots: number[]) => ({ ...folded(...slots), bucket });
    /** x run and folded back into page 0.0; y queued in page 1.0. */
    const xFolded = () => {
      const h = new History();
      h.write(['plan', '', plan({ buckets: 2 })]);
      h.write(['queue', '0.0', page([x], 0)], ['queue', '1.0', page([y], 1)]);
      run(h, x);
      h.write(['assign', 'w', assign('w', [])]);
      h.write(['folded', '0.0', foldedAt(0, 0)], ['split', x, 'delete'], ['spec', x, 'delete'], ['progress', x, 'delete'], kept([x]));
      return h;
    };
    expect(check(xFolded()).endProblems()).toMatchObject([{ rule: 'split-lost', split: y }]);
    // Slot 0 of page 1.0 is y (queued), not x (folded back from page 0.0).
    const early = xFolded();
    early.write(['folded', '1.0', foldedAt(1, 0)], kept([y], null));
    expect(check(early).problems).toMatchObject([{ rule: 'fold-not-completed', split: y }]);
    const h = xFolded();
    run(h, y);
    h.write(['assign', 'w', assign('w', [])]);
    h.write(['folded', '1.0', foldedAt(1, 0)], ['split', y, 'delete'], ['spec', y, 'delete'], ['progress', y, 'delete'], kept([y]));
    const c = check(h);
    expect([...c.problems, ...c.endProblems()]).toEqual([]);
    expect(c.folds.get(x)?.rev).toBeLessThan(c.folds.get(y)!.rev);
  });

  it('a hostile writer\'s assignment records: the fleet\'s record it replaced names nothing, its own is not held against a fold-back', () => {
    /** `a` run (assign.w names it; emptied by the fleet when `cleared`), `hostile` written from outside the fleet, a folded back. */
    const replay = (hostile: Parameters<History['write']> | undefined, cleared = false) => {
      const h = new History();
      h.write(['plan', '', plan()]);
      h.write(['queue', '0.0', page(['a', 'b'])]);
      run(h, 'a');
      if (cleared) h.write(['assign', 'w', assign('w', [])]);
      const external = hostile === undefined ? -1 : h.write(...hostile);
      h.write(['folded', '0.0', folded(0)], ['split', 'a', 'delete'], ['spec', 'a', 'delete'], ['progress', 'a', 'delete'], kept(['a']));
      const c = packedChecker();
      for (const r of revisionsOf(h.events)) if (r.rev === external) c.external(r); else c.revision(r);
      return c.problems.map((p) => p.rule);
    };
    // The fleet's own record still names a: the rule holds.
    expect(replay(undefined)).toEqual(['fold-assigned']);
    // assign.w overwritten with garbage: the store no longer holds a record naming a.
    expect(replay([['assign', 'w', { garbage: true }]])).toEqual([]);
    // Still the fleet's w record naming a, and a ghost's naming it too: only the fleet's counts.
    expect(replay([['assign', 'ghost', assign('ghost', ['a'])]])).toEqual(['fold-assigned']);
    // The fleet's record emptied, a ghost's naming a written just before the fold-back (the leader may not have seen it).
    expect(replay([['assign', 'ghost', assign('ghost', ['a'])]], true)).toEqual([]);
  });

  describe('records deleted from outside the fleet (the hostile writer): each lets the splits it named run again, once, and nothing more', () => {
    /** Problems of `h` replayed with the revisions in `externals` as the writer's (`external`), end problems included. */
    const withExternal = (h: History, externals: ReadonlySet<number>): string[] => {
      const c = packedChecker();
      for (const r of revisionsOf(h.events)) if (externals.has(r.rev)) c.external(r); else c.revision(r);
      return [...c.problems, ...c.endProblems()].map((p) => p.rule);
    };
    const foldA = (h: History) => {
      h.write(['assign', 'w', assign('w', [])]);
      h.write(['folded', '0.0', folded(0)], ['split', 'a', 'delete'], ['spec', 'a', 'delete'], ['progress', 'a', 'delete'], kept(['a']));
    };

    it('a split record: promoted again over the spec it left, completed once more', () => {
      const h = clean();
      const gone = h.write(['split', 'b', 'delete']);
      run(h, 'b');
      expect(withExternal(h, new Set([gone]))).toEqual([]);
      // The same history with the deletion the fleet's: a record deleted by anything but a fold-back.
      expect(withExternal(h, new Set())).toEqual(['deleted-without-fold', 'promote-keyed', 'completed-twice']);
      // Folded back and run once more: nothing of the deletion is left to excuse it.
      h.write(['assign', 'w', assign('w', [])]);
      h.write(['folded', '0.0', folded(0, 1)], ['split', 'b', 'delete'], ['spec', 'b', 'delete'], ['progress', 'b', 'delete'], kept(['b']));
      run(h, 'b');
      expect(withExternal(h, new Set([gone]))).toEqual(['promote-folded', 'completed-twice']);
    });

    it('a folded record: its splits promoted again by a leader that never saw its bits, folded again', () => {
      const h = clean();
      const gone = h.write(['folded', '0.0', 'delete']);
      run(h, 'a');
      foldA(h);
      expect(withExternal(h, new Set([gone]))).toEqual([]);
      expect(withExternal(h, new Set())).toEqual([
        'folded-bit-cleared', 'promote-folded', 'completed-twice', 'fold-results-outside-fold', 'deleted-without-fold', 'deleted-without-fold', 'deleted-without-fold',
      ]);
    });

    it('a folded record written back by the leader that held its bits: no fold-back, and folded again from then on', () => {
      const h = clean();
      const gone = h.write(['folded', '0.0', 'delete']);
      h.write(['folded', '0.0', folded(0)]);
      expect(withExternal(h, new Set([gone]))).toEqual([]);
      run(h, 'a');
      expect(withExternal(h, new Set([gone]))).toEqual(['promote-folded', 'completed-twice']);
    });

    it('a queue page: its splits seeded into another page run again from there; its number is not reused while its folded record stands', () => {
      const h = clean();
      const gone = h.write(['queue', '0.0', 'delete']);
      h.write(['queue', '0.1', page(['a', 'b'], 0, 1)]);
      run(h, 'a');
      expect(withExternal(h, new Set([gone]))).toEqual([]);
      expect(withExternal(h, new Set())).toEqual(['page-rewritten', 'page-misplaced', 'page-misplaced', 'promote-folded', 'completed-twice']);
      const reused = clean();
      const deleted = reused.write(['queue', '0.0', 'delete']);
      reused.write(['queue', '0.0', page(['a', 'b'])]);
      expect(withExternal(reused, new Set([deleted]))).toEqual(['page-rewritten']);
      // With no folded record left, the number is free: the page written again holds its splits again.
      const renewed = new History();
      renewed.write(['plan', '', plan()]);
      renewed.write(['queue', '0.0', page(['a', 'b'])]);
      const lost = renewed.write(['queue', '0.0', 'delete']);
      renewed.write(['queue', '0.0', page(['a', 'b'])]);
      run(renewed, 'a');
      run(renewed, 'b');
      expect(withExternal(renewed, new Set([lost]))).toEqual([]);
    });

    it('a folded record put back after its page\'s number was given again marks none of the new page\'s slots (decision 0091)', () => {
      // Page 0.0 of generation 1 held [a, b], a folded (slot 0); the page and its folded record are lost, a
      // leader of generation 2 seeds [c, a] under the same number (c of a later wave), and the old folded record is put back.
      const h = clean();
      const lost = [h.write(['folded', '0.0', 'delete']), h.write(['queue', '0.0', 'delete'])];
      h.write(['plan', '', plan({ planned: 3 })]);
      h.write(['queue', '0.0', { ...page(['c', 'a']), generation: 2 }]);
      const back = h.write(['folded', '0.0', folded(0)]);
      const externals = new Set([...lost, back]);
      // c, in slot 0, never ran: the old bit must not pass for its completion (nor for a's, in slot 1).
      expect(withExternal(h, externals)).toEqual(['split-lost', 'split-lost']);
      run(h, 'c', 2);
      run(h, 'a', 2);
      h.write(['assign', 'w', assign('w', [])]);
      // Its fold-back replaces the old record: no bit of this page's cleared, none of another generation written.
      h.write(['folded', '0.0', { ...folded(0), pageGeneration: 2 }], ['split', 'c', 'delete'], ['spec', 'c', 'delete'], ['progress', 'c', 'delete'], kept(['c']));
      expect(withExternal(h, externals)).toEqual([]);
      // The fleet writing a folded record of another generation is caught, and its bits count for nothing.
      const stale = clean();
      stale.write(['assign', 'w', assign('w', [])]);
      stale.write(['folded', '0.0', folded(0, 1)], ['split', 'b', 'delete'], ['spec', 'b', 'delete'], ['progress', 'b', 'delete'], kept(['b']));
      stale.write(['folded', '0.0', { ...folded(0, 1), pageGeneration: 7 }]);
      expect(withExternal(stale, new Set())).toEqual(['folded-generation', 'split-lost', 'split-lost']);
    });

    it('a record put back where none is, is the store\'s again', () => {
      const h = clean();
      const gone = h.write(['folded', '0.0', 'delete']);
      const back = h.write(['folded', '0.0', folded(0)]);
      run(h, 'a');
      expect(withExternal(h, new Set([gone, back]))).toEqual(['promote-folded', 'completed-twice']);
    });
  });

  it('a keys job: only a queue or folded record is its business', () => {
    const h = new History();
    h.write(['plan', '', { v: 1, fp: FP, generation: 1, final: true, planned: 1 }]);
    h.write(['spec', 'a', spec('a')], ['split', 'a', split('a', 0, '')]);
    h.write(['split', 'a', 'delete']);
    expect(rules(h, true)).toEqual([]);
    h.write(['folded', '0.0', folded(0)]);
    expect(rules(h)).toEqual(['packed-record-in-keys-job']);
    h.write(kept(['a']));
    expect(rules(h)).toEqual(['packed-record-in-keys-job', 'packed-record-in-keys-job']);
  });

  it('the results a fold-back keeps (decision 0069): missing, wrong, of another split, outside a fold-back, written twice, deleted', () => {
    /** `a` run and unassigned in page [a, b], then folded back with `results` beside the fold-back's writes. */
    const foldA = (...results: [HandKind, string, Record<string, unknown> | 'delete'][]) => {
      const h = new History();
      h.write(['plan', '', plan()]);
      h.write(['queue', '0.0', page(['a', 'b'])]);
      run(h, 'a');
      h.write(['assign', 'w', assign('w', [])]);
      h.write(['folded', '0.0', folded(0)], ['split', 'a', 'delete'], ['spec', 'a', 'delete'], ['progress', 'a', 'delete'], ...results);
      return h;
    };
    expect(rules(foldA(kept(['a'])))).toEqual([]);
    expect(rules(foldA())).toEqual(['fold-results-missing']);
    expect(rules(foldA(kept(['a']), kept(['a'])))).toEqual(['fold-results-missing']);
    expect(rules(foldA(kept(['a'], 2)))).toEqual(['fold-results-mismatch']);
    expect(rules(foldA(kept(['a', 'b'])))).toEqual(['fold-results-mismatch']);
    expect(rules(foldA(['result', '1.99', { v: 1, fp: FP, generation: 1, seq: 99, splits: [{ id: 'a', progress: 1, end: 5 }] }]))).toEqual(['fold-results-mismatch']);
    const outside = clean();
    outside.write(kept(['b']));
    expect(rules(outside)).toEqual(['fold-results-outside-fold']);
    const twice = foldA(['result', '1.500', { v: 1, fp: FP, generation: 1, seq: 500, splits: [{ id: 'a', progress: 1 }] }]);
    twice.write(['result', '1.500', { v: 1, fp: FP, generation: 1, seq: 500, splits: [{ id: 'a', progress: 1 }] }]);
    expect(rules(twice)).toEqual(['fold-results-rewritten', 'fold-results-outside-fold']);
    const deleted = foldA(['result', '1.501', { v: 1, fp: FP, generation: 1, seq: 501, splits: [{ id: 'a', progress: 1 }] }]);
    deleted.write(['result', '1.501', 'delete']);
    expect(rules(deleted)).toEqual(['fold-results-deleted']);
  });
});
