/**
 * The one synthetic job every system of bench:peers runs: items with
 * lognormal unit counts (σ ≈ 1.5, so a few items carry much of the work;
 * giant: σ 1 and one item carrying a set share of the whole), the same for a seed in the parent and in every worker process, and the
 * worker protocol (configuration in, JSON lines out) the three systems share.
 */
import { prng } from '../../src/prng.js';

export interface ItemsSpec {
  count: number;
  seed: number;
  /** Median units of an item (lognormal); 0 with sigma 0 gives 1 unit each (tiny items). */
  medianUnits: number;
  sigma: number;
  maxUnits: number;
  /**
   * giant: one more item, first in the list, carrying this share of the job's units (0.4: 40 %).
   * First so that a queue that cannot divide starts it at once (its best case: the makespan is
   * then about the giant's own length); uncapped by maxUnits.
   */
  giantShare?: number;
}

export interface Item {
  id: string;
  units: number;
}

/** Box–Muller over the project's PRNG: deterministic for a seed. */
export function peerItems(spec: ItemsSpec): Item[] {
  const rnd = prng(spec.seed);
  const width = String(spec.count - 1).length;
  const out: Item[] = [];
  for (let i = 0; i < spec.count; i++) {
    const z = Math.sqrt(-2 * Math.log(1 - rnd())) * Math.cos(2 * Math.PI * rnd());
    const units = spec.sigma === 0 ? Math.max(1, Math.round(spec.medianUnits)) : Math.round(spec.medianUnits * Math.exp(spec.sigma * z));
    out.push({ id: `it-${String(i).padStart(width, '0')}`, units: Math.min(spec.maxUnits, Math.max(1, units)) });
  }
  if (spec.giantShare === undefined) return out;
  // g / (rest + g) = share
  const rest = out.reduce((a, i) => a + i.units, 0);
  return [{ id: 'it-giant', units: Math.max(1, Math.round((rest * spec.giantShare) / (1 - spec.giantShare))) }, ...out];
}

export type SystemName = 'splitfleet' | 'bullmq' | 'redis-locks';
export const SYSTEMS: readonly SystemName[] = ['splitfleet', 'bullmq', 'redis-locks'];

/** SPLITFLEET_PEER (JSON) of one worker process. */
export interface PeerWorkerConfig {
  system: SystemName;
  worker: string;
  lanes: number;
  items: ItemsSpec;
  unitMs: number;
  commitEvery: number;
  /** Lease / lock duration (ms), the same for the three systems. */
  leaseMs: number;
  /** etcd client URL (splitfleet) or redis://host:port (the others). */
  endpoint: string;
  /** Job name (splitfleet), queue name (BullMQ), key prefix (locks). */
  job: string;
}

/**
 * One stdout line of a worker. `ready` (connected, waiting for the parent's
 * `go`), `start` {id, from} (an attempt begins at unit `from`), `unit` {id, u}
 * (unit u, 1-based, processed), `commit` {id, u, ok} (progress u acknowledged by
 * the store, or refused), `done` {id, ok} (the item's completion acknowledged
 * or refused), `abort` {id} (the attempt stopped: lease or lock lost),
 * `finished` (splitfleet: the job's verdict is complete), `divided` {id, p, r}
 * (splitfleet: a division of part p of item id landed, creating part r). `n` is
 * the worker's attempt number (an attempt is w/n). `t` is Date.now() when the
 * store answered. `id` is always the item's, `u` its unit number, whatever the
 * part: so a unit processed in a parent and again in a residual is a duplicate.
 */
export interface PeerLine {
  ev: 'ready' | 'start' | 'unit' | 'commit' | 'done' | 'abort' | 'finished' | 'divided' | 'error';
  t: number;
  w: string;
  id?: string;
  /** The part of item `id` the line is about, when a division made it (splitfleet's split id); absent: the item itself. */
  p?: string;
  /** `divided`: the residual's split id (a new part of item `id`). */
  r?: string;
  u?: number;
  n?: number;
  from?: number;
  ok?: boolean;
  /** When a write (`commit`, `done`) was sent; `t` is when its answer came. */
  s?: number;
  message?: string;
}

export const sleep = (ms: number, signal?: AbortSignal): Promise<void> =>
  new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const done = () => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal?.addEventListener('abort', done, { once: true });
  });
