/**
 * Leader: election on the `leader` key, the plan generation, the planner, the
 * publishing loop and the job's verdict. Every leader write is one
 * transaction that also checks the `leader` key is still the one this
 * process created (its mod revision), so a deposed leader's write lands
 * nowhere. Campaigning reads only the instance's own `WorkerView` (the
 * `plan` and `leader` keys); a won term builds a `LeaderView` of the whole
 * job (paged, yielding) and drops it when the term ends.
 *
 * Invariants:
 * - A new leader first wins `leader` (create-if-absent under its session
 *   lease, naming generation = plan generation + 1), then bumps the plan
 *   record's generation by CAS, guarded by that leadership. If the bump
 *   loses, it resigns and campaigns again.
 * - The planner runs only here. Seeding is idempotent: spec and split
 *   records are created only where absent (a record that exists is never
 *   overwritten, so progress is never reset), in batches under the store's
 *   limits, pipelined.
 * - Publishing is coalesced: one decision in flight; changes arriving during
 *   it trigger one more (latest wins).
 * - A final plan whose splits are all terminal gets its verdict written on
 *   the plan record ('complete', or 'stalled' with any quarantined), which is
 *   how every instance, idle standbys included, learns that the job is over.
 */
import type { Clock } from '../clock.js';
import type { Config } from '../config.js';
import { SplitfleetError, isSplitfleetError } from '../errors.js';
import { initialSplitRecord } from '../protocol/claims.js';
import { isValidId, leaderKey, planKey, specKey, splitKey, idProblem } from '../protocol/keys.js';
import { decodeRecord, encodeRecord, fingerprintHash, SCHEMA_VERSION, type Json, type PlanRecord } from '../protocol/records.js';
import type { ReservedWindowState } from '../protocol/reserved.js';
import { batches } from '../protocol/txns.js';
import { itemBytes } from '../store/base.js';
import { cmp, op, type Compare, type Op, type Store } from '../store/store.js';
import type { Emit } from './events.js';
import type { Logger } from './log.js';
import type { Metrics } from './metrics.js';
import { LeaderView } from './leader-view.js';
import { publishAssignments, type Assigner, type ColumnarAssigner, type PublishFence } from './publish.js';
import type { Session } from './session.js';
import type { PlannedSplit, Planner } from './types.js';
import type { WorkerView } from './worker-view.js';

/** What a Leader works with. */
export interface LeaderContext {
  store: Store;
  config: Config;
  clock: Clock;
  /** This instance's own view: the `plan` and `leader` keys it campaigns on. */
  view: WorkerView;
  session: Session;
  planner: Planner;
  /** An object-form engine, when the coordinator was given one; else `decide`. */
  assigner: Assigner | undefined;
  decide: ColumnarAssigner;
  metrics: Metrics;
  log: Logger;
  onFatal: (e: SplitfleetError) => void;
  /** A record that cannot be read (logged once, counted; it costs only what it concerns). */
  onUnreadable: (key: string, e: SplitfleetError) => void;
  /** Reports leadership-gained / leadership-lost. */
  emit?: Emit;
}

/** Split records re-seeded per step when they were deleted (by hand, to clear an unreadable one). */
const RESEED_BATCH = 60;

/** Counters for tests, benches and inspection. */
export interface LeaderStats {
  decisions: number;
  recordsWritten: number;
  terms: number;
  /** The engine's time, summed over decisions and at most (ms). */
  decisionMsTotal: number;
  decisionMsMax: number;
  /** The longest publishing step, from its start to its last write landing (ms). */
  stepMsMax: number;
}

/** Splits validated and encoded per turn of the event loop while seeding. */
const SEED_SLICE = 500;
/**
 * While a plan is being seeded, decisions are spaced this far apart: every
 * batch of new splits drops the pool's cached order, and deciding on each
 * would re-sort a growing pool dozens of times a second for nothing.
 */
const SEEDING_PUBLISH_MS = 1000;
/** Yields to the event loop (seeding a large plan must not hold it). */
const yieldToLoop = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/** How many seeding transactions are in flight at once. */
const SEED_PIPELINE = 8;
/** Quiet period that coalesces bursts of changes into one decision. */
const PUBLISH_DEBOUNCE_MS = 25;

