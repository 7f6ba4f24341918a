/**
 * The "is the job moving?" series of `Metrics`: setBacklog sets all five
 * states of both gauges at once, observeBacklog reads them at scrape time
 * (what the leader uses), clearBacklog removes them (a former leader
 * exports no backlog), the new counters are served at 0 from the start (so a
 * rate exists before the first event), and the store hooks fill the store
 * histogram and error counter with their labels.
 */
import { describe, expect, it } from 'vitest';
import { BACKLOG_STATES, Metrics } from '../../../src/coordinator/metrics.js';

const byState = async (m: Metrics, which: 'backlogSplits' | 'backlogWeight') =>
  Object.fromEntries((await m[which].get()).values.map((v) => [v.labels.state, v.value]));

describe('Metrics: backlog, completions, failures, session losses, store calls', () => {
  it('setBacklog sets every state of both gauges, and a later call replaces every value', async () => {
    const m = new Metrics();
    m.setBacklog({
      queued: { splits: 5, weight: 500 }, running: { splits: 2, weight: 40 }, draining: { splits: 1, weight: 9 },
      completed: { splits: 3, weight: 60 }, quarantined: { splits: 1, weight: 7 },
    });
    expect(await byState(m, 'backlogSplits')).toEqual({ queued: 5, running: 2, draining: 1, completed: 3, quarantined: 1 });
    expect(await byState(m, 'backlogWeight')).toEqual({ queued: 500, running: 40, draining: 9, completed: 60, quarantined: 7 });
    const zero = { splits: 0, weight: 0 };
    m.setBacklog({ queued: zero, running: zero, draining: zero, completed: { splits: 12, weight: 616 }, quarantined: zero });
    expect(await byState(m, 'backlogSplits')).toEqual({ queued: 0, running: 0, draining: 0, completed: 12, quarantined: 0 });
    expect(Object.keys(await byState(m, 'backlogWeight')).sort()).toEqual([...BACKLOG_STATES].sort());
  });

  it('clearBacklog removes every backlog series from the exposition, and setBacklog brings them back', async () => {
    const m = new Metrics();
    const one = { splits: 1, weight: 1 };
    m.setBacklog({ queued: one, running: one, draining: one, completed: one, quarantined: one });
    m.clearBacklog();
    const text = await m.registry.metrics();
    expect(text).not.toMatch(/^splitfleet_backlog_(splits|weight)\{/m);
    m.setBacklog({ queued: one, running: one, draining: one, completed: one, quarantined: one });
    expect(await m.registry.metrics()).toMatch(/^splitfleet_backlog_splits\{state="draining"\} 1$/m);
  });

  it('observeBacklog reads its source once per scrape of each gauge, not before; clearBacklog ends it', async () => {
    const m = new Metrics();
    let queued = 4;
    let reads = 0;
    const zero = { splits: 0, weight: 0 };
    m.observeBacklog(() => {
      reads++;
      return { queued: { splits: queued, weight: 10 * queued }, running: zero, draining: zero, completed: zero, quarantined: zero };
    });
    expect(reads).toBe(0);
    expect((await byState(m, 'backlogSplits')).queued).toBe(4);
    queued = 3;
    expect(await m.registry.metrics()).toMatch(/^splitfleet_backlog_weight\{state="queued"\} 30$/m);
    expect(reads).toBe(3);
    m.clearBacklog();
    queued = 2;
    expect(await m.registry.metrics()).not.toMatch(/^splitfleet_backlog_(splits|weight)\{/m);
    expect(reads).toBe(3);
    // A source with nothing to say (no current view) leaves the gauges as set.
    m.setBacklog({ queued: { splits: 9, weight: 9 }, running: zero, draining: zero, completed: zero, quarantined: zero });
    m.observeBacklog(() => undefined);
    expect((await byState(m, 'backlogSplits')).queued).toBe(9);
  });

  it('serves completions, handler failures and session losses at 0 before the first event', async () => {
    const m = new Metrics({ labels: { splitfleet_job: 'j' } });
    const text = await m.registry.metrics();
    for (const name of ['splitfleet_completions_total', 'splitfleet_handler_failures_total', 'splitfleet_session_losses_total']) {
      // Other labels may follow the constant one (handler failures by kind, say).
      expect(text).toMatch(new RegExp(`^${name}\\{splitfleet_job="j"[,}].* 0$`, 'm'));
    }
    m.completions.inc();
    m.completions.inc();
    m.handlerFailures.inc();
    m.sessionLosses.inc();
    const after = await m.registry.metrics();
    expect(after).toContain('splitfleet_completions_total{splitfleet_job="j"} 2');
    expect(after).toContain('splitfleet_handler_failures_total{splitfleet_job="j"} 1');
    expect(after).toContain('splitfleet_session_losses_total{splitfleet_job="j"} 1');
  });

  it('storeCall and storeError fill the store series with their call and code labels', async () => {
    const m = new Metrics();
    m.storeCall('txn', 0.003);
    m.storeCall('txn', 0.02);
    m.storeError('txn', 'TIMEOUT');
    const text = await m.registry.metrics();
    expect(text).toMatch(/^splitfleet_store_call_seconds_count\{call="txn"\} 2$/m);
    expect(text).toMatch(/^splitfleet_store_call_seconds_bucket\{le="0.005",call="txn"\} 1$/m);
    expect(text).toMatch(/^splitfleet_store_errors_total\{call="txn",code="TIMEOUT"\} 1$/m);
  });
});
