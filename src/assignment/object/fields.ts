/**
 * Reading the caller's split objects into columns, at a cost that does not
 * depend much on how the caller built them.
 *
 * Why two readers: a named property load (`s.id`) is an inline cache keyed
 * by the object's hidden class. Objects built as literals, by one class or
 * by one factory share a few classes, and named loads read them at memory
 * speed (six loads over 1M literals 12–20 ms). Node 20's V8 (11.3) gives
 * every object built as `{ ...s, leaseOwner }` (spread, then any field
 * added) a hidden class of its own (the clone's map is not in a transition
 * tree, seen with `%HaveSameMap`; Node 22 and later share one, decision
 * 0022), so at 1M splits named loads see ~1M classes, go
 * megamorphic, miss the stub cache on nearly every object and pay a runtime
 * miss each (1,000–1,500 ms). `Reflect.get` is a generic lookup with no
 * inline cache: 110–130 ms on literals, 130–490 ms on spread objects, the
 * same on every read. Neither is right for every caller, and which one
 * wins is a property of the objects that JavaScript cannot see, so
 * `readSplits` measures it: now and then (`settleProbe`, `judgeBlock`) it
 * reads one block with each reader, times both and reads on with the
 * faster (decision 0020). Both readers read the same fields once each into
 * the same columns, so the choice changes the speed, never the result; the
 * probe's clock is the only one in the engine's input path. A `for…in` reader was
 * measured too and lost (decision 0002).
 *
 * Invariants: reads each field exactly once (a getter runs once, as in the
 * validator); an owner that is undefined is stored as null.
 */
import { flatten, PAGE_BITS, PAGE_MASK, PAGE_ROWS, pageCount, pageLength } from './pages.js';
import { isValidWeight } from '../../split-model.js';
import { isId, isOwner, statusCode } from '../validate.js';

/** Rows [p·PAGE_ROWS, (p + 1)·PAGE_ROWS) of a read's ids and owners, at their row & PAGE_MASK. */
export interface FieldPage {
  ids: string[];
  lease: (string | null)[];
  prev: (string | null)[];
  rec: (string | null)[];
}

/**
 * One read of a split array: row i is `splits[i]`. Reused between calls
 * (grown, never shrunk). Ids and owners are paged (pages.ts): row i's are
 * in `pages[i >>> PAGE_BITS]`, which the read that first reaches row i
 * allocates (`fieldPage`); every row a read reached is in an allocated page.
 */
export interface SplitFields {
  pages: (FieldPage | null)[];
  weight: Float64Array;
  /** split-model.ts STATUS_CODES; an absent status is runnable. */
  status: Uint8Array;
  /** The reader choice of the read in progress (`readSplits`). */
  choice: ReaderChoice;
  /**
   * Read over a buffer that holds the last input (marshal.ts `readBuffer`): true
   * while every row read so far equals the row the buffer held, which is
   * then not stored again; the first row that differs turns it false, and
   * from there rows are stored without comparing. False for any other read.
   */
  repeats: boolean;
}

/**
 * Room for n rows. Only the typed columns are allocated now, and their
 * memory is mapped as it is written; the pages of ids and owners come
 * later, one at a time (`fieldPage`: the pool's `readTask` allocates them a
 * turn each before it reads, the readers any still missing): lists of 1M
 * allocated at once held a pool caller's loop 25–80 ms a list (decision 0023).
 */
export function splitFields(n: number): SplitFields {
  return {
    pages: new Array<FieldPage | null>(pageCount(n)).fill(null),
    weight: new Float64Array(n), status: new Uint8Array(n), choice: newChoice(), repeats: false,
  };
}

/** Page p of `f` (rows from p·PAGE_ROWS), allocated if no read reached it yet. */
export function fieldPage(f: SplitFields, p: number): FieldPage {
  const have = f.pages[p];
  if (have !== null && have !== undefined) return have;
  const rows = pageLength(f.weight.length, p);
  const page: FieldPage = {
    ids: new Array<string>(rows).fill(''), lease: new Array<string | null>(rows).fill(null),
    prev: new Array<string | null>(rows).fill(null), rec: new Array<string | null>(rows).fill(null),
  };
  f.pages[p] = page;
  return page;
}

/** `f` if it holds n rows, else a larger one (old contents dropped); either way a new read, which starts with a probe. */
export function fieldsFor(f: SplitFields | null, n: number): SplitFields {
  if (f === null || f.weight.length < n) return splitFields(Math.max(n, f === null ? 0 : 2 * f.weight.length));
  f.choice = newChoice();
  f.repeats = false;
  return f;
}