export class Leader {
  private term: { generation: number; revision: number; abort: AbortController; fence: PublishFence } | undefined;
  private campaigning = false;
  private publishing = false;
  private publishAgain = false;
  private cancelPublishTimer: (() => void) | undefined;
  private cancelWindowTimer: (() => void) | undefined;
  private cancelReplan: (() => void) | undefined;
  private window: ReservedWindowState | undefined;
  /** Revision of our last assignment write: the next decision waits until the view has seen it. */
  private publishedRevision = 0;
  private stopped = false;
  private droppingOrphan = false;
  /** The generation reported as gained: only a term announced is reported lost (a lost bump never led). */
  private announced: number | undefined;
  /** Counters for tests and inspection. */
  readonly stats: LeaderStats = { decisions: 0, recordsWritten: 0, terms: 0, decisionMsTotal: 0, decisionMsMax: 0, stepMsMax: 0 };

  private readonly store: Store;
  private readonly config: Config;
  private readonly clock: Clock;
  private readonly view: WorkerView;
  private readonly session: Session;
  private readonly metrics: Metrics;
  private readonly log: Logger;
  /** The whole job, while this instance leads (built when the term starts). */
  private job: LeaderView | undefined;
  /** Splits given a previous assignee by the last decision (publishAssignments clears them). */
  private readonly previousIds = new Set<string>();
  private writingVerdict = false;
  private reseeding = false;
  /** A plan is being seeded (see SEEDING_PUBLISH_MS). */
  private seeding = false;

  constructor(private readonly ctx: LeaderContext) {
    this.store = ctx.store;
    this.config = ctx.config;
    this.clock = ctx.clock;
    this.view = ctx.view;
    this.session = ctx.session;
    this.metrics = ctx.metrics;
    this.log = ctx.log;
  }

  /** The leader's whole-job view while it leads (inspection and tests). */
  get jobView(): LeaderView | undefined {
    return this.job;
  }

  get leading(): boolean {
    return this.term !== undefined;
  }

  get generation(): number | undefined {
    return this.term?.generation;
  }

  private get guard(): Compare {
    return cmp.modRevision(leaderKey(this.view.prefix), this.term?.revision ?? -1);
  }

  /** Reacts to a change of this instance's view (the `leader` and `plan` keys): campaign, notice deposition. */
  onViewChange(): void {
    if (this.stopped) return;
    const leader = this.view.leader;
    // Judge the term only once the view has caught up with the write that won it: a watch
    // lags its own process's writes, and a change delivered in between would otherwise
    // depose a leader that still holds the key, leaving the key live under our lease and
    // nobody leading.
    const caughtUp = this.term !== undefined && this.view.revision >= this.term.revision;
    if (this.term && caughtUp && (!leader || leader.modRevision !== this.term.revision)) {
      this.depose('the leader key no longer names this term');
    }
    this.dropOrphanKey();
    if (!leader && !this.campaigning && this.session.alive) void this.campaign();
    if (this.term) this.checkVerdict();
  }

  /** The backstop while leading: re-list members, leases and assignments, then decide again. */
  async resync(): Promise<void> {
    await this.job?.resyncMembership();
  }

  /**
   * The leader key is on this session's lease but no term stands on it: a
   * campaign that timed out had landed. Nobody else campaigns while it lives,
   * and we do not lead on it, so the fleet would have no leader for as long as
   * this session lives. Delete it (guarded); its deletion starts a campaign.
   */
  private dropOrphanKey(): void {
    const leader = this.view.leader;
    if (this.term || this.campaigning || this.droppingOrphan || !leader || leader.lease !== this.session.leaseId) return;
    this.droppingOrphan = true;
    const key = leaderKey(this.view.prefix);
    this.log.warn({ generation: leader.rec.generation }, 'deleting a leader key of ours that no term stands on');
    void this.store.txn({ compares: [cmp.modRevision(key, leader.modRevision)], success: [op.delete(key)] })
      .catch(() => undefined)
      .finally(() => {
        this.droppingOrphan = false;
      });
  }

