/**
 * ChangeBatcher: coalesces the changes a view applies in one turn (the
 * events of one watch response, say) into one notification, delivered on a
 * microtask. Shared by the worker's and the leader's views, so listeners run
 * once per batch, never per event, and never inside the view's own update.
 */
export class ChangeBatcher<C> {
  private pending: C | undefined;

  constructor(
    /** Folds `more` into `into` (mutating it). */
    private readonly merge: (into: C, more: C) => void,
    /** Hands a batch on; not called while `silenced()` says so. */
    private readonly deliver: (batch: C) => void,
    private readonly silenced: () => boolean,
  ) {}

  add(change: C): void {
    if (this.pending !== undefined) {
      this.merge(this.pending, change);
      return;
    }
    this.pending = change;
    queueMicrotask(() => {
      const batch = this.pending!;
      this.pending = undefined;
      if (!this.silenced()) this.deliver(batch);
    });
  }
}