/**
 * Two read buffers, so that a read can be compared with the last one, which
 * the other buffer holds: the pool's (object-task.ts compares a new read
 * with the last one after reading it). The in-thread engine compares while
 * it reads, over its one buffer (marshal.ts `MarshalScratch.readBuffer`).
 */
export class ReadBuffers {
  private readonly reads: [SplitFields | null, SplitFields | null] = [null, null];

  /** A buffer of at least n rows for a new read, never `busy` (the read kept for comparison). */
  beside(busy: SplitFields | null, n: number): SplitFields {
    const i = busy !== null && this.reads[0] === busy ? 1 : 0;
    return (this.reads[i] = fieldsFor(this.reads[i], n));
  }
}

/**
 * Rows [0, n) of a read's ids as one list: written over `into` when given
 * (a list no one else holds, which becomes n long), else a fresh one. Why
 * `into`: a fresh list of 1M is 8 MB of new memory, 25–34 ms to write
 * where fresh memory costs ~3 ms a MB (pages.ts); a list already written
 * once costs a few.
 */
export function readIds(f: SplitFields, n: number, into: string[] | null = null): string[] {
  if (into === null) return flatten(f.pages.map((page) => (page === null ? null : page.ids)), n);
  for (let i = 0; i < n; ) {
    const base = i & ~PAGE_MASK;
    const end = Math.min(n, base + PAGE_ROWS);
    const page = f.pages[base >>> PAGE_BITS]!.ids;
    for (; i < end; i++) into[i] = page[i - base]!;
  }
  into.length = n;
  return into;
}

/** The first row in [0, n) whose id in `f` is not `ids`'s (n: none). */
export function sameIdsUpTo(f: SplitFields, ids: readonly string[], n: number): number {
  for (let i = 0; i < n; ) {
    const base = i & ~PAGE_MASK;
    const end = Math.min(n, base + PAGE_ROWS);
    const page = f.pages[base >>> PAGE_BITS]!.ids;
    for (; i < end; i++) if (page[i - base] !== ids[i]) return i;
  }
  return n;
}

/** Rows [from, to) of two reads are equal in every field (so the engine would be given the same columns for them). */
export function sameRows(a: SplitFields, b: SplitFields, from: number, to: number): boolean {
  const { weight, status } = a;
  const { weight: weight2, status: status2 } = b;
  for (let i = from; i < to; ) {
    const p = i >>> PAGE_BITS;
    const base = p << PAGE_BITS;
    const end = Math.min(to, base + PAGE_ROWS);
    const { ids, lease, prev, rec } = a.pages[p]!;
    const { ids: ids2, lease: lease2, prev: prev2, rec: rec2 } = b.pages[p]!;
    for (let j = i - base; i < end; i++, j++) {
      if (ids[j] !== ids2[j] || weight[i] !== weight2[i] || status[i] !== status2[i]
        || lease[j] !== lease2[j] || prev[j] !== prev2[j] || rec[j] !== rec2[j]) return false;
    }
  }
  return true;
}