  private async campaign(): Promise<void> {
    this.campaigning = true;
    try {
      // A job whose plan was deleted under us is gone: never re-create it (the coordinator stops).
      if (!this.view.plan && this.view.planSeen) return;
      const fp = fingerprintHash(this.config.fingerprint);
      // The plan as the store has it, not as this instance's view last saw it: a view that lags
      // (its plan and leader keys are separate watches) would campaign at a generation already
      // used, win the key, lose the bump and resign, and the fleet would lead nobody meanwhile.
      const planKv = await this.store.get(planKey(this.view.prefix));
      if (!planKv && this.view.planSeen) return;
      const plan = planKv ? { rec: decodeRecord('plan', planKv.key, planKv.value, fp), modRevision: planKv.modRevision } : undefined;
      const generation = (plan?.rec.generation ?? 0) + 1;
      const key = leaderKey(this.view.prefix);
      const value = encodeRecord('leader', { v: SCHEMA_VERSION, fp, instance: this.config.instance, generation });
      const won = await this.store.createIfAbsent(key, value, this.session.leaseId);
      if (!won.won || this.stopped) return;
      const abort = new AbortController();
      // The publication fence is read afresh by the term's first write (decision 0015).
      const term = { generation, revision: won.revision, abort, fence: { revision: undefined } };
      this.term = term;
      // Bump the plan generation, guarded by the leadership just won.
      const next: PlanRecord = plan
        ? { ...plan.rec, generation }
        : { v: SCHEMA_VERSION, fp, generation, final: false, planned: 0 };
      const bumped = await this.store.txn({
        compares: [this.guard, plan ? cmp.modRevision(planKey(this.view.prefix), plan.modRevision) : cmp.absent(planKey(this.view.prefix))],
        success: [op.put(planKey(this.view.prefix), encodeRecord('plan', next))],
      });
      if (!bumped.won) {
        this.log.warn({ generation }, 'plan generation bump lost; resigning');
        await this.resign();
        return;
      }
      this.stats.terms++;
      this.metrics.leaderChanges.inc();
      this.metrics.isLeader.set(1);
      this.log.info({ generation }, 'leading');
      this.announced = generation;
      this.ctx.emit?.('leadership-gained', { generation });
      await this.openJobView(term);
    } catch (e) {
      // Our session lease is gone (it expired under us): that is a lost session, which the
      // coordinator answers by rejoining with a fresh one, never a fatal error.
      if (isSplitfleetError(e, 'LEASE_LOST')) this.session.lose(`campaigning found the session lease gone: ${e.message}`);
      else if (isSplitfleetError(e) && !e.retryable) this.ctx.onFatal(e);
      else {
        // The request may never have reached the store, and then no change will come to retry on.
        this.log.warn({ err: (e as Error).message }, 'campaign failed; retrying');
        if (this.term) await this.resign();
        this.clock.setTimer(Math.min(1000, Math.max(50, Math.floor(this.config.leaseDurationMs / 6))), () => this.onViewChange());
      }
    } finally {
      this.campaigning = false;
      // A change that arrived mid-campaign may have shown our own key, landed after a timeout.
      if (!this.stopped) this.dropOrphanKey();
    }
  }

  /** Builds the whole-job view for a term just won (paged, yielding), then plans and publishes. */
  private async openJobView(term: NonNullable<Leader['term']>): Promise<void> {
    const job = new LeaderView(
      this.store, this.view.prefix, this.view.fp, this.config.fingerprint, (e) => this.ctx.onFatal(e), this.clock, (key, e) => this.ctx.onUnreadable(key, e),
    );
    job.onChange(() => {
      if (this.job !== job || this.term !== term) return;
      this.metrics.parked.set(job.parked.size);
      this.metrics.setBacklog(job.backlog());
      this.schedulePublish();
      this.checkVerdict();
      this.reseed();
    });
    this.job = job;
    this.previousIds.clear();
    const started = this.clock.now();
    try {
      await job.start();
    } catch (e) {
      if (this.job === job) this.job = undefined;
      await job.close();
      throw e;
    }
    if (this.term !== term || this.job !== job) {
      await job.close();
      return;
    }
    this.log.info({ splits: job.splitCount, ms: this.clock.now() - started }, 'job view built');
    void this.planLoop(term.abort.signal);
    this.schedulePublish();
    this.checkVerdict();
  }

  private depose(reason: string): void {
    if (!this.term) return;
    this.log.warn({ generation: this.term.generation, reason }, 'no longer leading');
    if (this.announced === this.term.generation) this.ctx.emit?.('leadership-lost', { generation: this.term.generation, reason });
    this.announced = undefined;
    this.term.abort.abort();
    this.term = undefined;
    this.metrics.isLeader.set(0);
    this.metrics.clearBacklog();
    this.cancelReplan?.();
    this.cancelWindowTimer?.();
    this.cancelPublishTimer?.();
    this.cancelPublishTimer = undefined;
    this.window = undefined;
    const job = this.job;
    this.job = undefined;
    void job?.close();
  }

