/**
 * RevisionFloor: a store's revision never goes back. Every etcd write and
 * transaction is linearizable, so one sent after a response reported
 * revision R is answered at R or later, whichever cluster member serves it.
 * A lower answer means the store's history went back: etcd restored from a
 * snapshot without `--bump-revision --mark-compacted`, or endpoints that now
 * reach another cluster. Every view and fence of a process rests on the
 * revisions it has seen, which the store would now hand out again (decision
 * 0062). Only revisions known when a request was sent are compared:
 * concurrent requests may answer out of order.
 */
export class RevisionFloor {
  private highest = 0;

  constructor(private readonly onRegress: (known: number, answered: number) => void) {}

  /** The highest revision a response has reported so far (what a request sent now must not answer below). */
  get known(): number {
    return this.highest;
  }

  /** A request sent when `known` was `sentAt` was answered at `revision`. */
  answered(sentAt: number, revision: number): void {
    if (revision < sentAt) this.onRegress(sentAt, revision);
    else if (revision > this.highest) this.highest = revision;
  }
}
