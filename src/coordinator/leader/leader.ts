/**
 * Leader: election on the `leader` key, the plan generation, the planner, the
 * publishing loop and the job's verdict. Every leader write is one
 * transaction that also checks the `leader` key is still the one this
 * process created (its mod revision), so a deposed leader's write lands
 * nowhere. Campaigning reads only the instance's own `WorkerView` (the
 * `plan` and `leader` keys); a won term builds a `LeaderView` of the whole
 * job (paged, yielding) and drops it when the term ends. Every transaction
 * is built by protocol/leader-txns.ts; this file sends it and reports the
 * outcome.
 *
 * Invariants:
 * - A new leader wins `leader` (create-if-absent under its session lease,
 *   naming generation = plan generation + 1) and bumps the plan record's
 *   generation in one transaction that compares the plan at the revision it
 *   saw (decision 0084). If the plan moved, the loss reads it and the
 *   campaign goes again on it.
 * - The planner runs only here; what it returns is written by seeding.ts
 *   (`Seeder`: idempotent, only where absent, batched, pipelined).
 * - Publishing is publish-loop.ts's (`PublishLoop`, which runs
 *   `publishAssignments`): one decision in flight, the latest change wins.
 * - The verdict is `jobVerdict`'s (protocol/completion.ts): written on a
 *   final plan once every split is terminal, which is how every instance,
 *   idle standbys included, learns that the job is over.
 */
import type { Clock } from '../../clock.js';
import type { Config } from '../../config.js';
import { SplitfleetError, isSplitfleetError } from '../../errors.js';
import { jobVerdict } from '../../protocol/completion.js';
import { bumpedPlanRecord, campaignTxn, leadershipGuard, resignTxn, verdictTxn } from '../../protocol/leader-txns.js';
import { decodeRecord, fingerprintHash } from '../../protocol/records.js';
import { backoffDelay, storeRetryPolicy } from '../../protocol/backoff.js';
import type { Compare, Store, TxnResult } from '../../store/store.js';
import type { PlanRecord } from '../../protocol/records.js';
import type { Revisioned } from '../../protocol/txns.js';
import { background, type OnUnexpected } from '../background.js';
import { DEPOSED_REASON, type Emit } from '../events.js';
import type { Logger } from '../log.js';
import { StuckParts } from './stuck-parts.js';
import { DivisionAsker } from './ask-divisions.js';
import { FinishedHook, type JobFinished } from './finished-hook.js';
import type { Metrics } from '../metrics.js';
import { LeaderView } from './leader-view.js';
import type { Assigner, ColumnarAssigner, EngineReady, PublishFence } from './publish.js';
import { PublishLoop, type LeaderStats } from './publish-loop.js';
import { FoldBack } from './packed-fold.js';
import { PackedQueue } from './packed-queue.js';
import { pagingOf, Seeder } from './seeding.js';
import type { Session } from '../session.js';
import type { Planner } from '../types.js';
import type { Json } from '../../protocol/records.js';
import type { WorkerView } from '../views/worker-view.js';

export type { LeaderStats };

/** Campaigns sent back to back while each loses only to a plan that moved (then one waits for a timer). */
const CAMPAIGN_ATTEMPTS = 3;

/** The plan carries its verdict and no finished hook waits to run (decision 0065): nothing is left for a leader. */
function finishedWithoutWork(plan: PlanRecord): boolean {
  return plan.verdict !== undefined && plan.hook !== 'pending';
}

