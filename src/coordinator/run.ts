/**
 * run(): a coordinator's whole life in one call, for a process that is one
 * member of a fleet. It listens for the given signals, stops gracefully on
 * the first (drain and release every lane, resign, revoke the lease), and
 * resolves once the coordinator has ended, however it ended: the job's
 * verdict, or 'stopped'. The listeners are removed before it resolves, so a
 * signal after that has Node's default effect again.
 *
 * A second signal while the graceful stop is under way closes abruptly
 * (lanes dropped without a write; their splits replay elsewhere from their
 * last commit once the lease expires): an operator pressing Ctrl-C twice
 * wants out now. Kubernetes sends SIGTERM once and then SIGKILL after
 * `terminationGracePeriodSeconds`, so there only the first one matters.
 *
 * A fatal error rejects, as `done` does.
 */
import { constants } from 'node:os';
import { SplitfleetError } from '../errors.js';
import type { Logger } from './log.js';
import type { RunOutcome } from './types.js';

/** What `run()` listens for. */
export interface RunOptions {
  /** Signals that stop the coordinator gracefully. Default `['SIGTERM', 'SIGINT']`; `[]` listens to none. */
  signals?: readonly NodeJS.Signals[];
}

/** What `run()` resolves with. */
export interface RunResult {
  /** The job's verdict, or 'stopped' when the coordinator ended before one. */
  outcome: RunOutcome;
  /** The signal that stopped it, when one did. */
  signal?: NodeJS.Signals;
  /** True when a second signal closed it abruptly instead of waiting for the drain. */
  forced: boolean;
}

/** The part of a coordinator run() drives. */
export interface Runnable {
  readonly done: Promise<RunOutcome>;
  stop(): Promise<void>;
  close(): Promise<void>;
}

export const DEFAULT_SIGNALS: readonly NodeJS.Signals[] = ['SIGTERM', 'SIGINT'];

/** Signals a process cannot listen for. */
const UNCATCHABLE = new Set(['SIGKILL', 'SIGSTOP']);

export function validateSignals(signals: unknown): readonly NodeJS.Signals[] {
  if (!Array.isArray(signals)) throw new SplitfleetError('INVALID_CONFIG', `run: signals must be an array of signal names, got ${typeof signals}`);
  signals.forEach((s, i) => {
    if (typeof s !== 'string' || !(s in constants.signals) || UNCATCHABLE.has(s)) {
      throw new SplitfleetError('INVALID_CONFIG', `run: signals[${i}] must be the name of a signal a process can catch (such as 'SIGTERM'), got ${JSON.stringify(s)}`);
    }
  });
  return signals as NodeJS.Signals[];
}

export async function runCoordinator(c: Runnable, log: Logger, options: RunOptions = {}): Promise<RunResult> {
  const signals = [...new Set(validateSignals(options.signals ?? DEFAULT_SIGNALS))];
  let signal: NodeJS.Signals | undefined;
  let forced = false;
  let ending: Promise<unknown> = Promise.resolve();
  let endError: unknown;
  const onSignal = (received: NodeJS.Signals): void => {
    if (signal === undefined) {
      signal = received;
      log.info({ signal: received }, `${received}: stopping gracefully (drain, release, resign); send it again to close at once`);
      ending = c.stop().catch((e: unknown) => (endError = e));
      return;
    }
    if (forced) return;
    forced = true;
    log.warn({ signal: received }, `${received} again: closing at once (lanes dropped, their splits replay elsewhere after the lease)`);
    // Not waiting for the stop as well: close() ends the lanes the drain was waiting for.
    ending = c.close().catch((e: unknown) => (endError = e));
  };
  for (const s of signals) process.on(s, onSignal);
  try {
    const outcome = await c.done;
    await ending;
    if (endError !== undefined) throw endError;
    return { outcome, ...(signal !== undefined ? { signal } : {}), forced };
  } finally {
    for (const s of signals) process.off(s, onSignal);
  }
}
