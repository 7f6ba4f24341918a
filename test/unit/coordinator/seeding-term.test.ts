/**
 * A seeding run writes under the leadership of the term it started in
 * (seeding.ts): a run that outlives its term, while this same instance is
 * elected again, must lose its writes, not restate the plan record under
 * the new term's guard. Found by the packed simulation: a stale run wrote a
 * non-final plan over a finished one (the record's own rule refused it;
 * over a final plan without a verdict it would have regressed it).
 */
import { describe, expect, it } from 'vitest';
import { systemClock } from '../../../src/clock.js';
import { resolveConfig } from '../../../src/config.js';
import { LeaderView } from '../../../src/coordinator/leader/leader-view.js';
import { Seeder } from '../../../src/coordinator/leader/seeding.js';
import { silentLogger } from '../../../src/coordinator/log.js';
import type { SplitfleetError } from '../../../src/errors.js';
import { jobPrefix, planKey } from '../../../src/protocol/keys.js';
import { campaignTxn, leadershipGuard, resignTxn } from '../../../src/protocol/leader-txns.js';
import { decodeRecord, fingerprintHash } from '../../../src/protocol/records.js';
import { MemoryStore } from '../../../src/store/memory.js';

const fatal = (e: SplitfleetError) => {
  throw e;
};

describe('a seeding run', () => {
  it('that outlived its term loses its plan update, though this instance leads again', async () => {
    const store = new MemoryStore();
    const config = resolveConfig({ job: 'seed-term', instance: 'w0' });
    const P = jobPrefix(config.root, config.job);
    const FP = fingerprintHash(config.fingerprint);
    const lease = await store.grantLease(30);
    const first = await store.txn(campaignTxn(P, FP, 'w0', undefined, lease, 'keys'));
    expect(first.won).toBe(true);
    let term = first.revision;
    const view = new LeaderView(store, P, FP, config.fingerprint, fatal, systemClock);
    await view.start();
    const seeder = new Seeder({ store, config, prefix: P, guard: () => leadershipGuard(P, term), leading: () => true, log: silentLogger });
    const splits = Array.from({ length: 5 }, (_, i) => ({ id: `s${i}`, weight: 1 }));
    const run = seeder.seed(view, 1, splits, true, undefined, new AbortController().signal);
    // The term ends and this instance wins the next one before the run writes its plan record.
    expect((await store.txn(resignTxn(P, first.revision))).won).toBe(true);
    const planKv = (await store.get(planKey(P)))!;
    const again = await store.txn(campaignTxn(P, FP, 'w0', { rec: decodeRecord('plan', planKv.key, planKv.value, FP), modRevision: planKv.modRevision }, lease, 'keys'));
    expect(again.won).toBe(true);
    term = again.revision;
    await expect(run).rejects.toThrow(/plan record update lost/);
    const kv = (await store.get(planKey(P)))!;
    const plan = decodeRecord('plan', kv.key, kv.value, FP);
    expect(plan.final).toBe(false);
    expect(plan.planned).toBe(0);
    await view.close();
  });
});
