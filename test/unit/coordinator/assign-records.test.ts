/**
 * AssignRecords (assign-records.ts): its index of named split ids against
 * the brute-force answer (a set of every id the records name) over random
 * puts, rewrites, deletes and clears, as watches and listings make them.
 */
import { fc, test } from '@fast-check/vitest';
import { describe, expect, it } from 'vitest';
import { AssignRecords } from '../../../src/coordinator/leader/assign-records.js';
import type { AssignRecord } from '../../../src/protocol/records.js';

const seen = (instance: string, splits: string[], modRevision: number) =>
  ({ rec: { instance, splits } as unknown as AssignRecord, modRevision });

type Op = { kind: 'set'; instance: number; splits: number[] } | { kind: 'delete'; instance: number } | { kind: 'clear' };
const opArb: fc.Arbitrary<Op> = fc.oneof(
  { weight: 6, arbitrary: fc.record({ kind: fc.constant('set' as const), instance: fc.nat(4), splits: fc.uniqueArray(fc.nat(12), { maxLength: 5 }) }) },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant('delete' as const), instance: fc.nat(4) }) },
  { weight: 1, arbitrary: fc.constant({ kind: 'clear' as const }) },
);

describe('assignment records', () => {
  test.prop([fc.array(opArb, { maxLength: 60 })], { numRuns: 500 })('name exactly the ids some record names', (ops) => {
    const records = new AssignRecords();
    let revision = 0;
    for (const op of ops) {
      if (op.kind === 'set') records.set(`m${op.instance}`, seen(`m${op.instance}`, op.splits.map((s) => `s${s}`), ++revision));
      else if (op.kind === 'delete') records.delete(`m${op.instance}`);
      else records.clear();
      const named = new Set([...records.values()].flatMap((a) => a.rec.splits));
      for (let s = 0; s <= 12; s++) expect(records.names(`s${s}`), `s${s}`).toBe(named.has(`s${s}`));
    }
  });

  it('indexes the records it is built from', () => {
    const records = new AssignRecords([['m0', seen('m0', ['a', 'b'], 1)], ['m1', seen('m1', ['b'], 2)]]);
    expect(records.names('a')).toBe(true);
    records.delete('m0');
    expect(records.names('a')).toBe(false);
    expect(records.names('b')).toBe(true);
  });
});
