/**
 * Driving a VirtualClock from a test: move time timer by timer, settling the
 * promise chains each timer starts, until a moment, a condition or a promise
 * settles. One home for what the MemoryStore + VirtualClock integration tests
 * (hostile records, failure policy, heartbeat timeout) all need.
 */
import type { VirtualClock } from '../../src/clock.js';

export const flush = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/** Moves virtual time to `until`, one timer at a time, settling promise chains after each. */
export async function runUntil(clock: VirtualClock, until: number): Promise<void> {
  for (let i = 0; i < 100_000 && clock.step(until); i++) await flush();
  await flush();
}

/** Steps time (`stepMs` at a time, up to `ms` of it) until `check` holds; false if it never did. */
export async function stepUntil(clock: VirtualClock, check: () => boolean, ms: number, stepMs = 50): Promise<boolean> {
  const end = clock.now() + ms;
  while (!check() && clock.now() < end) await runUntil(clock, clock.now() + stepMs);
  return check();
}

/** Settles a promise that needs virtual time to settle (a start, an operator action). */
export async function settle<T>(clock: VirtualClock, p: Promise<T>): Promise<T> {
  let out: { ok: true; v: T } | { ok: false; e: unknown } | undefined;
  p.then((v) => (out = { ok: true, v }), (e) => (out = { ok: false, e }));
  for (let i = 0; i < 1000 && !out; i++) await runUntil(clock, clock.now() + 10);
  if (!out) throw new Error('did not settle');
  if (!out.ok) throw out.e;
  return out.v;
}
