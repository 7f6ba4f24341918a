/**
 * The simulation auditor's 'assigned-once' property (auditor.ts): no split is
 * named in two assignment records at any revision. With a hostile writer
 * among the faults (hostile.ts), a record it left (a forgery for an instance
 * that is not there, an old value put back) may name a split the leader has
 * given to someone else: that record is the writer's, not an assignment (it
 * costs that member's assignment until rewritten), so the rule becomes: the
 * leader never adds a split to one record while another record of its own
 * still names it.
 *
 * It follows the assignment records as the store holds them, the writer's
 * included; only to know what such a foreign record names does it use the
 * codec (an unreadable record names nothing to any reader). Pure; it never
 * writes.
 */
import { decodeRecord } from '../../src/protocol/records.js';
import type { HistoryEvent } from '../support/history.js';

/** The split ids a record's text names (lenient: anything unparseable names nothing). */
function namedIn(value: string | undefined): string[] {
  try {
    const splits = value === undefined ? undefined : (JSON.parse(value) as { splits?: unknown }).splits;
    return Array.isArray(splits) ? splits.filter((s): s is string => typeof s === 'string') : [];
  } catch {
    return [];
  }
}

/** What a reader can decode of a record the hostile writer left: an unreadable one names nothing (substrate.md). */
function readableNamed(c: HistoryEvent): string[] {
  try {
    const fp = (JSON.parse(c.value ?? '') as { fp?: unknown }).fp;
    return decodeRecord('assign', c.key, c.value ?? '', typeof fp === 'string' ? fp : '').splits;
  } catch {
    return [];
  }
}

export class AssignedOnce {
  /** Keys whose value is now the hostile writer's (a forgery or a restored old value): not the fleet's word. */
  private readonly foreign = new Set<string>();
  /** Assignment records as the store holds them, the hostile writer's values included. */
  private readonly actual = new Map<string, string[]>();
  /** What each assignment record of the revision being replayed names that the store's copy did not. */
  private addedBy = new Map<string, string[]>();

  constructor(private readonly prefix: string) {}

  /** A revision of the hostile writer's. */
  external(group: readonly HistoryEvent[]): void {
    for (const c of group) {
      this.foreign.add(c.key);
      this.track(c, true);
    }
  }

  /** A revision of the fleet's, before it is applied. */
  before(group: readonly HistoryEvent[]): void {
    this.addedBy = new Map();
    for (const c of group) {
      if (c.type !== 'put' || !this.isAssign(c.key)) continue;
      const had = new Set(this.actual.get(c.key) ?? []);
      this.addedBy.set(c.key, namedIn(c.value).filter((s) => !had.has(s)));
    }
  }

  /**
   * The same revision, applied (`state`: every key as the fleet's replay now holds it). `hostile`: the
   * run has a hostile writer, so the weaker rule holds. Reports through `fail`.
   */
  after(group: readonly HistoryEvent[], state: ReadonlyMap<string, { value: string }>, hostile: boolean, fail: (message: string) => void): void {
    for (const c of group) {
      this.foreign.delete(c.key);
      this.track(c);
    }
    if (!group.some((c) => this.isAssign(c.key))) return;
    if (!hostile) {
      const named = new Map<string, string>();
      for (const [key, kv] of state) {
        if (!this.isAssign(key)) continue;
        const rec = JSON.parse(kv.value) as { instance: string; splits: string[] };
        for (const s of rec.splits) {
          const other = named.get(s);
          if (other !== undefined) fail(`split ${s} named in assign.${other} and assign.${rec.instance}`);
          named.set(s, rec.instance);
        }
      }
      return;
    }
    const P = this.prefix;
    for (const [key, added] of this.addedBy) {
      for (const s of added) {
        for (const [other, splits] of this.actual) {
          if (other !== key && !this.foreign.has(other) && splits.includes(s)) fail(`split ${s} added to ${key.slice(P.length)} while ${other.slice(P.length)} names it`);
        }
      }
    }
  }

  private isAssign(key: string): boolean {
    return key.startsWith(`${this.prefix}assign.`);
  }

  private track(c: HistoryEvent, external = false): void {
    if (!this.isAssign(c.key)) return;
    if (c.type === 'put') this.actual.set(c.key, external ? readableNamed(c) : namedIn(c.value));
    else this.actual.delete(c.key);
  }
}
