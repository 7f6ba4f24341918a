/**
 * Decode only what can be written back (issue 28, decision 0026): every
 * record kind, valid records plus hostile raw text (deep nesting, huge
 * strings, many fields, control characters, duplicate keys, wrong types,
 * non-finite numbers), and the invariant that a record that decodes always
 * re-encodes.
 */
import { describe, expect, it } from 'vitest';
import { test, fc } from '@fast-check/vitest';
import {
  decodeRecord, encodeRecord, fingerprintHash, SCHEMA_VERSION, type Json, type RecordKind, type RecordTypes,
} from '../../src/protocol/records.js';
import {
  MAX_RECORD_BYTES, MAX_RECORD_DEPTH, MAX_UNKNOWN_BYTES, MAX_UNKNOWN_FIELDS, REENCODE_CHECK_UNITS, scanJsonText,
} from '../../src/protocol/record-bounds.js';
import {
  assignKey, controlKey, isValidId, jobPrefix, leaderKey, leaseKey, planKey, progressKey, publishKey, specKey, splitKey, summaryKey, workerKey,
} from '../../src/protocol/keys.js';
import { isSplitfleetError, type SplitfleetErrorCode } from '../../src/errors.js';

const prefix = jobPrefix('splitfleet', 'job');
const fp = fingerprintHash('splitfleet-v1:splitfleet/job');
const v = SCHEMA_VERSION as 1;

function failure(fn: () => unknown, code: SplitfleetErrorCode = 'INVALID_RECORD'): string {
  try { fn(); } catch (e) {
    expect(isSplitfleetError(e, code), String(e)).toBe(true);
    return (e as Error).message;
  }
  throw new Error('expected a throw');
}

const deepArray = (depth: number): string => '['.repeat(depth) + ']'.repeat(depth);
const deepObject = (depth: number): string => '{"a":'.repeat(depth) + '0' + '}'.repeat(depth);
/** `text` with `,"name":value` added before its closing brace. */
const withField = (text: string, name: string, value: string): string => `${text.slice(0, -1)},${JSON.stringify(name)}:${value}}`;

const splitText = encodeRecord('split', { v, fp, id: 's1', epoch: 0, status: 'runnable', owner: '', attempts: 0 });
const splitAt = splitKey(prefix, 's1');

// ---- arbitraries: a valid record of every kind, with its key -------------------------------

const id = fc.oneof(fc.stringMatching(/^[a-z0-9._-]{1,12}$/), fc.string({ minLength: 1, maxLength: 12 }).filter(isValidId));
const nat = fc.nat({ max: 1_000_000 });
// Through JSON once: a value JSON cannot hold as is (-0) is not a valid record's to begin with.
const json = fc.jsonValue({ maxDepth: 4 }).map((v) => JSON.parse(JSON.stringify(v)) as Json);
const nonce = fc.string({ minLength: 1, maxLength: 12 });
const sortedIds = fc.uniqueArray(id, { maxLength: 8 }).map((ids) => [...ids].sort());

type Sample = { [K in RecordKind]: { kind: K; key: string; record: RecordTypes[K] } }[RecordKind];

