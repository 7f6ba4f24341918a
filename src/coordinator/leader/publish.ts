/**
 * publishAssignments: the leader's step from observed state to published
 * `assign.{instance}` records, decided on the `LeaderView`'s columns.
 *
 * Invariants:
 * - Inputs come from the view only: live members with their own lane budgets,
 *   every split with a spec and a record (the pool's rows), lease owners from
 *   live lease keys, record owners, previous assignees from the existing
 *   assignment records (a live member's record wins over a departed one's),
 *   and the reserved set of the rebalance-delay window. Ownership is sparse
 *   (at most the fleet's lanes), so preparing a decision costs that, not the
 *   split count; the dense columns are never rebuilt as objects.
 * - The rules are protocol/'s: `decisionInputs` (previous assignees, the
 *   in-transit rule, the reserved set, the members under the operators' hold)
 *   and `publicationPlan` (changed records only; a departed instance's record
 *   trimmed to what is still withheld for it, or deleted), both in
 *   protocol/publication.ts; every transaction is `publishTxn`
 *   (protocol/txns.ts: leadership and the publication fence, decision 0015),
 *   batched by the store's own byte estimate (`itemBytes`).
 * - A record that would exceed the request limit is refused (metric + error
 *   log), never truncated; the others are still published.
 * - A write that fails is simply retried on the next step: the diff against
 *   the view finds it again.
 */
import type { AssignedRows, AssignmentInput, AssignmentResult, AssignmentStats, ColumnarPool } from '../../assignment/front-door.js';
import { isSplitfleetError } from '../../errors.js';
import { assignKey, publishKey } from '../../protocol/keys.js';
import { encodeRecord, fingerprintHash, SCHEMA_VERSION } from '../../protocol/records.js';
import { operatorHold, type OperatorHold } from '../../protocol/control.js';
import { assignmentBudget, decisionInputs, publicationPlan } from '../../protocol/publication.js';
import { residualPlacement } from '../../protocol/residual-placement.js';
import type { ReservedWindowState } from '../../protocol/reserved.js';
import { batches, PUBLISH_GUARD_OPS, publicationFence, publishTxn } from '../../protocol/txns.js';
import { itemBytes, op, OVERHEAD_PER_REQUEST, type Compare, type Op, type Store, type Txn } from '../../store/store.js';
import type { LeaderView } from './leader-view.js';
import type { Logger } from '../log.js';
import type { Metrics } from '../metrics.js';
import { jsStringOrder } from '../../js-order.js';

/** Computes a desired assignment in the object form: a custom engine (tests, experiments). */
export type Assigner = (input: AssignmentInput) => Promise<AssignmentResult>;

/** Computes a desired assignment on the leader's columns (the default: WASM, on a pool thread at scale). */
/** After a promotion lost without teaching the view anything, the decision is taken again this much later (or at the view's next change). */
export const PROMOTION_RETRY_MS = 1000;

/** Decides on the pool as it is when called: it reads the pool before its first await (the caller restores the prepared inputs then). */
export type ColumnarAssigner = (pool: ColumnarPool) => Promise<AssignedRows>;
/** Readies a `ColumnarAssigner` for the pool before a decision is prepared (assignment/front-door.ts `DefaultEngine.ready`). */
export type EngineReady = (pool: ColumnarPool) => Promise<void>;

/**
 * The leader's publication fence (decision 0015): the revision of `publish` as its last
 * assignment write left it, or undefined when unknown (a write whose outcome is unknown, a
 * lost compare, a new term). Every assignment write compares it and puts the key again, so
 * a write that timed out can never land after a later step's: whichever lands second fails.
 */
export interface PublishFence {
  revision: number | undefined;
}

export interface PublishContext {
  store: Store;
  /** Kept by the leader for its term; publishAssignments reads and advances it. */
  fence: PublishFence;
  view: LeaderView;
  fingerprint: string;
  generation: number;
  guard: Compare;
  rebalanceDelayMs: number;
  now: number;
  /** Epoch ms (clock.ts `wallTime`), against the failed splits' backoffs; default `now`. */
  wallNow?: number;
  window: ReservedWindowState | undefined;
  /** The object-form engine when one was configured; else `decide`. */
  assigner: Assigner | undefined;
  decide: ColumnarAssigner;
  metrics: Metrics;
  log: Logger;
  /** A packed job's promotion of the assigned splits that have no record yet (packed-queue.ts), awaited before any write. */
  promote?: Promote;
}

/**
 * Promotes the splits a decision assigns that have no record of their own (a packed job's; decision 0037).
 * `rider`, the publication's first transaction, is joined to the last promotion when it fits (decision
 * 0085); `rider` in the answer says whether it was, and how that transaction went.
 */