  /** Gives leadership up (graceful stop, or a lost generation bump). */
  async resign(reason = 'resigning'): Promise<void> {
    const term = this.term;
    this.depose(reason);
    if (!term) return;
    await this.store.txn({ compares: [cmp.modRevision(leaderKey(this.view.prefix), term.revision)], success: [op.delete(leaderKey(this.view.prefix))] })
      .catch(() => undefined);
  }

  async stop(reason = 'stopping'): Promise<void> {
    this.stopped = true;
    await this.resign(reason);
  }

  // ---- the verdict ------------------------------------------------------------

  /**
   * A final plan, every planned split's record seen, none runnable: write the
   * verdict on the plan record (guarded), once.
   */
  private checkVerdict(): void {
    const job = this.job;
    const plan = this.view.plan;
    if (!this.term || !job || this.writingVerdict || !plan || !plan.rec.final || plan.rec.verdict) return;
    const counts = job.statusCounts;
    // A parked split (a record of it cannot be read) cannot run: like a quarantined one, it leaves
    // the job stalled once nothing else can run. Its readable record, if any, counts as runnable.
    let parkedRunnable = 0;
    let parkedUnrecorded = 0;
    for (const id of job.parked.keys()) {
      const st = job.statusOf(id);
      if (st === 'runnable') parkedRunnable++;
      else if (st === undefined) parkedUnrecorded++;
    }
    if (job.splitCount + parkedUnrecorded < plan.rec.planned || counts.runnable > parkedRunnable) return;
    const verdict = counts.quarantined > 0 || job.parked.size > 0 ? 'stalled' : 'complete';
    this.writingVerdict = true;
    const key = planKey(this.view.prefix);
    void this.store.txn({
      compares: [this.guard, cmp.modRevision(key, plan.modRevision)],
      success: [op.put(key, encodeRecord('plan', { ...plan.rec, verdict }))],
    })
      .then((res) => {
        if (res.won) this.log.info({ verdict, planned: plan.rec.planned, quarantined: counts.quarantined }, 'job finished');
      })
      .catch((e) => this.log.warn({ err: (e as Error).message }, 'writing the verdict failed; will retry'))
      .finally(() => {
        this.writingVerdict = false;
        // Lost or failed: the next change (or the backstop) tries again.
      });
  }

  /**
   * A split with a spec but no record (deleted by hand, typically to get rid
   * of an unreadable one) is seeded again: a fresh record, created only if
   * absent and guarded by leadership. It then runs again from its last
   * committed progress (at-least-once).
   */
  private reseed(): void {
    const job = this.job;
    if (!this.term || !job || this.reseeding) return;
    const ids = job.unrecorded(RESEED_BATCH);
    if (ids.length === 0) return;
    this.reseeding = true;
    const fp = fingerprintHash(this.config.fingerprint);
    const writes = ids.map((id) => op.put(splitKey(this.view.prefix, id), encodeRecord('split', initialSplitRecord(id, fp))));
    // One at a time when the batch loses: a record created meanwhile (our own seeding) is no loss.
    void this.store.txn({ compares: [this.guard, ...writes.map((w) => cmp.absent(w.key))], success: writes })
      .then((res) => {
        if (res.won) this.log.warn({ splits: ids.slice(0, 10), count: ids.length }, 'split records were missing (deleted?); seeded them again');
      })
      .catch((e) => this.log.warn({ err: (e as Error).message }, 're-seeding split records failed; will retry'))
      .finally(() => {
        this.reseeding = false;
      });
  }

  // ---- planning ---------------------------------------------------------------

