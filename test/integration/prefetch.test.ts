/**
 * substrate.md, "Prefetch: the next split is already named" (decisions 0052 and 0055), on
 * MemoryStore with the real coordinator:
 * - the presence record advertises the depth, and the leader names up to maxInFlight + prefetch;
 * - a worker holds at most maxInFlight however many are named, and claims its named splits
 *   heaviest first by spec weight;
 * - a completion carries the claim of the lane's next named split in its own transaction
 *   (splitfleet_claims_in_completions_total), and `prefetch: 0` is the model without prefetch:
 *   never more than maxInFlight named, no claim rides;
 * - short splits cost no per-split watch (decision 0090): read once, claimed, completed and let
 *   go before their watches would open.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { startCoordinator, type Coordinator } from '../../src/coordinator/coordinator.js';
import { silentLogger } from '../../src/coordinator/log.js';
import type { SplitHandle } from '../../src/coordinator/types.js';
import { assignKey, jobPrefix, workerKey } from '../../src/protocol/keys.js';
import { MemoryStore } from '../../src/store/memory.js';
import type { Txn, TxnResult, WatchOptions } from '../../src/store/store.js';
import { counterValue } from '../support/in-process.js';

/** A MemoryStore that remembers every transaction that landed and the longest assignment record it saw. */
class Watching extends MemoryStore {
  readonly landed: Txn[] = [];
  maxNamed = 0;
  /** Watches opened on one split's record or lease key. */
  splitWatches = 0;
  override watch(prefix: string, options: WatchOptions) {
    if (/\/(split|lease)\./.test(prefix)) this.splitWatches++;
    return super.watch(prefix, options);
  }
  override async txn(t: Txn): Promise<TxnResult> {
    const res = await super.txn(t);
    if (res.won) {
      this.landed.push(t);
      for (const o of t.success) {
        if (o.op === 'put' && o.key.includes('/assign.')) this.maxNamed = Math.max(this.maxNamed, (JSON.parse(o.value) as { splits: string[] }).splits.length);
      }
    }
    return res;
  }
}

const open: Coordinator[] = [];
afterEach(async () => {
  for (const c of open.splice(0)) await c.close().catch(() => undefined);
});

/** One member working `n` splits whose weights are a shuffled 1..n; returns what it saw. */
async function run(job: string, n: number, maxInFlight: number, prefetch: number) {
  const store = new Watching();
  const weights = Array.from({ length: n }, (_, i) => 1 + ((i * 7) % n)); // a permutation of 1..n (7 ⟂ n)
  const started: number[] = [];
  let holding = 0;
  let maxHolding = 0;
  const handler = async (h: SplitHandle) => {
    started.push(h.weight);
    maxHolding = Math.max(maxHolding, ++holding);
    await new Promise((r) => setTimeout(r, 5));
    holding--;
    await h.complete(h.weight);
  };
  const c = await startCoordinator({
    store, job, instance: 'w0', maxInFlight, prefetch, logger: silentLogger,
    leaseDurationMs: 3000, opTimeoutMs: 1000, rebalanceDelayMs: 0, drainDeadlineMs: 1000,
    planner: () => ({ final: true, splits: weights.map((weight, i) => ({ id: `s-${String(i).padStart(3, '0')}`, weight })) }),
    handler,
  });
  open.push(c);
  const presence = JSON.parse((await store.get(workerKey(jobPrefix('splitfleet', job), 'w0')))!.value) as { prefetch?: number };
  await expect(c.done).resolves.toBe('complete');
  const ridden = await counterValue(c.metrics.claimsRidden);
  const assign = await store.get(assignKey(jobPrefix('splitfleet', job), 'w0'));
  return { store, started, maxHolding, ridden, presence, assign };
}

describe('prefetch', () => {
  it('names up to maxInFlight + prefetch, holds at most maxInFlight, claims heaviest first, and claims ride in completions', async () => {
    const r = await run('prefetch-on', 24, 2, 3);
    expect(r.presence.prefetch).toBe(3);
    expect(r.store.maxNamed).toBe(5);
    expect(r.maxHolding).toBeLessThanOrEqual(2);
    expect(r.started).toHaveLength(24);
    // Heaviest first: the named splits are the heaviest of the queue (the leader fills heaviest
    // first) and the worker takes the heaviest of those; so the start order is nearly descending.
    // Each split starts before any split lighter by more than the assignment budget (5).
    for (let i = 0; i < r.started.length; i++) {
      for (let j = i + 1; j < r.started.length; j++) expect(r.started[j]!).toBeLessThan(r.started[i]! + 5);
    }
    // A completion carried the claim of the next named split (its lease put in the same transaction).
    expect(r.ridden).toBeGreaterThan(0);
    const joined = r.store.landed.filter((t) => t.success.some((o) => o.op === 'delete' && o.key.includes('/lease.')) && t.success.some((o) => o.op === 'put' && o.key.includes('/lease.')));
    expect(joined.length).toBe(r.ridden);
    // Splits of a few milliseconds are let go before their watches open: two per split before
    // decision 0090 (48 here), and only a split kept waiting past QUIET_MS by a slow machine costs one now.
    expect(r.store.splitWatches).toBeLessThan(24);
  });

  it('prefetch 0: never more named than lanes, no presence field, no claim rides', async () => {
    const r = await run('prefetch-off', 12, 2, 0);
    expect(r.presence.prefetch).toBeUndefined();
    expect(r.store.maxNamed).toBe(2);
    expect(r.ridden).toBe(0);
    expect(r.started).toHaveLength(12);
  });
});
