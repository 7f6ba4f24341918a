/**
 * ChangeBatcher: coalesces the changes a view applies in one turn (the
 * events of one watch response, say) into one notification, delivered on a
 * microtask, to each of its listeners. Shared by the worker's and the
 * leader's views, so listeners run once per batch, never per event, and never
 * inside the view's own update.
 */
export class ChangeBatcher<C> {
  private pending: C | undefined;
  private listeners: ((batch: C) => void)[] = [];

  constructor(
    /** Folds `more` into `into` (mutating it). */
    private readonly merge: (into: C, more: C) => void,
    /** No batch is delivered while this says so (a failed or closed view). */
    private readonly silenced: () => boolean,
  ) {}

  subscribe(listener: (batch: C) => void): void {
    this.listeners.push(listener);
  }

  /** Forgets every listener (the view closed). */
  clear(): void {
    this.listeners = [];
  }

  add(change: C): void {
    if (this.pending !== undefined) {
      this.merge(this.pending, change);
      return;
    }
    this.pending = change;
    queueMicrotask(() => {
      const batch = this.pending!;
      this.pending = undefined;
      if (this.silenced()) return;
      for (const l of this.listeners) l(batch);
    });
  }
}
