/**
 * The packed queue's invariants (decision 0037, "What the auditor checks"),
 * as one checker of the one replay (history-replay.ts) that the simulation
 * and chaos auditors both plug in beside their own. It keeps what it needs
 * of the job (its layout, the queue pages, the folded bits, the split, spec,
 * progress and lease keys, the assignment records) from the history alone.
 *
 * Per revision, on a packed job:
 * - a queue page is created once, where its bucket says (`bucketOf`), never
 *   rewritten or deleted, and no split is in two pages ('page-*');
 * - promotion: `split.{id}` and `spec.{id}` are created together, of a split
 *   some page holds, neither folded nor already keyed, the spec a copy of the
 *   page's weight, descriptor and generation ('promote-*');
 * - fold-back: a bit newly set names a split of its page that was completed,
 *   unleased and named by no assignment record, and the same revision deletes
 *   its `split`, `spec` and `progress` ('fold-*');
 * - the fold-back's results record (decision 0069) is created in that same
 *   revision, once, never rewritten or deleted, and holds exactly the splits
 *   newly folded, each with the `progress` (and `end`) its deleted progress
 *   record held, null when it had none ('fold-results-*'); no other
 *   revision writes one;
 * - a folded bit is never cleared, a folded record never deleted
 *   ('folded-bit-cleared'); a folded record names its page's generation
 *   ('folded-generation'), and one of another generation (put back from
 *   outside after its page's number was given again) marks none of the
 *   page's slots (decision 0091);
 * - `split`, `spec` and `progress` keys are deleted only by a fold-back of
 *   their split ('deleted-without-fold');
 * - a split is completed at most once over promotion, fold-back and
 *   promotion again ('completed-twice').
 * And at the end (`endProblems`, when the job should be finished): every
 * planned split is folded or has a terminal record ('split-lost'; but for one
 * whose record was deleted from outside after the verdict), and the
 * final plan's `planned` counts the pages' splits ('planned-count').
 *
 * Revisions written from outside the fleet (the simulation's hostile writer) are
 * not checked (`external`): an assignment record one replaces no longer names
 * anything here, and one it writes is not held against a fold-back. The leader
 * skips splits that any record in its view names, but a foreign record written
 * just before a fold-back may not be in its view yet, and no etcd compare can
 * guard a range against new keys; nor is it needed: a claim needs the split
 * record a fold-back deletes.
 *
 * A record such a writer deletes is gone from here too, and so is what it said
 * (substrate.md, "Hostile records": what the store forgot is run again): the
 * splits a deleted `split.{id}` or folded record named may be promoted again
 * (a spec left behind put again by the promotion) and completed once more,
 * each from the deletion's revision on, and so may a deleted page's splits
 * once a leader seeds them into another page, from that revision on
 * (`rerun`), and once more when the page is put back (two pages then hold
 * them: a split is promoted from either, folded in either); nothing else is
 * excused. A deleted
 * page's number stays its own while its folded record remains. A folded record
 * the fleet writes where one was deleted may set the forgotten bits of splits
 * that have no record (a write-back, decision 0061): no fold-back of theirs,
 * and from then on they are folded again. A record the writer puts back where
 * none is (its repair) is the store's again; a split running again meanwhile
 * is folded back by a fold-back that finds its bit set already.
 *
 * On a `keys` job it only reports a queue, folded or result record ('packed-record-in-keys-job');
 * the suites' own rules (no split record ever deleted) stand there.
 *
 * Records are read as recorded (HistoryEvent.rec, lenient JSON), never through
 * the production codecs; only the bucket hash is the protocol's own. No I/O.
 */
import { bucketOf } from '../../src/protocol/packed.js';
import type { HistoryEvent } from './history.js';
import type { Revision } from './history-replay.js';
import type { InvariantChecker, Problem } from './invariants.js';

type Rec = Record<string, any>;

/** One split as its queue page holds it. */
export interface PagedSplit {
  page: string;
  slot: number;
  weight: unknown;
  descriptor: unknown;
  generation: unknown;
}

/** What a fold-back deleted: the split's last record and committed progress, at that revision. */
export interface FoldedSplit {
  rev: number;
  split: Rec | undefined;
  progress: Rec | undefined;
}

