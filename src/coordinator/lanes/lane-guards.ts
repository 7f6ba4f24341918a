/**
 * LaneGuards: what a lane's next write is guarded by, and how it learns the
 * outcome of a write whose reply was lost. It keeps the split record and its
 * revision as the lane's claim or last write left them, the committed
 * progress and the revision of `progress.{id}`, and the write of unknown
 * outcome, if any. The compares themselves are `laneTxn`'s and the verdict
 * on a read-back is `readBackVerdict`'s (protocol/); this file keeps their
 * inputs current.
 *
 * Invariant: the revisions change only by `adopt`, with the revision of a
 * write that is known to have landed, so a guard is never older than the
 * lane's own last write and never newer than what the store holds.
 */
import { SplitfleetError } from '../../errors.js';
import { readBackVerdict, type LaneWrite } from '../../protocol/lanes.js';
import type { Json, ProgressRecord, SplitRecord } from '../../protocol/records.js';
import { readBackTxn, type LaneFence } from '../../protocol/txns.js';
import type { Store } from '../../store/store.js';

/** Where a lane's guards start: the records and revisions its claim wrote or read. */
export interface LaneGuardsStart {
  prefix: string;
  id: string;
  leaseId: string;
  record: SplitRecord;
  revision: number;
  progress: Json;
  /** modRevision of `progress.{id}` as read at the claim (0: no such key yet). */
  progressRevision: number;
  /** The `progress.{id}` record as read at the claim (its newer-minor fields are kept on rewrite). */
  progressRecord?: ProgressRecord;
}

/** A write's outcome: won at `revision`, or fenced out (the store was at `revision`). */
export interface WriteOutcome {
  won: boolean;
  revision: number;
}

export class LaneGuards {
  private rec: SplitRecord;
  private rev: number;
  private progress: Json;
  private progressRev: number;
  private progressRec: ProgressRecord | undefined;
  /** The last write's outcome was unknown (its reply was lost): what it wrote, to recognise it by. */
  unknown: LaneWrite | undefined;

  constructor(
    private readonly store: Store,
    private readonly start: LaneGuardsStart,
    /** A write of unknown outcome was read back: what it turned out to be (metrics). */
    private readonly onSettled?: (resolution: 'landed' | 'not-landed' | 'moved') => void,
  ) {
    this.rec = start.record;
    this.rev = start.revision;
    this.progress = start.progress;
    this.progressRev = start.progressRevision;
    this.progressRec = start.progressRecord;
  }

  /** The split record as this lane last wrote it (or as its claim wrote it). */
  get record(): SplitRecord {
    return this.rec;
  }

  /** The last committed progress (what a takeover would resume from). */
  get committed(): Json {
    return this.progress;
  }

  /** The `progress.{id}` record as this lane last wrote or read it. */
  get progressRecord(): ProgressRecord | undefined {
    return this.progressRec;
  }

  /** The revisions this lane's next write is guarded by. */
  get fence(): LaneFence {
    const { prefix, id, leaseId } = this.start;
    return { prefix, id, splitRevision: this.rev, progressRevision: this.progressRev, sessionLease: leaseId };
  }

  /** A write landed at `revision`: what it wrote is what the next write is guarded by. */
  adopt(w: LaneWrite, revision: number): void {
    if (w.record) {
      this.rec = w.record;
      this.rev = revision;
    }
    if (w.committed) {
      this.progress = w.committed.progress;
      this.progressRec = w.committed;
      this.progressRev = revision;
    }
  }

  /**
   * Reads back the write whose outcome was unknown (`readBackTxn`), judged by
   * `readBackVerdict`: landed → `{ won: true }` at its revision; moved on →
   * `{ won: false }`; not landed → rejects with a retryable TIMEOUT, and the
   * write may be sent again. A read that fails rejects and leaves the
   * question open (`unknown` kept) for the next write.
   */
  async readBack(): Promise<WriteOutcome> {
    const u = this.unknown!;
    const { prefix, id } = this.start;
    const read = await this.store.txn(readBackTxn(prefix, id));
    this.unknown = undefined;
    const [split, progress, lease] = read.reads;
    const verdict = readBackVerdict(u, this.fence, { split, progress, lease });
    this.onSettled?.(verdict.kind);
    switch (verdict.kind) {
      case 'landed':
        return { won: true, revision: verdict.revision };
      case 'not-landed':
        throw new SplitfleetError('TIMEOUT', `split ${id}: ${u.what === 'force' ? 'release' : u.what} did not land; it may be sent again`, { retryable: true });
      case 'moved':
        return { won: false, revision: read.revision };
      default: {
        const never: never = verdict;
        throw new Error(`unhandled read-back verdict ${JSON.stringify(never)}`);
      }
    }
  }
}
