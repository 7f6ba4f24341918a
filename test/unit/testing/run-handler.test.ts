/**
 * splitfleet/testing (issue 31 item 4): the fake handle keeps a lane's rules
 * (ending writes end it, later writes are refused, decline forces, the signal
 * aborts at the end), and runHandler drains or loses the split at a given
 * commit and reports what the coordinator would make of the handler's end.
 */
import { describe, expect, it } from 'vitest';
import { SplitfleetError } from '../../../src/errors.js';
import type { SplitHandle } from '../../../src/coordinator/types.js';
import { fakeSplitHandle, runHandler } from '../../../src/testing/index.js';

type Range = { start: number; end: number };
type Sum = { next: number; sum: number };

/** The README's handler shape: resume, commit every step, honour drains and aborts, complete. */
async function summing(split: SplitHandle<Range, Sum>): Promise<void> {
  let { next, sum } = split.progress ?? { next: split.descriptor.start, sum: 0 };
  while (next < split.descriptor.end) {
    if (split.signal.aborted) return;
    if (split.drainSignal.aborted) {
      await split.commit({ next, sum });
      return;
    }
    sum += next;
    next++;
    await split.commit({ next, sum });
  }
  await split.complete({ next, sum });
}

describe('runHandler', () => {
  it('records every commit and the completion', async () => {
    const run = await runHandler(summing, { descriptor: { start: 0, end: 4 } });
    expect(run.outcome).toEqual({ kind: 'completed', progress: { next: 4, sum: 6 } });
    expect(run.commits).toEqual([{ next: 1, sum: 0 }, { next: 2, sum: 1 }, { next: 3, sum: 3 }, { next: 4, sum: 6 }]);
    expect(run.committed).toEqual({ next: 4, sum: 6 });
    expect(run.drained).toBe(false);
  });

  it('resumes from the given progress', async () => {
    const run = await runHandler(summing, { descriptor: { start: 0, end: 4 }, progress: { next: 3, sum: 3 } });
    expect(run.commits).toEqual([{ next: 4, sum: 6 }]);
    expect(run.outcome.kind).toBe('completed');
  });

  it('drains after the given commit: one final commit, then the handler returns (released at it)', async () => {
    const run = await runHandler(summing, { descriptor: { start: 0, end: 100 }, drainAt: 2 });
    expect(run.drained).toBe(true);
    expect(run.outcome).toEqual({ kind: 'returned' });
    expect(run.commits).toHaveLength(3);
    expect(run.commitsAfterDrain).toBe(1);
    expect(run.committed).toEqual({ next: 2, sum: 1 });
    expect(run.events.map((e) => e.kind)).toEqual(['commit', 'commit', 'drain', 'commit']);
  });

  it('drains before the handler starts with drainAt: 0, and on a condition of the progress', async () => {
    const first = await runHandler(summing, { descriptor: { start: 0, end: 100 }, drainAt: 0 });
    expect(first.commits).toEqual([{ next: 0, sum: 0 }]);
    const byProgress = await runHandler(summing, { descriptor: { start: 0, end: 100 }, drainAt: (_n, p) => p.sum >= 10 });
    expect(byProgress.committed).toEqual({ next: 5, sum: 10 });
    expect(byProgress.commitsAfterDrain).toBe(1);
  });

  it('fences out the given commit: it rejects with LEASE_LOST, nothing lands, the signal aborts', async () => {
    let caught: unknown;
    const run = await runHandler<Range, Sum>(async (split) => {
      try {
        await summing(split);
      } catch (e) {
        caught = e;
        throw e;
      }
    }, { descriptor: { start: 0, end: 100 }, abortAt: 3 });
    expect(caught).toMatchObject({ code: 'LEASE_LOST' });
    expect(run.commits).toHaveLength(2);
    expect(run.outcome).toMatchObject({ kind: 'aborted', reason: expect.stringContaining('commit 3') });
    expect(run.events.at(-1)).toMatchObject({ kind: 'refused', write: 'commit' });
  });

  it('forces a drain the handler does not finish within drainDeadlineMs', async () => {
    const run = await runHandler<Range, Sum>(async (split) => {
      await split.commit({ next: 1, sum: 0 });
      // Ignores the drain: works on until the signal aborts.
      while (!split.signal.aborted) await new Promise((r) => setTimeout(r, 1));
    }, { descriptor: { start: 0, end: 1 }, drainAt: 1, drainDeadlineMs: 20 });
    expect(run.outcome).toEqual({ kind: 'forced' });
    expect(run.committed).toEqual({ next: 1, sum: 0 });
  });

  it('reports a throw as a failure, and a rethrown retryable store error as retryable (a release without an attempt)', async () => {
    const boom = await runHandler(async () => {
      throw new Error('corrupt input');
    }, { descriptor: null });
    expect(boom.outcome).toMatchObject({ kind: 'threw', retryable: false, error: expect.objectContaining({ message: 'corrupt input' }) });
    const outage = await runHandler(async () => {
      throw new SplitfleetError('STORE_UNAVAILABLE', 'etcd down', { retryable: true });
    }, { descriptor: null });
    expect(outage.outcome).toMatchObject({ kind: 'threw', retryable: true });
  });

  it('refuses bad options with the field named', async () => {
    await expect(runHandler(summing, { descriptor: { start: 0, end: 1 }, drainAt: -1 })).rejects.toMatchObject({ code: 'INVALID_CONFIG', message: expect.stringContaining('drainAt') });
    await expect(runHandler(summing, { descriptor: { start: 0, end: 1 }, abortAt: 1.5 })).rejects.toMatchObject({ code: 'INVALID_CONFIG', message: expect.stringContaining('abortAt') });
    await expect(runHandler(summing, { descriptor: { start: 0, end: 1 }, drainDeadlineMs: -5 })).rejects.toMatchObject({ code: 'INVALID_CONFIG', message: expect.stringContaining('drainDeadlineMs') });
    await expect(runHandler(summing, {} as never)).rejects.toMatchObject({ code: 'INVALID_CONFIG', message: expect.stringContaining('descriptor') });
  });
});