/** A page's bitset, as the folded record's base64 `bits` holds it. */
function bitsOf(rec: Rec | undefined): Uint8Array {
  return typeof rec?.bits === 'string' ? new Uint8Array(Buffer.from(rec.bits, 'base64')) : new Uint8Array(0);
}
const bit = (bits: Uint8Array | undefined, slot: number): boolean => ((bits?.[slot >> 3] ?? 0) & (1 << (slot & 7))) !== 0;

/** Slots whose bit is set in `a` and not in `b`. */
function setIn(a: Uint8Array, b: Uint8Array): number[] {
  const out: number[] = [];
  for (let i = 0; i < a.length; i++) {
    const only = a[i]! & ~(b[i] ?? 0);
    for (let s = 0; s < 8; s++) if (only & (1 << s)) out.push(i * 8 + s);
  }
  return out;
}

/** Structural equality of two JSON values (object key order aside). */
function same(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null || Array.isArray(a) !== Array.isArray(b)) return false;
  const ka = Object.keys(a);
  const kb = Object.keys(b);
  return ka.length === kb.length && ka.every((k) => same((a as Rec)[k], (b as Rec)[k]));
}

/** `bucket.page` of a queue or folded key (its last segment: a page name has no '/'). */
const pageName = (e: HistoryEvent): string => e.key.slice(e.key.lastIndexOf('/') + 1).slice(e.kind.length + 1);

const isPut = (kind: string, id: string) => (x: HistoryEvent) => x.kind === kind && x.id === id && x.type === 'put';
const isDelete = (kind: string, id: string) => (x: HistoryEvent) => x.kind === kind && x.id === id && x.type === 'delete';

/** The packed queue's checker of one job's history: plug it into `replayHistory` before the checkers that ask its `layout`. */
export class PackedChecker implements InvariantChecker {
  readonly problems: Problem[] = [];
  /** 'packed' once the job's first plan record says so. */
  layout: 'keys' | 'packed' = 'keys';
  /** Every split the queue pages hold, by id. */
  readonly planned = new Map<string, PagedSplit>();
  /** Every split folded back, by id, with what its fold-back deleted. */
  readonly folds = new Map<string, FoldedSplit>();
  /** Promotions seen (a split promoted again after a hand-deletion counts again). */
  promotions = 0;
  /**
   * Splits that may run again, by id, from this revision on: their `split.{id}` or their page's folded record
   * was deleted from outside the fleet then (`external`), or, their page deleted, a leader seeded them into
   * another page then (`addPage`).
   */
  readonly rerun = new Map<string, number>();
  private plan: Rec | undefined;
  /** The revision the plan's standing verdict was written at, if it has one. */
  private verdictAt: number | undefined;
  /**
   * Queue pages by `bucket.page`. `gone`: deleted from outside the fleet at that revision, and not put back (its
   * splits still resolve); `deleted`: deleted from outside at some time (a leader may have listed the job then).
   */
  private readonly pages = new Map<string, { ids: string[]; rev: number; generation: unknown; gone?: number; deleted?: number }>();
  /** Splits a page deleted from outside held, seeded into another page since: the other places that hold them. */
  private readonly also = new Map<string, PagedSplit[]>();
  /** Folded records by page name, with the page generation each names (decision 0091; undefined in older records). */
  private readonly folded = new Map<string, { bits: Uint8Array; rev: number; pageGeneration: unknown }>();
  /** Bits of folded records deleted from outside the fleet, by page: what the store forgot. */
  private readonly forgotten = new Map<string, Uint8Array>();
  private readonly splits = new Map<string, Rec>();
  private readonly specs = new Map<string, Rec>();
  private readonly progress = new Map<string, Rec>();
  private readonly leases = new Set<string>();
  private readonly assigns = new Map<string, string[]>();
  private readonly completions = new Map<string, number>();
  /** Results records written (decision 0069), by key, with their revision. */
  private readonly results = new Map<string, number>();

