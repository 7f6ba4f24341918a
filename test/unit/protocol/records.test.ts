import { claimedRecord } from '../../../src/protocol/claims.js';
import { describe, expect, it } from 'vitest';
import { test, fc } from '@fast-check/vitest';
import {
  SCHEMA_VERSION, assignmentRecordBytes, decodeRecord, encodeRecord, fingerprintHash,
  type AssignRecord, type PlanRecord, type ProgressRecord, type RecordKind, type RecordTypes, type SplitRecord,
} from '../../../src/protocol/records.js';
import { assignKey, idProblem, jobPrefix, leaderKey, leaseKey, planKey, progressKey, specKey, splitKey, workerKey }
  from '../../../src/protocol/keys.js';
import { isSplitfleetError, type SplitfleetErrorCode } from '../../../src/errors.js';

const prefix = jobPrefix('splitfleet', 'job');
const fp = fingerprintHash('splitfleet-v1:splitfleet/job');
const v = SCHEMA_VERSION as 1;

const samples: { [K in RecordKind]: { key: string; record: RecordTypes[K] } } = {
  plan: { key: planKey(prefix), record: { v, fp, generation: 3, final: false, planned: 10, cursor: { page: 'x' } } },
  leader: { key: leaderKey(prefix), record: { v, fp, instance: 'pod-0', generation: 3 } },
  worker: { key: workerKey(prefix, 'pod-1'), record: { v, fp, instance: 'pod-1', maxInFlight: 8, nonce: 'n1' } },
  spec: { key: specKey(prefix, 's.1'), record: { v, fp, id: 's.1', weight: 2 ** 40, descriptor: { path: 'a', n: [1] }, generation: 1 } },
  split: { key: splitKey(prefix, 's.1'), record: { v, fp, id: 's.1', epoch: 2, status: 'runnable', owner: 'pod-1', attempts: 1 } },
  progress: { key: progressKey(prefix, 's.1'), record: { v, fp, id: 's.1', epoch: 2, progress: { offset: 7 } } },
  lease: { key: leaseKey(prefix, 's.1'), record: { v, fp, id: 's.1', owner: 'pod-1', nonce: 'n1', epoch: 2 } },
  assign: { key: assignKey(prefix, 'pod-1'), record: { v, fp, instance: 'pod-1', generation: 3, splits: ['a', 'b'] } },
};
const kinds = Object.keys(samples) as RecordKind[];

function failure(fn: () => unknown, code: SplitfleetErrorCode): string {
  try { fn(); } catch (e) {
    expect(isSplitfleetError(e, code), String(e)).toBe(true);
    return (e as Error).message;
  }
  throw new Error('expected a throw');
}