describe('fakeSplitHandle', () => {
  it('has every member of SplitHandle, with the split it was given', () => {
    const { handle } = fakeSplitHandle({ descriptor: { a: 1 }, id: 'x', weight: 7, epoch: 3, attempts: 2, progress: { at: 5 } });
    const typed: SplitHandle<{ a: number }, { at: number }> = handle; // compiles only if no member is missing
    expect(typed).toMatchObject({ id: 'x', weight: 7, epoch: 3, attempts: 2, descriptor: { a: 1 }, progress: { at: 5 } });
    for (const m of ['commit', 'complete', 'fail', 'release', 'decline', 'heartbeat'] as const) expect(typeof handle[m]).toBe('function');
    expect(handle.signal.aborted).toBe(false);
    expect(handle.drainSignal.aborted).toBe(false);
  });

  it('ends the lane on complete, fail or release: the signal aborts and every later write is refused', async () => {
    for (const ending of ['complete', 'fail', 'release'] as const) {
      const f = fakeSplitHandle<null, number>({ descriptor: null });
      if (ending === 'fail') await f.handle.fail('bad row', { permanent: true });
      else await f.handle[ending](1);
      expect(f.handle.signal.aborted).toBe(true);
      await expect(f.handle.commit(2)).rejects.toMatchObject({ code: 'LEASE_LOST' });
      await expect(f.handle.complete(2)).rejects.toMatchObject({ code: 'LEASE_LOST' });
      expect(f.commits).toEqual([]);
      expect(f.events.filter((e) => e.kind === 'refused')).toHaveLength(2);
    }
    const failed = fakeSplitHandle({ descriptor: null });
    await failed.handle.fail('bad row', { permanent: true });
    expect(failed.ended).toEqual({ kind: 'failed', reason: 'bad row', options: { permanent: true } });
  });

  it('declines only a drain, which forces the release at once', async () => {
    const f = fakeSplitHandle({ descriptor: null });
    f.handle.decline(); // not draining: nothing
    expect(f.ended).toBeUndefined();
    f.drain();
    expect(f.handle.drainSignal.aborted).toBe(true);
    f.handle.decline();
    expect(f.ended).toEqual({ kind: 'declined' });
    expect(f.handle.signal.aborted).toBe(true);
  });

  it('records heartbeats until the signal aborts, and keeps a copy of each commit', async () => {
    const f = fakeSplitHandle<null, { rows: number[] }>({ descriptor: null });
    f.handle.heartbeat({ row: 1 });
    const progress = { rows: [1] };
    await f.handle.commit(progress);
    progress.rows.push(2); // the handler's object changes after the commit: the commit does not
    expect(f.committed).toEqual({ rows: [1] });
    f.abort('lost');
    f.handle.heartbeat({ row: 2 });
    expect(f.events.filter((e) => e.kind === 'heartbeat')).toEqual([{ kind: 'heartbeat', details: { row: 1 } }]);
    expect(f.ended).toEqual({ kind: 'aborted', reason: 'lost' });
  });
});
