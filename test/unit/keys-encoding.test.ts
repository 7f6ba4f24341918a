import { describe, expect, it } from 'vitest';
import { test, fc } from '@fast-check/vitest';
import {
  MAX_ID_BYTES, assignKey, decodeId, encodeId, idProblem, jobPrefix, leaseKey, parseKey, progressKey, specKey, splitKey,
  workerKey, type KeyKind,
} from '../../src/protocol/keys.js';
import { decodeRecord, encodeRecord } from '../../src/protocol/records.js';
import { fingerprintHash } from '../../src/protocol/records.js';

const prefix = jobPrefix('splitfleet', 'a');
const BUILDERS = { worker: workerKey, spec: specKey, split: splitKey, progress: progressKey, lease: leaseKey, assign: assignKey } as const;
const KINDS = Object.keys(BUILDERS) as (keyof typeof BUILDERS)[];

const wellFormed = (s: string): boolean => (s as string & { isWellFormed(): boolean }).isWellFormed();
const fits = (s: string): boolean => s.length > 0 && wellFormed(s) && Buffer.byteLength(s, 'utf8') <= MAX_ID_BYTES;

/** Any well-formed id up to the limit: arbitrary code points, and strings dense in what the encoding escapes. */
const anyId = fc.oneof(
  fc.string({ unit: 'binary', minLength: 1, maxLength: 300 }),
  fc.string({ unit: fc.constantFrom('/', '%', '%2F', '\n', '\u0000', '\u007f', '\u0085', '.', ' ', 'a', 'F', '日', '😀', '\uFFFD'), minLength: 1, maxLength: 200 }),
  fc.string({ unit: 'grapheme-ascii', minLength: 1000, maxLength: MAX_ID_BYTES }),
).filter(fits);

describe('object-store ids in keys', () => {
  it('encodes %, / and control characters, and nothing else', () => {
    expect(splitKey(prefix, 'logs/2026/01/a b.gz')).toBe('splitfleet/a/split.logs%2F2026%2F01%2Fa b.gz');
    expect(splitKey(prefix, 'a%2Fb')).toBe('splitfleet/a/split.a%252Fb');
    expect(splitKey(prefix, '日本/x')).toBe('splitfleet/a/split.日本%2Fx');
    expect(splitKey(prefix, 'line\nbreak\u0085')).toBe('splitfleet/a/split.line%0Abreak%C2%85');
    // Ids without those characters keep the keys they always had.
    expect(splitKey(prefix, 'part-0007.a b+c~日本😀')).toBe('splitfleet/a/split.part-0007.a b+c~日本😀');
    expect(parseKey(prefix, 'splitfleet/a/split.logs%2F2026%2F01%2Fa b.gz')).toEqual({ kind: 'split', id: 'logs/2026/01/a b.gz' });
  });

  it('accepts ids up to 1,024 UTF-8 bytes and refuses longer ones and lone surrogates', () => {
    expect(idProblem('/'.repeat(MAX_ID_BYTES))).toBeUndefined();
    expect(parseKey(prefix, splitKey(prefix, '/'.repeat(MAX_ID_BYTES)))).toEqual({ kind: 'split', id: '/'.repeat(MAX_ID_BYTES) });
    expect(() => splitKey(prefix, 'x'.repeat(MAX_ID_BYTES + 1))).toThrow(/split id .*must be at most 1024 UTF-8 bytes \(got 1025\)/);
    expect(() => splitKey(prefix, 'a\uDC00')).toThrow(/no lone surrogates/);
  });

  it('refuses every key form but the one encoding', () => {
    for (const tail of ['a%2fb', 'a/b', 'a\nb', '%41', 'a%', 'a%zz', '%ED%A0%80', '%C2', '%FF', `${'x'.repeat(MAX_ID_BYTES)}%2F`]) {
      expect(decodeId(tail), tail).toBeUndefined();
      expect(parseKey(prefix, `${prefix}split.${tail}`), tail).toEqual({ kind: 'unknown' });
    }
  });

  it('decodes the id in a record key (the record and the key name the same raw id)', () => {
    const fp = fingerprintHash('fp');
    const id = 'logs/2026/01/a b.gz';
    const key = splitKey(prefix, id);
    const raw = encodeRecord('split', { v: 1, fp, id, epoch: 0, status: 'runnable', owner: '', attempts: 0 });
    expect(decodeRecord('split', key, raw, fp).id).toBe(id);
    expect(() => decodeRecord('split', `${prefix}split.logs/2026`, raw, fp)).toThrow(/not a split key|does not match/);
    expect(() => decodeRecord('split', `${prefix}split.a%zz`, raw, fp)).toThrow(/not encoded as keys encode ids/);
  });

  test.prop([anyId, fc.constantFrom(...KINDS)])('parseKey(prefix, builder(prefix, id)) gives back the id, and only that kind', (id, kind) => {
    const key = BUILDERS[kind](prefix, id);
    expect(parseKey(prefix, key)).toEqual({ kind, id });
    expect(decodeId(encodeId(id))).toBe(id);
    // The encoded id never holds '/', so the key is at this job's level: no nested job's, and no other job's.
    expect(key.slice(prefix.length)).not.toContain('/');
    expect(parseKey(jobPrefix('splitfleet/a', 'x'), key)).toEqual({ kind: 'unknown' });
    expect(parseKey(jobPrefix('splitfleet', 'a.b'), key)).toEqual({ kind: 'unknown' });
  });

  test.prop([anyId, fc.constantFrom(...KINDS), fc.constantFrom('x', 'split.x', 'lease.y', 'assign', 'plan')])(
    'no key of a job nested under the prefix parses as a key of the outer job', (id, kind, segment) => {
      const nested = jobPrefix('splitfleet/a', segment);
      expect(parseKey(prefix, BUILDERS[kind](nested, id))).toEqual({ kind: 'unknown' });
      for (const single of ['plan', 'leader', 'control', 'publish']) expect(parseKey(prefix, `${nested}${single}`)).toEqual({ kind: 'unknown' });
    },
  );

  test.prop([fc.string({ unit: fc.constantFrom('%', '2', 'F', 'f', 'C', '/', 'a', '\n', 'é'), maxLength: 12 }), fc.constantFrom<KeyKind>(...KINDS)])(
    'parseKey is canonical: a key that parses is exactly what the builder writes', (tail, kind) => {
      const key = `${prefix}${kind}.${tail}`;
      const parsed = parseKey(prefix, key);
      if (parsed.kind !== 'unknown') {
        expect(parsed.kind).toBe(kind);
        expect(BUILDERS[kind as keyof typeof BUILDERS](prefix, (parsed as { id: string }).id)).toBe(key);
      }
    },
  );
});