  revision({ rev, events: group }: Revision): void {
    for (const e of group) if (e.kind === 'plan' && e.type === 'put' && e.rec) this.notePlan(e.rec, rev);
    if (this.layout === 'keys') {
      for (const e of group) if (e.kind === 'queue' || e.kind === 'folded' || e.kind === 'result') this.problem('packed-record-in-keys-job', '', [rev], `${e.key} written in a job of the keys layout`);
      this.apply(group);
      return;
    }
    for (const e of group) {
      if (e.kind === 'queue' && e.type === 'put') this.addPage(e, rev);
      else if (e.kind === 'queue') this.problem('page-rewritten', '', [rev], `${e.key} deleted`);
    }
    const newlyFolded = new Set<string>();
    for (const e of group) {
      if (e.kind !== 'folded') continue;
      if (e.type === 'put') for (const id of this.foldPut(e, rev, group)) newlyFolded.add(id);
      else this.problem('folded-bit-cleared', '', [rev], `${e.key} deleted`);
    }
    this.checkResults(rev, group, newlyFolded);
    const ids = new Set<string>();
    for (const e of group) {
      if ((e.kind !== 'split' && e.kind !== 'spec' && e.kind !== 'progress') || e.id === undefined) continue;
      ids.add(e.id);
      if (e.type === 'delete' && !newlyFolded.has(e.id)) this.problem('deleted-without-fold', e.id, [rev], `${e.key} deleted, not by a fold-back of ${e.id}`);
    }
    for (const id of ids) this.checkKeyed(id, rev, group);
    this.apply(group);
  }

  /** The buckets that hold at least one queue page (a job of several buckets spreads its pages over them). */
  get bucketsWithPages(): number {
    return new Set([...this.pages.keys()].map((name) => name.slice(0, name.indexOf('.')))).size;
  }

  /**
   * A revision written from outside the fleet, left out of the checks: the fleet's assignment records it
   * replaces or deletes name nothing from here on (the store no longer holds them), and what it writes is
   * not the fleet's to answer for. A split's record, a queue page or a folded record it deletes is gone
   * (its splits may run again: `rerun`), and one it puts back where none is is there again; every other
   * key keeps the fleet's last value.
   */
  external({ rev, events }: Revision): void {
    for (const e of events) {
      if (e.kind === 'assign' && e.id !== undefined) this.assigns.delete(e.id);
      else if ((e.kind === 'split' || e.kind === 'spec' || e.kind === 'progress') && e.id !== undefined) this.externalKeyed(e, rev);
      else if (e.kind === 'queue' && this.layout === 'packed') this.externalPage(e, rev);
      else if (e.kind === 'folded' && this.layout === 'packed') this.externalFolded(e, rev);
    }
  }

  /** A split's own record deleted (a deleted `split.{id}` lets it run again) or put back where none is. */
  private externalKeyed(e: HistoryEvent, rev: number): void {
    const keyed = this.keyed(e.kind as 'split' | 'spec' | 'progress');
    if (e.type === 'delete') {
      keyed.delete(e.id!);
      if (e.kind === 'split') this.allowRerun(e.id!, rev);
    } else if (!keyed.has(e.id!)) keyed.set(e.id!, e.rec ?? {});
  }

  /**
   * A queue page deleted (its splits may be seeded into another page and run again) or put back (those of its
   * splits another page holds by then may run once more from it: a leader that lists it first promotes them from it).
   */
  private externalPage(e: HistoryEvent, rev: number): void {
    const name = pageName(e);
    const page = this.pages.get(name);
    if (!page) return;
    // Its splits run again only once a leader seeds them into another page (`addPage`).
    if (e.type === 'delete') {
      page.gone = rev;
      page.deleted = rev;
      return;
    }
    delete page.gone;
    for (const id of page.ids) if (this.planned.get(id)?.page !== name) this.allowRerun(id, rev);
  }

  /** A folded record deleted (the store forgot its completions: they may run again) or put back where none is. */
  private externalFolded(e: HistoryEvent, rev: number): void {
    const name = pageName(e);
    const had = this.bitsAt(name);
    if (e.type === 'delete') {
      if (!had) return;
      this.folded.delete(name);
      this.forgotten.set(name, had);
      for (const slot of setIn(had, new Uint8Array(0))) {
        const id = this.pages.get(name)?.ids[slot];
        if (id !== undefined) this.allowRerun(id, rev);
      }
    } else if (!had) {
      this.folded.set(name, { bits: bitsOf(e.rec), rev, pageGeneration: e.rec?.pageGeneration });
      // Put back after its page's number was given again (decision 0091): it marks none of the new page's slots.
      for (const slot of setIn(this.bitsAt(name)!, new Uint8Array(0))) this.rememberFolded(name, slot);
    }
  }