export type Promote = (view: LeaderView, ids: Iterable<string>, rider?: Txn) => Promise<{ complete: boolean; revision: number; healed?: boolean; rider?: 'landed' | 'lost' }>;

export interface PublishResult {
  written: number;
  deleted: number;
  refused: number;
  /** Next window state, to pass back on the next step. */
  window: ReservedWindowState | undefined;
  /** When the reserved set next changes by itself (set a timer). */
  nextChangeAt: number | undefined;
  /** False when a guarded write lost (leadership gone or a record moved): retry next step. */
  complete: boolean;
  /** Store revision of the last write that landed (0 when none): decide again only once the view has seen it. */
  revision: number;
  stats: AssignmentStats;
}

/** What `prepareDecision` changed on the pool for one decision, to undo afterwards. */
export interface PreparedDecision {
  window: ReservedWindowState | undefined;
  nextChangeAt: number | undefined;
  reserved: ReadonlySet<string>;
  /** Splits whose lease owner was hidden from this decision (in transit): restored by `restore`. */
  restore: () => void;
}

/**
 * Sets the pool's per-decision inputs from the view: members, previous
 * assignees, the in-transit rule, and the reserved set. `previousIds` is the
 * set of splits given a previous assignee by the last call (cleared here).
 */
export function prepareDecision(
  view: LeaderView, now: number, window: ReservedWindowState | undefined, rebalanceDelayMs: number, previousIds: Set<string>,
  hold: OperatorHold = { paused: false, evacuated: new Set() }, wallNow: number = now,
): PreparedDecision {
  const { pool } = view;
  const d = decisionInputs(observedJob(view), now, window, rebalanceDelayMs, hold, wallNow);
  for (const id of previousIds) if (!d.previous.has(id)) pool.setPrevious(id, null);
  previousIds.clear();
  for (const [id, instance] of d.previous) if (pool.setPrevious(id, instance)) previousIds.add(id);
  for (const [id, instance] of residualHints(view, d.previous, d.members)) if (pool.setPrevious(id, instance)) previousIds.add(id);
  const hidden: [string, string][] = [];
  for (const [id, owner] of d.hidden) if (pool.setLeaseOwner(id, null)) hidden.push([id, owner]);
  // A split waiting out its backoff is withheld like a reserved one, but kept in no record (`reserved` below).
  pool.setReserved(d.waiting.length === 0 ? d.reserved : [...d.reserved, ...d.waiting]);
  pool.setMembers(d.members);
  return {
    window: d.window,
    nextChangeAt: d.nextChangeAt,
    reserved: new Set(d.reserved),
    restore: () => {
      for (const [id, owner] of hidden) if (view.leases.get(id)?.rec.owner === owner) pool.setLeaseOwner(id, owner);
    },
  };
}

/**
 * Residuals nobody holds or is named for, offered to members with a lane no split is named for
 * (protocol/residual-placement.ts); `members` are this decision's (live, not evacuated).
 */
function residualHints(view: LeaderView, previous: ReadonlyMap<string, string>, members: readonly { id: string }[]): Map<string, string> {
  if (view.residuals.size === 0 || members.length === 0) return new Map();
  const fresh: { id: string; weight: number }[] = [];
  for (const id of view.residuals) {
    if (previous.has(id) || view.leases.has(id) || view.statusOf(id) !== 'runnable') continue;
    fresh.push({ id, weight: view.weightOf(id) ?? 0 });
  }
  if (fresh.length === 0) return new Map();
  const lanes = new Map([...view.workers.values()].map((w) => [w.rec.instance, w.rec.maxInFlight] as const));
  const placement = members.map((m) => ({ id: m.id, lanes: lanes.get(m.id) ?? 0, named: view.assigns.get(m.id)?.rec.splits.length ?? 0 }));
  return residualPlacement(fresh, placement);
}

/** The view as the pure rules read it (plain maps; the columns stay in the pool). */
function observedJob(view: LeaderView) {
  return {
    members: new Map([...view.workers.values()].map((w) => [w.rec.instance, assignmentBudget(w.rec)] as const)),
    assigns: [...view.assigns.values()].map((a) => [a.rec.instance, a.rec.splits] as const),
    leases: new Map([...view.leases].map(([id, l]) => [id, l.rec.owner] as const)),
    owners: view.owners,
    statusOf: (id: string) => view.statusOf(id),
    notBefore: view.notBefore,
    tail: { lanes: new Map([...view.workers.values()].map((w) => [w.rec.instance, w.rec.maxInFlight] as const)), queued: view.backlog().queued.splits },
  };
}

