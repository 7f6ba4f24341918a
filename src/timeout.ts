/**
 * op_timeout: one store round trip's deadline. A request that outlives it is
 * reported as TIMEOUT (retryable); the request itself may still land, which
 * every caller tolerates because every write is a guarded transaction. The
 * deadline runs on the caller's clock (the injected one in the coordinator,
 * so a simulation's virtual time decides it, not the wall clock).
 */
import { systemClock, type Clock } from './clock.js';
import { SplitfleetError } from './errors.js';

export function withTimeout<T>(promise: Promise<T>, ms: number, what: string, clock: Clock = systemClock): Promise<T> {
  let cancel: (() => void) | undefined;
  const timeout = new Promise<never>((_, reject) => {
    cancel = clock.setTimer(
      ms,
      () => reject(new SplitfleetError('TIMEOUT', `${what} took longer than opTimeoutMs (${ms} ms)`, { retryable: true })),
    );
  });
  return Promise.race([promise, timeout]).finally(() => cancel?.());
}
