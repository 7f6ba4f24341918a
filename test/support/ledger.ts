/**
 * The tests' ledger: every processed unit (split, unit, epoch, by whom, when)
 * and every lane event of a fleet, fed by member processes' stdout lines
 * (`follow`, `of`) or by in-process handlers (`record`). The integration and
 * chaos suites read it; the end-of-run loss check over unit counts is the
 * demo's own (src/demo/ledger.ts).
 *
 * Pure bookkeeping: no I/O, no clock, no assertions.
 */
import type { FleetEvent, FleetMember } from './fleet.js';

export interface UnitEntry {
  instance: string;
  id: string;
  unit: number;
  epoch: number;
  t: number;
}

export interface LaneEvent {
  instance: string;
  ev: string;
  id?: string;
  epoch?: number;
  progress?: number;
  t: number;
  [k: string]: unknown;
}

/** Every processed unit (and lane event) of a fleet, from processes and in-process handlers alike. */
export class Ledger {
  readonly units: UnitEntry[] = [];
  readonly events: LaneEvent[] = [];

  /** A ledger of every line the given member processes wrote (every incarnation of a run). */
  static of(members: Iterable<FleetMember>): Ledger {
    const ledger = new Ledger();
    for (const m of members) for (const e of m.events) ledger.record(m.instance, e);
    return ledger;
  }

  /** Feeds every line `member` writes, from its first on, into this ledger. */
  follow(member: FleetMember): FleetMember {
    member.follow((e) => this.record(member.instance, e));
    return member;
  }

  /** One line of `instance`: a processed unit, or a lane event (claimed, drained, …). */
  record(instance: string, e: FleetEvent): void {
    if (e.ev === 'raw') return; // a line that is not JSON (a stray print): no ledger entry
    if (e.ev === 'unit') this.units.push({ instance, id: String(e.id), unit: Number(e.unit), epoch: Number(e.epoch), t: Number(e.t) });
    else this.events.push({ ...e, instance, t: Number(e.t) } as LaneEvent);
  }

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

  firstUnit(id: string, epoch: number): number | undefined {
    const us = this.unitsOf(id, { epoch });
    return us.length === 0 ? undefined : Math.min(...us.map((u) => u.unit));
  }

  /** The 'claimed' event of (id, epoch): progress is where the handler resumed. */
  claimed(id: string, epoch: number): LaneEvent | undefined {
    return this.events.find((e) => e.ev === 'claimed' && e.id === id && e.epoch === epoch);
  }

  /** (split, unit) pairs processed more than once. */
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
