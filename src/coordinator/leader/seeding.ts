/**
 * Seeding: the leader writes what its planner returned. Every spec and split
 * record is created only where absent (a record that exists is never
 * overwritten, so progress is never reset), in batches under the store's
 * limits, pipelined, a slice per turn of the event loop; then the plan
 * record (finality, planned count, cursor). A split record deleted by hand
 * is seeded again (`reseed`).
 *
 * Invariants:
 * - The planner's output is validated whole before anything is written
 *   (ids valid and unique, weights safe integers ≥ 0): PLANNER_FAILURE.
 * - Every write is guarded by leadership (`guard()`); a plan record deleted
 *   meanwhile is never re-created (JOB_DELETED).
 * - It decides nothing about ownership; the records it creates are
 *   `initialSplitRecord`s (protocol/claims.ts), and every transaction it
 *   sends is built by protocol/leader-txns.ts (`seedTxn`, `planUpdateTxn`).
 */
import { IdArena } from '../../assignment/front-door.js';
import type { Config } from '../../config.js';
import { reservedIdProblem } from '../../protocol/residual-ids.js';
import { SplitfleetError } from '../../errors.js';
import { idProblem, isValidId, planKey } from '../../protocol/keys.js';
import { bucketsTxn, planUpdateTxn, reseedTxn, reseedWrite, seedTxn, seedWrites, type PlanWrite } from '../../protocol/leader-txns.js';
import { bucketing, bucketsFor, cutPages } from '../../protocol/packed.js';
import { queuePagePut, type QueuePage } from '../../protocol/packed-txns.js';
import { decodeRecord, fingerprintHash, type Json, type PlanRecord } from '../../protocol/records.js';
import { batches, type Revisioned } from '../../protocol/txns.js';
import { isValidWeight, WEIGHT_RULE } from '../../split-model.js';
import { itemBytes, type Compare, type Op, type Store, type Txn } from '../../store/store.js';
import type { LeaderView } from './leader-view.js';
import type { OwnWrite } from './own-writes.js';
import { WritePipeline } from './write-pipeline.js';
import type { Logger } from '../log.js';
import type { PlannedSplit, PlanResult } from '../types.js';
import { nextTurn } from '../../next-turn.js';

/** Splits validated and encoded per turn of the event loop while seeding. */
const SEED_SLICE = 500;
/** Pages of an id index touched per turn before a large plan is looked up in it (1 MiB, ~8 ms). */
const TOUCH_PAGES = 256;
/**
 * Splits looked up and bucketed per turn while seeding a packed job: 2k. At
 * 10M a lookup probes an index reserved for the whole plan, missing the
 * cache and at first faulting its pages in (3 µs a split early in a fleet at
 * load 6, and a turn of 16k held the loop 45–260 ms).
 */
const BUCKET_SLICE = 1 << 11;
/** Splits placed by bucket per turn while seeding a packed job (a typed-array pass, a few ms). */
const ORDER_SLICE = 1 << 18;
/** A planner's `expected` is honoured up to this many times the splits known after its page (types.ts)… */
const EXPECTED_BOUND = 64;
/**
 * …and always up to 16M splits (decision 0049): the hint's worst cost is an id index of
 * 128 MiB, where honouring a 10M hint in two steps (6.4M after a first page of
 * 100k, then 10M) rehashed the index into fresh memory at once and held the
 * loop 0.6 s (2.6 s before growth copied only the rows in use).
 */
const EXPECTED_FLOOR = 1 << 24;
/** A planner result's paging fields, checked: `more` (a page of a larger listing) and `expected` (its total, a hint). */
export function pagingOf(result: PlanResult): { more: boolean; expected: number | undefined } {
  if (result?.more !== undefined && typeof result.more !== 'boolean') throw new SplitfleetError('PLANNER_FAILURE', `planner result.more: must be a boolean or absent (got ${typeof result.more})`);
  const { expected } = result;
  if (expected !== undefined && !(Number.isSafeInteger(expected) && expected >= 0)) {
    throw new SplitfleetError('PLANNER_FAILURE', `planner result.expected: must be an integer ≥ 0 or absent (got ${typeof expected === 'number' ? String(expected) : typeof expected})`);
  }
  return { more: result.more === true && !result.final, expected };
}

