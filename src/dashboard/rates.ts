/**
 * A job's completion rate and ETA, as the dashboard's job list shows them:
 * from the completed-split counts the list itself reads (the leader's
 * summary, or the split records), sampled at each read. No record carries a
 * rate, so this is the one place one is made.
 *
 * - rate: splits completed per second between the oldest sample of the last
 *   `windowMs` and the newest (null until two samples at least `minSpanMs`
 *   apart: one read says nothing of speed);
 * - ETA: the splits not yet completed nor quarantined (planned, or seen if
 *   more) over that rate; null when the rate is not positive, the job has a
 *   verdict, or nothing is left.
 *
 * Invariants: a job's samples are bounded (`maxSamples`, and none older than
 * the window once a newer one spans it); a count that goes down (a job
 * deleted and submitted again under its name) starts the job's samples over.
 * Pure: the time of each sample comes in as an argument; no clock, no I/O.
 */

/** What one read of a job says, for its rate. */
export interface RateInput {
  job: string;
  /** Splits completed. */
  completed: number;
  /** Splits that will still run: planned (or seen, if more) less completed and quarantined. */
  remaining: number;
  /** The job has its verdict: nothing more will complete. */
  finished: boolean;
}

/** A job's rate (splits per second) and ETA (ms from the sample), or null where they are not known. */
export interface Rate {
  perSecond: number | null;
  etaMs: number | null;
}

interface Sample {
  at: number;
  completed: number;
}

export class RateWindow {
  private readonly samples = new Map<string, Sample[]>();

  constructor(
    private readonly windowMs = 60_000,
    private readonly minSpanMs = 1_000,
    private readonly maxSamples = 120,
  ) {}

  /**
   * Records this read of every job (a job missing from `jobs` is forgotten: it was deleted) and
   * returns each one's rate, by job.
   */
  observe(at: number, jobs: readonly RateInput[]): Map<string, Rate> {
    const out = new Map<string, Rate>();
    const seen = new Set<string>();
    for (const j of jobs) {
      seen.add(j.job);
      out.set(j.job, this.add(at, j));
    }
    for (const job of [...this.samples.keys()]) if (!seen.has(job)) this.samples.delete(job);
    return out;
  }

  private add(at: number, j: RateInput): Rate {
    let list = this.samples.get(j.job);
    if (list === undefined || (list.length > 0 && j.completed < list[list.length - 1]!.completed)) {
      list = [];
      this.samples.set(j.job, list);
    }
    list.push({ at, completed: j.completed });
    // Keep one sample at or beyond the window's start, so the span covers the whole window once it can.
    while (list.length > 2 && (at - list[1]!.at >= this.windowMs || list.length > this.maxSamples)) list.shift();
    const first = list[0]!;
    const span = at - first.at;
    if (span < this.minSpanMs) return { perSecond: null, etaMs: null };
    const perSecond = ((j.completed - first.completed) * 1000) / span;
    const etaMs = j.finished || perSecond <= 0 || j.remaining <= 0 ? null : Math.round((j.remaining / perSecond) * 1000);
    return { perSecond, etaMs };
  }
}
