/**
 * A rolling upgrade on a real etcd: two members of today's build beside two
 * of a "newer build" whose every record carries a newer minor version and an
 * optional field today's build does not know. Through a full job with one
 * newer member SIGKILLed and the other stopped, so that today's build
 * finishes what the newer one started: nobody fails on the other's records,
 * every unit is processed, and every record today's build rewrote from one
 * the newer build wrote still carries the newer fields.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defaultFingerprint } from '../../src/config.js';
import { jobPrefix } from '../../src/protocol/keys.js';
import { decodeRecord, fingerprintHash } from '../../src/protocol/records.js';
import { EtcdStore } from '../../src/store/etcd/etcd.js';
import { fleetProcessScript, killAllFleetMembers, spawnFleetMember, type FleetMember } from '../support/fleet.js';
import { waitUntil } from '../support/wait.js';
import { startEtcd, type EtcdHandle } from '../support/etcd.js';

let etcd: EtcdHandle;
beforeAll(async () => {
  fleetProcessScript(); // loud failure when dist/ is missing
  etcd = await startEtcd();
});
afterAll(async () => {
  await killAllFleetMembers();
  await etcd?.stop();
});

const NEWER = { minor: 1, zone: 'eu-west-1' };

describe('a rolling upgrade across record versions (real etcd)', () => {
  it('today\'s build and a newer minor build run one job through a kill; nothing is lost and the newer fields survive rewrites', async () => {
    const job = `mixed-${Date.now().toString(36)}`;
    const prefix = jobPrefix('splitfleet', job);
    const fp = fingerprintHash(defaultFingerprint('splitfleet', job));
    const SPLITS = 24;
    const base = {
      // Splits of 1–2 s: the newer build still holds some when it is killed and stopped, so today's
      // build completes splits the newer one wrote (a faster job could finish them all first).
      // The keys layout: the records each build rewrote are read at the end (a packed job folds them away).
      endpoint: etcd.endpoint, job, splits: SPLITS, seed: 7, maxInFlight: 3, unitMs: 50, commitEvery: 3, minUnits: 20, maxUnits: 40, layout: 'keys' as const,
      config: { leaseDurationMs: 3000, opTimeoutMs: 1000, rebalanceDelayMs: 0, drainDeadlineMs: 1000, reconcileIntervalMs: 2000 },
    };
    const newer = [spawnFleetMember({ ...base, instance: 'new-0', recordExtras: NEWER }), spawnFleetMember({ ...base, instance: 'new-1', recordExtras: NEWER })];
    for (const m of newer) await m.waitFor('started', 20_000);
    await newer[0]!.waitFor('claimed', 20_000);
    const today: FleetMember[] = [spawnFleetMember({ ...base, instance: 'old-0' }), spawnFleetMember({ ...base, instance: 'old-1' })];
    for (const m of today) await m.waitFor('started', 20_000);
    await waitUntil('units to be processed by both builds', () => [...newer, ...today].filter((m) => m.eventsOf('unit').length > 0).length >= 3, { timeoutMs: 20_000 });
    // Killed while it holds a split it has not completed.
    await waitUntil('the newer build to hold an unfinished split', () => newer[0]!.eventsOf('claimed').length > newer[0]!.eventsOf('completed').length, { timeoutMs: 20_000 });
    await newer[0]!.kill('SIGKILL');
    await newer[1]!.stop();
    for (const m of today) await m.waitFor('verdict', 60_000);
    for (const m of today) expect(m.eventsOf('verdict')[0]!.verdict).toBe('complete');
    for (const m of [...newer, ...today]) expect(m.has('fatal'), m.describe()).toBe(false);

    // Every unit of every split processed at least once (the ledger over every member's events).
    const store = new EtcdStore({ endpoints: etcd.endpoint });
    try {
      const processed = new Set<string>();
      const touchedByNewer = new Set<string>();
      for (const m of [...newer, ...today]) {
        for (const e of m.eventsOf('unit')) {
          processed.add(`${e.id}:${String(e.unit)}`);
          if (m.instance.startsWith('new')) touchedByNewer.add(e.id!);
        }
      }
      const completedByToday = new Set(today.flatMap((m) => m.eventsOf('completed').map((e) => e.id!)));
      let carried = 0;
      for (const kv of (await store.list(`${prefix}split.`)).kvs) {
        const rec = decodeRecord('split', kv.key, kv.value, fp) as unknown as Record<string, unknown>;
        expect(rec.status, kv.key).toBe('completed');
        const units = (decodeRecord('spec', kv.key.replace('/split.', '/spec.'), (await store.get(kv.key.replace('/split.', '/spec.')))!.value, fp).descriptor as { units: number }).units;
        for (let u = 1; u <= units; u++) expect(processed.has(`${rec.id as string}:${u}`), `${rec.id as string} unit ${u}`).toBe(true);
        // Rewritten by today's build (it completed it) after the newer build had written it: the fields rode along.
        if (touchedByNewer.has(rec.id as string) && completedByToday.has(rec.id as string)) {
          expect(rec.zone, kv.key).toBe('eu-west-1');
          expect(rec.minor, kv.key).toBe(1);
          carried++;
        }
      }
      expect(carried, 'no split went from the newer build to today\'s').toBeGreaterThan(0);

    } finally {
      await store.close();
    }
  }, 120_000);
});