/** A decision per member: every live member, its split ids in JS string order. */
export function assignmentOf(pool: ColumnarPool, decision: AssignedRows): Map<string, string[]> {
  const lists: string[][] = decision.members.map(() => []);
  const { rows, assignees } = decision;
  // The assigned rows only: a decision costs the fleet's lanes here, not the queue.
  for (let k = 0; k < rows.length; k++) {
    const id = pool.idAt(rows[k]!);
    if (id !== undefined) lists[assignees[k]!]!.push(id);
  }
  const out = new Map<string, string[]>();
  decision.members.forEach((m, j) => out.set(m, lists[j]!.sort(jsStringOrder)));
  return out;
}

/** The hold the operators' record puts on this decision (pause, evacuations of live runs). */
export function holdOf(view: LeaderView): OperatorHold {
  return operatorHold(view.control?.rec, new Map([...view.workers.values()].map((w) => [w.rec.instance, w.rec.nonce])));
}

/** One publishing step: decide, diff against the view, write what changed. */
export async function publishAssignments(ctx: PublishContext, previousIds: Set<string>): Promise<PublishResult> {
  const { view } = ctx;
  const hold = holdOf(view);
  const prepared = prepareDecision(view, ctx.now, ctx.window, ctx.rebalanceDelayMs, previousIds, hold, ctx.wallNow ?? ctx.now);
  const { assignment, stats } = await decide(ctx, prepared, hold);
  ctx.metrics.decisionSeconds.observe(stats.computeMs / 1000);
  ctx.metrics.improvingMoves.inc(stats.improvingMoves);
  ctx.metrics.imbalance.set(stats.imbalance);
  const plan = publicationPlan(assignment, view.workers.keys(), new Map([...view.assigns].map(([i, a]) => [i, a.rec.splits])), prepared.reserved);
  const { writes, refused } = encodeWrites(ctx, plan.puts, plan.deletes);
  let sends = publicationBatches(ctx, writes);
  let rode = { written: 0, revision: 0 };
  if (ctx.promote && view.packed) {
    // The publication's first transaction rides in the last promotion when the fence is known
    // (decision 0085): one round trip and one transaction fewer per decision that promotes.
    const rider = sends.length > 0 && ctx.fence.revision !== undefined ? fencedTxn(ctx, sends[0]!) : undefined;
    // Every split the assignment names, changed record or not: one whose record was deleted by hand is promoted again.
    let promoted: Awaited<ReturnType<Promote>>;
    try {
      promoted = await ctx.promote(view, [...assignment.values()].flat(), rider);
    } catch (e) {
      // Unknown outcome: the rider may still land. The fence makes it fail if a later write lands first.
      if (rider) ctx.fence.revision = undefined;
      throw e;
    }
    if (promoted.rider === 'lost') ctx.fence.revision = undefined; // which compare failed is unknown: read it again
    if (promoted.rider === 'landed') {
      ctx.fence.revision = promoted.revision;
      rode = { written: sends[0]!.filter((o) => o.op === 'put').length, revision: promoted.revision };
      sends = sends.slice(1);
    }
    if (!promoted.complete) {
      // Nothing is published on it. A loss that taught the view something (a folded record read again)
      // decides again at once; any other after PROMOTION_RETRY_MS, or at the view's next change, not at
      // once: the same decision would lose the same way. Not gated on a revision: promotions write split
      // records, which never move `view.revision` (the range of assign, leader, lease and plan), and
      // waiting for it to pass theirs (or to move at all) stalled a quiet fleet for good.
      const retryAt = Math.min(prepared.nextChangeAt ?? Infinity, ctx.now + PROMOTION_RETRY_MS);
      return { written: 0, deleted: 0, refused: 0, window: prepared.window, nextChangeAt: promoted.healed ? prepared.nextChangeAt : retryAt, complete: promoted.healed !== true, revision: 0, stats };
    }
  }
  const sent = await sendWrites(ctx, sends);
  const written = rode.written + sent.written;
  ctx.metrics.recordsPublished.inc(written);
  const deleted = sent.fenceUnread ? 0 : plan.deletes.length;
  return { ...sent, written, revision: Math.max(rode.revision, sent.revision), deleted, refused, window: prepared.window, nextChangeAt: prepared.nextChangeAt, stats };
}

/** Runs the engine on the prepared pool (or nothing, paused), timed on the wall clock: a metric, never an input. */
async function decide(ctx: PublishContext, prepared: PreparedDecision, hold: OperatorHold): Promise<{ assignment: Map<string, string[]>; stats: AssignmentStats }> {
  const { view } = ctx;
  let assignment: Map<string, string[]>;
  let stats: AssignmentStats;
  // The engines leave computeMs to their caller; measured here, around the whole decision (the
  // pool thread's round trip included).
  const started = performance.now();
  try {
    if (hold.paused) {
      // Paused: nothing to decide. Every live member gets an empty record, so every lane drains.
      assignment = new Map();
      stats = { assigned: 0, queued: 0, improvingMoves: 0, backstopHit: false, maxLoad: 0, minLoad: 0, lowerBound: 0, imbalance: 1, computeMs: 0 };
    } else if (ctx.assigner) {
      const result = await ctx.assigner(view.pool.toInput());
      assignment = new Map(Object.entries(result.assignment));
      stats = result.stats;
    } else {
      const pending = ctx.decide(view.pool);
      prepared.restore(); // the decision has its snapshot of the pool
      const decision = await pending;
      assignment = assignmentOf(view.pool, decision);
      stats = decision.stats;
    }
  } finally {
    prepared.restore();
  }
  if (!(stats.computeMs > 0)) stats = { ...stats, computeMs: performance.now() - started };
  return { assignment, stats };
}

