/**
 * LeaderView: the whole job as the leader needs it (substrate.md, "Who
 * observes what"). Built when a term starts (a paged listing that yields
 * between pages), fed event by event from two range watches that leave out
 * `progress.{id}` (so progress commits never reach the leader), and dropped
 * when the term ends. What it holds, and how each key is applied, is
 * leader-records.ts's (the sparse maps) and split-columns.ts's (one pool row
 * per split); this file is the listing and following.
 *
 * Invariants:
 * - A split joins the pool once both its spec and its record have been seen.
 * - A record of the job's own (plan, leader) this build cannot read is
 *   reported once through `onFatal`, and the view stops applying events.
 * - `resyncMembership()` (the leader's backstop) re-lists the sparse kinds
 *   (members, leases, assignments, plan, leader, control) and replaces them,
 *   and reads again a queue page that could not be read; while a final plan
 *   counts splits this view does not know, it lists the queue pages again and
 *   reads those it does not hold (a page put back after the listing missed
 *   it, decision 0072). The dense kinds
 *   (specs, split records) are listed again only when a watch cannot resume
 *   (docs/decisions/0009-the-leader-view.md).
 *
 * I/O: listings and two watches. No decisions are made here.
 */
import type { ColumnarPool } from '../../assignment/front-door.js';
import { wallTime, type Clock } from '../../clock.js';
import { storeFailure, type SplitfleetError } from '../../errors.js';
import { backoffDelay, retryRandom } from '../../protocol/backoff.js';
import { parseKey, summaryKey, type KeyKind } from '../../protocol/keys.js';
import { unaccountedSplits } from '../../protocol/completion.js';
import { inJobScope, jobKeyRanges } from '../../protocol/scope.js';
import type {
  ControlRecord, LeaderRecord, LeaseRecord, PlanRecord, SplitStatus, WorkerRecord,
} from '../../protocol/records.js';
import type { KeyRange, KeyValue, ListPage, Store, WatchEvent, WatchHandle } from '../../store/store.js';
import { ChangeBatcher } from '../views/batch.js';
import { listRanges, watchRanges, type ListedRange } from './leader-ranges.js';
import { emptyListing, LeaderRecords, type BacklogFigures } from './leader-records.js';
import type { OwnWrite } from './own-writes.js';
import type { NamedAssignments } from './assign-records.js';
import type { Seen } from '../views/seen.js';
import type { StatusTally } from './split-columns.js';
import type { PackedPages } from './packed-pages.js';
import type { FoldedBits } from '../../protocol/packed.js';
import { nextTurn } from '../../next-turn.js';
import { appendHistory, historyEntry, type HistoryEntry } from '../../protocol/job-history.js';
import { notableEvents, noteBefore, seedHistory, type Before } from './history-tap.js';

/** Keys per page of a listing; the view yields to the event loop between pages. */
export const PAGE_SIZE = 1000;

/** What one batch of events changed, as far as a decision is concerned. */
export interface LeaderViewChange {
  kinds: Set<KeyKind>;
  /** A full listing was applied: treat everything as changed. */
  all: boolean;
}

/** Yields to the event loop, so that a long listing never holds it for more than a page. */

export class LeaderView {
  /** What the view holds, applied key by key (leader-records.ts; no I/O there). */
  private readonly records: LeaderRecords;
  /** Highest revision seen in the range holding `assign`, `leader`, `lease` and `plan`. */
  revision = 0;
  /** Highest revision delivered by the other range (`spec`, `split`, `worker`, …): own writes at or below it have echoed. */
  private otherRevision = 0;
  private handles: WatchHandle[] = [];
  private readonly batcher = new ChangeBatcher<LeaderViewChange>(
    (into, more) => {
      for (const k of more.kinds) into.kinds.add(k);
      into.all ||= more.all;
    },
    () => this.failed || this.closed,
  );
  private failed = false;
  /** Restarts that failed in a row, and their jitter stream (seeded by the job's prefix: replays draw the same). */
  private restartFailures = 0;
  private restartRandom: (() => number) | undefined;
  private closed = false;
  /** The job's recent notable events (decision 0070): seeded once per term, after its first listing; then from the watch. */
  private recent: HistoryEntry[] = [];
  private historySeeded = false;

  constructor(
    private readonly store: Store,
    readonly prefix: string,
    readonly fp: string,
    seed: string,
    private readonly onFatal: (error: SplitfleetError) => void,
    private readonly clock: Clock,
    /** A record that cannot be read (it costs only what it concerns; see `readable`). */
    private readonly onUnreadable: (key: string, error: SplitfleetError) => void = () => undefined,
  ) {
    this.records = new LeaderRecords(prefix, fp, seed, onUnreadable, () => wallTime(clock));
  }

