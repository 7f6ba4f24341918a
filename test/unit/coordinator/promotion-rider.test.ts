/**
 * A packed job's publication rides in its promotion (decision 0085): the
 * decision's first publishing transaction is joined to the last promotion
 * transaction, so the records it names and the assignment that names them
 * land together, in one round trip. A joined transaction that loses (here a
 * hand moved the publication fence) is not a loss of the promotion: it is
 * sent alone, as before, and the publication reads the fence again. (A
 * fence moved by a hand alone is past what the leader's view has seen, and
 * the publication waits for the view to pass it: here the backstop's, every
 * reconcileIntervalMs.)
 */
import { describe, expect, it } from 'vitest';
import { startCoordinator } from '../../../src/coordinator/coordinator.js';
import { silentLogger } from '../../../src/coordinator/log.js';
import { MemoryStore } from '../../../src/store/memory.js';
import type { Txn, TxnResult } from '../../../src/store/store.js';

/** A MemoryStore that keeps each transaction's written key families, in order, with whether it landed. */
class TxnLog extends MemoryStore {
  readonly txns: { puts: string[]; won: boolean }[] = [];
  /** Runs once, before the first transaction that promotes and publishes together is applied. */
  beforeJoined: ((txn: Txn) => Promise<void>) | undefined;

  override async txn(txn: Txn): Promise<TxnResult> {
    const puts = txn.success.filter((o) => o.op === 'put').map((o) => o.key.slice(o.key.lastIndexOf('/') + 1).split('.')[0]!);
    if (puts.includes('spec') && puts.includes('assign') && this.beforeJoined) {
      const hand = this.beforeJoined;
      this.beforeJoined = undefined;
      await hand(txn);
    }
    const res = await super.txn(txn);
    this.txns.push({ puts, won: res.won });
    return res;
  }
}

async function runJob(store: TxnLog, job: string): Promise<string> {
  const c = await startCoordinator({
    store, job, instance: 'w0', maxInFlight: 1, prefetch: 1, layout: 'packed', logger: silentLogger, reconcileIntervalMs: 300,
    planner: () => ({ final: true, splits: Array.from({ length: 12 }, (_, i) => ({ id: `s${String(i).padStart(2, '0')}`, weight: 1 })) }),
    handler: async (split) => {
      await split.complete(null);
    },
  });
  const outcome = await c.done;
  await c.stop();
  return outcome;
}

const promotes = (t: { puts: string[] }) => t.puts.includes('spec') && t.puts.includes('split');

describe('a packed publication rides in its promotion (decision 0085)', () => {
  it('every promotion that landed carried the assignment naming its splits', async () => {
    const store = new TxnLog();
    expect(await runJob(store, 'rider')).toBe('complete');
    const promotions = store.txns.filter(promotes);
    expect(promotions.length).toBeGreaterThan(0);
    // Each carried an assignment record and the publication fence (nothing was lost in a quiet run).
    for (const t of promotions) expect(t).toEqual({ puts: expect.arrayContaining(['spec', 'split', 'assign', 'publish']), won: true });
  });

  it('a joined transaction that loses sends its promotion alone, and the job completes', async () => {
    const store = new TxnLog();
    // A hand rewrites the publication fence just before the first joined transaction: its fence compare fails.
    store.beforeJoined = async (txn) => {
      // The fence as the transaction would put it (absent before a job's first publication).
      const fence = txn.success.find((o) => o.op === 'put' && o.key.endsWith('/publish')) as { key: string; value: string };
      await store.put(fence.key, fence.value);
    };
    expect(await runJob(store, 'rider-lost')).toBe('complete');
    const first = store.txns.findIndex(promotes);
    // The joined transaction lost; the promotion alone landed next.
    expect(store.txns[first]).toEqual({ puts: expect.arrayContaining(['spec', 'assign', 'publish']), won: false });
    expect(store.txns[first + 1]).toEqual({ puts: expect.arrayContaining(['spec', 'split']), won: true });
    expect(store.txns[first + 1]!.puts).not.toContain('assign');
  });
});
