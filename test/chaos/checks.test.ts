/**
 * The chaos auditor's checks on hand-made histories: a clean run passes with
 * the right figures, and each broken property is reported under its own
 * check with the split and revisions. A check that could not fail would make
 * every chaos run's "no violations" meaningless. A packed job (decision
 * 0037) is held to the packed queue's checks besides: a folded bit cleared, a
 * folded split promoted again and a leased split folded are each reported.
 */
import { describe, expect, test } from 'vitest';
import { audit, type Ledger } from './checks.js';
import { FP, History, P } from '../support/hand-history.js';

const split = (epoch: number, owner: string, status = 'runnable', attempts = 0) =>
  ({ v: 1, fp: FP, id: 's', epoch, status, owner, attempts });
/** `progress.s`: committed progress, and the epoch whose fenced write put it there. */
const prog = (epoch: number, progress: number) => ({ v: 1, fp: FP, id: 's', epoch, progress });
const lease = (owner: string, epoch: number) => ({ v: 1, fp: FP, id: 's', owner, nonce: owner, epoch });
const units = (instance: string, epoch: number, from: number, to: number) =>
  Array.from({ length: to - from + 1 }, (_, i) => ({ instance, id: 's', unit: from + i, epoch }));

/** A clean run of one 20-unit split: a claims, commits 5 and 10, dies at 12; b takes over at 10 and completes. */
function cleanRun(): { h: History; ledger: Ledger } {
  const h = new History();
  h.write(['spec', 's', { descriptor: { units: 20 } }], ['split', 's', split(0, '')]);
  h.write(['split', 's', split(1, 'a')], ['lease', 's', lease('a', 1)]);
  h.write(['progress', 's', prog(1, 5)]);
  h.write(['progress', 's', prog(1, 10)]);
  h.write(['lease', 's', 'delete']); // a's lease expires
  // a's tenancy committed progress: the takeover consumes no attempt (substrate.md).
  h.write(['split', 's', split(2, 'b', 'runnable', 0)], ['lease', 's', lease('b', 2)]);
  h.write(['progress', 's', prog(2, 15)]);
  h.write(['split', 's', split(2, '', 'completed', 0)], ['progress', 's', prog(2, 20)], ['lease', 's', 'delete']);
  const ledger: Ledger = {
    units: [...units('a', 1, 1, 12), ...units('b', 2, 11, 20)],
    events: [{ instance: 'a', ev: 'claimed', id: 's', epoch: 1, progress: 0 }, { instance: 'b', ev: 'claimed', id: 's', epoch: 2, progress: 10 }],
  };
  return { h, ledger };
}

const checks = (h: History, ledger: Ledger) => audit(h.events, ledger, { commitEvery: 5 }).violations.map((v) => v.check);