  get plan(): Seen<PlanRecord> | undefined {
    return this.records.plan;
  }

  get leader(): Seen<LeaderRecord> | undefined {
    return this.records.leader;
  }

  /** The operators' record (pause, evacuations); undefined when absent or unreadable (decision 0011). */
  get control(): Seen<ControlRecord> | undefined {
    return this.records.control;
  }

  get workers(): ReadonlyMap<string, Seen<WorkerRecord>> {
    return this.records.workers;
  }

  /** By instance, with an index of the split ids they name (assign-records.ts). */
  get assigns(): NamedAssignments {
    return this.records.assigns;
  }

  /** Live lease keys, by split id (at most the fleet's lanes). */
  get leases(): ReadonlyMap<string, Seen<LeaseRecord>> {
    return this.records.leases;
  }

  /** Record owners, by split id: only records whose `owner` is set. */
  get owners(): ReadonlyMap<string, string> {
    return this.records.owners;
  }

  /** Failed splits' backoffs (`notBefore`), by split id: runnable records that have one. */
  get notBefore(): ReadonlyMap<string, number> {
    return this.records.notBefore;
  }

  /** Keys under the prefix this build does not know (counted, otherwise ignored). */
  get unknownKeys(): number {
    return this.records.unknownKeys;
  }

  /**
   * The backlog by state, in splits and weight (the leader's metric): held
   * splits running or draining, queued the rest of the runnable ones.
   */
  backlog(): BacklogFigures {
    return this.records.backlog();
  }

  /** The engine's input, one row per split (weights, status, owners; members and reserve set per decision). */
  get pool(): ColumnarPool {
    return this.records.columns.pool;
  }

  /** Counts of split records by status, kept incrementally. */
  get statusCounts(): Readonly<StatusTally> {
    return this.records.columns.statusCounts;
  }

  /** Splits set aside because a record of theirs cannot be read, with the problems (for logs and the verdict). */
  get parked(): ReadonlyMap<string, ReadonlyMap<string, string>> {
    return this.records.columns.parked;
  }

  /**
   * Splits with a spec but no split record, none of whose records is a
   * problem: a record deleted by hand (to get rid of an unreadable one, say).
   * The leader seeds them again.
   */
  unrecorded(limit: number): string[] {
    return this.records.columns.unrecorded(limit);
  }

  /** A packed job's pages, folded bits and locations (decision 0037); undefined for the `keys` layout. */
  get packed(): PackedPages | undefined {
    return this.records.columns.packed;
  }

  /** Where packed split `id` lives (see PackedPages), if its page is known. */
  locationOf(id: string): number | undefined {
    return this.records.columns.locationOf(id);
  }

  /** A queue page the leader's own seeding wrote (pages are not watched): its splits become rows. */
  ownPage(bucket: number, page: number, generation: number, ids: readonly string[], weights: readonly number[]): void {
    this.records.pages.applyPage(bucket, page, generation, ids, weights);
    this.notify({ kinds: new Set(['queue']), all: false });
  }

  /** The leader's own fold-back landed at `revision` (packed-queue.ts). */
  ownFolded(bucket: number, page: number, bits: FoldedBits, revision: number, ids: readonly string[]): void {
    this.records.pages.applyFolded(bucket, page, bits, revision, ids);
    this.notify({ kinds: new Set(['folded']), all: false });
  }

  /**
   * Queue page `key` could not be read while promoting `ids` from it (deleted or overwritten after
   * the listing; pages are never watched): those splits are parked with `problem` (the next decision
   * leaves them out, inspect lists them) and the page is read again by the backstop, which brings
   * them back once it reads (PackedView.applyPage). It costs the splits it names, not the job.
   */
  pageDamaged(key: string, ids: readonly string[], problem: string): void {
    this.records.pages.unreadable.add(key);
    const columns = this.records.columns;
    for (const id of ids) {
      if (columns.packed?.keyed.has(id)) continue;
      columns.setProblem(id, 'queue', problem);
      columns.problemsChanged(id);
    }
    this.notify({ kinds: new Set(['queue']), all: false });
  }

  /**
   * A packed split found folded when about to promote it (its folded record changed by another
   * hand, or read only after the split was placed): completed. True when that changed its status.
   */
  foundFolded(id: string): boolean {
    const location = this.locationOf(id);
    const columns = this.records.columns;
    if (location === undefined || columns.packed?.keyed.has(id)) return false;
    const before = columns.statusOf(id);
    columns.pageStatusSeen(id, location);
    return columns.statusOf(id) !== before;
  }

