/**
 * The injected clock. Production code takes time from a `Clock`; pure code
 * takes it as an argument; simulation swaps in a `VirtualClock`.
 */

export interface Clock {
  /** Milliseconds on a monotonic-enough timeline (only differences matter). */
  now(): number;
  /** Calls `fn` after `ms`; returns a cancel function. */
  setTimer(ms: number, fn: () => void): () => void;
  /**
   * Epoch milliseconds, for times written to the store that other processes
   * read (a failed split's `notBefore`). Absent: `now()` is used (a virtual
   * clock's timeline is every simulated process's).
   */
  wallNow?(): number;
}

/** The time to write to the store (`clock.wallNow`, else `now`), a whole millisecond. */
export function wallTime(clock: Clock): number {
  return Math.floor(clock.wallNow ? clock.wallNow() : clock.now());
}

export const systemClock: Clock = {
  now: () => performance.now(),
  wallNow: () => Date.now(),
  setTimer(ms, fn) {
    const t = setTimeout(fn, ms);
    return () => clearTimeout(t);
  },
};

/** A clock that moves only when told to; timers fire in time order. */
export class VirtualClock implements Clock {
  private t = 0;
  private seq = 0;
  private timers: { at: number; seq: number; fn: () => void }[] = [];

  constructor(start = 0) {
    this.t = start;
  }

  now(): number {
    return this.t;
  }

  setTimer(ms: number, fn: () => void): () => void {
    const timer = { at: this.t + Math.max(0, ms), seq: this.seq++, fn };
    this.timers.push(timer);
    return () => {
      this.timers = this.timers.filter((x) => x !== timer);
    };
  }

  /** When the earliest pending timer falls due; undefined when none is pending. */
  nextTimerAt(): number | undefined {
    let at: number | undefined;
    for (const x of this.timers) if (at === undefined || x.at < at) at = x.at;
    return at;
  }

  /**
   * Fires only the earliest timer due at or before `until` (time moves to its
   * due time) and returns true; with none due, moves time to `until` (never
   * backwards) and returns false. A simulation calls this in a loop and
   * settles promise chains between calls, as Node runs microtasks between
   * timer callbacks.
   */
  step(until: number): boolean {
    let next: { at: number; seq: number; fn: () => void } | undefined;
    for (const x of this.timers) {
      if (x.at <= until && (!next || x.at < next.at || (x.at === next.at && x.seq < next.seq))) next = x;
    }
    if (!next) {
      this.t = Math.max(this.t, until);
      return false;
    }
    this.timers = this.timers.filter((x) => x !== next);
    this.t = Math.max(this.t, next.at);
    next.fn();
    return true;
  }

  /** Advances time by `ms`, firing every timer that falls due, in order. */
  advance(ms: number): void {
    const end = this.t + ms;
    for (;;) {
      let next: { at: number; seq: number; fn: () => void } | undefined;
      for (const x of this.timers) {
        if (x.at <= end && (!next || x.at < next.at || (x.at === next.at && x.seq < next.seq))) next = x;
      }
      if (!next) break;
      this.timers = this.timers.filter((x) => x !== next);
      this.t = Math.max(this.t, next.at);
      next.fn();
    }
    this.t = end;
  }
}