/** The mean length of `splits`' ids (code units), from up to 4,096 of them spread over the plan; 0 for none. */
function meanIdLength(splits: readonly PlannedSplit[]): number {
  const step = Math.max(1, Math.floor(splits.length / 4096));
  let units = 0;
  let n = 0;
  for (let i = 0; i < splits.length; i += step, n++) units += splits[i]!.id.length;
  return n === 0 ? 0 : units / n;
}

/** How many seeding transactions are in flight at once. */
const SEED_PIPELINE = 8;
/**
 * How many of its own seeding transactions the leader lets run ahead of its
 * watch: beyond it, it waits for their echo (own-writes.ts `atMost`), so its
 * watch stays caught up and etcd sends it one small response per revision.
 */
const SEED_ECHO_LAG = 32;
/** Split records re-seeded per step when they were deleted (by hand, to clear an unreadable one). */
const RESEED_BATCH = 60;

/** A promise that resolves when `signal` aborts (a wait of seeding's must end with its term), and its listener's removal. */
function whenAborted(signal: AbortSignal): { promise: Promise<void>; dispose: () => void } {
  let dispose = (): void => undefined;
  const promise = new Promise<void>((resolve) => {
    if (signal.aborted) return resolve();
    const onAbort = (): void => resolve();
    signal.addEventListener('abort', onAbort, { once: true });
    dispose = () => signal.removeEventListener('abort', onAbort);
  });
  return { promise, dispose };
}

/** Queue pages sent per turn of the loop while seeding a packed job. */
const PAGES_PER_TURN = 4;

export interface SeederContext {
  store: Store;
  config: Config;
  prefix: string;
  /** The leadership guard of the current term (a seeding run takes it once, at its start). */
  guard: () => Compare;
  leading: () => boolean;
  log: Logger;
}

/**
 * Throws PLANNER_FAILURE for the first planned split of `splits[start, end)` that breaks a rule.
 * `seen` holds the ids of `splits[0, start)` (split i at row i): an arena sized for the whole plan,
 * not a Set, whose growth rehashed 512k ids at once and held the loop ~50 ms at 1M (decision 0043).
 */
export function validatePlanned(splits: readonly PlannedSplit[], start: number, end: number, seen: IdArena): void {
  for (let i = start; i < end; i++) {
    const s = splits[i]!;
    if (!isValidId(s?.id)) throw new SplitfleetError('PLANNER_FAILURE', `planner split [${i}].id: ${idProblem(s?.id)}`);
    const reserved = reservedIdProblem(s.id);
    if (reserved !== undefined) throw new SplitfleetError('PLANNER_FAILURE', `planner split [${i}].id: ${reserved} (got ${JSON.stringify(s.id)})`);
    const twin = seen.rowOf(s.id);
    if (twin >= 0) throw new SplitfleetError('PLANNER_FAILURE', `planner split [${i}].id: "${s.id}" appears twice (first at [${twin}]); split ids must be unique`);
    seen.add(i, s.id);
    if (!isValidWeight(s.weight)) {
      throw new SplitfleetError('PLANNER_FAILURE', `planner split "${s.id}".weight: ${WEIGHT_RULE} (got ${String(s.weight)})`);
    }
  }
}

export class Seeder {
  private reseeding = false;

  /** The plan record as this leader last wrote or read it (`updatePlan`). */
  private known: Revisioned<PlanRecord> | undefined;

  constructor(private readonly ctx: SeederContext) {}

