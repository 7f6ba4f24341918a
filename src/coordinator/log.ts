/**
 * Logging: pino, structured. The coordinator takes any object with pino's
 * four level methods; by default it logs warnings and errors to stderr
 * (level from SPLITFLEET_LOG_LEVEL). Nothing logged carries credentials: the
 * store options are never logged.
 */
import { pino } from 'pino';
import type { SplitfleetError } from '../errors.js';

export interface Logger {
  debug(obj: object, msg?: string): void;
  info(obj: object, msg?: string): void;
  warn(obj: object, msg?: string): void;
  error(obj: object, msg?: string): void;
}

/** The default logger: pino to stderr, level SPLITFLEET_LOG_LEVEL or 'warn'. */
export function defaultLogger(bindings: Record<string, string>): Logger {
  return pino({ level: process.env.SPLITFLEET_LOG_LEVEL ?? 'warn', base: bindings }, pino.destination(2));
}

/** A logger that drops everything. */
export const silentLogger: Logger = { debug() {}, info() {}, warn() {}, error() {} };

/** Logs a record that cannot be read once per key and problem (bounded: a flood is still counted by the caller). */
export class UnreadableReporter {
  private readonly said = new Set<string>();

  constructor(private readonly log: Logger) {}

  report(key: string, e: SplitfleetError): void {
    const said = `${key}\u0000${e.message}`;
    if (this.said.has(said)) return;
    if (this.said.size > 10_000) this.said.clear();
    this.said.add(said);
    this.log.error({ key, code: e.code, err: e.message }, 'a record cannot be read; only what it concerns is set aside');
  }
}

/** At most this many warnings per window reach the logger (`rateLimitWarnings`). */
export const WARNINGS_PER_WINDOW = 100;
export const WARNING_WINDOW_MS = 60_000;

/**
 * `log` with an overall rate limit on warnings, beside the per-key
 * de-duplication of its callers: at most `max` per `windowMs`; the rest of
 * the window's are dropped and counted, and one summary ("suppressed K
 * warnings") is logged when the window ends. A flood of distinct warnings
 * (a hostile writer touching thousands of keys) cannot then flood the log.
 * Errors and the other levels pass untouched.
 */
export function rateLimitWarnings(log: Logger, clock: { now(): number; setTimer(ms: number, fn: () => void): () => void }, max = WARNINGS_PER_WINDOW, windowMs = WARNING_WINDOW_MS): Logger {
  let windowStart = -Infinity;
  let sent = 0;
  let suppressed = 0;
  let summaryArmed = false;
  const summarise = (): void => {
    summaryArmed = false;
    if (suppressed === 0) return;
    log.warn({ suppressed, windowMs }, `suppressed ${suppressed} warning${suppressed === 1 ? '' : 's'} (more than ${max} in ${windowMs / 1000} s)`);
    suppressed = 0;
  };
  return {
    debug: (obj, msg) => log.debug(obj, msg),
    info: (obj, msg) => log.info(obj, msg),
    error: (obj, msg) => log.error(obj, msg),
    warn: (obj, msg) => {
      const now = clock.now();
      if (now - windowStart >= windowMs) {
        windowStart = now;
        sent = 0;
      }
      if (sent < max) {
        sent++;
        log.warn(obj, msg);
        return;
      }
      suppressed++;
      if (!summaryArmed) {
        summaryArmed = true;
        clock.setTimer(windowStart + windowMs - now, summarise);
      }
    },
  };
}