/** Equal lists, element for element (null: no list). */
export function sameStrings(a: readonly string[] | null, b: readonly string[] | null): boolean {
  if (a === null || b === null) return a === b;
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

const newChoice = (): ReaderChoice => ({
  named: true, untilProbe: 0, probing: 0, namedPerRow: 0, interval: 1, chosenPerRow: 0, namedWon: false, investMs: INVEST_MS,
});

/** Rows per block: the unit the readers are timed and chosen over. */
const BLOCK = 1024;
/** The most blocks read between two probes (a probe every 256k rows: at most ~1 ms each on spread objects). */
export const PROBE_EVERY = 256;
/** A block this many times slower per row than its reader was in the last probe calls for a probe at the next block. */
export const SURPRISE = 4;
/** Blocks shorter than this are not judged (their time per row is mostly the clock's). */
const JUDGED_ROWS = 256;
/** What one read may spend, over `Reflect.get`'s time, reading with named loads the blocks it chose `Reflect.get` for (`investing`). */
export const INVEST_MS = 40;

/** Which reader `readSplits` uses, and when it measures again; kept with the scratch, across the calls of one read. */
export interface ReaderChoice {
  named: boolean;
  /** Blocks until the next probe; 0: probe at the next block. */
  untilProbe: number;
  /** A probe times one block with each reader, in turn (so it spans calls that read a block or less): 1 once named loads are timed. */
  probing: 0 | 1;
  /** Named loads' time per row in the probe under way. */
  namedPerRow: number;
  /** Blocks from the next probe to the one after: 1 at the start of a read and after a surprise, doubled by each probe up to PROBE_EVERY. */
  interval: number;
  /** The chosen reader's time per row in the last probe: what later blocks are judged against. */
  chosenPerRow: number;
  /** Named loads won a probe in this read: the objects are not ones named loads are slow on for good. */
  namedWon: boolean;
  /** What is left of this read's INVEST_MS. */
  investMs: number;
}

/**
 * After a probe timed both readers (ms per row): read on with the faster,
 * and probe again after `interval` blocks, which doubles up to PROBE_EVERY.
 * Why not PROBE_EVERY at once: a probe also times the JIT. The first blocks
 * a reader ever runs are interpreted or deoptimized, and objects whose
 * hidden class V8 has deprecated (a field that turned from small integers
 * to doubles while the caller built them) cost named loads ~1 µs each the
 * first time, to migrate them, where `Reflect.get` reads them as they are.
 * A choice made on such a block held for 256 blocks read the first 1M
 * splits of a fresh pool in 0.7–1.1 s (decision 0020).
 */
export function settleProbe(choice: ReaderChoice, namedPerRow: number, genericPerRow: number): void {
  choice.named = namedPerRow <= genericPerRow;
  if (choice.named) choice.namedWon = true;
  choice.chosenPerRow = Math.min(namedPerRow, genericPerRow);
  choice.probing = 0;
  choice.untilProbe = choice.interval;
  choice.interval = Math.min(PROBE_EVERY, 2 * choice.interval);
}

/**
 * After a block read with the chosen reader: a block of JUDGED_ROWS or more
 * that took SURPRISE times the chosen reader's probe time per row means the
 * objects or the code changed under it (rows of another hidden class, a
 * deopt, a collection): probe at the next block, and from there on as at
 * the start of a read.
 */
export function judgeBlock(choice: ReaderChoice, perRow: number, rows: number): void {
  choice.untilProbe--;
  if (rows >= JUDGED_ROWS && perRow > SURPRISE * choice.chosenPerRow) {
    choice.untilProbe = 0;
    choice.interval = 1;
  }
}

/**
 * Whether the next block, for which the last probe chose `Reflect.get`, is
 * read with named loads all the same. Why: objects on a hidden class V8 has
 * deprecated cost named loads ~0.1–1 µs each the first time (they are
 * migrated) and ~12 ns after, where `Reflect.get` costs ~50 ns every time
 * and boxes each double weight. Chosen greedily, such objects were never
 * migrated: the bench's fresh input (half its objects deprecated) was read
 * half by `Reflect.get` on every call, and a first call at 1M × 10k spent
 * 25–45 ms more reading, and more in scavenges, than one over migrated
 * objects (54d2c72 read by name and migrated them in its first call; issue
 * 30). So a read invests: once named loads won a probe in it (they are fast
 * on some of these objects, so these are not objects named loads are slow
 * on for good, such as Node 20's spread-built ones, decision 0022), it reads
 * `Reflect.get`'s blocks by name while what that cost over `Reflect.get`'s
 * probe time stays within INVEST_MS. A leader reads the same objects every
 * tick: the investment pays back within a read or two, and no read pays
 * more than INVEST_MS for it (decision 0020's stall on a misleading probe
 * stays bounded).
 */
export function investing(choice: ReaderChoice): boolean {
  return !choice.named && choice.namedWon && choice.investMs > 0;
}

/** After a block `investing` read by name in `ms`: its cost over `Reflect.get`'s probe time is charged to the read. */
export function chargeInvestment(choice: ReaderChoice, ms: number, rows: number): void {
  choice.untilProbe--;
  choice.investMs -= ms - choice.chosenPerRow * rows;
}

/**
 * Reads splits[from, to) into `f` and checks each split's own rules (object,
 * non-empty string id, weight an integer 0 … 2^53 − 1, owners strings or
 * null, a known status). Returns −1, or the first row that breaks a rule
 * (the caller runs the validator for the exact error). Uniqueness of ids is
 * not checked here. The reader for each block is the one the last probe
 * found faster (`f.choice`); rows are read in order, block by block.
 */
export function readSplits(splits: readonly unknown[], from: number, to: number, f: SplitFields): number {
  const choice = f.choice;
  for (let i = from; i < to; ) {
    // A block never spans two pages (a page is a whole number of blocks).
    const end = Math.min(to, i + BLOCK, ((i >>> PAGE_BITS) + 1) << PAGE_BITS);
    let bad: number;
    if (choice.untilProbe <= 0) {
      const t0 = performance.now();
      const named = choice.probing === 0;
      bad = named ? readNamed(splits, i, end, f) : readGeneric(splits, i, end, f);
      const perRow = (performance.now() - t0) / (end - i);
      if (named) {
        choice.namedPerRow = perRow;
        choice.probing = 1;
      } else {
        settleProbe(choice, choice.namedPerRow, perRow);
      }
    } else if (investing(choice)) {
      const t0 = performance.now();
      bad = readNamed(splits, i, end, f);
      chargeInvestment(choice, performance.now() - t0, end - i);
    } else {
      const t0 = performance.now();
      bad = choice.named ? readNamed(splits, i, end, f) : readGeneric(splits, i, end, f);
      judgeBlock(choice, (performance.now() - t0) / (end - i), end - i);
    }
    if (bad >= 0) return bad;
    i = end;
  }
  return -1;
}

/** `readSplits` with named loads only: fastest over objects that share a few hidden classes. */
export function readNamed(splits: readonly unknown[], from: number, to: number, f: SplitFields): number {
  return byPage(splits, from, to, f, namedInPage);
}

/** `readSplits` with `Reflect.get` only: no inline cache, so no cost per hidden class. */
export function readGeneric(splits: readonly unknown[], from: number, to: number, f: SplitFields): number {
  return byPage(splits, from, to, f, genericInPage);
}

type PageReader = (splits: readonly unknown[], from: number, to: number, f: SplitFields, page: FieldPage, base: number) => number;

/** `read` over the parts of rows [from, to) that lie in one page each (one call a page: the row loop stays in `read`). */
function byPage(splits: readonly unknown[], from: number, to: number, f: SplitFields, read: PageReader): number {
  for (let i = from; i < to; ) {
    const p = i >>> PAGE_BITS;
    const base = p << PAGE_BITS;
    const end = Math.min(to, base + PAGE_ROWS);
    const bad = read(splits, i, end, f, fieldPage(f, p), base);
    if (bad >= 0) return bad;
    i = end;
  }
  return -1;
}

function namedInPage(splits: readonly unknown[], from: number, to: number, f: SplitFields, page: FieldPage, base: number): number {
  for (let i = from; i < to; i++) {
    const s = splits[i] as Partial<Record<'id' | 'weight' | 'status' | 'leaseOwner' | 'previous' | 'recordOwner', unknown>>;
    if (typeof s !== 'object' || s === null) return i;
    if (!keepRow(f, page, i - base, i, s.id, s.weight, s.status, s.leaseOwner, s.previous, s.recordOwner)) return i;
  }
  return -1;
}

function genericInPage(splits: readonly unknown[], from: number, to: number, f: SplitFields, page: FieldPage, base: number): number {
  for (let i = from; i < to; i++) {
    const s = splits[i];
    if (typeof s !== 'object' || s === null) return i;
    const ok = keepRow(f, page, i - base, i, Reflect.get(s, 'id'), Reflect.get(s, 'weight'), Reflect.get(s, 'status'),
      Reflect.get(s, 'leaseOwner'), Reflect.get(s, 'previous'), Reflect.get(s, 'recordOwner'));
    if (!ok) return i;
  }
  return -1;
}

/**
 * Checks one split's fields (read in this order by both readers) and stores
 * them in row i (at j of its page); while `repeats`, only if the row does not hold them
 * already. False when a rule is broken. Why compare only then: comparing
 * every read before it stores cost a literal read at 1M 56 → 67 ms when the
 * rows were equal and 57 → 94 ms when they were not (the pool's reads).
 */
function keepRow(f: SplitFields, page: FieldPage, j: number, i: number, id: unknown, w: unknown, st: unknown, lo: unknown, pr: unknown, ro: unknown): boolean {
  const code = statusCode(st);
  if (!isId(id) || !isValidWeight(w) || code < 0 || !isOwner(lo) || !isOwner(pr) || !isOwner(ro)) return false;
  if (f.repeats) {
    if (page.ids[j] === id && f.weight[i] === w && f.status[i] === code
      && page.lease[j] === (lo ?? null) && page.prev[j] === (pr ?? null) && page.rec[j] === (ro ?? null)) return true;
    f.repeats = false;
  }
  page.ids[j] = id;
  f.weight[i] = w;
  f.status[i] = code;
  page.lease[j] = lo ?? null;
  page.prev[j] = pr ?? null;
  page.rec[j] = ro ?? null;
  return true;
}