  /** Split records known (with or without a spec). */
  get splitCount(): number {
    return this.records.columns.splitCount;
  }

  onChange(listener: (change: LeaderViewChange) => void): void {
    this.batcher.subscribe(listener);
  }

  /** Lists the job page by page at one revision, yielding between pages, then follows it. */
  async start(): Promise<void> {
    const revision = await this.list(listRanges(this.prefix), undefined, (kv) => this.records.put(kv.key, kv.value, kv.modRevision, kv.lease));
    if (this.failed || this.closed) return;
    // Seeding writes a keys job's spec and record together: a runnable record with no spec after a
    // whole listing is a spec deleted while no leader watched. Parked with the reason, as a deletion
    // seen by the watch is (leader-records.ts), not left unassigned silently.
    for (const id of this.records.columns.runnableWithoutSpec()) this.records.specMissing(id);
    this.records.floor = revision;
    this.otherRevision = Math.max(this.otherRevision, revision);
    this.saw(revision);
    if (!this.historySeeded) {
      // Once a term: a re-listing (a stopped watch) keeps what this term told.
      this.historySeeded = true;
      this.recent = seedHistory(summaryKey(this.prefix), this.records.summaryText, this.fp, this.records.leader, wallTime(this.clock));
    }
    this.follow(revision + 1);
    this.notify({ kinds: new Set(), all: true });
  }

  /**
   * The backstop: re-lists members, leases, assignments, plan and leader,
   * and replaces what the view holds of them (anything not listed is gone).
   */
  async resyncMembership(): Promise<void> {
    if (this.failed || this.closed) return;
    await this.rereadPages();
    if (this.unaccountedSplits() > 0) await this.relistPages();
    const listed = emptyListing();
    const sparse = jobKeyRanges(this.prefix, ['worker', 'assign', 'lease', 'leader', 'plan', 'control']);
    const revision = await this.list(sparse, undefined, (kv) => this.records.listSparse(kv, listed));
    if (this.failed || this.closed || revision <= this.records.floor) return;
    this.records.replaceSparse(listed, revision);
    // The listing covered every kind of the first range (assign, leader, lease, plan) up to it.
    this.saw(revision);
    this.notify({ kinds: new Set(['worker', 'assign', 'lease', 'plan', 'leader', 'control']), all: false });
  }

  /** Queue pages that could not be read (a page is listed once a term, never watched): read again, applied once readable. */
  private async rereadPages(): Promise<void> {
    for (const key of [...this.records.pages.unreadable]) {
      await this.readPage(key);
      if (this.failed || this.closed) return;
    }
  }

  /**
   * Splits the final plan counts that this view knows nothing of (completion.ts `unaccountedSplits`):
   * a queue page missing from the listing, say; and a packed job's splits known by a record of their
   * own but in no page the view holds (their page deleted after they were promoted): such a split is
   * no pool row (its weight and place are its page's), so it waits for the page as the others do.
   * 0 while our own seeding writes are not echoed yet. A pass over the parked and page-less splits:
   * for the backstop and its timer, not every change.
   */
  unaccountedSplits(): number {
    const plan = this.records.plan?.rec;
    if (!plan?.final || this.ownWritesPending) return 0;
    const unknown = unaccountedSplits(plan, { counts: this.statusCounts, parked: [...this.parked.keys()].map((id) => this.statusOf(id)) });
    return unknown + this.records.columns.pageless();
  }

  /** A packed job's queue pages listed again: those this view does not hold are read (decision 0072). */
  private async relistPages(): Promise<void> {
    const packed = this.records.columns.packed;
    if (!packed) return;
    let applied = false;
    await this.list(jobKeyRanges(this.prefix, ['queue']), undefined, (kv) => {
      const k = parseKey(this.prefix, kv.key);
      if (k.kind !== 'queue' || packed.hasPage(k.bucket, k.page)) return;
      if (this.records.pages.putPage(kv.key, kv.value)) applied = true;
    });
    if (applied && !this.failed && !this.closed) this.notify({ kinds: new Set(['queue']), all: false });
  }

  /**
   * Queue page `key` read from the store and applied (pages are listed once a term and never
   * watched, so a page this view missed is read here: one that could not be read, or one
   * seeding found written, its own put whose reply was lost). True once applied.
   */
  async readPage(key: string): Promise<boolean> {
    const kv = await this.store.get(key);
    if (!kv || this.failed || this.closed) return false;
    const applied = this.records.pages.putPage(kv.key, kv.value);
    if (applied) this.notify({ kinds: new Set(['queue']), all: false });
    return applied;
  }