/** The plan's records as ops; a record over the request limit is refused (metric + error log), never truncated. */
function encodeWrites(ctx: PublishContext, puts: ReadonlyMap<string, readonly string[]>, deletes: readonly string[]): { writes: Op[][]; refused: number } {
  const fp = fingerprintHash(ctx.fingerprint);
  const maxBytes = ctx.store.limits.maxRequestBytes - 4096;
  const writes: Op[][] = [];
  let refused = 0;
  for (const [instance, splits] of puts) {
    try {
      const value = encodeRecord('assign', { v: SCHEMA_VERSION, fp, instance, generation: ctx.generation, splits: [...splits] }, { maxBytes });
      writes.push([op.put(assignKey(ctx.view.prefix, instance), value)]);
    } catch (e) {
      if (!isSplitfleetError(e, 'RECORD_TOO_LARGE')) throw e;
      refused++;
      ctx.metrics.recordsRefused.inc();
      ctx.log.error({ instance, err: e.message }, 'assignment record refused');
    }
  }
  for (const instance of deletes) writes.push([op.delete(assignKey(ctx.view.prefix, instance))]);
  return { writes, refused };
}

/** The publication's writes as its transactions' batches, each under the store's limits with the guards added. */
function publicationBatches(ctx: PublishContext, writes: Op[][]): Op[][] {
  const { view } = ctx;
  const shape = publishTxn([], ctx.guard, publicationFence(view.prefix, fingerprintHash(ctx.fingerprint), ctx.generation, 0));
  const guardBytes = [...shape.compares, ...shape.success].reduce((n, o) => n + itemBytes(o), OVERHEAD_PER_REQUEST);
  const maxBytes = ctx.store.limits.maxRequestBytes - 4096 - guardBytes;
  return [...batches(writes, ctx.store.limits.maxOpsPerTxn - PUBLISH_GUARD_OPS, maxBytes, itemBytes)];
}

/** One batch behind the leadership guard and the publication fence at the revision last seen. */
function fencedTxn(ctx: PublishContext, batch: readonly Op[]): Txn {
  return publishTxn(batch, ctx.guard, publicationFence(ctx.view.prefix, fingerprintHash(ctx.fingerprint), ctx.generation, ctx.fence.revision ?? 0));
}

/**
 * Sends the batches as `publishTxn`s behind the publication fence (decision 0015), reading
 * the fence afresh when its revision is unknown. Stops at the first loss or failure: the next
 * step's diff finds what is left.
 */
async function sendWrites(ctx: PublishContext, sends: readonly Op[][]): Promise<{ written: number; complete: boolean; revision: number; fenceUnread: boolean }> {
  const { view } = ctx;
  let written = 0;
  let revision = 0;
  if (sends.length > 0 && ctx.fence.revision === undefined) {
    try {
      const kv = await ctx.store.get(publishKey(view.prefix));
      ctx.fence.revision = kv?.modRevision ?? 0;
    } catch (e) {
      ctx.log.warn({ err: (e as Error).message }, 'reading the publication fence failed; will retry');
      return { written, complete: false, revision, fenceUnread: true };
    }
    // A write of ours (a step that timed out) landed after this decision's view: decide again once the view has it.
    if (ctx.fence.revision > view.revision) return { written, complete: false, revision: ctx.fence.revision, fenceUnread: true };
  }
  for (const batch of sends) {
    try {
      const res = await ctx.store.txn(fencedTxn(ctx, batch));
      if (!res.won) {
        ctx.fence.revision = undefined; // leadership gone, or the fence moved: read it again
        return { written, complete: false, revision, fenceUnread: false };
      }
      ctx.fence.revision = res.revision;
      written += batch.filter((o) => o.op === 'put').length;
      revision = res.revision;
    } catch (e) {
      // Unknown outcome: it may still land. The fence makes it fail if a later write lands first.
      ctx.fence.revision = undefined;
      ctx.log.warn({ err: (e as Error).message }, 'publishing assignments failed; will retry');
      return { written, complete: false, revision, fenceUnread: false };
    }
  }
  return { written, complete: true, revision, fenceUnread: false };
}
