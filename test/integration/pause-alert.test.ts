/**
 * A paused job is a job that does not move, and the alert says so: a real
 * fleet (MemoryStore, in-process coordinators, each with its own registry
 * labelled splitfleet_job, scraped with its instance label) is paused; its registries, scraped, show the
 * leader's backlog queued and no completion; held constant over a
 * 15-minute scrape timeline (what a paused job's registries serve, checked
 * over two real scrapes), `SplitfleetJobNotMoving` of docs/alerts.yml fires
 * for the job. Resumed, the job completes and the rule is quiet again.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { startCoordinator, type Coordinator } from '../../src/coordinator/coordinator.js';
import { silentLogger } from '../../src/coordinator/log.js';
import { Metrics } from '../../src/coordinator/metrics.js';
import type { SplitHandle } from '../../src/coordinator/types.js';
import { pauseJob, resumeJob } from '../../src/operator/control.js';
import { MemoryStore } from '../../src/store/memory.js';
import { alertRules, evaluate, parsePromql, scraped, type Sample, type Scrape } from '../support/prometheus.js';
import { sleep, waitUntil } from '../support/wait.js';

const fast = { leaseDurationMs: 3000, opTimeoutMs: 1000, rebalanceDelayMs: 0, drainDeadlineMs: 1000, reconcileIntervalMs: 500 };
const store = new MemoryStore();
const fleet: Coordinator[] = [];
afterAll(async () => {
  for (const c of fleet) await c.close().catch(() => undefined);
  await store.close();
});

async function scrape(metrics: Metrics[]): Promise<Sample[]> {
  const out: Sample[] = [];
  for (const [i, m] of metrics.entries()) out.push(...scraped(await m.registry.metrics(), `w${i}`));
  return out;
}
const value = (series: Sample[], name: string, labels: Record<string, string> = {}) =>
  series.filter((s) => s.labels.__name__ === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v)).reduce((a, s) => a + s.value, 0);

/** The same scrape every minute for `minutes`: a registry that does not change. */
const steady = (series: Sample[], minutes: number): Scrape[] => Array.from({ length: minutes }, (_, k) => ({ t: 60 * (k + 1), series }));

describe('SplitfleetJobNotMoving fires on a paused job', () => {
  it('paused: backlog queued, no completion, the rule fires; resumed: the job completes and the rule is quiet', async () => {
    const handler = async (h: SplitHandle) => {
      let done = typeof h.progress === 'number' ? h.progress : 0;
      while (done < 40) {
        if (h.drainSignal.aborted || h.signal.aborted) return;
        await sleep(20);
        done++;
        await h.commit(done);
      }
      await h.complete(done);
    };
    const metrics = ['w0', 'w1'].map(() => new Metrics({ labels: { splitfleet_job: 'nightly' } }));
    for (const [i, m] of metrics.entries()) {
      fleet.push(await startCoordinator({
        store, job: 'nightly', instance: `w${i}`, maxInFlight: 2, logger: silentLogger, metrics: m, ...fast,
        planner: () => ({ splits: Array.from({ length: 12 }, (_, k) => ({ id: `s-${k}`, weight: 1 + (k % 4) })), final: true }),
        handler,
      }));
    }
    await waitUntil('the fleet busy', () => fleet.every((c) => c.held.length === 2), { timeoutMs: 20_000 });
    await pauseJob({ store, job: 'nightly' });
    await waitUntil('every lane drained', () => fleet.every((c) => c.held.length === 0), { timeoutMs: 20_000 });
    await waitUntil('the backlog shows it', async () => value(await scrape(metrics), 'splitfleet_backlog_splits', { state: 'running' }) === 0, { timeoutMs: 10_000 });

    const first = await scrape(metrics);
    await sleep(1500);
    const paused = await scrape(metrics);
    const completions = value(paused, 'splitfleet_completions_total');
    expect(value(first, 'splitfleet_completions_total')).toBe(completions); // nothing completes while paused
    expect(value(paused, 'splitfleet_backlog_splits', { state: 'queued' })).toBe(12 - completions);
    expect(value(paused, 'splitfleet_backlog_weight', { state: 'queued' })).toBeGreaterThan(0);

    const rule = alertRules().rules.SplitfleetJobNotMoving!;
    const fired = evaluate(parsePromql(rule.expr), steady(paused, 15), 15 * 60) as Sample[];
    expect(fired.map((s) => s.labels)).toEqual([{ splitfleet_job: 'nightly' }]);

    await resumeJob({ store, job: 'nightly' });
    expect(await Promise.all(fleet.map((c) => c.done))).toEqual(['complete', 'complete']);
    const done = await scrape(metrics);
    expect(value(done, 'splitfleet_completions_total')).toBe(12);
    // The timeline of a job that moved: paused for 10 minutes, then the completions of the resume.
    const timeline: Scrape[] = [...steady(paused, 10), { t: 11 * 60, series: done }];
    expect(evaluate(parsePromql(rule.expr), timeline, 11 * 60)).toEqual([]);
  }, 60_000);
});
