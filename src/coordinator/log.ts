/**
 * Logging: pino, structured. The coordinator takes any object with pino's
 * four level methods; by default it logs warnings and errors to stderr
 * (level from SPLITFLEET_LOG_LEVEL). Nothing logged carries credentials: the
 * store options are never logged.
 */
import { pino } from 'pino';

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
