/**
 * A queue page's ids read from its text (page-ids.ts, decision 0048):
 * `parsePageText` must give exactly what JSON.parse gives, error included,
 * on any text; only the way the ids are made differs.
 */
import { describe, expect, it } from 'vitest';
import { fc, test as fcTest } from '@fast-check/vitest';
import { jobPrefix, queueKey } from '../../../src/protocol/keys.js';
import { parsePageText, readPageIds } from '../../../src/protocol/page-ids.js';
import { decodeRecord, encodeRecord, fingerprintHash } from '../../../src/protocol/records.js';

/** JSON.parse's value, or its error message. */
function outcome(parse: (text: string) => unknown, text: string): { value: unknown } | { error: string } {
  try {
    return { value: parse(text) };
  } catch (e) {
    return { error: (e as Error).message };
  }
}

/** Any string, escapes and all: lone surrogates, control characters, quotes and backslashes. */
const anyString = fc.string({ unit: 'binary', maxLength: 12 });
const otherMembers = fc.dictionary(fc.string({ maxLength: 6 }).filter((k) => k !== 'ids' && k !== '__proto__'), fc.jsonValue({ maxDepth: 3 }), { maxKeys: 5 });
const spacing = fc.constantFrom<string | number | undefined>(undefined, 0, 1, 2, '\t', ' \r\n');

/** A page-like object with `ids` among the other members, at `at`. */
function pageLike(ids: string[], others: Record<string, unknown>, at: number): Record<string, unknown> {
  const entries: [string, unknown][] = Object.entries(others);
  entries.splice(Math.min(at, entries.length), 0, ['ids', ids]);
  return Object.fromEntries(entries);
}

describe('readPageIds', () => {
  fcTest.prop([fc.array(anyString, { maxLength: 40 }), otherMembers, fc.nat(6), spacing])(
    'reads the ids JSON.parse reads, wherever the member sits and however the text is spaced',
    (ids, others, at, space) => {
      const text = JSON.stringify(pageLike(ids, others, at), null, space as string);
      const read = readPageIds(text);
      expect(read?.ids).toEqual(ids);
      expect(JSON.parse(text.slice(read!.start, read!.end))).toEqual(ids);
    },
  );

  it('leaves anything but one plainly keyed array of strings to the full parse', () => {
    for (const text of [
      '{"v":1,"ids":[1,2]}', '{"v":1,"ids":"a"}', '{"v":1}', '[]', '"ids"', '',
      '{"\\u0069ds":["a"]}', '{"ids":["a"],"ids":["b"]}', '{"ids":["a",]}', '{"ids":["a" "b"]}',
      '{"ids":["a\u0001"]}', '{"ids":["a\\x"]}', '{"ids":["a"]', '{"ids":["a"],}', '{"v":1 2,"ids":["a"]}',
    ]) {
      expect(readPageIds(text), text).toBeUndefined();
    }
    expect(readPageIds(' {"ids" : [ "a" , "b\\"c" ] } ')?.ids).toEqual(['a', 'b"c']);
  });
});

describe('parsePageText', () => {
  const base = JSON.stringify({ v: 1, fp: 'f', bucket: 0, page: 0, generation: 1, ids: ['s-1', 'é"\\x', 's-3'], weights: [1, 2, 3], descriptors: [null, { a: [1] }, 'd'] });
  // Edits land anywhere, but mostly inside the ids and at member boundaries, where the reader decides.
  const idsAt = base.indexOf('"ids"');
  const boundaries = [...base.matchAll(/,"/g)].map((m) => m.index + 1);
  const edit = fc.record({
    at: fc.oneof(fc.nat(base.length), fc.integer({ min: idsAt, max: base.indexOf(']', idsAt) + 1 }), fc.constantFrom(...boundaries)),
    cut: fc.nat(3),
    put: fc.constantFrom('', '"', '\\', ',', '[', ']', '{', '}', ':', ' ', '\u0001', '1', '"ids":', '"ids":["z"],', 'x'),
  });

  fcTest.prop([fc.array(edit, { maxLength: 3 })], { numRuns: 1000 })('gives what JSON.parse gives, error included, on any text', (edits) => {
    let text = base;
    for (const e of edits) {
      const at = Math.min(e.at, text.length);
      text = text.slice(0, at) + e.put + text.slice(at + e.cut);
    }
    expect(outcome(parsePageText, text)).toEqual(outcome(JSON.parse, text));
  });

  it('refuses a broken page with the error of the text as stored', () => {
    const fp = fingerprintHash('fp');
    const key = queueKey(jobPrefix('splitfleet', 'p'), 0, 0);
    const good = encodeRecord('queue', { v: 1, fp, bucket: 0, page: 0, generation: 1, ids: ['a', 'b'], weights: [1, 2], descriptors: [null, null] });
    expect(decodeRecord('queue', key, good, fp).ids).toEqual(['a', 'b']);
    const broken = good.replace('"weights":[1,2]', '"weights":[1,2');
    expect(() => decodeRecord('queue', key, broken, fp)).toThrow(`not valid JSON (${outcome(JSON.parse, broken).error as string})`);
    expect(() => decodeRecord('queue', key, good.replace('"ids":["a","b"]', '"ids":["a","a"]'), fp)).toThrow('ids.1: "a" appears twice in the page');
    expect(() => decodeRecord('queue', key, good.replace('"ids":["a","b"]', '"ids":["a","b"],"ids":["a","b"]'), fp)).toThrow('appears twice');
  });
});