/** What a Leader works with (one object, as the Worker's `WorkerContext`). */
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
  ready?: EngineReady;
  metrics: Metrics;
  log: Logger;
  onFatal: (e: SplitfleetError) => void;
  /** A record that cannot be read (logged once, counted; it costs only what it concerns). */
  onUnreadable: (key: string, e: SplitfleetError) => void;
  /** Reports leadership-gained / leadership-lost. */
  emit?: Emit;
  /** Part of the job cannot move (health.ts `stuckReason`), or all of it can again (undefined); only while leading. */
  onStuck?: (reason: string | undefined) => void;
  /** The job's hook, run once per verdict across the fleet (finished-hook.ts, decision 0065). */
  onJobFinished?: (finished: JobFinished) => unknown;
  /** An error that escaped a background path (background.ts); default: logged. */
  unexpected?: OnUnexpected;
  /** The jitter stream of the campaign's retries (protocol/backoff.ts); default: Math.random. */
  random?: () => number;
}

export class Leader {
  private term: { generation: number; revision: number; abort: AbortController; fence: PublishFence } | undefined;
  private campaigning = false;
  private cancelReplan: (() => void) | undefined;
  private stopped = false;
  private droppingOrphan = false;
  /** Campaigns that failed in a row (the retry backoff's attempt). */
  private campaignFailures = 0;
  private readonly unexpected: OnUnexpected;
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
  private writingVerdict = false;
  /** What this leader says of parts of the job that cannot move (stuck-parts.ts). */
  private readonly stuckParts: StuckParts;
  /** A plan is being seeded (publishing is paced meanwhile: publish-loop.ts). */
  private seeding = false;
  private readonly publisher: PublishLoop;
  private readonly seeder: Seeder;
  /** A packed job's promotions (decision 0037). */
  private readonly packedQueue: PackedQueue;
  /** A packed job's fold-backs (decision 0037, 0076). */
  private readonly foldBack: FoldBack;
  /** Asks running splits to divide when lanes would idle (decision 0063). */
  private readonly divisions: DivisionAsker;
  /** The job's onJobFinished hook (decision 0065). */
  private readonly finishedHook: FinishedHook;

  constructor(private readonly ctx: LeaderContext) {
    this.store = ctx.store;
    this.config = ctx.config;
    this.clock = ctx.clock;
    this.view = ctx.view;
    this.session = ctx.session;
    this.metrics = ctx.metrics;
    this.log = ctx.log;
    this.unexpected = ctx.unexpected ?? ((where, e) => this.log.error({ where, err: e }, `unexpected error in ${where}`));
    // The reason goes to health (onStuck) and into the job summary, which a change of it pokes.
    const onStuck = (reason: string | undefined): void => {
      ctx.onStuck?.(reason);
      this.publisher.summary.poke();
    };
    this.stuckParts = new StuckParts({ clock: ctx.clock, reconcileIntervalMs: ctx.config.reconcileIntervalMs, log: ctx.log, onStuck });
    this.publisher = new PublishLoop({
      store: ctx.store, config: ctx.config, clock: ctx.clock, assigner: ctx.assigner, decide: ctx.decide, ...(ctx.ready ? { ready: ctx.ready } : {}), metrics: ctx.metrics, log: ctx.log, stats: this.stats,
      term: () => this.term,
      publishing: () => (this.term ? { generation: this.term.generation, fence: this.term.fence, guard: this.guard } : undefined),
      job: () => this.job,
      stuck: () => this.stuckParts.reason,
      seeding: () => this.seeding,
      promote: (job, ids, rider) => this.packedQueue.promote(job, ids, rider),
      unexpected: (where, e) => this.unexpected(where, e),
    });
    this.finishedHook = new FinishedHook({
      store: ctx.store, clock: ctx.clock, log: ctx.log, root: ctx.config.root, job: ctx.config.job, prefix: ctx.view.prefix, hook: ctx.onJobFinished,
      guard: () => (this.term ? this.guard : undefined), random: ctx.random ?? Math.random,
    });
    this.divisions = new DivisionAsker({
      store: ctx.store, clock: ctx.clock, config: ctx.config, prefix: ctx.view.prefix, fp: fingerprintHash(ctx.config.fingerprint), log: ctx.log, metrics: ctx.metrics,
      publishing: () => (this.term ? { generation: this.term.generation, guard: this.guard } : undefined),
      unexpected: (where, e) => this.unexpected(where, e),
    });
    this.seeder = new Seeder({ store: ctx.store, config: ctx.config, prefix: ctx.view.prefix, guard: () => this.guard, leading: () => this.leading, log: ctx.log });
    const packed = { store: ctx.store, prefix: ctx.view.prefix, fp: fingerprintHash(ctx.config.fingerprint), guard: () => this.guard, leading: () => this.leading, log: ctx.log };
    this.foldBack = new FoldBack({ ...packed, generation: () => this.term?.generation });
    this.packedQueue = new PackedQueue(packed, this.foldBack);
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
    return leadershipGuard(this.view.prefix, this.term?.revision ?? -1);
  }