  /** Queue pages that could not be read yet (seeding waits for them: their splits are unknown). */
  get unreadablePages(): ReadonlySet<string> {
    return this.records.pages.unreadable;
  }

  /**
   * The leader's own seeding transaction landed at `revision` with these puts
   * (key → what it wrote): their echo is applied without decoding
   * (own-writes.ts). Ignored when the watch has delivered that revision already.
   */
  ownSeeded(revision: number, writes: ReadonlyMap<string, OwnWrite>): void {
    if (revision > this.otherRevision) this.records.own.expect(revision, writes);
  }

  /** Resolves once at most `limit` of the leader's own seeding transactions have not echoed yet (own-writes.ts `atMost`). */
  /**
   * A divided split's part weight (its progress record's `weight`, decision 0063), read by a
   * division round: the decisions and totals weigh the part, not the whole the spec says, or every
   * residual would count twice (its own weight, and again in its parent's).
   */
  setPartWeight(id: string, weight: number): void {
    const columns = this.records.columns;
    if (columns.statusOf(id) === undefined || columns.weightOf(id) === undefined || columns.weightOf(id) === weight) return;
    columns.partWeightSeen(id, weight);
  }

  /** Residuals of divided splits whose spec this view has seen (decision 0063). */
  get residuals(): ReadonlySet<string> {
    return this.records.residuals;
  }

  /** The job's recent notable events, oldest first, bounded (protocol/job-history.ts): the summary carries them. */
  get history(): readonly HistoryEntry[] {
    return this.recent;
  }

  /** Residuals of divided splits whose spec this view has seen (decision 0063). */
  get residualCount(): number {
    return this.records.residuals.size;
  }

  /** Whether some of this leader's own seeding writes have not echoed yet (the view does not hold them). */
  get ownWritesPending(): boolean {
    return this.records.own.size > 0;
  }

  ownEchoesAtMost(limit: number): Promise<void> {
    return this.records.own.atMost(limit);
  }

  /** Room for `splits` splits in the columns at once, ids of about `unitsPerId` code units (before seeding a plan of that many). */
  reserve(splits: number, unitsPerId = 0): void {
    this.records.columns.reserve(splits, unitsPerId);
  }

  /** Touches up to `pages` more pages of the split id index (IdArena `touchIndex`): true once all are. */
  touchIndex(pages: number): boolean {
    return this.records.columns.touchIndex(pages);
  }

  /** Specs known (in the pool, or waiting for their record). */
  get specCount(): number {
    return this.records.columns.specCount;
  }

  /** Whether split `id`'s spec has been seen. */
  hasSpec(id: string): boolean {
    return this.records.columns.hasSpec(id);
  }

  /** The status of split `id`, if its record has been seen. */
  statusOf(id: string): SplitStatus | undefined {
    return this.records.columns.statusOf(id);
  }

  /** The weight of split `id`, if its spec has been seen (the job summary's backoff weight). */
  weightOf(id: string): number | undefined {
    return this.records.columns.weightOf(id);
  }

  async close(): Promise<void> {
    this.closed = true;
    this.batcher.clear();
    this.records.own.clear(); // nobody waits for an echo that will not come
    const hs = this.handles;
    this.handles = [];
    await Promise.all(hs.map((h) => h.close()));
  }

  // ---- listing and following --------------------------------------------------

  /** Lists `ranges` page by page, all at one revision; returns it. */
  private async list(ranges: (KeyRange | ListedRange)[], at: number | undefined, apply: (kv: KeyValue) => void): Promise<number> {
    let revision = at;
    const listed = ranges as ListedRange[];
    const ask = (i: number, startAfter?: string) => {
      const { limit, ...range } = listed[i]!;
      return this.store.list(this.prefix, {
        limit: limit ?? PAGE_SIZE, ...range, ...(startAfter !== undefined ? { startAfter } : {}), ...(revision !== undefined ? { revision } : {}),
      });
    };
    // Every range's first page is asked for as soon as the listing's revision is known (the first
    // page fixes it): a new job's listing is a page a range, two round trips instead of one a range
    // at a term's start. Pages are still applied in range order, one extra page a range in memory.
    let firstPages: (Promise<ListPage> | undefined)[] | undefined;
    const askFirstPages = (after: number) => {
      firstPages = listed.map((_, j) => (j > after ? ask(j) : undefined));
      for (const p of firstPages) p?.catch(() => undefined); // awaited below, or dropped when the view stops
    };
    if (revision !== undefined) askFirstPages(-1);
    for (let i = 0; i < listed.length; i++) {
      let startAfter: string | undefined;
      for (;;) {
        const early = startAfter === undefined ? firstPages?.[i] : undefined;
        const page = await (early ?? ask(i, startAfter));
        if (this.failed || this.closed) return revision ?? page.revision;
        if (revision === undefined) {
          revision = page.revision;
          askFirstPages(i);
        }
        try {
          for (const kv of page.kvs) if (inJobScope(this.prefix, kv.key)) apply(kv);
        } catch (e) {
          this.fail(storeFailure(e));
          return revision;
        }
        if (!page.more || page.kvs.length === 0) break;
        startAfter = page.kvs[page.kvs.length - 1]!.key;
        await nextTurn();
      }
    }
    return revision ?? 0;
  }

