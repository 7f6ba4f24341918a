/**
 * Outages do not quarantine healthy work (issue 29 item 1, decision 0031), on
 * a real etcd: a fleet member with the default `maxAttempts` (4) runs one
 * long split; five times, once its current tenancy has committed progress,
 * etcd is frozen (SIGSTOP) for longer than the lease, so the member's session
 * is lost and the split is taken over again after each. The split ends
 * completed, not quarantined, with no attempt charged for a tenancy that
 * committed. Before commit f01a37e every takeover consumed an attempt, and
 * the fourth quarantined the split.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defaultFingerprint } from '../../src/config.js';
import { jobPrefix, splitKey } from '../../src/protocol/keys.js';
import { decodeRecord, fingerprintHash } from '../../src/protocol/records.js';
import { EtcdStore } from '../../src/store/etcd/etcd.js';
import { fleetProcessScript, killAllFleetMembers, spawnFleetMember } from '../support/fleet.js';
import { sleep, waitUntil } from '../support/wait.js';
import { EtcdCluster } from '../chaos/cluster.js';

let etcd: EtcdCluster;
beforeAll(async () => {
  fleetProcessScript(); // loud failure when dist/ is missing
  etcd = await EtcdCluster.start(1);
}, 60_000);
afterAll(async () => {
  await killAllFleetMembers();
  await etcd?.stop();
});

const LEASE_MS = 2000;
const COMMIT_EVERY = 5;
const OUTAGES = 5;

describe('etcd outages longer than the lease (real etcd, default maxAttempts)', () => {
  it('five SIGSTOPs of etcd while a long split commits progress: the split completes, not quarantined, no attempt charged for a committed tenancy', async () => {
    const job = `outages-${Date.now().toString(36)}`;
    const member = spawnFleetMember({
      endpoint: etcd.endpoints[0]!, job, instance: 'w0', splits: 1, seed: 1, maxInFlight: 1,
      // 240 units at 25 ms: 6 s of work, of which each tenancy does a little before the next outage.
      unitMs: 25, commitEvery: COMMIT_EVERY, minUnits: 240, maxUnits: 240,
      // No maxAttempts: the default (4) is what is under test.
      config: { leaseDurationMs: LEASE_MS, opTimeoutMs: 500, rebalanceDelayMs: 0, drainDeadlineMs: 1000, reconcileIntervalMs: 2000 },
    });
    await member.waitFor('started', 30_000);
    const frozen = etcd.members[0]!.child!;
    let epoch = 0;
    for (let outage = 1; outage <= OUTAGES; outage++) {
      // A new tenancy, which has committed: it processed unit COMMIT_EVERY + 1 of its own, and the
      // handler awaits each commit before the next unit.
      const claim = await member.waitFor((e) => (e.ev === 'claimed' && (e.epoch ?? 0) > epoch) || e.ev === 'verdict', 30_000, `a tenancy after outage ${outage - 1}`);
      // A verdict here is the split quarantined by the takeovers (the job is stalled).
      expect(claim, `the job ended after outage ${outage - 1}\n${member.describe()}`).toMatchObject({ ev: 'claimed' });
      epoch = claim.epoch!;
      await waitUntil(`tenancy ${epoch} to commit`, () => member.eventsOf('unit').filter((e) => e.epoch === epoch).length > COMMIT_EVERY, { timeoutMs: 30_000 });
      expect(member.has('completed'), 'the split completed before the outages were over: make it longer').toBe(false);
      frozen.kill('SIGSTOP');
      await sleep(LEASE_MS + 1500);
      frozen.kill('SIGCONT');
    }
    const verdict = await member.waitFor('verdict', 45_000);
    expect(verdict.verdict, member.describe()).toBe('complete');
    expect(member.has('fatal'), member.describe()).toBe(false);
    // Every outage ended a tenancy (the session was lost): six tenancies in all.
    expect(new Set(member.eventsOf('claimed').map((e) => e.epoch)).size).toBeGreaterThanOrEqual(OUTAGES + 1);
    expect(member.eventsOf('failed'), 'no failure reported').toEqual([]);

    const store = new EtcdStore({ endpoints: etcd.endpoints });
    try {
      const prefix = jobPrefix('splitfleet', job);
      const split = (await store.list(`${prefix}split.`)).kvs[0]!;
      const record = decodeRecord('split', split.key, split.value, fingerprintHash(defaultFingerprint('splitfleet', job)));
      expect(split.key).toBe(splitKey(prefix, record.id));
      expect(record.status).toBe('completed');
      // Every tenancy but possibly the first committed; a takeover ending one that did is free.
      expect(record.attempts, JSON.stringify(record)).toBeLessThanOrEqual(1);
    } finally {
      await store.close();
    }
  }, 90_000);
});
