#!/usr/bin/env node
/**
 * One fleet member as an OS process, for `splitfleet demo --etcd` and for the
 * integration tests that kill, stop and restart workers. Configured by the
 * SPLITFLEET_FLEET JSON environment variable; writes one JSON object per line
 * on stdout for every lane event and processed unit (the ledger), and the
 * verdict at the end. SIGTERM stops gracefully (drain, release, resign).
 */
import { startCoordinator } from '../coordinator/coordinator.js';
import { silentLogger } from '../coordinator/log.js';
import { EtcdStore } from '../store/etcd.js';
import { pacedHandler, syntheticPlanner, type DrainBehaviour } from './synthetic.js';

interface FleetProcessConfig {
  endpoint: string;
  job: string;
  instance: string;
  splits: number;
  seed: number;
  maxInFlight: number;
  unitMs: number;
  commitEvery: number;
  drain?: DrainBehaviour;
  slowDrainMs?: number;
  minUnits?: number;
  maxUnits?: number;
  config?: Record<string, number>;
}

const emit = (o: object) => process.stdout.write(`${JSON.stringify({ t: Date.now(), ...o })}\n`);

async function main(): Promise<void> {
  const cfg = JSON.parse(process.env.SPLITFLEET_FLEET ?? '{}') as FleetProcessConfig;
  const store = new EtcdStore({ endpoints: [cfg.endpoint] });
  const coordinator = await startCoordinator({
    store,
    job: cfg.job,
    instance: cfg.instance,
    maxInFlight: cfg.maxInFlight,
    ...(cfg.config ?? {}),
    planner: syntheticPlanner({ splits: cfg.splits, seed: cfg.seed, minUnits: cfg.minUnits, maxUnits: cfg.maxUnits }),
    handler: pacedHandler({
      unitMs: cfg.unitMs,
      commitEvery: cfg.commitEvery,
      drain: cfg.drain,
      slowDrainMs: cfg.slowDrainMs,
      onUnit: (id, unit, epoch) => emit({ ev: 'unit', id, unit, epoch }),
      onEvent: (e) => emit(e),
    }),
    logger: silentLogger,
  });
  emit({ ev: 'started', instance: cfg.instance });
  let leading = false;
  const poll = setInterval(() => {
    if (coordinator.isLeader !== leading) {
      leading = coordinator.isLeader;
      emit({ ev: leading ? 'leading' : 'not-leading' });
    }
  }, 50);
  process.on('SIGTERM', () => {
    void coordinator.stop().then(() => {
      emit({ ev: 'stopped' });
      process.exit(0);
    });
  });
  try {
    const verdict = await coordinator.done;
    emit({ ev: 'verdict', verdict });
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