const samples: { [K in RecordKind]: fc.Arbitrary<Sample> } = {
  plan: fc.record({ generation: nat, final: fc.boolean(), planned: nat, cursor: fc.option(json, { nil: undefined }), verdict: fc.constantFrom(undefined, 'complete', 'stalled') })
    .map(({ verdict, final, cursor, ...r }) => ({
      kind: 'plan', key: planKey(prefix),
      record: { v, fp, ...r, final: final || verdict !== undefined, ...(cursor !== undefined ? { cursor } : {}), ...(verdict ? { verdict: verdict as 'complete' } : {}) },
    })),
  leader: fc.record({ instance: id, generation: nat }).map((r) => ({ kind: 'leader', key: leaderKey(prefix), record: { v, fp, ...r } })),
  control: fc.record({ paused: fc.boolean(), evacuated: fc.uniqueArray(fc.record({ instance: id, nonce }), { selector: (e) => e.instance, maxLength: 4 }) })
    .map((r) => ({ kind: 'control', key: controlKey(prefix), record: { v, fp, paused: r.paused, evacuated: [...r.evacuated].sort((a, b) => (a.instance < b.instance ? -1 : 1)) } })),
  publish: nat.map((generation) => ({ kind: 'publish', key: publishKey(prefix), record: { v, fp, generation } })),
  worker: fc.record({ instance: id, maxInFlight: fc.integer({ min: 1, max: 64 }), nonce })
    .map((r) => ({ kind: 'worker', key: workerKey(prefix, r.instance), record: { v, fp, ...r } })),
  spec: fc.record({ id, weight: nat, descriptor: json, generation: nat }).map((r) => ({ kind: 'spec', key: specKey(prefix, r.id), record: { v, fp, ...r } })),
  split: fc.record({ id, epoch: nat, status: fc.constantFrom('runnable', 'completed', 'quarantined'), owner: fc.option(id, { nil: '' }), attempts: nat, reason: fc.option(fc.string(), { nil: undefined }) })
    .map(({ reason, ...r }) => {
      // An owner is a tenancy in progress: runnable, epoch ≥ 1.
      const owner = r.status === 'runnable' && r.epoch >= 1 ? r.owner : '';
      return { kind: 'split', key: splitKey(prefix, r.id), record: { v, fp, ...r, status: r.status as 'runnable', owner, ...(reason !== undefined ? { reason } : {}) } };
    }),
  progress: fc.record({ id, epoch: fc.integer({ min: 1, max: 1000 }), progress: json }).map((r) => ({ kind: 'progress', key: progressKey(prefix, r.id), record: { v, fp, ...r } })),
  lease: fc.record({ id, owner: id, nonce, epoch: fc.integer({ min: 1, max: 1000 }) }).map((r) => ({ kind: 'lease', key: leaseKey(prefix, r.id), record: { v, fp, ...r } })),
  assign: fc.record({ instance: id, generation: nat, splits: sortedIds }).map((r) => ({ kind: 'assign', key: assignKey(prefix, r.instance), record: { v, fp, ...r } })),
  summary: fc.record({ generation: nat, writtenAt: nat, planned: nat, final: fc.boolean(), seeded: nat, counts: fc.array(nat, { minLength: 9, maxLength: 9 }), weights: fc.array(nat, { minLength: 5, maxLength: 5 }) })
    .map(({ counts: [queued, backoff, held, revoking, completed, quarantined, parked, members, lanes], weights: [qw, bw, hw, cw, xw], ...r }) => ({
      kind: 'summary', key: summaryKey(prefix),
      record: {
        v, fp, ...r, queued: queued!, queuedWeight: qw!, backoff: backoff!, backoffWeight: bw!, held: held! + revoking!, heldWeight: hw!, revoking: revoking!,
        completed: completed!, completedWeight: cw!, quarantined: quarantined!, quarantinedWeight: xw!, parked: parked!, members: members!, lanes: lanes!,
      },
    })),
};
const kinds = Object.keys(samples) as RecordKind[];
const anySample = fc.oneof(...kinds.map((k) => samples[k]));

// ---- hostile values and mutations of the raw text -------------------------------------------

const depth = fc.oneof(fc.integer({ min: 1, max: 10 }), fc.integer({ min: MAX_RECORD_DEPTH - 3, max: MAX_RECORD_DEPTH + 3 }), fc.integer({ min: 1000, max: 50_000 }));
const size = fc.constantFrom(0, 100, 40_000, MAX_UNKNOWN_BYTES + 1, 300_000, MAX_RECORD_BYTES + 1);
const controlText = fc.string({ unit: fc.integer({ min: 0, max: 0x1f }).map((c) => String.fromCharCode(c)), maxLength: 20 });
const fieldName = fc.oneof(fc.constantFrom('extra', 'zone', '__proto__', 'constructor', 'toString', ''), fc.string({ maxLength: 8 }));
const knownName = fc.constantFrom('v', 'fp', 'minor', 'id', 'instance', 'epoch', 'status', 'owner', 'attempts', 'generation', 'splits', 'descriptor', 'progress', 'cursor', 'paused', 'evacuated', 'weight', 'nonce');

