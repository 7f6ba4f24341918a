/**
 * The ledger: at-least-once accounting of a run, for the demo, every test
 * suite, and a user's own fleet tests (exported by `splitfleet/testing`).
 * It keeps every processed unit
 * (split, unit number, epoch, by whom, when) and every lane event (claimed,
 * drained, declined, completed, failed, a simulated handler's exit), fed by
 * in-process handlers (`unit`, `lane`) or by member processes' stdout lines
 * (`line`, `follow`, `of`).
 *
 * Given the planned splits, it also keeps a count per unit and checks the run
 * against the plan: every unit of every completed split processed at least
 * once (a missing one is LOST: the delivery contract says that never
 * happens), and how many were processed more than once (DUPLICATES: allowed,
 * bounded by one commit interval per takeover).
 *
 * Pure bookkeeping: no I/O, no clock (times come in with the entries). It
 * names no internal type in its signatures: a member process is anything
 * shaped like a `LedgerSource`.
 */
import type { SyntheticSplit } from './synthetic.js';

/**
 * One line a member process writes on stdout, parsed: `{ev: 'unit', id, unit, epoch}` for a
 * processed unit, any other `ev` for a lane event (claimed, drained, …); `ev: 'raw'` is a line
 * that was not JSON.
 */
export interface LedgerLine {
  /** What the line reports. */
  ev: string;
  /** Wall-clock ms when it was written. */
  t?: number;
  /** The split, on a split's lines. */
  id?: string;
  /** The tenancy's epoch, on a split's lines. */
  epoch?: number;
  [field: string]: unknown;
}

/** A member process whose parsed lines feed a ledger (the fleet member spawner is one). */
export interface LedgerSource {
  /** The instance the lines are charged to. */
  readonly instance: string;
  /** Every line so far, in order. */
  readonly events: readonly LedgerLine[];
  /** Calls `fn` with every line, those already seen first, then each as it comes. */
  follow(fn: (line: LedgerLine) => void): void;
}

/** One processed unit. In the simulation `instance` is the process incarnation (`w1#2`). */
export interface UnitEntry {
  /** Who processed it. */
  instance: string;
  /** The split. */
  id: string;
  /** The unit, 1-based. */
  unit: number;
  /** The epoch of the tenancy that processed it. */
  epoch: number;
  /** When it was processed (wall-clock ms; virtual ms in the simulation). */
  t: number;
}

/** One lane event of `instance`, as the paced handler (or a process line) reported it. */
export interface LaneEvent {
  /** Whose lane. */
  instance: string;
  /** What happened: claimed, drained, declined, completed, failed, … */
  ev: string;
  /** The split. */
  id?: string;
  /** The tenancy's epoch. */
  epoch?: number;
  /** The progress it reports (where a claim resumed, where a drain stopped). */
  progress?: number;
  /** When (wall-clock ms; virtual ms in the simulation). */
  t: number;
  [k: string]: unknown;
}

/** A run checked against its plan (`Ledger.check`). */
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

/**
 * Every processed unit and lane event of a run, and per planned unit how often
 * it was processed. `check` states the delivery contract: no unit of a completed
 * split LOST; DUPLICATES allowed, and counted.
 */
export class Ledger {
  /** Every processed unit recorded with its owner, in order. */
  readonly units: UnitEntry[] = [];
  /** Every lane event, in order. */
  readonly events: LaneEvent[] = [];
  /** Units planned, over every split given. */
  readonly plannedUnits: number;
  private readonly counts = new Map<string, Uint32Array>();
  private distinct = 0;

  /** `splits`: the plan, for the counts and `check` (none: entries only). */
  constructor(private readonly splits: readonly SyntheticSplit[] = []) {
    for (const s of splits) this.counts.set(s.id, new Uint32Array(s.units + 1));
    this.plannedUnits = splits.reduce((n, s) => n + s.units, 0);
  }

  /** A ledger of every line the given member processes wrote (every incarnation of a run). */
  static of(members: Iterable<LedgerSource>): Ledger {
    const ledger = new Ledger();
    for (const m of members) for (const e of m.events) ledger.line(m.instance, e);
    return ledger;
  }

