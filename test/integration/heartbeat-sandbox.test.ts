/**
 * The heartbeat timeout with a sandboxed handler (decisions 0033, 0014), on
 * MemoryStore and the system clock: a handler spinning forever on its thread
 * without a heartbeat is timed out, its thread terminated, its split failed
 * once (kind 'timeout') and completed by a later lane; a handler that spins
 * without yielding but heartbeats every round (forwarded over the port) is
 * never timed out. The threads run the compiled dist/ (`npm run build` first).
 */
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, afterEach, describe, expect, test } from 'vitest';
import { startCoordinator, type Coordinator } from '../../src/coordinator/coordinator.js';
import type { CoordinatorEventMap } from '../../src/coordinator/events.js';
import { silentLogger } from '../../src/coordinator/log.js';
import { defaultSandboxThreadFile, sandboxedHandler, type SandboxedHandler } from '../../src/coordinator/sandbox/sandbox.js';
import type { PlannedSplit } from '../../src/coordinator/types.js';
import { jobPrefix } from '../../src/protocol/keys.js';
import { MemoryStore } from '../../src/store/memory.js';
import { readJob } from '../support/job-state.js';
import { sleep, waitUntil, within } from '../support/wait.js';

const MODULE = fileURLToPath(new URL('../fixtures/sandbox-heartbeat.mjs', import.meta.url));
if (!existsSync(defaultSandboxThreadFile())) {
  throw new Error(`${defaultSandboxThreadFile()} is missing: the sandbox threads run the compiled JS; run 'npm run build' first`);
}

const OPTIONS = { leaseDurationMs: 2000, opTimeoutMs: 500, rebalanceDelayMs: 0, drainDeadlineMs: 1000, reconcileIntervalMs: 1000, heartbeatTimeoutMs: 600 };
const tmp = mkdtempSync(join(tmpdir(), 'splitfleet-heartbeat-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

const open: { c?: Coordinator; s: SandboxedHandler; store: MemoryStore }[] = [];
afterEach(async () => {
  for (const o of open.splice(0)) {
    await o.c?.close().catch(() => undefined);
    await o.s.close();
    await o.store.close();
  }
});

type Failed = CoordinatorEventMap['split-failed'];

async function run(job: string, exportName: string, split: PlannedSplit): Promise<{ c: Coordinator; store: MemoryStore; failed: Failed[] }> {
  const store = new MemoryStore();
  const s = sandboxedHandler(MODULE, { exportName, threads: 1 });
  const o: (typeof open)[number] = { s, store };
  open.push(o);
  const failed: Failed[] = [];
  o.c = await startCoordinator({
    store, job, instance: 'w0', maxInFlight: 1, logger: silentLogger, ...OPTIONS,
    planner: () => ({ splits: [split], final: true }), handler: s,
    on: { 'split-failed': (e) => { failed.push(e); } },
  });
  return { c: o.c, store, failed };
}

const read = (path: string): string => (existsSync(path) ? readFileSync(path, 'utf8') : '');

describe('heartbeat timeout, sandboxed', () => {
  test('a thread spinning without a heartbeat is timed out and terminated; a later lane completes the split', async () => {
    const beat = join(tmp, 'beat-hangs');
    const { c, store, failed } = await run('hb-sandbox-hang', 'hangs', { id: 's-0', weight: 1, descriptor: { beat } });
    await waitUntil('the spinning handler to write its counter', () => read(beat) !== '' || undefined);
    expect(await within('the verdict', c.done, 30_000)).toBe('complete');
    expect(failed).toHaveLength(1);
    expect(failed[0]).toMatchObject({ id: 's-0', epoch: 1, attempts: 1, kind: 'timeout' });
    const s = (await readJob(store, jobPrefix('splitfleet', 'hb-sandbox-hang'))).splits.get('s-0')!;
    expect(s).toMatchObject({ status: 'completed', epoch: 2, attempts: 1, progress: { epoch: 2 } });
    // The first thread was terminated: its counter no longer moves.
    const after = read(beat);
    await sleep(500); // ~25 writes, had the thread survived
    expect(read(beat)).toBe(after);
  });

  test('a thread that never yields but heartbeats every round is not timed out', async () => {
    // 30 rounds of 100 ms: five timeouts long, one heartbeat per round.
    const { c, store, failed } = await run('hb-sandbox-beats', 'beats', { id: 's-0', weight: 1, descriptor: { rounds: 30, spinMs: 100 } });
    expect(await within('the verdict', c.done, 30_000)).toBe('complete');
    expect(failed).toEqual([]);
    const s = (await readJob(store, jobPrefix('splitfleet', 'hb-sandbox-beats'))).splits.get('s-0')!;
    expect(s).toMatchObject({ status: 'completed', epoch: 1, attempts: 0, progress: { rounds: 30 } });
  });
});
