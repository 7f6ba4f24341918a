#!/usr/bin/env node
/**
 * One fleet member as an OS process, for `splitfleet demo --etcd` and for the
 * integration tests that kill, stop and restart workers. Configured by the
 * SPLITFLEET_FLEET JSON environment variable; writes one JSON object per line
 * on stdout for every lane event and processed unit (the ledger), and the
 * verdict at the end. SIGTERM stops gracefully (drain, release, resign).
 *
 * The configuration and the lines are typed once, in fleet-config.ts.
 * Internal: a script, never imported (importing it starts a coordinator).
 */
import { startCoordinator } from '../coordinator/coordinator.js';
import { defaultLogger, silentLogger } from '../coordinator/log.js';
import type { Json } from '../protocol/records.js';
import { openStore } from '../store/open.js';
import type { Op, Store, Txn } from '../store/store.js';
import type { FleetProcessConfig } from './fleet-config.js';
import { syntheticMember } from './synthetic.js';

/** Adds `extras` to every JSON record value this store writes (puts only; everything else passes through). */
function writingExtras(store: Store, extras: Record<string, Json>): Store {
  const withExtras = (value: string): string => {
    try {
      const v = JSON.parse(value) as unknown;
      return typeof v === 'object' && v !== null && !Array.isArray(v) ? JSON.stringify({ ...v, ...extras }) : value;
    } catch {
      return value;
    }
  };
  const rewrite = (ops: readonly Op[]): Op[] => ops.map((o) => (o.op === 'put' ? { ...o, value: withExtras(o.value) } : o));
  return new Proxy(store, {
    get(target, prop, receiver) {
      if (prop === 'txn') return (t: Txn) => target.txn({ ...t, success: rewrite(t.success), ...(t.failure ? { failure: rewrite(t.failure) } : {}) });
      const v = Reflect.get(target, prop, receiver) as unknown;
      // Bound to the proxy: the store's own helpers (createIfAbsent, put, …) send through txn above.
      return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(receiver) : v;
    },
  });
}

const emit = (o: object) => process.stdout.write(`${JSON.stringify({ t: Date.now(), ...o })}\n`);

async function main(): Promise<void> {
  const cfg = JSON.parse(process.env.SPLITFLEET_FLEET ?? '{}') as FleetProcessConfig;
  // The store's own per-call deadline follows the coordinator's opTimeoutMs when one is configured.
  const opTimeoutMs = cfg.config?.opTimeoutMs;
  const opened = await openStore({ backend: 'etcd', endpoints: cfg.endpoints ?? [cfg.endpoint], ...(opTimeoutMs !== undefined ? { opTimeoutMs } : {}) });
  const store = cfg.recordExtras ? writingExtras(opened, cfg.recordExtras) : opened;
  const coordinator = await startCoordinator({
    store,
    job: cfg.job,
    instance: cfg.instance,
    maxInFlight: cfg.maxInFlight,
    ...(cfg.root !== undefined ? { root: cfg.root } : {}),
    ...(cfg.layout !== undefined ? { layout: cfg.layout } : {}),
    ...(cfg.config ?? {}),
    ...syntheticMember(cfg, { onUnit: (id, unit, epoch) => emit({ ev: 'unit', id, unit, epoch }), onEvent: (e) => emit(e) }),
    // Silent unless SPLITFLEET_LOG_LEVEL asks for the coordinator's log (on stderr).
    logger: process.env.SPLITFLEET_LOG_LEVEL ? defaultLogger({ job: cfg.job, instance: cfg.instance }) : silentLogger,
  });
  emit({ ev: 'started', instance: cfg.instance });
  // A session loss drops every lane and rejoins: the member-loss tests count them.
  coordinator.on('session-lost', (e) => emit({ ev: 'session-lost', reason: e.reason }));
  let leading = false;
  let lastStats = '';
  const reportStats = async (): Promise<void> => {
    if (!cfg.stats) return;
    const revocations = await coordinator.metrics.revocations.get();
    const count = (outcome: string) => revocations.values.filter((v) => v.labels.outcome === outcome).reduce((s, v) => s + v.value, 0);
    const leaderChanges = (await coordinator.metrics.leaderChanges.get()).values.reduce((s, v) => s + v.value, 0);
    const stats = { cooperative: count('cooperative'), forced: count('forced'), declined: count('declined'), leaderChanges };
    const text = JSON.stringify(stats);
    if (text !== lastStats) {
      lastStats = text;
      emit({ ev: 'stats', ...stats });
    }
  };
  let ticks = 0;
  const poll = setInterval(() => {
    if (coordinator.isLeader !== leading) {
      leading = coordinator.isLeader;
      emit({ ev: leading ? 'leading' : 'not-leading' });
    }
    if (++ticks % 4 === 0) void reportStats().catch(() => undefined);
  }, 50);
  const stop = () => {
    void coordinator.stop().then(async () => {
      await reportStats().catch(() => undefined);
      emit({ ev: 'stopped' });
      process.exit(0);
    });
  };
  process.on('SIGTERM', stop);
  // The demo holds our stdin open; it closing means the demo is gone (killed, or crashed): stop too,
  // rather than run on as an orphan in a process group no terminal signals.
  if (cfg.stopWithParent) {
    process.stdin.on('end', stop);
    process.stdin.on('error', stop);
    process.stdin.resume();
  }
  try {
    const verdict = await coordinator.done;
    await reportStats().catch(() => undefined);
    // 'stopped': our own SIGTERM, reported as `stopped` by its handler; a verdict is the job's.
    if (verdict !== 'stopped') emit({ ev: 'verdict', verdict });
  } catch (e) {
    emit({ ev: 'fatal', code: (e as { code?: string }).code, message: (e as Error).message });
    process.exitCode = 3;
  } finally {
    clearInterval(poll);
    await store.close().catch(() => undefined);
  }
}

main().catch((e) => {
  emit({ ev: 'fatal', code: (e as { code?: string }).code, message: (e as Error).message });
  process.exit(3);
});