  private async planLoop(signal: AbortSignal): Promise<void> {
    const plan = this.view.plan?.rec;
    if (plan?.final) return; // a previous leader finished planning a final job
    try {
      const result = await this.ctx.planner({ cursor: plan?.cursor, generation: this.term!.generation, signal });
      if (signal.aborted) return;
      this.seeding = true;
      try {
        await this.seed(result.splits, result.final, result.cursor, signal);
      } finally {
        this.seeding = false;
      }
      // Decide now on the whole plan, rather than when a seeding-paced timer would fire.
      if (this.cancelPublishTimer) {
        this.cancelPublishTimer();
        this.cancelPublishTimer = undefined;
      }
      this.schedulePublish();
      if (!result.final && !signal.aborted) {
        this.cancelReplan = this.clock.setTimer(this.config.replanIntervalMs, () => void this.planLoop(signal));
      }
    } catch (e) {
      if (signal.aborted) return;
      const err = isSplitfleetError(e)
        ? e
        : new SplitfleetError('PLANNER_FAILURE', `the planner threw: ${(e as Error)?.message ?? String(e)}`, { cause: e });
      if (err.retryable) {
        this.log.warn({ err: err.message }, 'planning failed; retrying after replanIntervalMs');
        this.cancelReplan = this.clock.setTimer(this.config.replanIntervalMs, () => void this.planLoop(signal));
      } else {
        this.ctx.onFatal(err);
      }
    }
  }

  /**
   * Validates the planner's output (all of it, before anything is written) and
   * creates the missing spec + split records, a slice per turn of the event
   * loop, so a plan of millions never holds the loop.
   */
  private async seed(splits: PlannedSplit[], final: boolean, cursor: Json | undefined, signal: AbortSignal): Promise<void> {
    const fp = fingerprintHash(this.config.fingerprint);
    const generation = this.term!.generation;
    const job = this.job!;
    const maxBytes = this.store.limits.maxRequestBytes - 4096;
    const seen = new Set<string>();
    for (let start = 0; start < splits.length; start += SEED_SLICE) {
      const end = Math.min(splits.length, start + SEED_SLICE);
      for (let i = start; i < end; i++) {
        const s = splits[i]!;
        if (!isValidId(s?.id)) throw new SplitfleetError('PLANNER_FAILURE', `planner split [${i}].id: ${idProblem(s?.id)}`);
        if (seen.has(s.id)) throw new SplitfleetError('PLANNER_FAILURE', `planner split [${i}].id: "${s.id}" appears twice; split ids must be unique`);
        seen.add(s.id);
        if (!(Number.isSafeInteger(s.weight) && s.weight >= 0)) {
          throw new SplitfleetError('PLANNER_FAILURE', `planner split "${s.id}".weight: must be an integer 0 ≤ weight ≤ ${Number.MAX_SAFE_INTEGER} (got ${String(s.weight)})`);
        }
      }
      if (end < splits.length) await yieldToLoop();
      if (signal.aborted) return;
    }
    let known = job.specCount;
    const inFlight = new Set<Promise<void>>();
    const perTxn = Math.floor((this.store.limits.maxOpsPerTxn - 1) / 2) * 2;
    for (let start = 0; start < splits.length; start += SEED_SLICE) {
      const writes: Op[][] = [];
      for (let i = start; i < Math.min(splits.length, start + SEED_SLICE); i++) {
        const s = splits[i]!;
        if (job.hasSpec(s.id)) continue;
        known++;
        const spec = encodeRecord('spec', { v: SCHEMA_VERSION, fp, id: s.id, weight: s.weight, descriptor: s.descriptor ?? null, generation }, { maxBytes });
        const split = encodeRecord('split', initialSplitRecord(s.id, fp));
        writes.push([op.put(specKey(this.view.prefix, s.id), spec), op.put(splitKey(this.view.prefix, s.id), split)]);
      }
      for (const batch of batches(writes, perTxn, maxBytes, itemBytes)) {
        const p = this.seedBatch(batch).finally(() => inFlight.delete(p));
        inFlight.add(p);
        if (inFlight.size >= SEED_PIPELINE) await Promise.race(inFlight);
      }
      if (signal.aborted) break;
      await yieldToLoop();
    }
    await Promise.all(inFlight);
    if (signal.aborted) return;
    // The plan record: finality, the planned count, the cursor. Its revision is read from the
    // store, not the view: the view may not have seen our own generation bump yet, and a CAS at
    // a stale revision would lose and postpone the plan by a whole replanIntervalMs.
    const plan = await this.store.get(planKey(this.view.prefix));
    if (!plan) throw new SplitfleetError('JOB_DELETED', `the job's plan record ${planKey(this.view.prefix)} was deleted while seeding: not re-creating it`);
    const planned = Math.max(known, job.specCount);
    // Restated over the record as read: fields of a newer minor version are kept.
    const current = plan ? decodeRecord('plan', plan.key, plan.value, fp) : undefined;
    const { cursor: _previousCursor, ...kept } = current ?? { v: SCHEMA_VERSION, fp };
    const next: PlanRecord = { ...kept, v: SCHEMA_VERSION, fp, generation, final, planned, ...(cursor !== undefined ? { cursor } : {}) };
    const res = await this.store.txn({
      compares: [this.guard, plan ? cmp.modRevision(planKey(this.view.prefix), plan.modRevision) : cmp.absent(planKey(this.view.prefix))],
      success: [op.put(planKey(this.view.prefix), encodeRecord('plan', next))],
    });
    if (!res.won) throw new SplitfleetError('STORE_UNAVAILABLE', 'plan record update lost (leadership or a concurrent write); will retry', { retryable: true });
    this.log.info({ planned, final }, 'plan seeded');
  }

