/**
 * Leader: election on the `leader` key, the plan generation, the planner, and
 * the publishing loop. Every leader write is one transaction that also checks
 * the `leader` key is still the one this process created (its mod revision),
 * so a deposed leader's write lands nowhere.
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
 */
import type { Clock } from '../clock.js';
import type { Config } from '../config.js';
import { SplitfleetError, isSplitfleetError } from '../errors.js';
import { initialSplitRecord } from '../protocol/claims.js';
import { isValidId, leaderKey, planKey, specKey, splitKey, idProblem } from '../protocol/keys.js';
import { encodeRecord, fingerprintHash, SCHEMA_VERSION, type Json, type PlanRecord } from '../protocol/records.js';
import type { ReservedWindowState } from '../protocol/reserved.js';
import { cmp, op, type Compare, type Op, type Store } from '../store/store.js';
import type { Logger } from './log.js';
import type { Metrics } from './metrics.js';
import { batches, publishAssignments, type Assigner } from './publish.js';
import type { Session } from './session.js';
import { withTimeout } from './timeout.js';
import type { PlannedSplit, Planner } from './types.js';
import type { JobView, ViewChange } from './view.js';

/** How many seeding transactions are in flight at once. */
const SEED_PIPELINE = 8;
/** Quiet period that coalesces bursts of changes into one decision. */
const PUBLISH_DEBOUNCE_MS = 25;

export class Leader {
  private term: { generation: number; revision: number; abort: AbortController } | undefined;
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
  /** Counters for tests and inspection. */
  readonly stats = { decisions: 0, recordsWritten: 0, terms: 0 };

  constructor(
    private readonly store: Store,
    private readonly config: Config,
    private readonly clock: Clock,
    private readonly view: JobView,
    private readonly session: Session,
    private readonly planner: Planner,
    private readonly assigner: Assigner,
    private readonly metrics: Metrics,
    private readonly log: Logger,
    private readonly onFatal: (e: SplitfleetError) => void,
  ) {}

  get leading(): boolean {
    return this.term !== undefined;
  }

  get generation(): number | undefined {
    return this.term?.generation;
  }

  private get guard(): Compare {
    return cmp.modRevision(leaderKey(this.view.prefix), this.term?.revision ?? -1);
  }

  /** Reacts to a batch of view changes: campaign, notice deposition, schedule publishing. */
  onViewChange(change: ViewChange): void {
    if (this.stopped) return;
    const leader = this.view.leader;
    // Judge the term only once the view has caught up with the write that won it: a watch
    // lags its own process's writes, and a batch delivered in between (our presence key,
    // say) would otherwise depose a leader that still holds the key, leaving the key live
    // under our lease and nobody leading.
    const caughtUp = this.term !== undefined && this.view.revision >= this.term.revision;
    if (this.term && caughtUp && (!leader || leader.modRevision !== this.term.revision)) {
      this.depose('the leader key no longer names this term');
    }
    this.dropOrphanKey();
    if (!leader && !this.campaigning && this.session.alive) void this.campaign();
    if (this.term && change.relevant) this.schedulePublish();
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
    void withTimeout(this.store.txn({ compares: [cmp.modRevision(key, leader.modRevision)], success: [op.delete(key)] }), this.config.opTimeoutMs, 'deleting an orphaned leader key', this.clock)
      .catch(() => undefined)
      .finally(() => {
        this.droppingOrphan = false;
      });
  }

  private async campaign(): Promise<void> {
    this.campaigning = true;
    try {
      const generation = (this.view.plan?.rec.generation ?? 0) + 1;
      const fp = fingerprintHash(this.config.fingerprint);
      const key = leaderKey(this.view.prefix);
      const value = encodeRecord('leader', { v: SCHEMA_VERSION, fp, instance: this.config.instance, generation });
      const won = await withTimeout(this.store.createIfAbsent(key, value, this.session.leaseId), this.config.opTimeoutMs, 'campaigning', this.clock);
      if (!won.won || this.stopped) return;
      const abort = new AbortController();
      this.term = { generation, revision: won.revision, abort };
      // Bump the plan generation, guarded by the leadership just won.
      const plan = this.view.plan;
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
      void this.planLoop(abort.signal);
      this.schedulePublish();
    } catch (e) {
      // Our session lease is gone (it expired under us): that is a lost session, which the
      // coordinator answers by rejoining with a fresh one, never a fatal error.
      if (isSplitfleetError(e, 'LEASE_LOST')) this.session.lose(`campaigning found the session lease gone: ${e.message}`);
      else if (isSplitfleetError(e) && !e.retryable) this.onFatal(e);
      else {
        // The request may never have reached the store, and then no change will come to retry on.
        this.log.warn({ err: (e as Error).message }, 'campaign failed; retrying');
        this.clock.setTimer(Math.min(1000, Math.max(50, Math.floor(this.config.leaseDurationMs / 6))), () =>
          this.onViewChange({ kinds: new Set(), ids: new Set(), all: false, relevant: false }));
      }
    } finally {
      this.campaigning = false;
      // A change that arrived mid-campaign may have shown our own key, landed after a timeout.
      if (!this.stopped) this.dropOrphanKey();
    }
  }

  private depose(reason: string): void {
    if (!this.term) return;
    this.log.warn({ generation: this.term.generation, reason }, 'no longer leading');
    this.term.abort.abort();
    this.term = undefined;
    this.metrics.isLeader.set(0);
    this.cancelReplan?.();
    this.cancelWindowTimer?.();
    this.cancelPublishTimer?.();
    this.window = undefined;
  }