  private follow(fromRevision: number): void {
    watchRanges(this.prefix).forEach((range, i) => {
      const handle = this.store.watch(this.prefix, {
        ...range,
        fromRevision,
        onEvent: (e) => this.applyEvent(e, i === 0),
        onError: (e) => {
          if (this.failed || this.closed || !this.handles.includes(handle)) return;
          // A watch that cannot resume (compacted, say) leaves the view blind: start over.
          if (!e.retryable) this.fail(e);
          else this.restartLater(0);
        },
      });
      handle.ready.catch(() => undefined);
      this.handles.push(handle);
    });
  }

  /** Replaces the view from a fresh listing (a watch stopped for good); retried while the store fails. */
  private async restart(): Promise<void> {
    const hs = this.handles;
    this.handles = [];
    await Promise.all(hs.map((h) => h.close()));
    if (this.failed || this.closed) return;
    this.records.clear();
    try {
      await this.start();
    } catch (e) {
      this.restartFailed(e);
      return;
    }
    this.restartFailures = 0;
  }

  /** A restart failed: retried with jittered backoff while the store fails, else the view fails. */
  private restartFailed(e: unknown): void {
    const err = storeFailure(e);
    if (!err.retryable) this.fail(err);
    else this.restartLater(backoffDelay(this.restartFailures++, { base: 250, max: 4000, min: 25 }, (this.restartRandom ??= retryRandom(this.prefix))));
  }

  /** A restart after `ms`; however it fails (closing the old watches too), never an unhandled rejection. */
  private restartLater(ms: number): void {
    const run = () => void this.restart().catch((e: unknown) => this.restartFailed(e));
    if (ms <= 0) run();
    else this.clock.setTimer(ms, run);
  }

  private applyEvent(e: WatchEvent, firstRange: boolean): void {
    if (this.failed || this.closed) return;
    const before = this.revision;
    if (firstRange) this.saw(e.modRevision);
    else if (e.modRevision > this.otherRevision) {
      // Events come in revision order: own writes of earlier revisions have all echoed.
      if (this.records.own.size > 0) this.records.own.dropThrough(this.otherRevision);
      this.otherRevision = e.modRevision;
    }
    try {
      // A nested job's key inside the ranges is none of this job's: it only moves the revision.
      const scoped = inJobScope(this.prefix, e.key);
      const held = scoped && this.historySeeded ? noteBefore(this.records, e.key) : undefined;
      const kind = !scoped ? undefined : e.type === 'put' ? this.records.put(e.key, e.value ?? '', e.modRevision, e.lease) : this.records.remove(e.key, e.modRevision);
      if (held !== undefined) this.tell(held, e);
      // A change already known (a backstop listing got there first) still moves the revision the
      // leader waits on before deciding again: say so, or it would wait for a change that came.
      if (kind) this.notify({ kinds: new Set([kind]), all: false });
      else if (this.revision > before) this.notify({ kinds: new Set(), all: false });
    } catch (err) {
      this.fail(storeFailure(err));
    }
  }

  /** Adds the notable events of one applied change to the history. */
  private tell(before: Before, e: WatchEvent): void {
    const events = notableEvents(this.records, before, e.key, e.type === 'put' ? e.value : undefined);
    if (events.length === 0) return;
    const at = wallTime(this.clock);
    this.recent = appendHistory(this.recent, events.map((ev) => historyEntry(ev, e.modRevision, at)));
  }

  private saw(revision: number): void {
    if (revision > this.revision) this.revision = revision;
  }

  private notify(change: LeaderViewChange): void {
    this.batcher.add(change);
  }

  private fail(error: SplitfleetError): void {
    if (this.failed) return;
    this.failed = true;
    this.onFatal(error);
  }
}
