/**
 * The worker's reconciliation (coordinator/worker/worker.ts, `reconcile`),
 * with its own session and view on a MemoryStore and a VirtualClock, the
 * assignment record written by hand as the leader would: a record naming a
 * split → the split is claimed and its handler runs (the heaviest first when
 * lanes are short); a split no longer named → its lane drains and releases;
 * no record → everything held stays held and nothing is claimed.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { SplitHandle } from '../../../../src/coordinator/types.js';
import { Worker } from '../../../../src/coordinator/worker/worker.js';
import { assignKey } from '../../../../src/protocol/keys.js';
import { assign, seedSplit, stored, workerParts, world, type World } from '../../../support/held-split.js';
import { stepUntil } from '../../../support/virtual-time.js';

let closing: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of closing) await c();
  closing = [];
});

/** A worker whose handler runs until its drain is asked for, then returns (a cooperative drain). */
async function worker(w: World, splits: Record<string, number>) {
  for (const [id, weight] of Object.entries(splits)) await seedSplit(w, id, weight);
  const { session, view, metrics, parts, close } = await workerParts(w);
  const handles: SplitHandle[] = [];
  const events: [string, Record<string, unknown>][] = [];
  const wk = new Worker({
    store: w.store, config: w.config, clock: w.clock, view, session, metrics, log: parts.log, random: parts.random,
    unexpected: parts.unexpected,
    hooks: { emit: (event, body) => events.push([event, body as Record<string, unknown>]) },
    handler: async (h) => {
      handles.push(h);
      await new Promise<void>((resolve) => h.drainSignal.addEventListener('abort', () => resolve()));
    },
  });
  view.onChange(() => wk.schedule());
  closing.push(async () => {
    wk.abortAll();
    await close();
  });
  const settled = (check: () => boolean) => stepUntil(w.clock, check, 2000, 10);
  return { wk, handles, events, settled };
}

describe('Worker.reconcile', () => {
  it('no assignment record: nothing is claimed', async () => {
    const w = world();
    const { wk, handles, settled } = await worker(w, { a: 1 });
    wk.reconcile();
    expect(await settled(() => handles.length > 0)).toBe(false);
    expect(wk.lanes.size).toBe(0);
    expect((await stored(w, 'a')).record).toMatchObject({ owner: '', epoch: 0 });
  });

  it('a record naming a split: it is claimed and its handler runs; a split not named is left alone', async () => {
    const w = world();
    const { wk, handles, settled } = await worker(w, { a: 1, b: 1 });
    await assign(w, ['a']);
    wk.reconcile();
    expect(await settled(() => handles.length === 1)).toBe(true);
    expect(handles[0]!.id).toBe('a');
    expect([...wk.lanes.keys()]).toEqual(['a']);
    expect((await stored(w, 'a')).record).toMatchObject({ owner: 'w0', epoch: 1 });
    expect((await stored(w, 'b')).record.owner).toBe('');
  });

  it('lanes short of the named splits: the heaviest is claimed first', async () => {
    const w = world({ maxInFlight: 1, prefetch: 1 });
    const { wk, handles, settled } = await worker(w, { light: 1, heavy: 5 });
    await assign(w, ['light', 'heavy']);
    wk.reconcile();
    expect(await settled(() => handles.length === 1)).toBe(true);
    expect(handles.map((h) => h.id)).toEqual(['heavy']);
    expect(await settled(() => handles.length > 1)).toBe(false); // one lane: the light one waits
  });

  it('a split no longer named: its lane drains, and the handler\'s return releases it', async () => {
    const w = world();
    const { wk, handles, events, settled } = await worker(w, { a: 1 });
    await assign(w, ['a']);
    wk.reconcile();
    expect(await settled(() => handles.length === 1)).toBe(true);
    await assign(w, []);
    expect(await settled(() => wk.lanes.size === 0)).toBe(true);
    expect(handles[0]!.drainSignal.aborted).toBe(true);
    const s = await stored(w, 'a');
    expect(s.record.owner).toBe('');
    expect(s.lease).toBeUndefined();
    expect(events.map(([e, b]) => [e, b.outcome ?? b.cause ?? b.reason])).toEqual([
      ['split-claimed', undefined],
      ['drain-started', 'revoked'],
      ['split-released', 'drained'],
      ['drain-ended', 'cooperative'],
    ]);
  });

  it('the record gone: what is held stays held (no drain), and nothing more is claimed', async () => {
    const w = world();
    const { wk, handles, settled } = await worker(w, { a: 1, b: 1 });
    await assign(w, ['a']);
    wk.reconcile();
    expect(await settled(() => handles.length === 1)).toBe(true);
    await w.store.delete(assignKey(w.prefix, w.config.instance));
    wk.reconcile();
    expect(await settled(() => handles[0]!.drainSignal.aborted || handles.length > 1)).toBe(false);
    expect([...wk.lanes.keys()]).toEqual(['a']);
    expect(wk.lanes.get('a')!.state.kind).toBe('running');
  });
});