describe('record codecs', () => {
  it('fingerprintHash is 16 stable hex characters', () => {
    expect(fingerprintHash('x')).toMatch(/^[0-9a-f]{16}$/);
    expect(fingerprintHash('x')).toBe(fingerprintHash('x'));
    expect(fingerprintHash('x')).not.toBe(fingerprintHash('y'));
  });

  it.each(kinds)('%s round-trips, from text and from bytes', (kind) => {
    const { key, record } = samples[kind];
    const text = encodeRecord(kind, record);
    expect(decodeRecord(kind, key, text, fp)).toEqual(record);
    expect(decodeRecord(kind, key, new TextEncoder().encode(text), fp)).toEqual(record);
  });

  it('the canonical field order names every field each schema knows (a field missing from it is written as a newer minor\'s)', async () => {
    const { FIELD_ORDER } = await import('../../../src/protocol/records.js');
    const { SCHEMAS } = await import('../../../src/protocol/record-schemas.js');
    let checked = 0;
    for (const [kind, schema] of Object.entries(SCHEMAS)) {
      const shape = (schema as { shape?: Record<string, unknown> }).shape;
      if (shape === undefined) continue; // a schema wrapped past its object (the plan's): its encoder's own test covers it
      expect(new Set(Object.keys(shape).filter((f) => f !== 'minor')), kind).toEqual(new Set(FIELD_ORDER[kind as keyof typeof FIELD_ORDER] as readonly string[]));
      checked++;
    }
    expect(checked).toBeGreaterThanOrEqual(15);
  });

  it('encodes canonically: fixed field order, sorted assignment ids', () => {
    const split = samples.split.record;
    const shuffled = Object.fromEntries(Object.entries(split).reverse()) as unknown as SplitRecord;
    expect(encodeRecord('split', shuffled)).toBe(encodeRecord('split', split));
    expect(encodeRecord('assign', { ...samples.assign.record, splits: ['b', 'a', 'B'] }))
      .toBe(`{"v":1,"fp":"${fp}","instance":"pod-1","generation":3,"splits":["B","a","b"]}`);
  });

  it('refuses to encode an invalid record, naming the field', () => {
    expect(failure(() => encodeRecord('assign', { ...samples.assign.record, splits: ['a', 'a'] }), 'INVALID_RECORD'))
      .toMatch(/assign record of instance "pod-1": splits: must be sorted in JS string order with no duplicates/);
    expect(failure(() => encodeRecord('spec', { ...samples.spec.record, weight: 1.5 }), 'INVALID_RECORD'))
      .toMatch(/weight: must be an integer 0 ≤ x ≤ Number.MAX_SAFE_INTEGER \(got 1.5\)/);
    expect(failure(() => encodeRecord('spec', { ...samples.spec.record, weight: 2 ** 53 }), 'INVALID_RECORD'))
      .toMatch(/weight: /);
    expect(failure(() => encodeRecord('spec', { ...samples.spec.record, descriptor: { at: new Date(0) } as never }),
      'INVALID_RECORD')).toMatch(/descriptor: must be JSON/);
    expect(failure(() => encodeRecord('progress', { ...samples.progress.record, progress: Number.NaN }), 'INVALID_RECORD'))
      .toMatch(/progress: must be JSON/);
    // A field this build does not know must at least be JSON to be kept.
    expect(failure(() => encodeRecord('split', { ...samples.split.record, hint: Number.NaN } as SplitRecord), 'INVALID_RECORD'))
      .toMatch(/field "hint" must be JSON/);
  });

  describe('forward compatibility within a major version', () => {
    const { key, record } = samples.split;
    it('tolerates fields of a newer minor version, and keeps them (after the known ones, sorted) when rewriting', () => {
      const newer = JSON.stringify({ ...record, minor: 3, zone: 'eu-west-1', apriority: { n: 1 } });
      const read = decodeRecord('split', key, newer, fp);
      expect(read).toMatchObject({ ...record, minor: 3, zone: 'eu-west-1', apriority: { n: 1 } });
      const claimed = claimedRecord(read, 'pod-0', { kind: 'create', consumesAttempt: false, quarantine: false });
      const text = encodeRecord('split', claimed);
      expect(text.endsWith('"minor":3,"apriority":{"n":1},"zone":"eu-west-1"}')).toBe(true);
      expect(decodeRecord('split', key, text, fp)).toMatchObject({ epoch: record.epoch + 1, owner: 'pod-0', minor: 3, zone: 'eu-west-1' });
    });
    it('still checks every field it knows, and the minor version itself', () => {
      expect(failure(() => decodeRecord('split', key, JSON.stringify({ ...record, minor: 1, epoch: -1 }), fp), 'INVALID_RECORD')).toMatch(/epoch: /);
      expect(failure(() => decodeRecord('split', key, JSON.stringify({ ...record, minor: 'x' }), fp), 'INVALID_RECORD')).toMatch(/minor: /);
    });
    it('a record of this build carries no minor (it is 0) and encodes as before', () => {
      expect(encodeRecord('split', record)).not.toContain('minor');
    });
  });

  it('plan verdict: only complete or stalled, only on a final plan, written last', () => {
    const final: PlanRecord = { ...samples.plan.record, final: true, verdict: 'stalled' };
    const text = encodeRecord('plan', final);
    expect(text.endsWith('"verdict":"stalled"}')).toBe(true);
    expect(decodeRecord('plan', samples.plan.key, text, fp)).toEqual(final);
    expect(decodeRecord('plan', samples.plan.key, encodeRecord('plan', { ...final, verdict: 'complete' }), fp).verdict).toBe('complete');
    expect(failure(() => encodeRecord('plan', { ...samples.plan.record, verdict: 'complete' }), 'INVALID_RECORD'))
      .toMatch(/verdict: only a final plan has a verdict/);
    expect(failure(() => decodeRecord('plan', samples.plan.key, JSON.stringify({ ...final, verdict: 'done' }), fp), 'INVALID_RECORD'))
      .toMatch(/verdict: must be 'complete' or 'stalled' \(got "done"\)/);
  });

  it('progress records: epoch ≥ 1, the id of their key, known fields checked', () => {
    const { key, record } = samples.progress;
    expect(failure(() => decodeRecord('progress', key, JSON.stringify({ ...record, epoch: 0 }), fp), 'INVALID_RECORD'))
      .toMatch(/epoch: must be an integer ≥ 1 \(got 0\)/);
    expect(failure(() => decodeRecord('progress', key, JSON.stringify({ ...record, epoch: '1' }), fp), 'INVALID_RECORD'))
      .toMatch(/epoch: /);
    expect(failure(() => decodeRecord('progress', progressKey(prefix, 'other'), JSON.stringify(record), fp), 'INVALID_RECORD'))
      .toMatch(/other/);
    expect(failure(() => decodeRecord('progress', key, JSON.stringify({ ...record, progress: undefined }), fp), 'INVALID_RECORD'))
      .toMatch(/progress: /);
  });

  it('accepts weights at both ends of the rule', () => {
    for (const weight of [0, Number.MAX_SAFE_INTEGER]) {
      const text = encodeRecord('spec', { ...samples.spec.record, weight });
      expect(decodeRecord('spec', samples.spec.key, text, fp).weight).toBe(weight);
    }
    expect(failure(() => encodeRecord('spec', { ...samples.spec.record, weight: -1 }), 'INVALID_RECORD'))
      .toMatch(/weight: must be an integer ≥ 0 \(got -1\)/);
  });

  it('measures and limits assignment records, naming instance, sizes and rule', () => {
    const record: AssignRecord = { ...samples.assign.record, splits: ['s1', 'é'] };
    const bytes = assignmentRecordBytes(record);
    expect(bytes).toBe(Buffer.byteLength(encodeRecord('assign', record)));
    expect(encodeRecord('assign', record, { maxBytes: bytes })).toHaveLength(bytes - 1); // 'é' is 2 bytes
    expect(failure(() => encodeRecord('assign', record, { maxBytes: bytes - 1 }), 'RECORD_TOO_LARGE')).toBe(
      `assign record of instance "pod-1" encodes to ${bytes} bytes, over the limit of ${bytes - 1}: every record must `
      + 'fit in one store request; an assignment names at most the instance\'s max_in_flight split ids, so lower '
      + 'max_in_flight or shorten split ids');
  });

  describe('decoding is strict', () => {
    const { key } = samples.split;
    const good = JSON.parse(encodeRecord('split', samples.split.record)) as Record<string, unknown>;
    const bad = (patch: Record<string, unknown>) => JSON.stringify({ ...good, ...patch });

    it('refuses bad JSON, bad UTF-8 and non-objects, naming the key', () => {
      expect(failure(() => decodeRecord('split', key, '{', fp), 'INVALID_RECORD'))
        .toMatch(/^split record at splitfleet\/job\/split\.s\.1: not valid JSON/);
      expect(failure(() => decodeRecord('split', key, new Uint8Array([0xff]), fp), 'INVALID_RECORD'))
        .toMatch(/not valid UTF-8/);
      expect(failure(() => decodeRecord('split', key, '[1]', fp), 'INVALID_RECORD'))
        .toMatch(/must be a JSON object \(got an array\)/);
    });

    it('refuses another or a missing schema version', () => {
      expect(failure(() => decodeRecord('split', key, bad({ v: 2 }), fp), 'INVALID_RECORD'))
        .toMatch(/schema version 2 is a newer major version than this build reads \(1\): upgrade splitfleet/);
      expect(failure(() => decodeRecord('split', key, bad({ v: '1' }), fp), 'INVALID_RECORD'))
        .toMatch(/schema version "1"; this build reads version 1 only/);
      expect(failure(() => decodeRecord('split', key, bad({ v: undefined }), fp), 'INVALID_RECORD'))
        .toMatch(/has no schema version field v/);
    });

    it('refuses another job\'s fingerprint with both values', () => {
      const other = fingerprintHash('other');
      const message = failure(() => decodeRecord('split', key, bad({ fp: other }), fp), 'FINGERPRINT_MISMATCH');
      expect(message).toContain(other);
      expect(message).toContain(fp);
      expect(message).toContain(key);
    });

    it('refuses an id that disagrees with the key', () => {
      expect(failure(() => decodeRecord('split', splitKey(prefix, 'other'), bad({}), fp), 'INVALID_RECORD'))
        .toMatch(/id "s\.1" does not match the key's "other"/);
      expect(failure(() => decodeRecord('assign', assignKey(prefix, 'pod-2'),
        encodeRecord('assign', samples.assign.record), fp), 'INVALID_RECORD')).toMatch(/instance "pod-1" does not match/);
    });

    it('refuses a key of another kind', () => {
      expect(failure(() => decodeRecord('lease', key, bad({}), fp), 'INVALID_RECORD'))
        .toMatch(/the key is not a lease key/);
      expect(failure(() => decodeRecord('plan', planKey(prefix) + '.x', '{}', fp), 'INVALID_RECORD'))
        .toMatch(/the key is not a plan key/);
    });

    it('refuses wrong types, missing fields and broken invariants', () => {
      const cases: [Record<string, unknown>, RegExp][] = [
        [{ epoch: '2' }, /epoch: must be an integer .* \(got "2"\)/],
        [{ status: 'done' }, /status: must be 'runnable', 'completed' or 'quarantined' \(got "done"\)/],
        [{ attempts: undefined }, /attempts: must be an integer .*\(got nothing\)/],
        [{ owner: 'a\uD800' }, /owner: must be '' \(no owner\) or an instance id: must be well-formed/],
        [{ status: 'completed' }, /owner: must be empty unless status is runnable and epoch ≥ 1/],
        [{ epoch: 0 }, /owner: must be empty unless/],
        [{ fp: 'XYZ' }, /fp: must be 16 lowercase hex characters/],
      ];
      for (const [patch, rule] of cases) {
        expect(failure(() => decodeRecord('split', key, bad(patch), fp), 'INVALID_RECORD')).toMatch(rule);
      }
      expect(failure(() => decodeRecord('assign', samples.assign.key,
        JSON.stringify({ ...samples.assign.record, splits: ['b', 'a'] }), fp), 'INVALID_RECORD'))
        .toMatch(/splits: must be sorted/);
      expect(failure(() => decodeRecord('lease', samples.lease.key,
        JSON.stringify({ ...samples.lease.record, epoch: 0 }), fp), 'INVALID_RECORD'))
        .toMatch(/epoch: must be an integer ≥ 1 \(got 0\)/);
    });
  });

  const id = fc.string({ minLength: 1, maxLength: 12 }).filter((s) => idProblem(s) === undefined);
  // fc.jsonValue may yield -0, which JSON text cannot carry (it reads back as 0): normalise through JSON.
  const json = fc.jsonValue().map((x) => JSON.parse(JSON.stringify(x))) as fc.Arbitrary<never>;

  test.prop([id, fc.nat(), fc.constantFrom('runnable', 'completed', 'quarantined'), id, fc.nat(),
    fc.option(fc.string(), { nil: undefined })])(
    'every valid split record round-trips through its bytes',
    (sid, epoch, status, owner, attempts, reason) => {
      const owned = status === 'runnable' && epoch >= 1;
      const record: SplitRecord = { v, fp, id: sid, epoch, status, owner: owned ? owner : '', attempts,
        ...(reason === undefined ? {} : { reason }) };
      const text = encodeRecord('split', record);
      expect(decodeRecord('split', splitKey(prefix, sid), Buffer.from(text), fp)).toEqual(record);
    },
  );

  test.prop([id, fc.integer({ min: 1, max: 2 ** 40 }), json])(
    'every valid progress record round-trips through its bytes', (sid, epoch, progress) => {
      const record: ProgressRecord = { v, fp, id: sid, epoch, progress };
      const text = encodeRecord('progress', record);
      expect(decodeRecord('progress', progressKey(prefix, sid), Buffer.from(text), fp)).toEqual(record);
    },
  );

  test.prop([id, fc.uniqueArray(id, { maxLength: 30 })])(
    'assignment bytes equal the encoding and decode back sorted', (instance, splits) => {
      const record: AssignRecord = { v, fp, instance, generation: 1, splits };
      const text = encodeRecord('assign', record);
      expect(assignmentRecordBytes(record)).toBe(Buffer.byteLength(text));
      expect(decodeRecord('assign', assignKey(prefix, instance), text, fp).splits).toEqual([...splits].sort());
    },
  );

  test.prop([fc.string()])('decoding never throws anything but a SplitfleetError', (text) => {
    try { decodeRecord('split', samples.split.key, text, fp); } catch (e) {
      expect(isSplitfleetError(e)).toBe(true);
    }
  });
});