  /** Reacts to a change of this instance's view (the `leader` and `plan` keys): campaign, notice deposition. */
  onViewChange(): void {
    if (this.stopped) return;
    const leader = this.view.leader;
    // Judge the term only once the leader key's own watch has caught up with the write that won
    // it: a watch lags its own process's writes, and a change delivered in between would depose a
    // leader that still holds the key. The key's own: the plan watch delivers the term's bump
    // first as often as not, and the view's revision passed the term with the key unseen.
    const caughtUp = this.term !== undefined && this.view.leaderRevision >= this.term.revision;
    if (this.term && caughtUp && (!leader || leader.modRevision !== this.term.revision)) {
      this.depose(DEPOSED_REASON);
    }
    this.dropOrphanKey();
    if (!leader && !this.campaigning && this.session.alive) background('campaign', () => this.campaign(), this.unexpected);
    if (this.term) {
      this.checkVerdict();
      this.finishedHook.check(this.view.plan);
    }
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
    this.log.warn({ generation: leader.rec.generation }, 'deleting a leader key of ours that no term stands on');
    background('drop leader key', async () => {
      try {
        await this.store.txn(resignTxn(this.view.prefix, leader.modRevision));
      } catch {
        // Failed: the next change (or the backstop) tries again.
      } finally {
        this.droppingOrphan = false;
      }
    }, this.unexpected);
  }