  /**
   * The bits page `name`'s folded record sets on the page now under that name: its own if it names
   * that page's generation (or none: an older build's), else none (decision 0091). Undefined: no record.
   */
  private bitsAt(name: string): Uint8Array | undefined {
    const f = this.folded.get(name);
    if (!f) return undefined;
    const page = this.pages.get(name);
    return f.pageGeneration === undefined || page === undefined || f.pageGeneration === page.generation ? f.bits : new Uint8Array(0);
  }

  /** Split `id` may be promoted again and completed once more, from `rev` on. */
  private allowRerun(id: string, rev: number): void {
    this.rerun.set(id, rev);
    this.completions.set(id, 0);
  }

  /** The bit of `slot` in page `name` is in the store again for a split with no record: folded, no rerun left. */
  private rememberFolded(name: string, slot: number): void {
    const id = this.pages.get(name)?.ids[slot];
    if (id === undefined || this.splits.has(id) || !this.rerun.has(id)) return;
    // Seeded since into another page (this one deleted from outside), where its bit is not set: a leader that
    // knows only that page promotes it again from there, whatever this page's folded record says.
    if (this.planned.get(id)?.page !== name) return;
    this.rerun.delete(id);
    this.completions.set(id, 1);
  }

  /** Whole-run problems, for a job that should have finished: lost splits, a miscounted plan. */
  endProblems(): Problem[] {
    if (this.layout === 'keys') return [];
    const out: Problem[] = [];
    for (const id of this.planned.keys()) {
      const s = this.splits.get(id);
      if (this.isFolded(id) || s?.status === 'completed' || s?.status === 'quarantined') continue;
      // Its record deleted from outside after the job's verdict: the verdict stands, and nothing runs a
      // finished job's split again (no reseeding after the verdict): what the store forgot is the record.
      const rerunFrom = this.rerun.get(id);
      if (rerunFrom !== undefined && this.verdictAt !== undefined && rerunFrom >= this.verdictAt) continue;
      out.push({ rule: 'split-lost', split: id, revisions: [], detail: `split ${id} ended ${s ? `${s.status} (owner ${s.owner || 'none'})` : 'queued in its page, never completed'}` });
    }
    if (this.plan?.final === true && this.plan.planned !== this.planned.size) {
      out.push({ rule: 'planned-count', split: '', revisions: [], detail: `the final plan counts ${this.plan.planned} splits; its queue pages hold ${this.planned.size}` });
    }
    return out;
  }

  private problem(rule: string, split: string, revisions: number[], detail: string): void {
    this.problems.push({ rule, split, revisions, detail });
  }

  /** Where split `id` is: its page, and the pages deleted from outside that held it before (`also`). */
  private placesOf(id: string): PagedSplit[] {
    const at = this.planned.get(id);
    return at ? [at, ...(this.also.get(id) ?? [])] : [];
  }

  /** Whether split `id`'s bit is set in any page that holds it (`every`: in every one, so no promotion can read it unset). */
  private isFolded(id: string, every = false): boolean {
    const places = this.placesOf(id);
    const set = (at: PagedSplit) => bit(this.bitsAt(at.page), at.slot);
    return places.length > 0 && (every ? places.every(set) : places.some(set));
  }

  /** The layout is the first plan record's, and stays; so does the bucket count once set. */
  private notePlan(rec: Rec, rev: number): void {
    const next = rec.layout === 'packed' ? 'packed' : 'keys';
    if (this.plan && next !== this.layout) this.problem('layout-changed', '', [rev], `the plan record's layout went from ${this.layout} to ${next}`);
    if (this.plan?.buckets !== undefined && rec.buckets !== this.plan.buckets) this.problem('page-misplaced', '', [rev], `the plan's bucket count went from ${this.plan.buckets} to ${rec.buckets}`);
    if (!this.plan) this.layout = next;
    this.plan = rec;
    if (rec.verdict !== undefined && rec.verdict !== null) this.verdictAt ??= rev;
    else this.verdictAt = undefined; // cleared (an operator's retry): the job runs again
  }

