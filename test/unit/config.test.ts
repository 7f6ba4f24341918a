import { describe, expect, it } from 'vitest';
import { test, fc } from '@fast-check/vitest';
import { CONFIG_DEFAULTS, defaultFingerprint, resolveConfig, type ConfigOptions } from '../../src/config.js';
import { isSplitfleetError } from '../../src/errors.js';
import { MAX_BUCKETS } from '../../src/protocol/keys.js';

const base = { job: 'orders-backfill', instance: 'pod-0' };

function problem(options: unknown): string {
  try {
    resolveConfig(options as ConfigOptions);
  } catch (e) {
    expect(isSplitfleetError(e, 'INVALID_CONFIG')).toBe(true);
    return (e as Error).message;
  }
  throw new Error('expected resolveConfig to throw');
}

describe('resolveConfig', () => {
  it('fills in the defaults of the knob table', () => {
    const c = resolveConfig(base);
    expect(c).toEqual({
      ...base,
      root: 'splitfleet',
      fingerprint: defaultFingerprint('splitfleet', 'orders-backfill'),
      leaseDurationMs: 30_000, opTimeoutMs: 10_000, maxInFlight: 8, prefetch: 8, maxAttempts: 4,
      rebalanceDelayMs: 20_000, drainDeadlineMs: 10_000, replanIntervalMs: 60_000, reconcileIntervalMs: 30_000,
      startTimeoutMs: 60_000, autoCommitMs: 1000, retryBackoff: { initialMs: 1000, maxMs: 300_000, factor: 2, jitter: 1 }, layout: 'packed',
    });
    expect(Object.isFrozen(c)).toBe(true);
  });

  it('takes autoCommitMs ≥ 1 and divideMinWeight ≥ 1 (absent: the job\'s share rule), and names the rule otherwise', () => {
    expect(resolveConfig({ ...base, autoCommitMs: 250 }).autoCommitMs).toBe(250);
    expect(() => resolveConfig({ ...base, autoCommitMs: 0 })).toThrow('autoCommitMs: must be an integer ≥ 1 (got 0)');
    expect(resolveConfig({ ...base, divideMinWeight: 5 }).divideMinWeight).toBe(5);
    expect(resolveConfig(base).divideMinWeight).toBeUndefined();
    expect(() => resolveConfig({ ...base, divideMinWeight: 0 })).toThrow('divideMinWeight: must be an integer ≥ 1');
    expect(() => resolveConfig({ ...base, divideMinWeight: 1.5 })).toThrow('divideMinWeight: must be an integer ≥ 1');
  });

  it('takes a prefetch depth ≥ 0, by default one per lane, and names the rule otherwise', () => {
    expect(resolveConfig({ ...base, maxInFlight: 3 }).prefetch).toBe(3);
    expect(resolveConfig({ ...base, maxInFlight: 3, prefetch: 0 }).prefetch).toBe(0);
    expect(resolveConfig({ ...base, prefetch: 40 }).prefetch).toBe(40);
    for (const bad of [-1, 1.5, Number.NaN]) {
      expect(() => resolveConfig({ ...base, prefetch: bad })).toThrow(`prefetch: must be an integer ≥ 0 (got ${bad})`);
    }
    expect(() => resolveConfig({ ...base, prefetch: '2' as unknown as number })).toThrow('prefetch: must be an integer ≥ 0 (got "2")');
    expect(() => resolveConfig({ ...base, maxInFlight: 2, prefetch: Number.MAX_SAFE_INTEGER })).toThrow('maxInFlight + prefetch (the assignment budget) must be a safe integer');
  });

  it('takes a layout of keys or packed, and names the rule otherwise', () => {
    expect(resolveConfig({ ...base, layout: 'packed' }).layout).toBe('packed');
    expect(() => resolveConfig({ ...base, layout: 'chunks' as 'packed' })).toThrow("layout: must be 'keys' or 'packed' (got \"chunks\")");
  });

  it('takes a packed job\'s bucket count as a power of two up to 65,536, and names the rule otherwise', () => {
    expect(resolveConfig({ ...base, layout: 'packed', buckets: 64 }).buckets).toBe(64);
    expect(resolveConfig({ ...base, layout: 'packed', buckets: 65536 }).buckets).toBe(65536);
    expect('buckets' in resolveConfig({ ...base, layout: 'packed' })).toBe(false);
    for (const bad of [0, 3, 1.5, 131072, -2]) {
      expect(() => resolveConfig({ ...base, layout: 'packed', buckets: bad })).toThrow(`buckets: must be a power of two from 1 to 65536 (got ${bad})`);
    }
    expect(() => resolveConfig({ ...base, layout: 'packed', buckets: '8' as unknown as number })).toThrow('buckets: must be a power of two from 1 to 65536 (got "8")');
    // The config's bound is the key layout's, both ways.
    expect(resolveConfig({ ...base, layout: 'packed', buckets: MAX_BUCKETS }).buckets).toBe(MAX_BUCKETS);
    expect(() => resolveConfig({ ...base, layout: 'packed', buckets: MAX_BUCKETS * 2 })).toThrow('buckets: must be');
    expect(() => resolveConfig({ ...base, layout: 'keys', buckets: 8 })).toThrow('buckets: applies to layout \'packed\' only (layout is "keys")');
  });

  it('keeps given values and treats undefined as absent', () => {
    const c = resolveConfig({ ...base, root: 'etl/prod', fingerprint: 's3://bucket/x', maxInFlight: 2,
      rebalanceDelayMs: undefined });
    expect(c.root).toBe('etl/prod');
    expect(c.fingerprint).toBe('s3://bucket/x');
    expect(c.maxInFlight).toBe(2);
    expect(c.rebalanceDelayMs).toBe(CONFIG_DEFAULTS.rebalanceDelayMs);
  });

  it('accepts a zero rebalance delay (reassign at once)', () => {
    expect(resolveConfig({ ...base, rebalanceDelayMs: 0 }).rebalanceDelayMs).toBe(0);
  });

  it('names the option and the rule for a negative value', () => {
    expect(problem({ ...base, rebalanceDelayMs: -5 })).toBe('rebalanceDelayMs: must be an integer ≥ 0 (got -5)');
  });

  it('refuses non-integers and non-numbers', () => {
    expect(problem({ ...base, maxInFlight: 1.5 })).toBe('maxInFlight: must be an integer ≥ 1 (got 1.5)');
    expect(problem({ ...base, maxAttempts: '4' })).toBe('maxAttempts: must be an integer ≥ 1 (got "4")');
    expect(problem({ ...base, opTimeoutMs: Number.NaN })).toBe('opTimeoutMs: must be an integer ≥ 1 (got NaN)');
  });

  it('refuses a zero lease, a sub-second lease and a fractional-second lease', () => {
    expect(problem({ ...base, leaseDurationMs: 0 })).toBe('leaseDurationMs: must be an integer ≥ 1000 (got 0)');
    expect(problem({ ...base, leaseDurationMs: 1500 })).toMatch(
      /^leaseDurationMs: must be a whole number of seconds, because etcd lease TTLs are seconds \(got 1500\)$/);
  });

  it('refuses opTimeoutMs at or above the lease', () => {
    expect(problem({ ...base, leaseDurationMs: 5000, opTimeoutMs: 5000, drainDeadlineMs: 5000 }))
      .toMatch(/^opTimeoutMs: must be below leaseDurationMs \(5000\).*\(got 5000\)$/);
    expect(problem({ ...base, opTimeoutMs: 0 })).toMatch(/^opTimeoutMs: must be an integer ≥ 1 \(got 0\)$/);
  });

  it('refuses a drain deadline below one store round trip, with the reason', () => {
    expect(problem({ ...base, opTimeoutMs: 10_000, drainDeadlineMs: 9_999 })).toBe(
      'drainDeadlineMs: must be ≥ opTimeoutMs (10000): a deadline below one store round trip would force every '
      + 'revocation before its final commit could land (got 9999)');
  });

  it('allows a drain deadline above the lease duration', () => {
    expect(resolveConfig({ ...base, drainDeadlineMs: 600_000 }).drainDeadlineMs).toBe(600_000);
  });

  it('refuses durations Node timers cannot honour', () => {
    expect(problem({ ...base, rebalanceDelayMs: 2 ** 31 })).toMatch(
      /^rebalanceDelayMs: must be at most 2147483647, because Node fires longer timers at once \(got 2147483648\)$/);
  });

  it('refuses zero intervals, maxInFlight and maxAttempts', () => {
    expect(problem({ ...base, maxInFlight: 0 })).toBe('maxInFlight: must be an integer ≥ 1 (got 0)');
    expect(problem({ ...base, maxAttempts: 0 })).toBe('maxAttempts: must be an integer ≥ 1 (got 0)');
    expect(problem({ ...base, replanIntervalMs: 0 })).toBe('replanIntervalMs: must be an integer ≥ 1 (got 0)');
    expect(problem({ ...base, reconcileIntervalMs: -1 })).toBe('reconcileIntervalMs: must be an integer ≥ 1 (got -1)');
    expect(problem({ ...base, startTimeoutMs: -1 })).toBe('startTimeoutMs: must be an integer ≥ 0 (got -1)');
  });

  it('refuses unknown options and suggests the intended one', () => {
    const message = problem({ ...base, leaseDuration: 30_000 });
    expect(message).toMatch(/^leaseDuration: unknown option \(did you mean leaseDurationMs\?\); known options are job, /);
  });

  it('requires job and instance and checks their charset', () => {
    expect(problem({ job: 'x' })).toBe('instance: is required');
    expect(problem({ ...base, job: 'a/b' })).toBe('job: must be 1 to 128 characters of [A-Za-z0-9._-] (got "a/b")');
    expect(problem({ ...base, instance: 'x'.repeat(129) })).toMatch(/^instance: must be 1 to 128 characters/);
    expect(problem({ ...base, instance: '' })).toMatch(/^instance: must be 1 to 128 characters/);
  });

  it('checks root and fingerprint', () => {
    expect(problem({ ...base, root: '/splitfleet' })).toMatch(/^root: must be '\/'-separated segments/);
    expect(problem({ ...base, root: 'a//b' })).toMatch(/^root: /);
    expect(problem({ ...base, fingerprint: '' })).toMatch(/^fingerprint: must be a non-empty string/);
    expect(problem({ ...base, fingerprint: 'a\nb' })).toMatch(/^fingerprint: .*no control characters/);
  });

  it('reports every broken rule at once', () => {
    const message = problem({ ...base, maxInFlight: 0, maxAttempts: -1 });
    expect(message).toMatch(/^2 invalid options: /);
    expect(message).toContain('maxInFlight: must be an integer ≥ 1 (got 0)');
    expect(message).toContain('maxAttempts: must be an integer ≥ 1 (got -1)');
  });

  it('refuses something that is not an options object', () => {
    expect(problem(null)).toBe('options: must be an object (got null)');
    expect(problem([])).toMatch(/^options: must be an object/);
  });

  test.prop([fc.integer({ min: 1, max: 600 }), fc.integer({ min: 1 }), fc.nat()])(
    'accepted timings satisfy 0 < opTimeoutMs < leaseDurationMs and opTimeoutMs ≤ drainDeadlineMs',
    (leaseS, op, drain) => {
      const options = { ...base, leaseDurationMs: leaseS * 1000, opTimeoutMs: op, drainDeadlineMs: drain };
      let c;
      try { c = resolveConfig(options); } catch (e) {
        expect(isSplitfleetError(e, 'INVALID_CONFIG')).toBe(true);
        return;
      }
      expect(c.opTimeoutMs).toBeGreaterThan(0);
      expect(c.opTimeoutMs).toBeLessThan(c.leaseDurationMs);
      expect(c.drainDeadlineMs).toBeGreaterThanOrEqual(c.opTimeoutMs);
    },
  );
});
