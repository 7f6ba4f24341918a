/**
 * The job's event history (decision 0070): the leader keeps the last notable
 * events in its summary, so a dashboard opened after the fact finds what
 * happened (a member joining, the leadership, a failure, a quarantine, a
 * pause and a resume, the verdict), and a dashboard open all along shows each
 * event once although both its watch and the history tell it.
 */
import { afterEach, describe, expect, test } from 'vitest';
import { startCoordinator, type Coordinator } from '../../src/coordinator/coordinator.js';
import { silentLogger } from '../../src/coordinator/log.js';
import type { SplitHandle } from '../../src/coordinator/types.js';
import { LiveJob } from '../../src/inspect/live.js';
import { pauseJob, resumeJob } from '../../src/operator/control.js';
import { jobPrefix, summaryKey } from '../../src/protocol/keys.js';
import { readHistory } from '../../src/protocol/job-history.js';
import { decodeRecord } from '../../src/protocol/records.js';
import { MemoryStore } from '../../src/store/memory.js';
import { waitUntil } from '../support/wait.js';

const fast = { leaseDurationMs: 2000, opTimeoutMs: 500, rebalanceDelayMs: 0, drainDeadlineMs: 1000, reconcileIntervalMs: 1000 };
const P = jobPrefix('splitfleet', 'hist');

let fleet: Coordinator[] = [];
let store: MemoryStore;
afterEach(async () => {
  await Promise.all(fleet.map((c) => c.close().catch(() => undefined)));
  fleet = [];
  await store?.close();
});

/** The summary's history as stored now. */
async function storedHistory() {
  const kv = await store.get(summaryKey(P));
  if (!kv) return [];
  const fp = (JSON.parse((await store.get(`${P}plan`))!.value) as { fp: string }).fp;
  return readHistory(decodeRecord('summary', kv.key, kv.value, fp).history);
}

describe('the event history', () => {
  test('a dashboard opened after the job finds its earlier events, and one open all along tells each once', async () => {
    store = new MemoryStore();
    let release!: () => void;
    const released = new Promise<void>((r) => (release = r));
    let failedOnce = false;
    // s-2 fails once and s-3 for good, at once (a lane drained by the pause below must not swallow them); the rest wait.
    const handler = async (split: SplitHandle) => {
      if (split.id === 's-2' && !failedOnce) {
        failedOnce = true;
        await split.fail('flaky once', { retryInMs: 10 });
        return;
      }
      if (split.id === 's-3') {
        await split.fail('cannot parse row 7', { permanent: true });
        return;
      }
      await released;
      await split.complete(null);
    };
    const planner = () => ({ final: true, splits: Array.from({ length: 6 }, (_, i) => ({ id: `s-${i}`, weight: 1, descriptor: null })) });
    const start = (instance: string) => startCoordinator({ store, job: 'hist', instance, maxInFlight: 2, planner, handler, logger: silentLogger, ...fast });
    fleet.push(await start('w-0'));
    // The leader is following its job (its first summary is written): w-1's arrival comes by its watch.
    await waitUntil('the first summary', async () => (await store.get(summaryKey(P))) !== undefined, { timeoutMs: 10_000 });
    const watching = new LiveJob({ store, job: 'hist', refreshMs: 1 });
    await watching.start();
    fleet.push(await start('w-1'));
    await waitUntil('w-1 is in the history', async () => (await storedHistory()).some((e) => e.kind === 'join' && e.instance === 'w-1'), { timeoutMs: 10_000 });
    await pauseJob({ store, job: 'hist' });
    await waitUntil('the pause is in the history', async () => (await storedHistory()).some((e) => e.kind === 'paused'), { timeoutMs: 10_000 });
    await resumeJob({ store, job: 'hist' });
    release();
    expect(await Promise.all(fleet.map((c) => c.done))).toEqual(['stalled', 'stalled']);
    await Promise.all(fleet.map((c) => c.close()));
    fleet = [];

    // After the fact: nothing was watching, yet the log opens on what happened.
    const late = new LiveJob({ store, job: 'hist', refreshMs: 1 });
    await late.start();
    const told = late.view().events;
    const texts = told.map((e) => e.text);
    expect(told.every((e) => e.told === 'history')).toBe(true);
    expect(told.find((e) => e.kind === 'leader')).toMatchObject({ instance: 'w-0', previous: null });
    expect(texts).toContain('w-1 joined (2 lanes)');
    expect(texts).toContain('paused by an operator (no new claims)');
    expect(texts).toContain('resumed by an operator');
    expect(told.find((e) => e.kind === 'failed')).toMatchObject({ split: 's-2', attempts: 1, reason: 'flaky once' });
    expect(told.find((e) => e.kind === 'quarantine')).toMatchObject({ split: 's-3', reason: 'cannot parse row 7' });
    expect(told[told.length - 1]).toMatchObject({ kind: 'verdict', verdict: 'stalled' });
    // In the order the store saw them.
    expect(told.map((e) => e.rev)).toEqual([...told.map((e) => e.rev)].sort((a, b) => a - b));
    await late.close();

    // Open all along: its watch told these too; each is one line.
    await waitUntil('the watching dashboard has the verdict', () => watching.view().events.some((e) => e.kind === 'verdict'));
    const lines = watching.view().events.filter((e) => e.kind !== 'move' && e.kind !== 'claim' && !e.kind.startsWith('revocation'));
    const ids = lines.map((e) => `${e.rev} ${e.text}`);
    expect(new Set(ids).size).toBe(ids.length);
    expect(ids.filter((t) => t.endsWith('w-1 joined (2 lanes)'))).toHaveLength(1);
    expect(ids.filter((t) => t.includes('s-3 quarantined'))).toHaveLength(1);
    expect(lines.some((e) => e.told === 'watch')).toBe(true);
    await watching.close();
  }, 30_000);
});
