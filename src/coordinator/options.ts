/**
 * What `startCoordinator` takes (`CoordinatorOptions`), and the checks of the
 * parts that are not configuration knobs (handler or handlerModule, planner):
 * everything is refused before anything starts, with messages that name the
 * option and the rule. The knobs themselves are config.ts's (`resolveConfig`).
 * It starts nothing and holds no state.
 */
import type { Clock } from '../clock.js';
import { resolveConfig, type Config, type ConfigOptions } from '../config.js';
import { SplitfleetError } from '../errors.js';
import type { Store } from '../store/store.js';
import type { CoordinatorListeners } from './events.js';
import type { Logger } from './log.js';
import type { Metrics } from './metrics.js';
import type { Assigner } from './leader/publish.js';
import type { JobFinished } from './leader/finished-hook.js';
import type { Json, Planner, SplitHandler } from './types.js';

/**
 * What `startCoordinator` takes: the store, the job's planner and handler,
 * and every `ConfigOptions` knob. `Descriptor` and `Progress` type the job's
 * descriptors and progress (both default to `Json`; see `SplitHandle`).
 */
export interface CoordinatorOptions<Descriptor extends Json = Json, Progress extends Json = Json> extends ConfigOptions {
  /** The store: `EtcdStore` in production, `MemoryStore` for the demo and simulation. */
  store: Store;
  /**
   * Enumerates the job's splits; runs only while this instance leads.
   * NoInfer: the descriptor type comes from the handler or the type
   * arguments, and the planner is checked against it (inferring it from a
   * planner's literals would narrow it to whatever one plan happened to return).
   */
  planner: Planner<NoInfer<Descriptor>>;
  /** Processes one split in one lane. Give this or `handlerModule`. */
  handler?: SplitHandler<Descriptor, Progress>;
  /**
   * A module whose default export is the handler, run on worker threads (one
   * per lane), so a CPU-bound handler cannot stall the lease renewals: a
   * path (against the working directory) or a URL. Give this or `handler`.
   * The threads end with the coordinator (see `sandboxedHandler`).
   */
  handlerModule?: string | URL;
  /** Defaults to the system clock. */
  clock?: Clock;
  /** Defaults to pino on stderr at SPLITFLEET_LOG_LEVEL (default 'warn'). */
  logger?: Logger;
  /** Metrics to record into; defaults to a fresh registry (see `metrics.registry`). */
  metrics?: Metrics;
  /**
   * An object-form engine for the leader's decisions (tests, experiments):
   * given it, each decision builds the whole input as objects. Default: the
   * WASM engine on the leader's columns: the whole pool on this thread under
   * OFF_THREAD_SPLITS splits; above, the pool's slice (decisions 0045, 0047),
   * on an `AssignmentPool` thread only when the slice itself is that large
   * (docs/decisions/0006-when-decisions-leave-the-thread.md).
   */
  assigner?: Assigner;
  /** Lifecycle event listeners attached before start-up, so its events (health, a first term, first claims) are seen too. */
  on?: CoordinatorListeners;
  /**
   * Runs once per verdict across the whole fleet, on the leader (decision 0065): the job's
   * processes stay until it returned and the leader recorded it. A leader lost while it runs is
   * replaced by one that runs it again (at least once: `finished.key` names the verdict, for a
   * hook that must stay idempotent); a hook that throws is run again (1 s doubling to 60 s).
   * Give it to every process of the job.
   */
  onJobFinished?: (finished: JobFinished) => unknown;
}

/** The options that are parts, not knobs: left out of `resolveConfig`. */
const PARTS = new Set(['store', 'planner', 'handler', 'handlerModule', 'clock', 'logger', 'metrics', 'assigner', 'on', 'onJobFinished']);

/** Checks the options and resolves the knobs; throws INVALID_CONFIG naming the option and the rule. */
export function resolveOptions(options: CoordinatorOptions): Config {
  const configOptions = Object.fromEntries(Object.entries(options).filter(([k]) => !PARTS.has(k))) as unknown as ConfigOptions;
  const config = resolveConfig(configOptions);
  if (options.handler !== undefined && options.handlerModule !== undefined) {
    throw new SplitfleetError('INVALID_CONFIG', 'handler, handlerModule: give one of them, not both');
  }
  if (options.handlerModule === undefined && typeof options.handler !== 'function') {
    throw new SplitfleetError('INVALID_CONFIG', 'handler: must be a function (split) => Promise<void> (or give handlerModule, a module path or URL)');
  }
  if (options.handlerModule !== undefined && typeof options.handlerModule !== 'string' && !(options.handlerModule instanceof URL)) {
    throw new SplitfleetError('INVALID_CONFIG', `handlerModule: must be a module path or a URL (got ${typeof options.handlerModule})`);
  }
  if (typeof options.planner !== 'function') throw new SplitfleetError('INVALID_CONFIG', 'planner: must be a function (context) => { splits, final }');
  return config;
}
