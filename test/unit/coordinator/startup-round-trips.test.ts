/**
 * What a fleet's start-up asks of the store before its first handler runs
 * (decision 0084, issue 47): the session's lease is granted while the job is
 * read; a campaign is one transaction that wins the key, bumps the plan's
 * generation and reads the publication fence, so the leader neither reads
 * the plan before campaigning nor the fence before its first publication,
 * nor the plan again before its seeding's updates; a campaign on a view that
 * lags loses, reads the plan from the loss and goes again at once.
 */
import { describe, expect, it } from 'vitest';
import { startCoordinator } from '../../../src/coordinator/coordinator.js';
import { silentLogger } from '../../../src/coordinator/log.js';
import { jobPrefix, planKey, publishKey } from '../../../src/protocol/keys.js';
import { decodeRecord, encodeRecord, fingerprintHash } from '../../../src/protocol/records.js';
import { resolveConfig } from '../../../src/config.js';
import { MemoryStore } from '../../../src/store/memory.js';
import type { KeyValue, Txn, TxnResult } from '../../../src/store/store.js';

/** A MemoryStore that logs each call when it is made ('call …') and when it answers ('done …'). */
class CallLog extends MemoryStore {
  readonly log: string[] = [];
  /** Runs once, before the first campaign transaction is applied (a hand that moves the plan). */
  beforeCampaign: (() => Promise<void>) | undefined;

  private track<T>(what: string, p: Promise<T>): Promise<T> {
    this.log.push(`call ${what}`);
    return p.then((v) => {
      this.log.push(`done ${what}`);
      return v;
    });
  }

  override async txn(txn: Txn): Promise<TxnResult> {
    const first = txn.success[0];
    const what = `txn ${first?.op ?? 'none'} ${first?.key ?? ''}`;
    if (first?.op === 'put' && first.key.endsWith('/leader') && this.beforeCampaign) {
      const hand = this.beforeCampaign;
      this.beforeCampaign = undefined;
      await hand();
    }
    return this.track(what, super.txn(txn));
  }

  override get(key: string): Promise<KeyValue | undefined> {
    return this.track(`get ${key}`, super.get(key));
  }

  override grantLease(ttlSeconds: number): Promise<string> {
    return this.track('grantLease', super.grantLease(ttlSeconds));
  }
}

const job = 'startup-rtt';
const prefix = jobPrefix(resolveConfig({ job, instance: 'w0' }).root, job);

async function runToFirstHandler(store: CallLog): Promise<{ log: string[]; generation: number | undefined }> {
  let first: (() => void) | undefined;
  const started = new Promise<void>((resolve) => (first = resolve));
  let generation: number | undefined;
  const c = await startCoordinator({
    store, job, instance: 'w0', maxInFlight: 1, logger: silentLogger,
    planner: () => ({ final: true, splits: [{ id: 'a', weight: 1 }, { id: 'b', weight: 2 }] }),
    handler: async (split) => {
      first?.();
      await split.complete(null);
    },
    on: { 'leadership-gained': (e) => (generation ??= e.generation) },
  });
  await started;
  const log = [...store.log];
  await c.done;
  await c.stop();
  return { log, generation };
}

describe('start-up round trips (decision 0084)', () => {
  it('grants the session lease while the job is read, and campaigns, seeds and publishes without reading plan or fence', async () => {
    const store = new CallLog();
    const { log, generation } = await runToFirstHandler(store);
    expect(generation).toBe(1);
    // The grant is sent before the job's first read answers: the two overlap.
    expect(log.indexOf('call grantLease')).toBeGreaterThanOrEqual(0);
    expect(log.indexOf('call grantLease')).toBeLessThan(log.findIndex((l) => l.startsWith('done txn')));
    // One campaign transaction; no read of the plan or of the publication fence on the way to the first handler.
    expect(log.filter((l) => l.startsWith('call txn put') && l.endsWith('/leader'))).toHaveLength(1);
    expect(log).not.toContain(`call get ${planKey(prefix)}`);
    expect(log).not.toContain(`call get ${publishKey(prefix)}`);
  });

  it('a campaign on a plan that moved after the view read it goes again at once, on the plan its loss read', async () => {
    const store = new CallLog();
    const fp = fingerprintHash(resolveConfig({ job, instance: 'w0' }).fingerprint);
    // A job whose plan exists (generation 4), moved by a hand to generation 6 after the view read it.
    await store.put(planKey(prefix), encodeRecord('plan', { v: 1, fp, generation: 4, final: false, planned: 0 }));
    store.beforeCampaign = async () => {
      const kv = (await store.get(planKey(prefix)))!;
      await store.put(planKey(prefix), encodeRecord('plan', { ...decodeRecord('plan', kv.key, kv.value, fp), generation: 6 }));
    };
    const { log, generation } = await runToFirstHandler(store);
    expect(generation).toBe(7);
    expect(log.filter((l) => l.startsWith('call txn put') && l.endsWith('/leader'))).toHaveLength(2);
    const plan = (await store.get(planKey(prefix)))!;
    expect(decodeRecord('plan', plan.key, plan.value, fp).generation).toBe(7);
  });
});