  /** Feeds every line `member` writes, from its first on, into this ledger. */
  follow<M extends LedgerSource>(member: M): M {
    member.follow((e) => this.line(member.instance, e));
    return member;
  }

  /** One stdout line of `instance`: a processed unit, or a lane event (claimed, drained, …). */
  line(instance: string, e: LedgerLine): void {
    if (e.ev === 'raw') return; // a line that is not JSON (a stray print): no ledger entry
    if (e.ev === 'unit') this.unit({ instance, id: String(e.id), unit: Number(e.unit), epoch: Number(e.epoch), t: Number(e.t) });
    else this.lane({ ...e, instance, t: Number(e.t) } as LaneEvent);
  }

  /** One processed unit, with its owner. */
  unit(u: UnitEntry): void {
    this.units.push(u);
    this.record(u.id, u.unit);
  }

  /** One lane event (claimed, drained, declined, completed, failed, …). */
  lane(e: LaneEvent): void {
    this.events.push(e);
  }

  /** Counts one processed unit (1-based) against the plan. Unknown splits or units are ignored. */
  record(id: string, unit: number): void {
    const c = this.counts.get(id);
    if (!c || !Number.isInteger(unit) || unit < 1 || unit >= c.length) return;
    if (c[unit] === 0) this.distinct++;
    c[unit]!++;
  }

  /** Distinct planned units processed so far. */
  get processed(): number {
    return this.distinct;
  }

  /** Distinct units processed of one planned split. */
  processedOf(id: string): number {
    const c = this.counts.get(id);
    if (!c) return 0;
    let n = 0;
    for (let u = 1; u < c.length; u++) if (c[u]! > 0) n++;
    return n;
  }

  /** Checks the counts against the planned splits' final statuses. */
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
    return { units: this.plannedUnits, processed: this.distinct, lost, duplicates, unfinished, examples };
  }

  // ---- queries of the entries (the tests') ---------------------------------------------

  /** The processed units of split `id`, optionally of one instance or one epoch only. */
  unitsOf(id: string, filter: { instance?: string; epoch?: number } = {}): UnitEntry[] {
    return this.units.filter(
      (u) => u.id === id && (filter.instance === undefined || u.instance === filter.instance) && (filter.epoch === undefined || u.epoch === filter.epoch),
    );
  }

  /**
   * The last unit processed at `epoch`: its highest unit, or, when the tenancy
   * processed nothing, the progress it resumed from (its 'claimed' event).
   */
  lastProcessed(id: string, epoch: number): number {
    const us = this.unitsOf(id, { epoch });
    if (us.length > 0) return Math.max(...us.map((u) => u.unit));
    const c = this.claimed(id, epoch);
    if (c === undefined) throw new Error(`the ledger has no claim of ${id} at epoch ${epoch}`);
    return (c.progress as number | undefined) ?? 0;
  }

  /** The first unit processed at `epoch` (undefined: none). */
  firstUnit(id: string, epoch: number): number | undefined {
    const us = this.unitsOf(id, { epoch });
    return us.length === 0 ? undefined : Math.min(...us.map((u) => u.unit));
  }

  /** The 'claimed' event of (id, epoch): progress is where the handler resumed. */
  claimed(id: string, epoch: number): LaneEvent | undefined {
    return this.events.find((e) => e.ev === 'claimed' && e.id === id && e.epoch === epoch);
  }

  /** (split, unit) pairs processed more than once, by the entries. */
  duplicates(ids?: Iterable<string>): string[] {
    const want = ids ? new Set(ids) : undefined;
    const seen = new Map<string, number>();
    for (const u of this.units) {
      if (want && !want.has(u.id)) continue;
      const k = `${u.id}#${u.unit}`;
      seen.set(k, (seen.get(k) ?? 0) + 1);
    }
    return [...seen].filter(([, n]) => n > 1).map(([k]) => k);
  }
}
