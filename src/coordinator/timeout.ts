/**
 * op_timeout: one store round trip's deadline. A request that outlives it is
 * reported as TIMEOUT (retryable); the request itself may still land, which
 * every caller tolerates because every write is a guarded transaction.
 */
import { SplitfleetError } from '../errors.js';

export function withTimeout<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new SplitfleetError('TIMEOUT', `${what} took longer than opTimeoutMs (${ms} ms)`, { retryable: true })),
      ms,
    );
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}