/** Raw JSON text of a value a hostile writer might put anywhere. */
const hostileValue: fc.Arbitrary<string> = fc.oneof(
  depth.map(deepArray),
  depth.map(deepObject),
  size.map((n) => JSON.stringify('x'.repeat(n))),
  size.map((n) => `[${Array(Math.ceil(n / 5)).fill('1e20').join(',')}]`),
  controlText.map((s) => JSON.stringify(s)),
  controlText.map((s) => `"${s}"`), // raw control characters: not JSON
  fc.constantFrom('1e999', '-1e999', '1e20', '-0', 'null', 'true', '"\\ud800"', '{"a":1,"a":2}', '{"a":1,"\\u0061":2}', '[{"k":[],"k":{}}]', '"\\"[[[{{"', '{}', '[]'),
  json.map((j) => JSON.stringify(j)),
);

const mutation: fc.Arbitrary<(text: string) => string> = fc.oneof(
  // An unknown field (a newer minor's, or a hostile one).
  fc.tuple(fieldName, hostileValue).map(([n, val]) => (t: string) => withField(t, n, val)),
  // A known field given again, with any value: a duplicate key, or a wrong type.
  fc.tuple(knownName, hostileValue).map(([n, val]) => (t: string) => withField(t, n, val)),
  fc.tuple(knownName, hostileValue).map(([n, val]) => (t: string) => `{${JSON.stringify(n)}:${val},${t.slice(1)}`),
  // A known field's value replaced (wrong types, deep values in descriptor, progress and cursor).
  fc.tuple(knownName, hostileValue).map(([n, val]) => (t: string) => {
    let obj: Record<string, unknown>;
    try { obj = JSON.parse(t) as Record<string, unknown>; } catch { return t; } // an earlier mutation broke it
    if (typeof obj !== 'object' || obj === null) return t;
    obj[n] = '\u0000SLOT\u0000';
    try { return JSON.stringify(obj).replace('"\\u0000SLOT\\u0000"', val); } catch { return t; } // too deep to restate here
  }),
  // Many fields.
  fc.tuple(fc.integer({ min: 1, max: 300 }), hostileValue).map(([count, val]) => (t: string) => {
    let out = t;
    for (let i = 0; i < count; i++) out = withField(out, `f${i}`, i === 0 ? val : '1');
    return out;
  }),
  // A newer minor.
  fc.integer({ min: 0, max: 5 }).map((minor) => (t: string) => withField(t, 'minor', String(minor))),
  // Any splice: truncated, cut, or random characters inserted.
  fc.tuple(fc.nat(), fc.nat({ max: 20 }), fc.string({ maxLength: 6 })).map(([at, cut, ins]) => (t: string) => {
    const i = at % (t.length + 1);
    return t.slice(0, i) + ins + t.slice(i + cut);
  }),
);

/** The property: decode refuses with a record error, or returns a record that re-encodes (and reads back). */
function decodeThenEncode(kind: RecordKind, key: string, raw: string | Uint8Array): void {
  let record: RecordTypes[RecordKind];
  try {
    record = decodeRecord(kind, key, raw, fp);
  } catch (e) {
    expect(isSplitfleetError(e, 'INVALID_RECORD') || isSplitfleetError(e, 'FINGERPRINT_MISMATCH'), String(e).slice(0, 300)).toBe(true);
    return;
  }
  const text = encodeRecord(kind, record as never);
  // Canonical: what was written back reads back, and writes back the same bytes.
  expect(encodeRecord(kind, decodeRecord(kind, key, text, fp) as never)).toBe(text);
}