  /**
   * Validates the planner's output (all of it, before anything is written) and
   * creates the missing spec + split records, a slice per turn of the event
   * loop, so a plan of millions never holds the loop; then the plan record.
   */
  async seed(job: LeaderView, generation: number, splits: PlannedSplit[], final: boolean, cursor: Json | undefined, signal: AbortSignal, expected?: number): Promise<void> {
    // The leadership of the term this run belongs to, not of whichever term is current when it writes:
    // a run that outlived its term (deposed and elected again meanwhile) must lose, not restate the plan.
    const guard = this.ctx.guard();
    const seen = new IdArena();
    seen.reserveRows(splits.length);
    // Both id indexes are touched a slice per turn before lookups touch them at random (IdArena `touchIndex`).
    while (!seen.touchIndex(TOUCH_PAGES)) await nextTurn();
    for (let start = 0; start < splits.length; start += SEED_SLICE) {
      const end = Math.min(splits.length, start + SEED_SLICE);
      validatePlanned(splits, start, end, seen);
      if (end < splits.length) await nextTurn();
      if (signal.aborted) return;
    }
    // A planner returns the whole plan or what is new since its cursor: room for the larger, at least.
    // A paged planner's expected total, bounded: a hint must not make the leader reserve without limit.
    const hinted = expected === undefined ? 0 : Math.min(expected, Math.max(EXPECTED_FLOOR, EXPECTED_BOUND * (job.specCount + splits.length)));
    job.reserve(Math.max(job.specCount, splits.length, hinted), meanIdLength(splits));
    while (!job.touchIndex(TOUCH_PAGES)) {
      await nextTurn();
      if (signal.aborted) return;
    }
    const known = job.packed
      ? await this.seedPages(job, guard, generation, splits, signal)
      : await this.seedRecords(job, guard, generation, splits, signal);
    if (signal.aborted) return;
    await this.writePlan(guard, generation, Math.max(known, job.specCount), final, cursor);
  }

  /** Creates the spec and split records the view does not have; returns the specs known after. */
  private async seedRecords(job: LeaderView, guard: Compare, generation: number, splits: PlannedSplit[], signal: AbortSignal): Promise<number> {
    let known = job.specCount;
    const pipeline = new WritePipeline(SEED_PIPELINE);
    const stopped = whenAborted(signal);
    try {
      await this.seedSlices(job, guard, generation, splits, signal, stopped.promise, pipeline, () => known++);
    } finally {
      stopped.dispose();
    }
    await pipeline.drain();
    return known;
  }

  /** seedRecords' loop: a slice of the plan per turn, its batches pipelined, paced by the echo of what was sent. */
  private async seedSlices(
    job: LeaderView, guard: Compare, generation: number, splits: PlannedSplit[], signal: AbortSignal, stopped: Promise<void>, pipeline: WritePipeline, counted: () => void,
  ): Promise<void> {
    const { store, prefix } = this.ctx;
    const fp = fingerprintHash(this.ctx.config.fingerprint);
    const maxBytes = store.limits.maxRequestBytes - 4096;
    const perTxn = Math.floor((store.limits.maxOpsPerTxn - 1) / 2) * 2;
    for (let start = 0; start < splits.length; start += SEED_SLICE) {
      const writes: Op[][] = [];
      // What each put writes, for the view to apply its echo without decoding it (own-writes.ts).
      const own = new Map<Op, OwnWrite>();
      for (let i = start; i < Math.min(splits.length, start + SEED_SLICE); i++) {
        const s = splits[i]!;
        if (job.hasSpec(s.id)) continue;
        counted();
        const pair = seedWrites(prefix, fp, generation, s, maxBytes);
        own.set(pair[0]!, { kind: 'spec', id: s.id, weight: s.weight });
        own.set(pair[1]!, { kind: 'split', id: s.id });
        writes.push(pair);
      }
      for (const batch of batches(writes, perTxn, maxBytes, itemBytes)) {
        await pipeline.add(this.seedBatch(guard, batch, job, own));
        await Promise.race([job.ownEchoesAtMost(SEED_ECHO_LAG), stopped]);
      }
      if (signal.aborted) break;
      await nextTurn();
    }
  }

