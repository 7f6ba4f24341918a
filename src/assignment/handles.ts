/**
 * Owner handles: each distinct owner string (a lease owner, previous
 * assignee or record owner) gets a small integer, in order of first use, so
 * owner columns are Int32Arrays and the engine maps handles to members once
 * per decision (HANDLE_MAP). −1 is "no owner". Used by `ColumnarPool` and by
 * the pool's object tasks. Pure.
 */
export class OwnerHandles {
  private readonly byId = new Map<string, number>();
  /** Handle h's owner id. */
  readonly ids: string[] = [];

  /** The handle of `owner` (a new one on first use). */
  of(owner: string): number {
    let h = this.byId.get(owner);
    if (h === undefined) {
      h = this.ids.length;
      this.byId.set(owner, h);
      this.ids.push(owner);
    }
    return h;
  }
}
