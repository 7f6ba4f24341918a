/**
 * Fleet members in this process on a real etcd: a coordinator on its own
 * EtcdStore running the synthetic job, its units and lane events fed to the
 * ledger; the knobs the failure tests share (memory-fleet.ts's); and a counter reader for the
 * coordinators' prom-client metrics.
 */
import { startCoordinator, type Coordinator } from '../../src/coordinator/coordinator.js';
import { silentLogger } from '../../src/coordinator/log.js';
import type { FleetProcessConfig } from '../../src/testing/fleet-config.js';
import { syntheticMember } from '../../src/testing/synthetic.js';
import { EtcdStore } from '../../src/store/etcd/etcd.js';
import type { Store } from '../../src/store/store.js';
import type { LaneEvent, Ledger } from '../../src/testing/ledger.js';

/** A member process's configuration (the synthetic job, its knobs), run in this process instead. */
export interface InProcessOptions extends Omit<FleetProcessConfig, 'endpoints' | 'root' | 'stats' | 'stopWithParent' | 'recordExtras'> {
  /** Wraps the member's own EtcdStore (fault injection). */
  wrapStore?: (store: Store) => Store;
}

export interface InProcessMember {
  instance: string;
  coordinator: Coordinator;
  store: EtcdStore;
  close(): Promise<void>;
}

/** A coordinator in this process, on its own EtcdStore, running the synthetic job. */
export async function startInProcess(o: InProcessOptions, ledger: Ledger): Promise<InProcessMember> {
  const store = new EtcdStore({ endpoints: [o.endpoint], opTimeoutMs: 2000 });
  const coordinator = await startCoordinator({
    store: o.wrapStore ? o.wrapStore(store) : store,
    job: o.job,
    instance: o.instance,
    maxInFlight: o.maxInFlight,
    ...(o.config ?? {}),
    ...syntheticMember(o, {
      onUnit: (id, unit, epoch) => ledger.unit({ instance: o.instance, id, unit, epoch, t: Date.now() }),
      onEvent: (e) => ledger.lane({ ...e, instance: o.instance, t: Date.now() } as LaneEvent),
    }),
    logger: silentLogger,
  });
  return {
    instance: o.instance,
    coordinator,
    store,
    close: async () => {
      await coordinator.close().catch(() => undefined);
      await store.close().catch(() => undefined);
    },
  };
}

/** The knobs these tests use unless a test says otherwise: the same as a MemoryStore fleet's. */
export { FAST } from './memory-fleet.js';

/** Sums a prom-client counter's values whose labels match. */
export async function counterValue(metric: { get(): Promise<{ values: { value: number; labels: Record<string, unknown> }[] }> | { values: { value: number; labels: Record<string, unknown> }[] } }, labels: Record<string, string> = {}): Promise<number> {
  const { values } = await metric.get();
  return values.filter((v) => Object.entries(labels).every(([k, x]) => v.labels[k] === x)).reduce((s, v) => s + v.value, 0);
}
