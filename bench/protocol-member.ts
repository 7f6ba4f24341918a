#!/usr/bin/env node
/**
 * One OS process hosting several fleet members for bench/protocol.ts: one
 * coordinator (each on its own EtcdStore) per instance id in
 * SPLITFLEET_BENCH (JSON). Splits are held until a drain is asked for, then
 * released at once (an instant, cooperative drain); nothing is committed, so
 * the figures are the protocol's own cost. A member that fails (start-up or
 * fatal) is restarted after 1 s, as a pod would be. Writes JSON lines on
 * stdout: `started`, `restart`, `leading`, and every `statsEveryMs` a `stats`
 * line (RSS, peak RSS, event-loop delay over the interval, the leader's
 * decision timings).
 */
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { startCoordinator, type Coordinator } from '../src/coordinator/coordinator.js';
import { defaultLogger, silentLogger } from '../src/coordinator/log.js';
import type { PlanResult, SplitHandle } from '../src/coordinator/types.js';
import { prng } from '../src/prng.js';
import { EtcdStore } from '../src/store/etcd/etcd.js';

export interface BenchMemberConfig {
  endpoint: string;
  job: string;
  instances: string[];
  splits: number;
  seed: number;
  maxInFlight: number;
  config: Record<string, number>;
  statsEveryMs: number;
}

const restarts = new Set<string>();
const emit = (o: { ev: string; instance?: string; [k: string]: unknown }) => {
  if (o.ev === 'restart' && o.instance) restarts.add(o.instance);
  process.stdout.write(`${JSON.stringify({ t: Date.now(), ...o })}\n`);
};
const restarted = (instance: string) => restarts.has(instance);

/** A final plan of `n` splits, skewed weights (1 KiB – 1 GiB), no descriptor. */
function plan(n: number, seed: number): PlanResult {
  const rnd = prng(seed);
  const width = String(n - 1).length;
  return {
    final: true,
    splits: Array.from({ length: n }, (_, i) => ({
      id: `s-${String(i).padStart(width, '0')}`,
      weight: Math.round(1024 * Math.pow(2, rnd() * 20)),
    })),
  };
}

/** Holds the split until asked to drain or stop; returning releases it. */
async function hold(split: SplitHandle): Promise<void> {
  await new Promise<void>((resolve) => {
    if (split.drainSignal.aborted || split.signal.aborted) return resolve();
    split.drainSignal.addEventListener('abort', () => resolve(), { once: true });
    split.signal.addEventListener('abort', () => resolve(), { once: true });
  });
}

async function main(): Promise<void> {
  // SIGTERM exits at once (no drain), so a --cpu-prof profile is written.
  process.on('SIGTERM', () => process.exit(0));
  const cfg = JSON.parse(process.env.SPLITFLEET_BENCH ?? '{}') as BenchMemberConfig;
  const planned = plan(cfg.splits, cfg.seed);
  const decisions = { count: 0, maxMs: 0, totalMs: 0, maxSplits: 0 };
  const loop = monitorEventLoopDelay({ resolution: 10 });
  loop.enable();
  const members: { instance: string; coordinator: Coordinator; store: EtcdStore }[] = [];
  const leading = new Set<string>();
  setInterval(() => {
    for (const m of members) {
      if (m.coordinator.isLeader && !leading.has(m.instance)) {
        leading.add(m.instance);
        emit({ ev: 'leading', instance: m.instance });
      } else if (!m.coordinator.isLeader) leading.delete(m.instance);
    }
  }, 20).unref();
  setInterval(() => {
    const leader = members.find((m) => m.coordinator.isLeader);
    emit({
      ev: 'stats',
      rss: process.memoryUsage().rss,
      peakRss: process.resourceUsage().maxRSS * 1024,
      loopMaxMs: loop.max / 1e6,
      loopP99Ms: loop.percentile(99) / 1e6,
      lanes: members.reduce((s, m) => s + m.coordinator.held.length, 0),
      leader: leader?.instance,
      leaderStats: leader?.coordinator.leaderStats,
      decisions: leader
        ? { count: leader.coordinator.leaderStats!.decisions, maxMs: leader.coordinator.leaderStats!.decisionMsMax, totalMs: leader.coordinator.leaderStats!.decisionMsTotal, maxSplits: cfg.splits }
        : { ...decisions },
    });
    loop.reset();
  }, cfg.statsEveryMs).unref();
  // Each member runs as a pod would: a start-up failure or a fatal error restarts it (after
  // 1 s), so an overloaded machine slows the fleet down rather than shrinking it.
  const run = async (instance: string): Promise<void> => {
    for (;;) {
      // The store's own per-call deadline is generous: a full listing of a large job under load
      // can outlast the coordinator's opTimeoutMs.
      const store = new EtcdStore({ endpoints: [cfg.endpoint], opTimeoutMs: 30_000 });
      try {
        const coordinator = await startCoordinator({
          // No prefetch: this bench times how a fleet settles on what it holds (the mirror's `settled`:
          // every named split leased by its assignee); a prefetched split is named and not held, so
          // with the default depth the fleet never "settled" (decision 0052 came after this bench).
          store, job: cfg.job, instance, maxInFlight: cfg.maxInFlight, prefetch: 0, ...cfg.config,
          planner: () => planned,
          handler: hold,
          logger: process.env.BENCH_LOG ? defaultLogger({ instance }) : silentLogger,
        });
        const member = { instance, coordinator, store };
        members.push(member);
        emit({ ev: 'started', instance });
        await coordinator.done.catch((e: { code?: string; message?: string }) => emit({ ev: 'restart', instance, code: e.code, message: e.message }));
        members.splice(members.indexOf(member), 1);
      } catch (e) {
        emit({ ev: 'restart', instance, code: (e as { code?: string }).code, message: (e as Error).message });
      }
      await store.close().catch(() => undefined);
      await new Promise((r) => setTimeout(r, 1000));
    }
  };
  for (const instance of cfg.instances) {
    const up = members.length;
    void run(instance);
    // Start the next once this one has (or has failed to): one snapshot at a time.
    while (members.length === up && !restarted(instance)) await new Promise((r) => setTimeout(r, 20));
  }
}

main().catch((e) => {
  emit({ ev: 'fatal', code: (e as { code?: string }).code, message: (e as Error).message });
  process.exit(3);
});