describe('record bounds', () => {
  test.prop([anySample, fc.array(mutation, { minLength: 1, maxLength: 3 }), fc.boolean()], { numRuns: 400 })(
    'decode_then_encode_never_throws: for every kind, hostile text is refused as a record error or re-encodes',
    ({ kind, key, record }, mutations, asBytes) => {
      const text = mutations.reduce((t, m) => m(t), encodeRecord(kind, record as never));
      decodeThenEncode(kind, key, asBytes ? new TextEncoder().encode(text) : text);
    },
  );

  test.prop([anySample])('every valid record of every kind round-trips (the arbitraries are valid)', ({ kind, key, record }) => {
    expect(decodeRecord(kind, key, encodeRecord(kind, record as never), fp)).toEqual(record);
  });

  test.prop([anySample, fc.constantFrom('descriptor', 'progress', 'cursor', 'extra'), depth], { numRuns: 100 })(
    'encode_then_decode: what encodes (deep values included) decodes, else encode refuses as a record error',
    ({ kind, key, record }, field, d) => {
      let deep: Json = 0;
      for (let i = 0; i < d; i++) deep = [deep];
      let text: string;
      try {
        text = encodeRecord(kind, { ...record, [field]: deep } as never);
      } catch (e) {
        expect(isSplitfleetError(e, 'INVALID_RECORD'), String(e).slice(0, 300)).toBe(true);
        return;
      }
      expect(() => decodeRecord(kind, key, text, fp)).not.toThrow();
    },
  );

  it('regression: a 20,000-deep array as an extra field of a queued split record is INVALID_RECORD, naming the field and the rule', () => {
    const hostile = withField(splitText, 'extra', deepArray(20_000));
    expect(hostile.length).toBeLessThan(41_000); // about 40 KB: far under the store's request limit
    // What made it fatal before: the value is JSON that parses, and cannot be written back.
    const parsed = JSON.parse(hostile) as unknown;
    expect(() => JSON.stringify(parsed)).toThrow(RangeError);
    expect(failure(() => decodeRecord('split', splitAt, hostile, fp))).toBe(
      'split record at splitfleet/job/split.s1: field "extra" nests arrays and objects deeper than 128 levels '
      + '(rule: a record nests at most 128 deep, its own object counting 1)');
    expect(failure(() => decodeRecord('split', splitAt, new TextEncoder().encode(hostile), fp))).toMatch(/field "extra" nests/);
  });

  it('nesting: the record may nest exactly MAX_RECORD_DEPTH deep, both ways; brackets inside strings do not count', () => {
    const at = (d: number) => withField(splitText, 'extra', deepArray(d - 1)); // the record's object is level 1
    expect(decodeRecord('split', splitAt, at(MAX_RECORD_DEPTH), fp)).toHaveProperty('extra');
    expect(failure(() => decodeRecord('split', splitAt, at(MAX_RECORD_DEPTH + 1), fp))).toMatch(/deeper than 128/);
    const inString = withField(splitText, 'note', JSON.stringify(`"\\${'['.repeat(20_000)}`));
    expect(decodeRecord('split', splitAt, inString, fp)).toHaveProperty('note');
    // Encoding refuses what decoding would: a descriptor nested one level too deep.
    let deep: Json = 0;
    for (let i = 0; i < MAX_RECORD_DEPTH; i++) deep = [deep];
    expect(failure(() => encodeRecord('spec', { v, fp, id: 's1', weight: 1, descriptor: deep, generation: 1 })))
      .toMatch(/descriptor: must be JSON .* nested at most 127 deep/);
    for (let i = 0; i < 20_000; i++) deep = [deep];
    expect(failure(() => encodeRecord('spec', { v, fp, id: 's1', weight: 1, descriptor: deep, generation: 1 }))).toMatch(/descriptor: /);
  });

  it('duplicate keys are refused, at the top and nested, escaped spellings included', () => {
    expect(failure(() => decodeRecord('split', splitAt, withField(splitText, 'attempts', '9'), fp)))
      .toBe('split record at splitfleet/job/split.s1: field "attempts" appears twice (rule: no duplicate keys; JSON.parse would keep the last silently)');
    expect(failure(() => decodeRecord('split', splitAt, withField(splitText, 'x', '{"a":1,"\\u0061":2}'), fp)))
      .toMatch(/field "x" holds an object with key "a" twice/);
    expect(failure(() => decodeRecord('split', splitAt, withField(splitText, 'x', '[{"k":1},{"k":1,"k":2}]'), fp)))
      .toMatch(/field "x" holds an object with key "k" twice/);
    // The same key in sibling objects is no duplicate.
    expect(decodeRecord('split', splitAt, withField(splitText, 'x', '[{"k":1},{"k":2}]'), fp)).toHaveProperty('x');
  });

  it('size: a record over one store request is refused, as text and as bytes', () => {
    const big = withField(splitText, 'reason2', JSON.stringify('x'.repeat(MAX_RECORD_BYTES)));
    expect(failure(() => decodeRecord('split', splitAt, big, fp))).toMatch(/over the limit of 1572864 \(rule: a record fits in one store request\)/);
    expect(failure(() => decodeRecord('split', splitAt, new TextEncoder().encode(big), fp))).toMatch(/over the limit of 1572864/);
    expect(failure(() => encodeRecord('split', { v, fp, id: 's1', epoch: 0, status: 'quarantined', owner: '', attempts: 4, reason: 'x'.repeat(MAX_RECORD_BYTES) }), 'RECORD_TOO_LARGE'))
      .toMatch(/over the limit of 1572864/);
  });

  it('a record whose re-encoding would outgrow the size bound (numbers written short) is refused at decode', () => {
    const count = Math.ceil(REENCODE_CHECK_UNITS / 5) + 20_000;
    const raw = encodeRecord('spec', { v, fp, id: 's1', weight: 1, descriptor: 0, generation: 1 })
      .replace('"descriptor":0', `"descriptor":[${Array(count).fill('1e20').join(',')}]`);
    expect(raw.length).toBeLessThan(MAX_RECORD_BYTES);
    expect(failure(() => decodeRecord('spec', specKey(prefix, 's1'), raw, fp))).toMatch(/re-encodes to \d+ bytes, over the limit of 1572864/);
  });

  it('unknown fields: at most MAX_UNKNOWN_FIELDS of them, MAX_UNKNOWN_BYTES together, finite, never __proto__', () => {
    const many = (n: number) => Array.from({ length: n }, (_, i) => i).reduce((t, i) => withField(t, `f${i}`, '1'), splitText);
    expect(Object.keys(decodeRecord('split', splitAt, many(MAX_UNKNOWN_FIELDS), fp))).toHaveLength(7 + MAX_UNKNOWN_FIELDS);
    expect(failure(() => decodeRecord('split', splitAt, many(MAX_UNKNOWN_FIELDS + 1), fp)))
      .toMatch(/65 fields this build does not know \("f0", .*over the limit of 64/);
    expect(failure(() => decodeRecord('split', splitAt, withField(splitText, 'blob', JSON.stringify('x'.repeat(MAX_UNKNOWN_BYTES))), fp)))
      .toMatch(/field "blob" takes the fields this build does not know over 65536 bytes/);
    expect(failure(() => decodeRecord('split', splitAt, withField(splitText, 'big', '1e999'), fp)))
      .toMatch(/field "big" must be JSON this build can write back/);
    expect(failure(() => decodeRecord('split', splitAt, withField(splitText, '__proto__', '{"owner":"x"}'), fp)))
      .toMatch(/field "__proto__" is a name this build cannot keep/);
  });

  it('the scan counts keys outside strings only, whatever the escapes', () => {
    expect(scanJsonText('{"a:b":{"c\\":":1},"d":[":"]}')).toEqual({ problem: undefined, keys: 3, topKeys: 2 });
  });
});
