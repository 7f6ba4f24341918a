/**
 * The demo's sink: a ledger of every processed unit (split, unit number), and
 * the end-of-run check against the plan: every unit of every completed split
 * processed at least once (a missing one is LOST: the delivery contract says
 * that never happens), and how many were processed more than once
 * (DUPLICATES: allowed, bounded by one commit interval per takeover).
 *
 * Pure bookkeeping: no I/O, no clock.
 */
import type { SyntheticSplit } from './synthetic.js';

export interface LedgerCheck {
  /** Units planned, over every split. */
  units: number;
  /** Distinct units processed at least once. */
  processed: number;
  /** Units of completed splits never processed. */
  lost: number;
  /** Processings beyond the first, over all units. */
  duplicates: number;
  /** Units of splits neither completed nor quarantined that were never processed (an unfinished job). */
  unfinished: number;
  /** The first few lost units, as `split#unit`, for the message. */
  examples: string[];
}

export class Ledger {
  private readonly counts = new Map<string, Uint32Array>();
  private distinct = 0;
  readonly units: number;

  constructor(private readonly splits: readonly SyntheticSplit[]) {
    for (const s of splits) this.counts.set(s.id, new Uint32Array(s.units + 1));
    this.units = splits.reduce((n, s) => n + s.units, 0);
  }

  /** Records one processed unit (1-based). Unknown splits or units are ignored. */
  record(id: string, unit: number): void {
    const c = this.counts.get(id);
    if (!c || !Number.isInteger(unit) || unit < 1 || unit >= c.length) return;
    if (c[unit] === 0) this.distinct++;
    c[unit]!++;
  }

  /** Distinct units processed so far. */
  get processed(): number {
    return this.distinct;
  }

  /** Distinct units processed of one split. */
  processedOf(id: string): number {
    const c = this.counts.get(id);
    if (!c) return 0;
    let n = 0;
    for (let u = 1; u < c.length; u++) if (c[u]! > 0) n++;
    return n;
  }

  /** Checks the ledger against the splits' final statuses. */
  check(statusOf: (id: string) => 'runnable' | 'completed' | 'quarantined' | undefined): LedgerCheck {
    let lost = 0;
    let duplicates = 0;
    let unfinished = 0;
    const examples: string[] = [];
    for (const s of this.splits) {
      const c = this.counts.get(s.id)!;
      const status = statusOf(s.id);
      for (let u = 1; u <= s.units; u++) {
        const n = c[u]!;
        if (n > 1) duplicates += n - 1;
        if (n > 0) continue;
        if (status === 'completed') {
          lost++;
          if (examples.length < 5) examples.push(`${s.id}#${u}`);
        } else if (status !== 'quarantined') {
          unfinished++;
        }
      }
    }
    return { units: this.units, processed: this.distinct, lost, duplicates, unfinished, examples };
  }
}
