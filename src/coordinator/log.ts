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
