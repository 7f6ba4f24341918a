import { describe, expect, it } from 'vitest';
import { test, fc } from '@fast-check/vitest';
import {
  KEY_LAYOUT, MAX_ID_BYTES, assignKey, divideKey, idProblem, jobPrefix, kindPrefix, leaderKey, leaseKey, parseKey, planKey,
  progressKey, specKey, splitKey, utf8ByteLength, workerKey,
} from '../../../src/protocol/keys.js';
import { isSplitfleetError } from '../../../src/errors.js';

const prefix = jobPrefix('splitfleet', 'job-1');

/** Valid ids: well-formed, 1..MAX_ID_BYTES bytes ('/', '%' and control characters included). */
const validId = fc.string({ unit: 'grapheme', minLength: 1, maxLength: 40 })
  .filter((s) => idProblem(s) === undefined);

describe('key layout', () => {
  it('builds every key of the table under <root>/<job>/', () => {
    expect(prefix).toBe('splitfleet/job-1/');
    expect(planKey(prefix)).toBe('splitfleet/job-1/plan');
    expect(leaderKey(prefix)).toBe('splitfleet/job-1/leader');
    expect(workerKey(prefix, 'pod-0')).toBe('splitfleet/job-1/worker.pod-0');
    expect(specKey(prefix, 's1')).toBe('splitfleet/job-1/spec.s1');
    expect(splitKey(prefix, 's1')).toBe('splitfleet/job-1/split.s1');
    expect(progressKey(prefix, 's1')).toBe('splitfleet/job-1/progress.s1');
    expect(leaseKey(prefix, 's1')).toBe('splitfleet/job-1/lease.s1');
    expect(assignKey(prefix, 'pod-0')).toBe('splitfleet/job-1/assign.pod-0');
    expect(divideKey(prefix, 'pod-0')).toBe('splitfleet/job-1/divide.pod-0');
    expect(kindPrefix(prefix, 'lease')).toBe('splitfleet/job-1/lease.');
    expect(kindPrefix(prefix, 'progress')).toBe('splitfleet/job-1/progress.');
    expect(KEY_LAYOUT.map((r) => r.pattern)).toEqual([
      'plan', 'leader', 'publish', 'control', 'summary', 'worker.{instance}', 'spec.{id}', 'split.{id}', 'progress.{id}', 'lease.{id}', 'assign.{instance}',
      'divide.{instance}', 'queue.{bucket}.{page}', 'folded.{bucket}.{page}', 'result.{generation}.{seq}',
    ]);
  });

  it('parses every kind, including ids with dots', () => {
    expect(parseKey(prefix, 'splitfleet/job-1/plan')).toEqual({ kind: 'plan' });
    expect(parseKey(prefix, 'splitfleet/job-1/leader')).toEqual({ kind: 'leader' });
    expect(parseKey(prefix, 'splitfleet/job-1/control')).toEqual({ kind: 'control' });
    expect(parseKey(prefix, 'splitfleet/job-1/worker.pod.0')).toEqual({ kind: 'worker', id: 'pod.0' });
    expect(parseKey(prefix, 'splitfleet/job-1/split.a.b.c')).toEqual({ kind: 'split', id: 'a.b.c' });
    expect(parseKey(prefix, 'splitfleet/job-1/progress.a.b')).toEqual({ kind: 'progress', id: 'a.b' });
    expect(parseKey(prefix, 'splitfleet/job-1/assign.p')).toEqual({ kind: 'assign', id: 'p' });
  });

  it('answers unknown for anything else', () => {
    for (const key of [
      'splitfleet/job-2/plan', 'splitfleet/job-1/plan.x', 'splitfleet/job-1/split', 'splitfleet/job-1/split.',
      'splitfleet/job-1/nope.x', 'splitfleet/job-1/x/split.a', 'splitfleet/job-1/split.a/b',
      'splitfleet/job-1/split.a\u0000', 'splitfleet/job-1/split.a%2fb', 'splitfleet/job-1/split.a%', 'splitfleet/job-1/split.%41',
      'splitfleet/job-1/split.%ED%A0%80', 'splitfleet/job-1/', 'splitfleet/job-1',
      'splitfleet/job-1/progress', 'splitfleet/job-1/progress.', 'splitfleet/job-1/progress.a/b', 'splitfleet/job-1/control.x',
    ]) {
      expect(parseKey(prefix, key)).toEqual({ kind: 'unknown' });
    }
  });

  it('validates ids in builders with the rule in the message', () => {
    const bad: [string, RegExp][] = [
      ['', /must not be empty/],
      ['\uD800x', /lone surrogates/],
      ['é'.repeat(513), /at most 1024 UTF-8 bytes \(got 1026\)/],
    ];
    for (const [id, rule] of bad) {
      try {
        splitKey(prefix, id);
        throw new Error(`accepted ${JSON.stringify(id)}`);
      } catch (e) {
        expect(isSplitfleetError(e, 'INVALID_INPUT')).toBe(true);
        expect((e as Error).message).toMatch(/^split id /);
        expect((e as Error).message).toMatch(rule);
      }
    }
    expect(() => workerKey(prefix, '')).toThrow(/^instance id "": must not be empty$/);
    expect(idProblem('x'.repeat(MAX_ID_BYTES))).toBeUndefined();
    expect(idProblem('😀'.repeat(256))).toBeUndefined();
    expect(idProblem('😀'.repeat(257))).toMatch(/at most 1024/);
  });

  test.prop([fc.string({ unit: 'binary' })])('utf8ByteLength agrees with Buffer for well-formed strings', (s) => {
    fc.pre((s as string & { isWellFormed(): boolean }).isWellFormed());
    expect(utf8ByteLength(s)).toBe(Buffer.byteLength(s, 'utf8'));
  });

  test.prop([validId, fc.constantFrom('worker', 'spec', 'split', 'progress', 'lease', 'assign') ])(
    'parseKey inverts every builder', (id, kind) => {
      const build = { worker: workerKey, spec: specKey, split: splitKey, progress: progressKey, lease: leaseKey, assign: assignKey }[kind];
      expect(parseKey(prefix, build(prefix, id))).toEqual({ kind, id });
    },
  );

  test.prop([fc.string()])('parseKey is total', (key) => {
    const parsed = parseKey(prefix, prefix + key);
    expect(['plan', 'leader', 'worker', 'spec', 'split', 'progress', 'lease', 'assign', 'unknown']).toContain(parsed.kind);
  });
});