  /** A queue page created: once, well formed, each split where its bucket says and in no other page. */
  private addPage(e: HistoryEvent, rev: number): void {
    const name = pageName(e);
    const had = this.pages.get(name);
    // A page deleted from outside may be written again, but not while its folded record would mark the new one's slots.
    // A folded record of another generation marks none of the new page's slots (decision 0091).
    const folded = this.folded.get(name);
    if (had && (had.gone === undefined || (folded !== undefined && (folded.pageGeneration === undefined || folded.pageGeneration === e.rec?.generation)))) {
      return this.problem('page-rewritten', '', [had.rev, rev], `queue.${name} written again${had.gone !== undefined ? ' (deleted by hand) while its folded record remains' : ''}`);
    }
    const r = e.rec;
    const ids: unknown[] = Array.isArray(r?.ids) ? r.ids : [];
    if (!r || ids.length === 0 || !Array.isArray(r.weights) || !Array.isArray(r.descriptors) || r.weights.length !== ids.length || r.descriptors.length !== ids.length || `${r.bucket}.${r.page}` !== name) {
      this.problem('page-invalid', '', [rev], `queue.${name} is not a well-formed page of ${name}`);
    }
    const buckets = this.plan?.buckets;
    if (typeof buckets !== 'number') this.problem('page-misplaced', '', [rev], `queue.${name} written before the plan record named its bucket count`);
    // Pages deleted from outside, this one among them when it is written again (its number reused).
    // Pages deleted from outside (this one among them when its number is reused): a leader may have listed the job
    // without them and seeded their splits here, even if one was put back before this write landed.
    const deletedBefore = (page: string) => (page === name ? had?.deleted !== undefined : this.pages.get(page)?.deleted !== undefined);
    this.pages.set(name, { ids: ids.map(String), rev, generation: r?.generation, ...(had?.deleted !== undefined ? { deleted: had.deleted } : {}) });
    ids.forEach((raw, slot) => {
      const id = String(raw);
      const other = this.planned.get(id);
      // A split of a page deleted from outside is the planner's still: seeded into another page, it is that
      // page's, and may run again from there (what its old page and folded bits said is forgotten).
      const rehomed = other !== undefined && deletedBefore(other.page);
      if (other && !rehomed) this.problem('page-misplaced', id, [rev], `split ${id} is in queue.${other.page} and queue.${name}`);
      else this.planned.set(id, { page: name, slot, weight: r?.weights?.[slot], descriptor: r?.descriptors?.[slot], generation: r?.generation });
      if (rehomed) {
        if (other.page !== name) this.also.set(id, [...(this.also.get(id) ?? []), other]);
        this.allowRerun(id, rev);
      }
      if (typeof buckets === 'number' && typeof r?.fp === 'string' && bucketOf(r.fp, id, buckets) !== r.bucket) {
        this.problem('page-misplaced', id, [rev], `split ${id} is in bucket ${r.bucket}; its id hashes to bucket ${bucketOf(r.fp, id, buckets)} of ${buckets}`);
      }
    });
  }

