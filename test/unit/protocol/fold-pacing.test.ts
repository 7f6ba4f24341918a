import { describe, expect, it } from 'vitest';
import { FOLD_WAIT_MS, foldDelay } from '../../../src/protocol/fold-pacing.js';

describe('foldDelay (decision 0076)', () => {
  const busy = { candidates: 3, fullBatch: 30, quiet: false, waitedMs: 0 };

  it('has nothing to do without candidates, quiet or not', () => {
    expect(foldDelay({ ...busy, candidates: 0 })).toBeUndefined();
    expect(foldDelay({ ...busy, candidates: 0, quiet: true, waitedMs: FOLD_WAIT_MS * 5 })).toBeUndefined();
  });

  it('holds a part batch of a busy job until the oldest candidate has waited FOLD_WAIT_MS', () => {
    expect(foldDelay(busy)).toBe(FOLD_WAIT_MS);
    expect(foldDelay({ ...busy, waitedMs: 400 })).toBe(FOLD_WAIT_MS - 400);
    expect(foldDelay({ ...busy, waitedMs: FOLD_WAIT_MS })).toBe(0);
  });

  it('folds a full batch at once', () => {
    expect(foldDelay({ ...busy, candidates: 30 })).toBe(0);
    expect(foldDelay({ ...busy, candidates: 31 })).toBe(0);
    expect(foldDelay({ ...busy, candidates: 29 })).toBeGreaterThan(0);
  });

  it('folds at once when no split is held (a finished or paused job)', () => {
    expect(foldDelay({ ...busy, quiet: true })).toBe(0);
  });
});
