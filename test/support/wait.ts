/**
 * Bounded polling for tests and benches: wait until a condition holds, or
 * fail after a deadline with a message naming what was awaited (and, when
 * given, a description of the state last seen). No timing is asserted: the
 * deadline only turns a hang into a readable failure.
 *
 * Framework-free (no vitest import), so benches compiled by tsc can use it.
 */

/** Resolves after `ms`. */
export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

export interface WaitOptions {
  /** Give up after this many ms (default 15 000). */
  timeoutMs?: number;
  /** Pause between checks (default 25 ms). */
  intervalMs?: number;
  /** Appended to the timeout message: what the state looked like at the end. */
  describe?: () => string | Promise<string>;
}

/**
 * Polls `check` until it returns a value other than `undefined`/`false`, and
 * returns that value. A check that throws fails the wait at once.
 */
export async function waitUntil<T>(
  what: string,
  check: () => T | undefined | false | Promise<T | undefined | false>,
  options: WaitOptions = {},
): Promise<T> {
  const timeoutMs = options.timeoutMs ?? 15_000;
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await check();
    if (v !== undefined && v !== false) return v;
    if (Date.now() > deadline) {
      const state = options.describe ? `; last seen: ${await options.describe()}` : '';
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${state}`);
    }
    await sleep(options.intervalMs ?? 25);
  }
}

/** Resolves with `promise`'s outcome, or rejects naming `what` after `ms`. */
export async function within<T>(what: string, promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      promise,
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms waiting for ${what}`)), ms);
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}
