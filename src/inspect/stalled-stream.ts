/**
 * When the dashboard drops an event stream whose client has stopped reading
 * (decision 0051). Such a client keeps its place among `maxClients` for as
 * long as its connection lives, and a few of them lock every viewer out.
 *
 * A stream is stalled while bytes wait for its socket (the kernel's buffers
 * to that client are full) and none has gone out since the last look. It is
 * dropped once it has been stalled for `stalledMs`, or at once when more than
 * `maxUnsentBytes` wait: a client that reads, however slowly, moves bytes;
 * one that is only far behind is dropped too, and its browser reconnects to
 * the latest view.
 *
 * `stallVerdict` is the rule, pure (time comes in as an argument); `watchStream`
 * applies it on a timer to what a sampler reads of the connection. Neither
 * touches the connection: the caller ends it.
 */

/** How long a stream may stay stalled, and how much may wait for it. */
export interface StallLimits {
  /** Time a client may read nothing while bytes wait for it, ms. */
  stalledMs: number;
  /** Bytes that may wait for a client; more, and it is dropped at once. */
  maxUnsentBytes: number;
}

/** Default `stalledMs`: long enough for a slow link to take one view, short enough to free a place soon. */
export const DEFAULT_STALLED_MS = 10_000;

/**
 * Default `maxUnsentBytes`. The stream writes a view only once the previous one has left (hono's
 * adapter waits for `drain`), so what waits is about one view; a view is cut to tens of KB (members
 * as counts, lists to 200 entries). The bound is a backstop should that ever stop holding.
 */
export const DEFAULT_MAX_UNSENT_BYTES = 8 * 1024 * 1024;

/** What is read of a connection at each look. */
export interface StreamSample {
  /** Bytes written to the response that the kernel has not taken yet. */
  unsent: number;
  /** Bytes the kernel has taken so far (only its growth matters). */
  sent: number;
}

/** What the rule remembers between two looks. */
export interface StallState {
  sent: number;
  /** When the stream was first seen stalled (undefined: it is not). */
  stalledSince: number | undefined;
}

export type StallVerdict = { kind: 'keep'; state: StallState } | { kind: 'drop'; reason: string };

/** The rule: keep the stream (with what to remember) or drop it, and why. */
export function stallVerdict(state: StallState, sample: StreamSample, limits: StallLimits, now: number): StallVerdict {
  if (sample.unsent > limits.maxUnsentBytes) {
    return { kind: 'drop', reason: `${sample.unsent} bytes wait for the client (more than ${limits.maxUnsentBytes})` };
  }
  if (sample.unsent === 0 || sample.sent !== state.sent) return { kind: 'keep', state: { sent: sample.sent, stalledSince: undefined } };
  const since = state.stalledSince ?? now;
  if (now - since >= limits.stalledMs) {
    return { kind: 'drop', reason: `the client has read nothing for ${now - since} ms while ${sample.unsent} bytes wait (the bound is ${limits.stalledMs} ms)` };
  }
  return { kind: 'keep', state: { sent: sample.sent, stalledSince: since } };
}

/**
 * Looks at a stream `sample()` describes a few times per `stalledMs` (at most every second) and
 * calls `drop(reason)` once when the rule says so. Returns the stop, for a stream that ends first.
 * A stream is dropped between `stalledMs` and `stalledMs` plus one look after it stalls.
 */
export function watchStream(sample: () => StreamSample, limits: StallLimits, drop: (reason: string) => void, now: () => number = Date.now): () => void {
  let state: StallState = { sent: sample().sent, stalledSince: undefined };
  const timer = setInterval(() => {
    const verdict = stallVerdict(state, sample(), limits, now());
    switch (verdict.kind) {
      case 'keep':
        state = verdict.state;
        return;
      case 'drop':
        clearInterval(timer);
        drop(verdict.reason);
        return;
    }
  }, Math.min(1000, Math.max(10, Math.floor(limits.stalledMs / 4))));
  // A look never keeps the process alive: the server's own handles do, while it serves.
  timer.unref();
  return () => clearInterval(timer);
}