  private async seedBatch(batch: Op[]): Promise<void> {
    const compares: Compare[] = [this.guard, ...batch.map((o) => cmp.absent(o.key))];
    const res = await this.store.txn({ compares, success: batch });
    if (res.won) return;
    // Some record exists already (a previous leader seeded it) or we lost leadership:
    // fall back to one split at a time, never overwriting an existing record.
    for (let i = 0; i < batch.length; i += 2) {
      const pair = batch.slice(i, i + 2);
      const r = await this.store.txn({ compares: [this.guard, ...pair.map((o) => cmp.absent(o.key))], success: pair });
      if (!r.won && !this.leading) return;
    }
  }

  // ---- publishing -------------------------------------------------------------

  private schedulePublish(): void {
    if (!this.term || !this.job) return;
    if (this.publishing) {
      this.publishAgain = true;
      return;
    }
    if (this.cancelPublishTimer) return;
    this.cancelPublishTimer = this.clock.setTimer(this.seeding ? SEEDING_PUBLISH_MS : PUBLISH_DEBOUNCE_MS, () => {
      this.cancelPublishTimer = undefined;
      void this.publish();
    });
  }

  private async publish(): Promise<void> {
    const term = this.term;
    const job = this.job;
    if (!term || !job || this.publishing) return;
    // Our last write is not in the view yet: a decision now would read our own previous
    // decision as absent and undo part of it. Its watch event schedules the next step.
    if (job.revision < this.publishedRevision) return;
    this.publishing = true;
    this.publishAgain = false;
    const started = this.clock.now();
    try {
      const res = await publishAssignments({
        store: this.store,
        fence: term.fence,
        view: job,
        fingerprint: this.config.fingerprint,
        generation: term.generation,
        guard: this.guard,
        rebalanceDelayMs: this.config.rebalanceDelayMs,
        now: this.clock.now(),
        window: this.window,
        assigner: this.ctx.assigner,
        decide: this.ctx.decide,
        metrics: this.metrics,
        log: this.log,
      }, this.previousIds);
      if (this.term !== term) return;
      this.window = res.window;
      this.publishedRevision = Math.max(this.publishedRevision, res.revision);
      this.stats.decisions++;
      this.stats.recordsWritten += res.written + res.deleted;
      this.stats.decisionMsTotal += res.stats.computeMs;
      this.stats.decisionMsMax = Math.max(this.stats.decisionMsMax, res.stats.computeMs);
      this.stats.stepMsMax = Math.max(this.stats.stepMsMax, this.clock.now() - started);
      this.metrics.publishSeconds.observe((this.clock.now() - started) / 1000);
      if (!res.complete) this.publishAgain = true;
      this.cancelWindowTimer?.();
      this.cancelWindowTimer = undefined;
      if (res.nextChangeAt !== undefined) {
        this.cancelWindowTimer = this.clock.setTimer(Math.max(0, res.nextChangeAt - this.clock.now()), () => {
          this.cancelWindowTimer = undefined;
          this.schedulePublish();
        });
      }
    } catch (e) {
      this.log.error({ err: (e as Error).message }, 'publishing failed');
      this.publishAgain = true;
    } finally {
      this.publishing = false;
      if (this.publishAgain && this.term === term) {
        this.publishAgain = false;
        this.schedulePublish();
      }
    }
  }
}