describe('chaos auditor checks', () => {
  test('a clean takeover passes, with its replay and duplicates counted', () => {
    const { h, ledger } = cleanRun();
    const r = audit(h.events, ledger, { commitEvery: 5 });
    expect(r.violations).toEqual([]);
    expect(r.figures).toMatchObject({ splits: 1, unitsPlanned: 20, unitsProcessed: 22, duplicates: 2, maxReplay: 2, replayBound: 5, maxAttempts: 0 });
    expect(r.figures.transitions).toMatchObject({ create: 1, takeover: 1 });
  });

  test('a live lease key overwritten by another owner', () => {
    const { h, ledger } = cleanRun();
    h.events.splice(h.events.findIndex((e) => e.type === 'delete'), 1); // a's lease never expired
    const r = audit(h.events, ledger, { commitEvery: 5 });
    expect(r.violations.map((v) => v.check)).toContain('lease-overwritten');
    expect(r.violations.find((v) => v.check === 'lease-overwritten')).toMatchObject({ split: 's', revisions: [2, 6] });
  });

  test('committed progress going backwards, and a completed record written again', () => {
    const { h, ledger } = cleanRun();
    h.write(['split', 's', split(2, '', 'completed', 1)], ['progress', 's', prog(2, 3)]);
    expect(checks(h, ledger)).toEqual(expect.arrayContaining(['progress-regressed', 'terminal-rewritten']));
  });

  test('progress going backwards within a tenancy, a claim that writes progress, progress kept in split.{id}', () => {
    const a = cleanRun();
    const i = a.h.events.findIndex((e) => e.rev === 4);
    a.h.events[i] = { ...a.h.events[i]!, rec: prog(1, 4) }; // 5 → 4
    expect(checks(a.h, a.ledger)).toContain('progress-regressed');
    const b = cleanRun();
    b.h.events.splice(b.h.events.findIndex((e) => e.rev === 6), 0,
      { rev: 6, type: 'put', key: `${P}progress.s`, kind: 'progress', id: 's', rec: prog(2, 10), lease: undefined, at: 6 });
    expect(checks(b.h, b.ledger)).toContain('claim-changed-progress');
    const c = cleanRun();
    c.h.write(['split', 's', { ...split(2, '', 'completed', 1), progress: 20 }]);
    expect(checks(c.h, c.ledger)).toContain('progress-in-split-record');
  });

  test('a commit that rewrites split.{id} instead of progress.{id}', () => {
    const { h, ledger } = cleanRun();
    const i = h.events.findIndex((e) => e.rev === 7);
    h.events[i] = { ...h.events[i]!, key: `${P}split.s`, kind: 'split', rec: split(2, 'b', 'runnable', 1) };
    expect(checks(h, ledger)).toContain('split-rewritten-without-ownership-change');
  });

  test('an owner change without an epoch bump', () => {
    const { h, ledger } = cleanRun();
    const i = h.events.findIndex((e) => e.rev === 6 && e.kind === 'split');
    h.events[i] = { ...h.events[i]!, rec: split(1, 'b') };
    expect(checks(h, ledger)).toEqual(expect.arrayContaining(['owner-changed-without-epoch-bump']));
  });

  test('a stale owner commit after its lease expired (an unfenced write)', () => {
    const { h, ledger } = cleanRun();
    // a's commit lands between the expiry (rev 5) and b's claim (rev 6): insert it as rev 5.5.
    h.events.splice(h.events.findIndex((e) => e.rev === 6), 0,
      { rev: 5.5, type: 'put', key: `${P}progress.s`, kind: 'progress', id: 's', rec: prog(1, 12), lease: undefined, at: 5.5 });
    expect(checks(h, ledger)).toContain('unfenced-write');
  });

  test('a takeover redoing more than one commit interval', () => {
    const { h, ledger } = cleanRun();
    ledger.units.push(...units('a', 1, 13, 17));
    expect(checks(h, ledger)).toContain('replay-over-bound');
  });

  test('a planned unit nobody processed, and a unit processed under someone else\'s epoch', () => {
    const { h, ledger } = cleanRun();
    ledger.units = ledger.units.filter((u) => u.unit !== 20);
    ledger.units.push({ instance: 'b', id: 's', unit: 3, epoch: 1 });
    expect(checks(h, ledger)).toEqual(expect.arrayContaining(['unit-never-processed', 'unit-by-non-owner']));
  });

  test('a cooperative drain that still left work to redo', () => {
    const h = new History();
    h.write(['spec', 's', { descriptor: { units: 20 } }], ['split', 's', split(0, '')]);
    h.write(['split', 's', split(1, 'a')], ['lease', 's', lease('a', 1)]);
    h.write(['split', 's', split(1, '')], ['progress', 's', prog(1, 10)], ['lease', 's', 'delete']); // released at 10 after a drain
    h.write(['split', 's', split(2, 'b')], ['lease', 's', lease('b', 2)]);
    h.write(['split', 's', split(2, '', 'completed')], ['progress', 's', prog(2, 20)], ['lease', 's', 'delete']);
    const ledger: Ledger = {
      units: [...units('a', 1, 1, 12), ...units('b', 2, 11, 20)],
      events: [{ instance: 'a', ev: 'drained', id: 's', progress: 10 }],
    };
    const r = audit(h.events, ledger, { commitEvery: 5 });
    expect(r.transitions.find((t) => t.epoch === 2)?.kind).toBe('cooperative');
    expect(r.violations.map((v) => v.check)).toContain('cooperative-replayed');
  });

  test("a drain by an earlier tenancy does not make a later store-failure release cooperative", () => {
    // a drains at 10 (epoch 1), reclaims at 10 (epoch 2), processes to 13, and releases on a store
    // failure with 10 still committed; a's epoch 3 resumes at 10: a forced move, replay within bound.
    const h = new History();
    h.write(['spec', 's', { descriptor: { units: 20 } }], ['split', 's', split(0, '')]);
    h.write(['split', 's', split(1, 'a')], ['lease', 's', lease('a', 1)]);
    h.write(['split', 's', split(1, '')], ['progress', 's', prog(1, 10)], ['lease', 's', 'delete']);
    h.write(['split', 's', split(2, 'a')], ['lease', 's', lease('a', 2)]);
    h.write(['split', 's', split(2, '')], ['lease', 's', 'delete']);
    h.write(['split', 's', split(3, 'a')], ['lease', 's', lease('a', 3)]);
    h.write(['split', 's', split(3, '', 'completed')], ['progress', 's', prog(3, 20)], ['lease', 's', 'delete']);
    const ledger: Ledger = {
      units: [...units('a', 1, 1, 10), ...units('a', 2, 11, 13), ...units('a', 3, 11, 20)],
      events: [{ instance: 'a', ev: 'drained', id: 's', epoch: 1, progress: 10 }],
    };
    const r = audit(h.events, ledger, { commitEvery: 5 });
    expect(r.transitions.find((t) => t.epoch === 2)?.kind).toBe('cooperative');
    expect(r.transitions.find((t) => t.epoch === 3)?.kind).not.toBe('cooperative');
    expect(r.violations.map((v) => v.check)).not.toContain('cooperative-replayed');
  });

  test('delivery attempts: a takeover of a tenancy that committed nothing consumes one, of one that committed none; a store-failure release none; a failure report one the handler made', () => {
    // cleanRun's takeover ends a tenancy that committed: attempts stay 0, no violation.
    const clean = cleanRun();
    expect(checks(clean.h, clean.ledger)).not.toContain('attempts-miscounted');
    // The same takeover, had the claim charged it (the rule before issue 29).
    const { h: h1, ledger: l1 } = cleanRun();
    for (const e of h1.events) if (e.kind === 'split' && e.rec && e.rec.epoch === 2) e.rec = { ...e.rec, attempts: 1 };
    expect(checks(h1, l1)).toContain('attempts-miscounted');
    // The poison case: a dies before its first commit; b's takeover consumes one attempt.
    const poison = (attempts: number) => {
      const h = new History();
      h.write(['spec', 's', { descriptor: { units: 10 } }], ['split', 's', split(0, '')]);
      h.write(['split', 's', split(1, 'a')], ['lease', 's', lease('a', 1)]);
      h.write(['lease', 's', 'delete']); // a's lease expires, nothing committed
      h.write(['split', 's', split(2, 'b', 'runnable', attempts)], ['lease', 's', lease('b', 2)]);
      h.write(['split', 's', split(2, '', 'completed', attempts)], ['progress', 's', prog(2, 10)], ['lease', 's', 'delete']);
      return checks(h, { units: units('b', 2, 1, 10), events: [] });
    };
    expect(poison(1)).not.toContain('attempts-miscounted');
    expect(poison(0)).toContain('attempts-miscounted');
    // a releases on a store failure and the release consumes an attempt; b's claim after it, another.
    const burned = (attempts: [number, number], events: Ledger['events']) => {
      const h = new History();
      h.write(['spec', 's', { descriptor: { units: 10 } }], ['split', 's', split(0, '')]);
      h.write(['split', 's', split(1, 'a')], ['lease', 's', lease('a', 1)]);
      h.write(['split', 's', split(1, '', 'runnable', attempts[0])], ['progress', 's', prog(1, 5)], ['lease', 's', 'delete']);
      h.write(['split', 's', split(2, 'b', 'runnable', attempts[1])], ['lease', 's', lease('b', 2)]);
      h.write(['split', 's', split(2, '', 'completed', attempts[1])], ['progress', 's', prog(2, 10)], ['lease', 's', 'delete']);
      return checks(h, { units: [...units('a', 1, 1, 5), ...units('b', 2, 6, 10)], events });
    };
    expect(burned([0, 0], [])).toEqual([]);
    expect(burned([1, 1], [])).toContain('attempt-burned');
    expect(burned([0, 1], [])).toContain('attempts-miscounted');
    // The same release with the handler's failure report in the ledger: a failure, counted once.
    expect(burned([1, 1], [{ instance: 'a', ev: 'failed', id: 's', attempts: 1 }])).toEqual([]);
  });

  test("quarantine takes the attempt that reaches the cap: of an expired owner's split, not of a released one", () => {
    const run = (released: boolean, attempts: number) => {
      const h = new History();
      h.write(['spec', 's', { descriptor: { units: 10 } }], ['split', 's', split(0, '', 'runnable', 3)]);
      h.write(['split', 's', split(1, 'a', 'runnable', 3)], ['lease', 's', lease('a', 1)]);
      if (released) h.write(['split', 's', split(1, '', 'runnable', 3)], ['lease', 's', 'delete']);
      else h.write(['lease', 's', 'delete']); // a's lease expires
      h.write(['split', 's', split(1, released ? '' : 'a', 'quarantined', attempts)]);
      // Only the attempt checks: nothing was processed, so the unit checks fire too.
      return audit(h.events, { units: [], events: [] }, { commitEvery: 5, expectComplete: false }).violations.map((v) => v.check).filter((c) => c.startsWith('attempt'));
    };
    expect(run(false, 4)).toEqual([]);
    expect(run(false, 3)).toContain('attempts-miscounted');
    expect(run(true, 4)).toContain('attempt-burned');
  });

  test('a split that never completes', () => {
    const { h, ledger } = cleanRun();
    h.events.splice(h.events.length - 3, 3);
    expect(checks(h, ledger)).toContain('not-completed');
  });

  test('completed, but progress.{id} short of the split\'s size', () => {
    const { h, ledger } = cleanRun();
    const i = h.events.findIndex((e) => e.rev === 8 && e.kind === 'progress');
    h.events.splice(i, 1); // completed with no final progress: progress.s stays at 15
    expect(checks(h, ledger)).toContain('not-completed');
  });

  describe('a packed job', () => {
    const plan = { v: 2, fp: FP, generation: 1, final: true, planned: 2, layout: 'packed', buckets: 1 };
    const page = { v: 1, fp: FP, bucket: 0, page: 0, generation: 1, ids: ['s', 't'], weights: [20, 10], descriptors: [{ units: 20 }, { units: 10 }] };
    const bits = (byte: number) => ({ v: 1, fp: FP, bucket: 0, page: 0, bits: Buffer.from([byte]).toString('base64'), pageGeneration: 1 });
    const spec = (units: number) => ({ v: 1, fp: FP, id: 's', weight: 20, descriptor: { units }, generation: 1 });
    const assign = (splits: string[]) => ({ v: 1, fp: FP, instance: 'a', generation: 1, splits });

    /** Page [s, t]; s is promoted, claimed, completed, unassigned and folded back; t is promoted and completed by b. */
    function packedRun(): { h: History; ledger: Ledger } {
      const h = new History();
      h.write(['plan', '', plan]);
      h.write(['queue', '0.0', page]);
      h.write(['spec', 's', spec(20)], ['split', 's', split(0, '')]);
      h.write(['assign', 'a', assign(['s'])]);
      h.write(['split', 's', split(1, 'a')], ['lease', 's', lease('a', 1)]);
      h.write(['split', 's', split(1, '', 'completed')], ['progress', 's', prog(1, 20)], ['lease', 's', 'delete']);
      h.write(['assign', 'a', assign([])]);
      // The fold-back keeps what it deletes (decision 0069): s's final progress, in a results record.
      const kept = { v: 1, fp: FP, generation: 1, seq: 0, splits: [{ id: 's', progress: 20 }] };
      h.write(['folded', '0.0', bits(1)], ['split', 's', 'delete'], ['spec', 's', 'delete'], ['progress', 's', 'delete'], ['result', '1.0', kept]);
      const t = (epoch: number, owner: string, status = 'runnable') => ({ ...split(epoch, owner, status), id: 't' });
      h.write(['spec', 't', { ...spec(10), id: 't', weight: 10 }], ['split', 't', t(0, '')]);
      h.write(['split', 't', t(1, 'b')], ['lease', 't', { ...lease('b', 1), id: 't' }]);
      h.write(['split', 't', t(1, '', 'completed')], ['progress', 't', { ...prog(1, 10), id: 't' }], ['lease', 't', 'delete']);
      const ledger: Ledger = {
        units: [...units('a', 1, 1, 20), ...units('b', 1, 1, 10).map((u) => ({ ...u, id: 't' }))],
        events: [{ instance: 'a', ev: 'claimed', id: 's', epoch: 1, progress: 0 }, { instance: 'b', ev: 'claimed', id: 't', epoch: 1, progress: 0 }],
      };
      return { h, ledger };
    }

    test('a clean packed run passes: the folded split counts as completed, its units from its page', () => {
      const { h, ledger } = packedRun();
      const r = audit(h.events, ledger, { commitEvery: 5 });
      expect(r.violations).toEqual([]);
      expect(r.figures).toMatchObject({ splits: 2, unitsPlanned: 30, unitsProcessed: 30, duplicates: 0 });
    });

    test('a folded bit cleared', () => {
      const { h, ledger } = packedRun();
      h.write(['folded', '0.0', bits(0)]);
      expect(checks(h, ledger)).toEqual(['folded-bit-cleared', 'split-lost']); // its split is queued again, and never completes
    });

    test('a folded split promoted again (and so completed twice)', () => {
      const { h, ledger } = packedRun();
      h.write(['spec', 's', spec(20)], ['split', 's', split(0, '')]);
      h.write(['split', 's', split(1, 'a')], ['lease', 's', lease('a', 1)]);
      h.write(['split', 's', split(1, '', 'completed')], ['progress', 's', prog(1, 20)], ['lease', 's', 'delete']);
      expect(checks(h, ledger)).toEqual(expect.arrayContaining(['promote-folded', 'completed-twice']));
    });

    test('a fold-back of a leased split, and a split record deleted by anything else', () => {
      const { h, ledger } = packedRun();
      h.events.splice(h.events.findIndex((e) => e.rev === 6), 3); // s never completes: still held by a when folded
      expect(checks(h, ledger)).toEqual(expect.arrayContaining(['fold-not-completed', 'fold-leased']));
      const deleted = packedRun();
      deleted.h.write(['split', 't', 'delete']);
      expect(checks(deleted.h, deleted.ledger)).toEqual(expect.arrayContaining(['deleted-without-fold', 'not-completed', 'split-lost']));
    });

    test('a planned split never promoted is lost; in a keys job a deleted split record is still its own check', () => {
      const { h, ledger } = packedRun();
      h.events.splice(h.events.findIndex((e) => e.key.endsWith('spec.t')));
      ledger.units = ledger.units.filter((u) => u.id !== 't');
      ledger.events = ledger.events.filter((e) => e.id !== 't');
      expect(checks(h, ledger)).toEqual(expect.arrayContaining(['unit-never-processed', 'not-completed', 'split-lost']));
      const keys = cleanRun();
      keys.h.write(['split', 's', 'delete']);
      expect(checks(keys.h, keys.ledger)).toContain('split-record-deleted');
    });
  });
});