  /** Gives leadership up (graceful stop, or a lost generation bump). */
  async resign(): Promise<void> {
    const term = this.term;
    this.depose('resigning');
    if (!term) return;
    await this.store
      .txn({ compares: [cmp.modRevision(leaderKey(this.view.prefix), term.revision)], success: [op.delete(leaderKey(this.view.prefix))] })
      .catch(() => undefined);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await this.resign();
  }

  // ---- planning ---------------------------------------------------------------

  private async planLoop(signal: AbortSignal): Promise<void> {
    const plan = this.view.plan?.rec;
    if (plan?.final) return; // a previous leader finished planning a final job
    try {
      const result = await this.planner({ cursor: plan?.cursor, generation: this.term!.generation, signal });
      if (signal.aborted) return;
      await this.seed(result.splits, result.final, result.cursor);
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
        this.onFatal(err);
      }
    }
  }

  /** Validates the planner's output and creates the missing spec + split records. */
  private async seed(splits: PlannedSplit[], final: boolean, cursor: Json | undefined): Promise<void> {
    const fp = fingerprintHash(this.config.fingerprint);
    const generation = this.term!.generation;
    const maxBytes = this.store.limits.maxRequestBytes - 4096;
    const seen = new Set<string>();
    const writes: Op[][] = [];
    splits.forEach((s, i) => {
      if (!isValidId(s?.id)) throw new SplitfleetError('PLANNER_FAILURE', `planner split [${i}].id: ${idProblem(s?.id)}`);
      if (seen.has(s.id)) throw new SplitfleetError('PLANNER_FAILURE', `planner split [${i}].id: "${s.id}" appears twice; split ids must be unique`);
      seen.add(s.id);
      if (!(Number.isSafeInteger(s.weight) && s.weight >= 0)) {
        throw new SplitfleetError('PLANNER_FAILURE', `planner split "${s.id}".weight: must be an integer 0 ≤ weight ≤ ${Number.MAX_SAFE_INTEGER} (got ${String(s.weight)})`);
      }
      if (this.view.specs.has(s.id)) return;
      const spec = encodeRecord('spec', { v: SCHEMA_VERSION, fp, id: s.id, weight: s.weight, descriptor: s.descriptor ?? null, generation }, { maxBytes });
      const split = encodeRecord('split', initialSplitRecord(s.id, fp));
      writes.push([op.put(specKey(this.view.prefix, s.id), spec), op.put(splitKey(this.view.prefix, s.id), split)]);
    });
    const pending = [...batches(writes, Math.floor((this.store.limits.maxOpsPerTxn - 1) / 2) * 2, maxBytes)];
    const inFlight = new Set<Promise<void>>();
    for (const batch of pending) {
      const p = this.seedBatch(batch).finally(() => inFlight.delete(p));
      inFlight.add(p);
      if (inFlight.size >= SEED_PIPELINE) await Promise.race(inFlight);
    }
    await Promise.all(inFlight);
    // The plan record: finality, the planned count, the cursor. Its revision is read from the
    // store, not the view: the view may not have seen our own generation bump yet, and a CAS at
    // a stale revision would lose and postpone the plan by a whole replanIntervalMs.
    const plan = await withTimeout(this.store.get(planKey(this.view.prefix)), this.config.opTimeoutMs, 'reading the plan record', this.clock);
    const planned = new Set([...this.view.specs.keys(), ...seen]).size;
    const next: PlanRecord = { v: SCHEMA_VERSION, fp, generation, final, planned, ...(cursor !== undefined ? { cursor } : {}) };
    const res = await this.store.txn({
      compares: [this.guard, plan ? cmp.modRevision(planKey(this.view.prefix), plan.modRevision) : cmp.absent(planKey(this.view.prefix))],
      success: [op.put(planKey(this.view.prefix), encodeRecord('plan', next))],
    });
    if (!res.won) throw new SplitfleetError('STORE_UNAVAILABLE', 'plan record update lost (leadership or a concurrent write); will retry', { retryable: true });
    this.log.info({ planned, final }, 'plan seeded');
  }

  private async seedBatch(batch: Op[]): Promise<void> {
    const compares: Compare[] = [this.guard, ...batch.map((o) => cmp.absent(o.key))];
    const res = await withTimeout(this.store.txn({ compares, success: batch }), this.config.opTimeoutMs, 'seeding splits', this.clock);
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
    if (!this.term) return;
    if (this.publishing) {
      this.publishAgain = true;
      return;
    }
    if (this.cancelPublishTimer) return;
    this.cancelPublishTimer = this.clock.setTimer(PUBLISH_DEBOUNCE_MS, () => {
      this.cancelPublishTimer = undefined;
      void this.publish();
    });
  }

  private async publish(): Promise<void> {
    const term = this.term;
    if (!term || this.publishing) return;
    // Our last write is not in the view yet: a decision now would read our own previous
    // decision as absent and undo part of it. Its watch event schedules the next step.
    if (this.view.revision < this.publishedRevision) return;
    this.publishing = true;
    this.publishAgain = false;
    try {
      const res = await publishAssignments({
        store: this.store,
        view: this.view,
        seed: this.config.fingerprint,
        fingerprint: this.config.fingerprint,
        generation: term.generation,
        guard: this.guard,
        rebalanceDelayMs: this.config.rebalanceDelayMs,
        now: this.clock.now(),
        window: this.window,
        assigner: this.assigner,
        metrics: this.metrics,
        log: this.log,
      });
      if (this.term !== term) return;
      this.window = res.window;
      this.publishedRevision = Math.max(this.publishedRevision, res.revision);
      this.stats.decisions++;
      this.stats.recordsWritten += res.written + res.deleted;
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
