/**
 * The heartbeat timeout's pure rule (protocol/heartbeat.ts) and its option's
 * validation (config.ts): decision 0033.
 */
import { describe, expect, it } from 'vitest';
import { resolveConfig, type ConfigOptions } from '../../../src/config.js';
import { isSplitfleetError } from '../../../src/errors.js';
import { heartbeatVerdict, isTimeoutReason, timeoutReason, timeoutReportAt } from '../../../src/protocol/heartbeat.js';

const at = (over: Partial<Parameters<typeof heartbeatVerdict>[0]>) =>
  heartbeatVerdict({ timeoutMs: 1000, lastActivityAt: 5000, now: 5000, writing: false, running: true, ...over });

describe('heartbeatVerdict', () => {
  it('waits until a full timeout after the last activity, then times out', () => {
    expect(at({ now: 5000 })).toEqual({ kind: 'wait', at: 6000 });
    expect(at({ now: 5999 })).toEqual({ kind: 'wait', at: 6000 });
    expect(at({ now: 6000 })).toEqual({ kind: 'timeout', silentMs: 1000 });
    expect(at({ now: 9000 })).toEqual({ kind: 'timeout', silentMs: 4000 });
  });

  it('is off without a timeout, and for a lane that is not running (draining: its drain deadline bounds it)', () => {
    expect(at({ timeoutMs: undefined, now: 1e9 })).toEqual({ kind: 'off' });
    expect(at({ running: false, now: 1e9 })).toEqual({ kind: 'off' });
  });

  it('never times out while a handle write is in flight: it looks again a timeout later', () => {
    expect(at({ writing: true, now: 9000 })).toEqual({ kind: 'wait', at: 10_000 });
  });

  it('reports at the drain deadline after the abort, with a reason that says timeout', () => {
    expect(timeoutReportAt(6000, 1500)).toBe(7500);
    const reason = timeoutReason(1200, 1000);
    expect(reason).toBe('timeout: the handler neither committed nor heartbeated for 1200 ms (heartbeatTimeoutMs 1000)');
    expect(isTimeoutReason(reason)).toBe(true);
    expect(isTimeoutReason('boom')).toBe(false);
  });
});

describe('heartbeatTimeoutMs (resolveConfig)', () => {
  const base = { job: 'j', instance: 'i' };
  const problem = (options: unknown): string => {
    try {
      resolveConfig(options as ConfigOptions);
    } catch (e) {
      expect(isSplitfleetError(e, 'INVALID_CONFIG')).toBe(true);
      return (e as Error).message;
    }
    throw new Error('expected resolveConfig to throw');
  };

  it('is off by default (absent from the config), and kept when given', () => {
    expect('heartbeatTimeoutMs' in resolveConfig(base)).toBe(false);
    expect(resolveConfig({ ...base, heartbeatTimeoutMs: 30_000 }).heartbeatTimeoutMs).toBe(30_000);
    expect(resolveConfig({ ...base, heartbeatTimeoutMs: undefined }).heartbeatTimeoutMs).toBeUndefined();
  });

  it('names the field and the rule for a bad value', () => {
    expect(problem({ ...base, heartbeatTimeoutMs: 0 })).toBe('heartbeatTimeoutMs: must be an integer ≥ 1 (ms), or left out for no timeout (got 0)');
    expect(problem({ ...base, heartbeatTimeoutMs: 1.5 })).toBe('heartbeatTimeoutMs: must be an integer ≥ 1 (ms), or left out for no timeout (got 1.5)');
    expect(problem({ ...base, heartbeatTimeoutMs: '5s' })).toBe('heartbeatTimeoutMs: must be an integer ≥ 1 (ms), or left out for no timeout (got "5s")');
    expect(problem({ ...base, heartbeatTimeoutMs: 2 ** 31 })).toMatch(/^heartbeatTimeoutMs: must be at most 2147483647, because Node fires longer timers at once/);
  });

  it('refuses a timeout below one store round trip (opTimeoutMs)', () => {
    expect(problem({ ...base, opTimeoutMs: 2000, heartbeatTimeoutMs: 1999 })).toBe(
      'heartbeatTimeoutMs: must be ≥ opTimeoutMs (2000): a handler waiting on one store round trip (its own commit, its source) is not hung (got 1999)');
    expect(resolveConfig({ ...base, opTimeoutMs: 2000, heartbeatTimeoutMs: 2000 }).heartbeatTimeoutMs).toBe(2000);
  });
});
