/**
 * WritePipeline: seeding's writes in flight, at most `limit` at once, with
 * none of their failures dropped.
 *
 * Why a class: a set of promises raced with `Promise.race` and drained with
 * `Promise.all` loses a rejection whenever the write settles between two
 * races and removes itself from the set first. Seeding then went on and
 * wrote a final plan that left out the page whose write had failed (the
 * packed hostile simulation: 26 splits planned of 27).
 *
 * Invariants: the first failure is kept and thrown by the next `add` or by
 * `drain`; a write's own promise is always handled here (no unhandled
 * rejection, whichever call sees it). No I/O of its own.
 */
export class WritePipeline {
  private readonly inFlight = new Set<Promise<void>>();
  private failure: { error: unknown } | undefined;

  constructor(private readonly limit: number) {}

  /** Tracks `write`; waits while `limit` writes are in flight; throws the first failure seen so far. */
  async add(write: Promise<void>): Promise<void> {
    // Handled before anything can throw: a write passed after a failure must not reject unhandled.
    const p: Promise<void> = write
      .catch((error: unknown) => {
        this.failure ??= { error };
      })
      .finally(() => this.inFlight.delete(p));
    this.inFlight.add(p);
    if (this.inFlight.size >= this.limit) await Promise.race(this.inFlight);
    this.throwIfFailed();
  }

  /** Waits for every write in flight; throws the first failure, if any. */
  async drain(): Promise<void> {
    await Promise.all(this.inFlight);
    this.throwIfFailed();
  }

  private throwIfFailed(): void {
    if (this.failure) throw this.failure.error;
  }
}