  private async campaign(): Promise<void> {
    this.campaigning = true;
    try {
      // A job whose plan was deleted under us is gone: never re-create it (the coordinator stops).
      if (!this.view.plan && this.view.planSeen) return;
      const fp = fingerprintHash(this.config.fingerprint);
      // One transaction wins the key, bumps the plan's generation and reads the publication fence
      // (decision 0084). It campaigns on the plan as this instance's view last saw it, which may
      // lag (its plan and leader keys are separate watches): the plan's compare then loses, the
      // loss reads the plan as the store has it, and the campaign goes again on that at once.
      let plan: Revisioned<PlanRecord> | undefined = this.view.plan && { rec: this.view.plan.rec, modRevision: this.view.plan.modRevision };
      let won: TxnResult | undefined;
      for (let attempt = 0; attempt < CAMPAIGN_ATTEMPTS; attempt++) {
        // A finished job needs no leader (its members stop on the verdict), unless its hook has yet to run:
        // a term won now would only move the plan's generation past its last summary's.
        if (plan && finishedWithoutWork(plan.rec)) return;
        const res = await this.store.txn(campaignTxn(this.view.prefix, fp, this.config.instance, plan, this.session.leaseId, this.config.layout));
        if (res.won || this.stopped) {
          won = res;
          break;
        }
        const [leaderKv, planKv] = res.reads;
        if (leaderKv) return; // another candidate leads (or a key of ours that no term stands on: dropOrphanKey)
        if (!planKv && this.view.planSeen) return; // the job was deleted: never re-create it
        plan = planKv ? { rec: decodeRecord('plan', planKv.key, planKv.value, fp), modRevision: planKv.modRevision } : undefined;
      }
      if (!won) {
        // The plan moved under every attempt (an operator retrying, records put back by hand):
        // its next change may not come, so campaign again on a timer.
        this.log.warn({ attempts: CAMPAIGN_ATTEMPTS }, 'the plan moved under every campaign; campaigning again later');
        this.retryCampaign();
        return;
      }
      if (!won.won || this.stopped) return;
      const generation = (plan?.rec.generation ?? 0) + 1;
      const abort = new AbortController();
      // The fence as the campaign read it (decision 0015): no write of an earlier term can land
      // after our key was created, so it moves next by our own writes (or a hand's: then a
      // publication loses its compare and reads it afresh).
      const term = { generation, revision: won.revision, abort, fence: { revision: won.reads[0]?.modRevision ?? 0 } };
      this.term = term;
      this.seeder.planWritten(bumpedPlanRecord(plan?.rec, fp, generation, this.config.layout), won.revision);
      this.stats.terms++;
      this.campaignFailures = 0;
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
        this.retryCampaign();
      }
    } finally {
      this.campaigning = false;
      // A change that arrived mid-campaign may have shown our own key, landed after a timeout.
      if (!this.stopped) this.dropOrphanKey();
    }
  }

  /** Campaigns again after a jittered, growing wait (a failed campaign, or a lost generation bump). */
  private retryCampaign(): void {
    const delay = backoffDelay(this.campaignFailures++, storeRetryPolicy(this.config.leaseDurationMs), this.ctx.random ?? Math.random);
    this.clock.setTimer(delay, () => background('campaign', () => this.onViewChange(), this.unexpected));
  }

  /** Builds the whole-job view for a term just won (paged, yielding), then plans and publishes. */
  private async openJobView(term: NonNullable<Leader['term']>): Promise<void> {
    const job = new LeaderView(
      this.store, this.view.prefix, this.view.fp, this.config.fingerprint, (e) => this.ctx.onFatal(e), this.clock, (key, e) => this.ctx.onUnreadable(key, e),
    );
    job.onChange(() => background('leader view change', () => {
      if (this.job !== job || this.term !== term) return;
      this.metrics.parked.set(job.parked.size);
      this.stuckParts.viewChanged(job);
      this.divisions.viewChanged();
      this.finishedHook.check(this.view.plan);
      this.publisher.schedule();
      this.checkVerdict();
      this.reseed();
      this.fold(job);
    }, this.unexpected));
    this.job = job;
    // Read at scrape time (it costs the held splits; the view changes hundreds of times a second).
    this.metrics.observeBacklog(() => (this.job === job ? job.backlog() : undefined));
    this.publisher.newView();
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
    this.stuckParts.start(job, () => this.term === term && this.job === job);
    this.divisions.start(job);
    background('plan', () => this.planLoop(term.abort.signal), this.unexpected);
    this.publisher.schedule();
    this.checkVerdict();
  }

  private depose(reason: string): void {
    if (!this.term) return;
    this.stuckParts.stop();
    this.divisions.stop();
    this.finishedHook.stop();
    this.log.warn({ generation: this.term.generation, reason }, 'no longer leading');
    if (this.announced === this.term.generation) this.ctx.emit?.('leadership-lost', { generation: this.term.generation, reason });
    this.announced = undefined;
    this.term.abort.abort();
    this.term = undefined;
    this.metrics.isLeader.set(0);
    this.metrics.clearBacklog();
    this.cancelReplan?.();
    this.publisher.reset();
    const job = this.job;
    this.job = undefined;
    if (job) background('close job view', () => job.close(), this.unexpected);
  }

  /** Gives leadership up (graceful stop, or a lost generation bump). */
  async resign(reason = 'resigning'): Promise<void> {
    const term = this.term;
    this.depose(reason);
    if (!term) return;
    try {
      await this.store.txn(resignTxn(this.view.prefix, term.revision));
    } catch {
      // Not deleted: it lapses with our session lease.
    }
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
    if (!this.term || !job || this.writingVerdict || !plan) return;
    // A queue page that cannot be read holds splits whose state nobody knows (PackedView): no verdict
    // until the backstop reads it again, whether it was unreadable at the listing or went while promoting.
    if (job.unreadablePages.size > 0) return;
    // Our own seeding writes not echoed yet: the plan's record (the other watch range) can come
    // first, and a record of a split nobody planned (a forged one) would then stand in for them.
    if (job.ownWritesPending) return;
    const verdict = jobVerdict(plan.rec, { counts: job.statusCounts, parked: [...job.parked.keys()].map((id) => job.statusOf(id)) });
    if (verdict === undefined) return;
    const counts = job.statusCounts;
    this.writingVerdict = true;
    const txn = verdictTxn(this.view.prefix, this.guard, plan, verdict, this.finishedHook.configured);
    background('verdict', async () => {
      try {
        const res = await this.store.txn(txn);
        if (res.won) this.log.info({ verdict, planned: plan.rec.planned, quarantined: counts.quarantined }, 'job finished');
      } catch (e) {
        this.log.warn({ err: (e as Error).message }, 'writing the verdict failed; will retry');
      } finally {
        this.writingVerdict = false; // lost or failed: the next change (or the backstop) tries again
      }
    }, this.unexpected);
  }

  /** A packed job's completed splits folded back (packed-fold.ts) while the view holds every assignment record we wrote. */
  private fold(job: LeaderView): void {
    if (!this.term || this.job !== job || !job.packed) return;
    this.foldBack.fold(job, () => this.publisher.settled(job.revision), (e) => e !== undefined && this.log.warn({ err: (e as Error).message }, 'folding completed splits back failed; will retry'));
  }

  /**
   * A split record deleted by hand is seeded again (seeding.ts), unless the job has its verdict: a
   * finished job runs nothing more, and a runnable record nobody runs would leave it reading as
   * unfinished (a leader elected in a finished job, before it stopped, seeded one).
   */
  private reseed(): void {
    if (this.term && this.job && this.job.plan?.rec.verdict === undefined) this.seeder.reseed(this.job);
  }

  // ---- planning ---------------------------------------------------------------

  /** One run of the planner and its seeding; `next`: the cursor of the page just seeded (a paged planner's `more`). */
  private async planLoop(signal: AbortSignal, next?: { cursor: Json | undefined }): Promise<void> {
    const plan = this.view.plan?.rec;
    if (plan?.final) return; // a previous leader finished planning a final job
    try {
      // A page's cursor as the planner returned it: this instance's view may not have the plan record it just wrote.
      const cursor = next ? next.cursor : plan?.cursor;
      const result = await this.ctx.planner({ cursor, generation: this.term!.generation, signal });
      if (signal.aborted) return;
      const { more, expected } = pagingOf(result);
      this.seeding = true;
      try {
        await this.seeder.seed(this.job!, this.term!.generation, result.splits, result.final, result.cursor, signal, expected);
      } finally {
        this.seeding = false;
      }
      if (more && !signal.aborted) {
        background('plan', () => this.planLoop(signal, { cursor: result.cursor }), this.unexpected);
        return;
      }
      // Decide now on the whole plan, rather than when a seeding-paced timer would fire.
      this.publisher.now();
      if (!result.final && !signal.aborted) {
        this.cancelReplan = this.clock.setTimer(this.config.replanIntervalMs, () => background('plan', () => this.planLoop(signal), this.unexpected));
      }
    } catch (e) {
      if (signal.aborted) return;
      const err = isSplitfleetError(e)
        ? e
        : new SplitfleetError('PLANNER_FAILURE', `the planner threw: ${(e as Error)?.message ?? String(e)}`, { cause: e });
      if (err.retryable) {
        this.log.warn({ err: err.message }, 'planning failed; retrying after replanIntervalMs');
        this.cancelReplan = this.clock.setTimer(this.config.replanIntervalMs, () => background('plan', () => this.planLoop(signal), this.unexpected));
      } else {
        this.ctx.onFatal(err);
      }
    }
  }
}
