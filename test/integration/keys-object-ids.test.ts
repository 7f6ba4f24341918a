/**
 * Object-store keys as split ids, end to end on the MemoryStore: a planner
 * whose ids hold '/', spaces, '%', non-Latin text and a newline runs to
 * completion; the handler, the events and the records see the raw ids, and
 * the store holds them encoded (docs/keys.md, "Ids").
 */
import { describe, expect, test } from 'vitest';
import { startCoordinator, type Coordinator } from '../../src/coordinator/coordinator.js';
import { silentLogger } from '../../src/coordinator/log.js';
import type { SplitHandle } from '../../src/coordinator/types.js';
import { jobPrefix, splitKey } from '../../src/protocol/keys.js';
import { readJobRecords } from '../../src/inspect/report.js';
import { MemoryStore } from '../../src/store/memory.js';

const fast = { leaseDurationMs: 2000, opTimeoutMs: 500, rebalanceDelayMs: 0, drainDeadlineMs: 1000, reconcileIntervalMs: 1000 };

const IDS = ['logs/2026/01/a b.gz', 'a%2Fb', '日本/x', 'line\nbreak.txt', '/leading/and/trailing/', 'plain-id'];

describe('object-store keys as split ids', () => {
  test('a job whose ids are object keys completes; handlers, events and records see the raw ids', async () => {
    const store = new MemoryStore();
    const handled = new Map<string, unknown>();
    const events: { claimed: string[]; completed: string[] } = { claimed: [], completed: [] };
    const planner = () => ({ final: true, splits: IDS.map((id) => ({ id, weight: 10, descriptor: { object: id } })) });
    const handler = async (split: SplitHandle) => {
      handled.set(split.id, split.descriptor);
      await split.commit({ at: split.id });
      await split.complete({ at: split.id });
    };
    const fleet: Coordinator[] = [];
    for (let i = 0; i < 2; i++) {
      fleet.push(await startCoordinator({
        store, job: 'objects', instance: `w-${i}`, maxInFlight: 2, planner, handler, logger: silentLogger, ...fast,
        on: {
          'split-claimed': (e) => void events.claimed.push(e.id),
          'split-completed': (e) => void events.completed.push(e.id),
        },
      }));
    }
    expect(await Promise.all(fleet.map((c) => c.done))).toEqual(['complete', 'complete']);
    expect(new Map([...handled].sort())).toEqual(new Map(IDS.map((id) => [id, { object: id }] as const).sort()));
    expect(new Set(events.claimed)).toEqual(new Set(IDS));
    expect([...events.completed].sort()).toEqual([...IDS].sort());

    const prefix = jobPrefix('splitfleet', 'objects');
    const { kvs } = await store.listAll(prefix);
    const keys = kvs.map((kv) => kv.key);
    expect(keys).toContain('splitfleet/objects/split.logs%2F2026%2F01%2Fa b.gz');
    expect(keys).toContain('splitfleet/objects/split.a%252Fb');
    expect(keys).toContain('splitfleet/objects/progress.line%0Abreak.txt');
    // Every key stays at the job's level: an id's '/' never opens a nested prefix.
    for (const key of keys) expect(key.slice(prefix.length)).not.toContain('/');
    const { records, problems } = readJobRecords(prefix, kvs);
    expect(problems).toEqual([]);
    expect([...records.splits.keys()].sort()).toEqual([...IDS].sort());
    expect(records.splits.get('logs/2026/01/a b.gz')?.status).toBe('completed');
    expect(kvs.find((kv) => kv.key === splitKey(prefix, '日本/x'))?.value).toContain('"id":"日本/x"');
    await store.close();
  });
});