  /** A folded record written: no bit cleared; each bit set is a fold-back of its slot's split. Returns the splits newly folded. */
  private foldPut(e: HistoryEvent, rev: number, group: readonly HistoryEvent[]): string[] {
    const name = pageName(e);
    const before = this.folded.get(name);
    const next = bitsOf(e.rec);
    // What the record it replaces set on this page: none if it was another generation's (decision 0091).
    const was = this.bitsAt(name) ?? new Uint8Array(0);
    const page = this.pages.get(name);
    if (page && e.rec?.pageGeneration !== page.generation) {
      this.problem('folded-generation', '', [rev], `folded.${name} names page generation ${String(e.rec?.pageGeneration)}; queue.${name} is of generation ${String(page.generation)}`);
    }
    for (const slot of setIn(was, next)) this.problem('folded-bit-cleared', page?.ids[slot] ?? '', [before!.rev, rev], `folded.${name} cleared the bit of slot ${slot}`);
    this.folded.set(name, { bits: next, rev, pageGeneration: e.rec?.pageGeneration });
    const out: string[] = [];
    const forgotten = before ? undefined : this.forgotten.get(name);
    for (const slot of setIn(next, was)) {
      const id = page?.ids[slot];
      if (id === undefined) {
        this.problem('fold-of-unplanned', '', [rev], `folded.${name} set slot ${slot}, which ${page ? `is past the page's ${page.ids.length} splits` : 'no page holds'}`);
        continue;
      }
      // A deleted folded record written back (decision 0061): a bit the store forgot, of a split with no record.
      if (bit(forgotten, slot) && !this.splits.has(id)) {
        this.rememberFolded(name, slot);
        continue;
      }
      out.push(id);
      this.checkFold(id, rev, group);
    }
    // A split run again after its folded record was deleted, whose record was put back with its bit
    // set while the rerun went on: its fold-back sets a bit that is set already, and is one all the same.
    for (const slot of setIn(next, new Uint8Array(0))) {
      const id = page?.ids[slot];
      if (id === undefined || !bit(was, slot) || !this.rerun.has(id) || !this.splits.has(id) || !group.some(isDelete('split', id))) continue;
      out.push(id);
      this.checkFold(id, rev, group);
      this.rerun.delete(id);
    }
    return out;
  }

  /** Split `id`'s fold-back at `rev` (state as before it): completed, unleased, unassigned, its keys deleted with it. */
  private checkFold(id: string, rev: number, group: readonly HistoryEvent[]): void {
    const s = this.splits.get(id);
    if (s?.status !== 'completed') this.problem('fold-not-completed', id, [rev], `split ${id} folded back while its record was ${s ? s.status : 'absent'}`);
    if (this.leases.has(id) || group.some(isPut('lease', id))) this.problem('fold-leased', id, [rev], `split ${id} folded back with lease.${id} live`);
    for (const [instance, named] of this.assigns) if (named.includes(id)) this.problem('fold-assigned', id, [rev], `split ${id} folded back while assign.${instance} names it`);
    const kept = (['split', 'spec', 'progress'] as const).filter((k) => this.keyed(k).has(id) && !group.some(isDelete(k, id)));
    if (kept.length > 0) this.problem('fold-kept-keys', id, [rev], `split ${id} folded back but ${kept.map((k) => `${k}.${id}`).join(', ')} not deleted in the same revision`);
    this.folds.set(id, { rev, split: s, progress: this.progress.get(id) });
  }

  /**
   * The results records of revision `rev` (decision 0069): only beside a fold-back that folds splits,
   * one per such revision, created once, naming exactly the splits it folds with the progress their
   * deleted records held. A fold-back that only writes back forgotten bits (decision 0061) folds none.
   */
  private checkResults(rev: number, group: readonly HistoryEvent[], newlyFolded: ReadonlySet<string>): void {
    const puts = group.filter((e) => e.kind === 'result');
    for (const e of puts) {
      if (e.type === 'delete') this.problem('fold-results-deleted', '', [rev], `${e.key} deleted`);
      else if (this.results.has(e.key)) this.problem('fold-results-rewritten', '', [this.results.get(e.key)!, rev], `${e.key} written again`);
      else this.results.set(e.key, rev);
    }
    const written = puts.filter((e) => e.type === 'put');
    if (newlyFolded.size === 0) {
      for (const e of written) this.problem('fold-results-outside-fold', '', [rev], `${e.key} written by a revision that folds no split`);
      return;
    }
    if (written.length !== 1) {
      this.problem('fold-results-missing', [...newlyFolded][0] ?? '', [rev], `a fold-back of ${newlyFolded.size} splits wrote ${written.length} results records (one expected)`);
      return;
    }
    const entries: Rec[] = Array.isArray(written[0]!.rec?.splits) ? written[0]!.rec!.splits : [];
    const named = new Map(entries.map((x) => [String(x?.id), x]));
    if (named.size !== entries.length) this.problem('fold-results-mismatch', '', [rev], `${written[0]!.key} names a split twice`);
    for (const id of newlyFolded) {
      const entry = named.get(id);
      if (!entry) {
        this.problem('fold-results-mismatch', id, [rev], `split ${id} folded back, but ${written[0]!.key} has no entry for it`);
        continue;
      }
      const kept = this.progress.get(id);
      if (!same(entry.progress, kept?.progress ?? null) || !same(entry.end, kept?.end)) {
        this.problem('fold-results-mismatch', id, [rev], `${written[0]!.key} keeps ${JSON.stringify({ progress: entry.progress, end: entry.end })} for ${id}; its deleted progress record held ${JSON.stringify({ progress: kept?.progress ?? null, end: kept?.end })}`);
      }
    }
    for (const id of named.keys()) if (!newlyFolded.has(id)) this.problem('fold-results-mismatch', id, [rev], `${written[0]!.key} has an entry for ${id}, which this revision does not fold`);
  }

  /** Split `id`'s split and spec writes at `rev`: a creation is a promotion; a completion is counted. */
  private checkKeyed(id: string, rev: number, group: readonly HistoryEvent[]): void {
    const split = group.find(isPut('split', id));
    const spec = group.find(isPut('spec', id));
    // A residual's records (decision 0063) are a division's, by the parent's owner: in no page, never promoted.
    const division = spec?.rec?.parent !== undefined;
    if (!division) {
      if ((split && !this.splits.has(id)) || (spec && !this.specs.has(id))) this.checkPromotion(id, rev, split, spec);
      else if (spec) this.problem('promote-keyed', id, [rev], `spec.${id} written again`);
    }
    if (split?.rec?.status === 'completed' && this.splits.get(id)?.status !== 'completed') {
      const n = (this.completions.get(id) ?? 0) + 1;
      this.completions.set(id, n);
      if (n > 1) this.problem('completed-twice', id, [rev], `split ${id} completed ${n} times (promoted again after it was folded back?)`);
    }
  }

  /** A split or spec created at `rev`: a promotion of a planned split, neither folded nor keyed, both keys at once, the spec its page's. */
  private checkPromotion(id: string, rev: number, split: HistoryEvent | undefined, spec: HistoryEvent | undefined): void {
    this.promotions++;
    const at = this.planned.get(id);
    if (!at) return this.problem('promote-unplanned', id, [rev], `split ${id} promoted, but no queue page holds it`);
    // Held by two pages (one deleted from outside), it is promoted from either: folded in both, from neither.
    if (this.isFolded(id, true)) this.problem('promote-folded', id, [this.folded.get(at.page)!.rev, rev], `split ${id} promoted while its bit in folded.${at.page} is set`);
    // A split whose record was deleted from outside keeps its spec, which the promotion puts again (packed-txns.ts).
    const specLeft = this.specs.has(id) && !this.splits.has(id) && this.rerun.has(id);
    if (this.splits.has(id) || (this.specs.has(id) && !specLeft)) this.problem('promote-keyed', id, [rev], `split ${id} promoted while ${this.splits.has(id) ? 'split' : 'spec'}.${id} exists`);
    if (!split || !spec) return this.problem('promote-half', id, [rev], `split ${id}: ${spec ? 'spec' : 'split'}.${id} created without its ${spec ? 'split' : 'spec'}.${id}`);
    const r = spec.rec;
    const copies = (p: PagedSplit) => same(r?.weight, p.weight) && same(r?.descriptor ?? null, p.descriptor ?? null) && r?.generation === p.generation;
    if (!this.placesOf(id).some(copies)) {
      const got = { weight: r?.weight, descriptor: r?.descriptor, generation: r?.generation };
      this.problem('promote-spec-mismatch', id, [rev], `spec.${id} ${JSON.stringify(got)} is not its page's ${JSON.stringify({ weight: at.weight, descriptor: at.descriptor, generation: at.generation })}`);
    }
  }

  private keyed(kind: 'split' | 'spec' | 'progress'): Map<string, Rec> {
    return kind === 'split' ? this.splits : kind === 'spec' ? this.specs : this.progress;
  }

  /** The revision's writes, applied to the state the next revision is checked against. */
  private apply(group: readonly HistoryEvent[]): void {
    for (const e of group) {
      if (e.id === undefined) continue;
      if (e.kind === 'split' || e.kind === 'spec' || e.kind === 'progress') {
        if (e.type === 'put') this.keyed(e.kind).set(e.id, e.rec ?? {});
        else this.keyed(e.kind).delete(e.id);
      } else if (e.kind === 'lease') {
        if (e.type === 'put') this.leases.add(e.id);
        else this.leases.delete(e.id);
      } else if (e.kind === 'assign') {
        if (e.type === 'put') this.assigns.set(e.id, Array.isArray(e.rec?.splits) ? e.rec.splits.map(String) : []);
        else this.assigns.delete(e.id);
      }
    }
  }
}

/** A fresh packed queue checker, for one replay. */
export const packedChecker = (): PackedChecker => new PackedChecker();