  /**
   * A packed job (decision 0037): the splits the view does not know, grouped
   * by bucket and cut into queue pages, each created where absent, pipelined;
   * each page landed is applied to the view at once (pages are not watched).
   * Returns the splits known after.
   */
  private async seedPages(job: LeaderView, guard: Compare, generation: number, splits: PlannedSplit[], signal: AbortSignal): Promise<number> {
    const { store, prefix } = this.ctx;
    // A page that could not be read may hold some of these splits: seeded again, they would be in two pages.
    const [unreadable] = job.unreadablePages;
    if (unreadable !== undefined) throw new SplitfleetError('STORE_UNAVAILABLE', `queue page ${unreadable} cannot be read: seeding waits until it can`, { retryable: true });
    const fp = fingerprintHash(this.ctx.config.fingerprint);
    const buckets = job.plan?.rec.buckets ?? (await this.writeBuckets(guard, this.ctx.config.buckets ?? bucketsFor(splits.length)));
    const bucketOf = bucketing(fp, buckets);
    // Counting sort of the new splits by bucket (typed arrays: a plan may hold 10M). Bucket + 1 by
    // split, 0 for one known already: a new array's zeroes cost nothing until written, where filling
    // 10M with a sentinel held the loop for tens of milliseconds.
    const bucketAt = new Int32Array(splits.length);
    const counts = new Uint32Array(buckets + 1);
    let fresh = 0;
    for (let i = 0; i < splits.length; i++) {
      // Every split counts, known or not: a replan that returns a 10M plan already seeded ran this loop in one turn.
      if (i % BUCKET_SLICE === BUCKET_SLICE - 1) await nextTurn();
      if (job.hasSpec(splits[i]!.id)) continue;
      const b = bucketOf(splits[i]!.id);
      bucketAt[i] = b + 1;
      counts[b + 1]!++;
      fresh++;
    }
    for (let b = 0; b < buckets; b++) counts[b + 1]! += counts[b]!;
    const order = new Int32Array(fresh);
    const fill = counts.slice(0, buckets);
    for (let i = 0; i < splits.length; i++) {
      if (i % ORDER_SLICE === ORDER_SLICE - 1) await nextTurn();
      if (bucketAt[i]! > 0) order[fill[bucketAt[i]! - 1]!++] = i;
    }
    const maxBytes = store.limits.maxRequestBytes - 4096;
    const pipeline = new WritePipeline(SEED_PIPELINE);
    let known = job.specCount;
    let sent = 0;
    for (let b = 0; b < buckets && !signal.aborted; b++) {
      const members: PlannedSplit[] = [];
      for (let k = counts[b]!; k < counts[b + 1]!; k++) members.push(splits[order[k]!]!);
      if (members.length === 0) continue;
      const first = job.packed!.nextPage(b);
      for (const [n, [start, end]] of cutPages(members, maxBytes).entries()) {
        const page: QueuePage = { bucket: b, page: first + n, splits: members.slice(start, end) };
        const put = queuePagePut(prefix, fp, generation, page, maxBytes);
        await pipeline.add(this.seedPage(guard, job, generation, page, put).then(() => { known += page.splits.length; }));
        // A turn every few pages (~3 ms each at 10M): with room in the pipeline this loop ran on as
        // microtasks, 64 pages (~200 ms) in one task; a turn per page slowed a 1M seeding by half.
        if (++sent % PAGES_PER_TURN === 0) await nextTurn();
      }
    }
    await pipeline.drain();
    return known;
  }

  /** One queue page, created where absent; applied to the view once it landed. */
  private async seedPage(guard: Compare, job: LeaderView, generation: number, page: QueuePage, put: Op): Promise<void> {
    const res = await this.ctx.store.txn(seedTxn(guard, [put]));
    if (res.won) {
      job.ownPage(page.bucket, page.page, generation, page.splits.map((s) => s.id), page.splits.map((s) => s.weight));
      return;
    }
    if (!this.ctx.leading()) return;
    // Leading, and the page exists: this very put, its reply lost (a timeout), or a page of a term this
    // view's listing did not see. Pages are not watched, so read it into the view: ours is then seeded;
    // another's splits become known and its number taken, and the next planning run seeds the rest.
    if (await job.readPage(put.key) && page.splits.every((s) => job.locationOf(s.id) !== undefined)) return;
    throw new SplitfleetError('STORE_UNAVAILABLE', `queue page ${page.bucket}.${page.page} exists already; will plan again`, { retryable: true });
  }

  /** The plan record as the store has it, with its revision; JOB_DELETED when it is gone (never re-created). */
  private async readPlan(): Promise<Revisioned<PlanRecord>> {
    const key = planKey(this.ctx.prefix);
    const plan = await this.ctx.store.get(key);
    if (!plan) throw new SplitfleetError('JOB_DELETED', `the job's plan record ${key} was deleted while seeding: not re-creating it`);
    return { rec: decodeRecord('plan', plan.key, plan.value, fingerprintHash(this.ctx.config.fingerprint)), modRevision: plan.modRevision };
  }

  /** The term's campaign wrote the plan record `rec` at `modRevision` (decision 0084): the next update's base. */
  planWritten(rec: PlanRecord, modRevision: number): void {
    this.known = { rec, modRevision };
  }

