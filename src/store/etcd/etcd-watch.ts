/**
 * The bookkeeping of one etcd watch: the resume point, dropping what was
 * already delivered, and handing events on in chunks. etcd.ts feeds it the
 * watcher's responses; this file knows nothing of etcd3 (the event type is a
 * parameter).
 *
 * Invariants: after any break the watch resumes from the last revision
 * received + 1 (etcd3 would resume from the last response header, which can
 * skip events during a catch-up), and an event at or below it is dropped, so
 * nothing is lost or delivered twice; nothing is delivered after `stop()`.
 */

/** Watch events handed on per turn of the event loop. */
export const DELIVERY_CHUNK = 500;

export class WatchDelivery<E> {
  /** The last revision received (delivered or queued); undefined until known. */
  private lastSeen: number | undefined;
  private stopped = false;
  // Received events wait here and are handed on at most DELIVERY_CHUNK per turn of the event
  // loop: a watch catching up gets up to a thousand revisions in one response, and handing them
  // all on at once would hold the loop (and the session's renewal timer) for as long.
  private queue: E[] = [];
  private head = 0;
  private draining = false;

  /** `fromRevision`: the first revision wanted, or undefined for "from now". */
  constructor(
    private readonly revisionOf: (event: E) => number,
    private readonly deliver: (event: E) => void,
    fromRevision?: number,
  ) {
    this.lastSeen = fromRevision === undefined ? undefined : fromRevision - 1;
  }

  get isStopped(): boolean {
    return this.stopped;
  }

  /** The revision to resume from after a break; undefined while "now" is not known yet. */
  get resumeRevision(): number | undefined {
    return this.lastSeen === undefined ? undefined : this.lastSeen + 1;
  }

  /** etcd confirmed the watch at `headerRevision`: a watch "from now" starts after it. */
  connected(headerRevision: number): void {
    if (this.lastSeen === undefined) this.lastSeen = headerRevision;
  }

  /** One watch response: its events, and its header's revision. */
  received(events: readonly E[], headerRevision: number): void {
    if (this.stopped) return;
    const floor = this.lastSeen ?? 0;
    let seen = floor;
    for (const ev of events) {
      const rev = this.revisionOf(ev);
      if (rev <= floor) continue;
      this.queue.push(ev);
      seen = Math.max(seen, rev);
    }
    // An empty response is a progress notification: etcd sends them only to caught-up watchers.
    if (events.length === 0) seen = Math.max(seen, headerRevision);
    // The resume point follows what was received: what is queued is delivered from memory.
    this.lastSeen = seen;
    if (!this.draining) this.drain();
  }

  /** Stops delivery; false when it was already stopped. */
  stop(): boolean {
    if (this.stopped) return false;
    this.stopped = true;
    return true;
  }

  private drain = (): void => {
    this.draining = false;
    let n = 0;
    while (this.head < this.queue.length && !this.stopped) {
      if (n++ === DELIVERY_CHUNK) {
        this.draining = true;
        setImmediate(this.drain);
        return;
      }
      this.deliver(this.queue[this.head++]!);
    }
    this.queue = [];
    this.head = 0;
  };
}
