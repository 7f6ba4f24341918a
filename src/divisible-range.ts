/**
 * divisibleRange: a handler's helper for the common divisible source, a
 * range of numbered units (bytes of an object, rows by index, files of a
 * listing), so that a handler divides (decision 0063) without writing the
 * rules itself. It plays the part of Beam's offset-range restriction tracker:
 * the handler takes units with `next`, the helper answers the leader's
 * division requests, and no unit is handed out on both sides of a division.
 *
 * Invariants:
 * - Units are handed out in order, each once, from the committed position
 *   (or the range's start) up to the part's end.
 * - A division splits at or after the last unit handed out, so nothing
 *   handed out is in the residual; while it is in flight, nothing past its
 *   proposed end is handed out, and once it is known (landed or not) the
 *   end is the primary's or the old one. A division whose outcome the lane
 *   could not learn (the split lost) ends the hand-out: nothing more.
 * - The residual's descriptor is the split's with the range replaced (or
 *   what `options.residual` makes), its weight the part's pro rata.
 */
import { SplitfleetError } from './errors.js';
import type { Json, SplitHandle } from './coordinator/types.js';

/** How `divisibleRange` reads the range from the descriptor and builds a residual's. */
export interface DivisibleRangeOptions {
  /** The descriptor's fields holding the range [from, to): default 'from' and 'to'. */
  fromField?: string;
  toField?: string;
  /** The least units a residual (and the primary part past what is handed out) may have. Default 1. */
  minUnits?: number;
  /** The residual's descriptor for units [from, to); default: the split's descriptor with the two fields replaced. */
  residual?: (from: number, to: number) => Json;
}

/** A run of units handed out: [from, to). */
export interface UnitRun {
  readonly from: number;
  readonly to: number;
}

/** A split's range of units as its handler takes them, divisible by the leader's requests (`divisibleRange`). */
export interface DivisibleRange {
  /** The next unit not handed out yet. */
  readonly position: number;
  /** The part's end (exclusive): the range's, or the primary's after a division. */
  readonly end: number;
  /** The share of the part handed out, 0 to 1 (what `commit` reports as `done`). */
  readonly done: number;
  /** Hands out up to `maxUnits` units from the position; undefined once the part is done. Waits while a division that would cut them is in flight. */
  next(maxUnits: number): Promise<UnitRun | undefined>;
  /** Commits the position (every unit before it is done) and the share done. */
  commit(): Promise<void>;
  /**
   * Reports the position and the share done without waiting (`split.advance`): the lane commits
   * the latest within `autoCommitMs`, so the handler goes on while the commit is in flight. A
   * takeover may redo the units since the last commit that landed (at least once, as ever).
   */
  advance(): void;
  /** Completes the split at the position. */
  complete(): Promise<void>;
}

/** A divisible range over `split`'s descriptor `{ from, to }` (resuming from its committed position and end). */
export function divisibleRange(split: SplitHandle, options: DivisibleRangeOptions = {}): DivisibleRange {
  const fromField = options.fromField ?? 'from';
  const toField = options.toField ?? 'to';
  const minUnits = options.minUnits ?? 1;
  const d = split.descriptor as Record<string, Json> | null;
  const from = d?.[fromField];
  const to = d?.[toField];
  if (typeof from !== 'number' || typeof to !== 'number' || !Number.isSafeInteger(from) || !Number.isSafeInteger(to) || from > to) {
    throw new SplitfleetError('INVALID_INPUT', `split ${split.id}: descriptor.${fromField} and descriptor.${toField} must be integers with ${fromField} ≤ ${toField} (got ${String(from)}, ${String(to)})`);
  }
  if (!Number.isSafeInteger(minUnits) || minUnits < 1) throw new SplitfleetError('INVALID_INPUT', `divisibleRange options.minUnits: must be an integer ≥ 1 (got ${String(minUnits)})`);
  const residualOf = options.residual ?? ((a: number, b: number): Json => ({ ...(d ?? {}), [fromField]: a, [toField]: b }));
  let position = typeof split.progress === 'number' ? split.progress : from;
  let end = typeof split.end === 'number' ? split.end : to;
  /** A division in flight: its proposed end, and its outcome. */
  let pending: { at: number; landed: Promise<boolean> } | undefined;
  let lost = false;

  split.onDivide(async (request) => {
    if (pending) return; // one at a time (the lane asks one at a time too)
    const left = end - position;
    const at = position + Math.ceil(left * (1 - request.share));
    if (at >= end || end - at < minUnits || at - position < minUnits) return; // too small: decline
    const units = end - from;
    const weight = Math.max(1, Math.round((request.weight * (end - at)) / Math.max(1, units)));
    const landed = request.divide({
      end: at, residual: { descriptor: residualOf(at, end), weight }, weight: Math.max(1, request.weight - weight),
      done: units === 0 ? 1 : Math.min(1, (position - from) / (at - from)),
    });
    pending = { at, landed };
    try {
      if (await landed) end = at;
    } catch {
      lost = true; // no longer ours, the outcome unknown: hand out nothing more
    } finally {
      pending = undefined;
    }
  });

  const range: DivisibleRange = {
    get position() {
      return position;
    },
    get end() {
      return end;
    },
    get done() {
      return end === from ? 1 : Math.min(1, (position - from) / (end - from));
    },
    async next(maxUnits: number) {
      if (!Number.isSafeInteger(maxUnits) || maxUnits < 1) throw new SplitfleetError('INVALID_INPUT', `next(maxUnits): must be an integer ≥ 1 (got ${String(maxUnits)})`);
      // A division in flight whose end we have reached: its outcome decides where the part ends.
      while (pending && position >= pending.at) await pending.landed.catch(() => false);
      const limit = pending ? Math.min(end, pending.at) : end;
      if (lost || position >= limit) return undefined;
      const run = { from: position, to: Math.min(limit, position + maxUnits) };
      position = run.to;
      return run;
    },
    commit: () => split.commit(position, { done: range.done }),
    advance: () => split.advance(position, { done: range.done }),
    complete: () => split.complete(position),
  };
  return range;
}