  /**
   * Updates the plan record by CAS on its last known revision: the one this
   * leader last wrote (its campaign, its own updates), else read from the
   * store, not the view (the view may not have seen our own writes yet, and
   * a CAS at a stale revision would lose and postpone the plan by a whole
   * replanIntervalMs). A loss on a remembered revision (an operator or a
   * hand moved the plan) reads it and tries once more; a loss on a fresh
   * read is a lost leadership or a race, retried by the caller. `update`
   * returns undefined when the record needs no write.
   */
  private async updatePlan(update: (current: Revisioned<PlanRecord>) => PlanWrite | undefined): Promise<Revisioned<PlanRecord>> {
    for (let remembered = this.known !== undefined; ; remembered = false) {
      const current = this.known ?? (await this.readPlan());
      this.known = undefined;
      const write = update(current);
      if (!write) return (this.known = current);
      const res = await this.ctx.store.txn(write.txn);
      if (res.won) return (this.known = { rec: write.rec, modRevision: res.revision });
      if (!remembered) throw new SplitfleetError('STORE_UNAVAILABLE', 'plan record update lost (leadership or a concurrent write); will retry', { retryable: true });
    }
  }

  /** A packed plan's bucket count, written before its first page (every reader computes a split's bucket from it). */
  private async writeBuckets(guard: Compare, buckets: number): Promise<number> {
    const written = await this.updatePlan((current) => (current.rec.buckets !== undefined ? undefined : bucketsTxn(this.ctx.prefix, guard, current, buckets)));
    return written.rec.buckets ?? buckets;
  }

  /** The plan record: finality, the planned count, the cursor (restated over the record as read: fields of a newer minor version are kept). */
  private async writePlan(guard: Compare, generation: number, planned: number, final: boolean, cursor: Json | undefined): Promise<void> {
    const fp = fingerprintHash(this.ctx.config.fingerprint);
    await this.updatePlan((current) => planUpdateTxn(this.ctx.prefix, fp, guard, current, { generation, final, planned, cursor }));
    this.ctx.log.info({ planned, final }, 'plan seeded');
  }

  private async seedBatch(guard: Compare, batch: Op[], job: LeaderView, own: ReadonlyMap<Op, OwnWrite>): Promise<void> {
    const { store } = this.ctx;
    const landed = (ops: Op[], revision: number) => job.ownSeeded(revision, new Map(ops.map((o) => [o.key, own.get(o)!])));
    const res = await store.txn(seedTxn(guard, batch));
    if (res.won) return landed(batch, res.revision);
    // Some record exists already (a previous leader seeded it) or we lost leadership:
    // fall back to one split at a time, never overwriting an existing record.
    for (let i = 0; i < batch.length; i += 2) {
      const pair = batch.slice(i, i + 2);
      const r = await store.txn(seedTxn(guard, pair));
      if (r.won) landed(pair, r.revision);
      else if (!this.ctx.leading()) return;
    }
  }

  /**
   * A split with a spec but no record (deleted by hand, typically to get rid
   * of an unreadable one) is seeded again: a fresh record, created only if
   * absent and guarded by leadership. It then runs again from its last
   * committed progress (at-least-once).
   */
  reseed(job: LeaderView): void {
    if (this.reseeding) return;
    const plan = job.plan;
    // A verdict, even one the view has not applied yet, ends the job: the plan's revision is compared.
    if (plan === undefined || plan.rec.verdict !== undefined) return;
    const ids = job.unrecorded(RESEED_BATCH);
    if (ids.length === 0) return;
    this.reseeding = true;
    const fp = fingerprintHash(this.ctx.config.fingerprint);
    const writes = ids.map((id) => reseedWrite(this.ctx.prefix, fp, id));
    // One at a time when the batch loses: a record created meanwhile (our own seeding) is no loss.
    // Through Promise.resolve().then: a store that throws at once must not leave `reseeding` set for good.
    void Promise.resolve()
      .then(() => this.ctx.store.txn(reseedTxn(this.ctx.prefix, this.ctx.guard(), plan.modRevision, writes)))
      .then((res) => {
        if (res.won) this.ctx.log.warn({ splits: ids.slice(0, 10), count: ids.length }, 'split records were missing (deleted?); seeded them again');
      })
      .catch((e) => this.ctx.log.warn({ err: (e as Error).message }, 're-seeding split records failed; will retry'))
      .finally(() => {
        this.reseeding = false;
      });
  }
}
