/**
 * OwnWrites: the leader's own seeding writes, remembered by the revision of
 * the transaction that made them, so that their echo on the leader's watch
 * is applied from what was written instead of being decoded again (issue 30:
 * at 1M splits, decoding its own two million seeding records was ~10 % of the
 * leader's CPU while seeding, and the garbage a sixth of its collections).
 *
 * Why a revision identifies them: etcd gives every transaction a revision of
 * its own, so a put at revision R of a key this leader's transaction R wrote
 * is that write, whoever else writes the key before or after. The echo is
 * still applied in revision order, when the watch delivers it; only its
 * decoding is skipped.
 *
 * Bounded: entries are added only for revisions the watch has not delivered
 * yet, and taken as their echoes arrive; a watch that restarts from a
 * listing clears them (the listing decodes everything).
 *
 * No I/O, no clock.
 */

/** What one seeding put wrote: a spec (with its weight) or an initial split record. */
export type OwnWrite = { readonly kind: 'spec'; readonly id: string; readonly weight: number } | { readonly kind: 'split'; readonly id: string };

export class OwnWrites {
  private readonly byRevision = new Map<number, Map<string, OwnWrite>>();
  /** Who waits for the echoes to catch up (`atMost`). */
  private waiters: { limit: number; resolve: () => void }[] = [];

  get size(): number {
    return this.byRevision.size;
  }

  /** Remembers the puts of the transaction that landed at `revision` (key → what it wrote). */
  expect(revision: number, writes: ReadonlyMap<string, OwnWrite>): void {
    if (writes.size > 0) this.byRevision.set(revision, new Map(writes));
  }

  /** The own write of `key` at `revision`, if it is one (taken: an echo is applied once). */
  take(revision: number, key: string): OwnWrite | undefined {
    const m = this.byRevision.get(revision);
    const w = m?.get(key);
    if (w === undefined) return undefined;
    m!.delete(key);
    if (m!.size === 0) {
      this.byRevision.delete(revision);
      this.wake();
    }
    return w;
  }

  /** Forgets writes of revisions up to `revision` (their echoes were delivered, or never will be). */
  dropThrough(revision: number): void {
    for (const r of this.byRevision.keys()) if (r <= revision) this.byRevision.delete(r);
    this.wake();
  }

  /**
   * Resolves once at most `limit` transactions' echoes are outstanding (or the
   * writes are cleared). Seeding waits on it: a leader that writes faster than
   * its watch delivers lets etcd batch up to a thousand revisions into one
   * watch response, tens of megabytes decoded in one turn of its loop.
   */
  atMost(limit: number): Promise<void> {
    if (this.byRevision.size <= limit) return Promise.resolve();
    return new Promise((resolve) => this.waiters.push({ limit, resolve }));
  }

  clear(): void {
    this.byRevision.clear();
    this.wake();
  }

  private wake(): void {
    if (this.waiters.length === 0) return;
    const still: typeof this.waiters = [];
    for (const w of this.waiters) (this.byRevision.size <= w.limit ? w.resolve() : still.push(w));
    this.waiters = still;
  }
}
