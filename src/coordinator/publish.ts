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
 * - In transit: a live member's record names the split while another live
 *   member still holds its lease (draining it toward them). The decision
 *   sees no lease owner for it, or successive decisions would undo the move
 *   mid-drain and flip splits back and forth.
 * - Only records whose split list changed are written (a steady fleet writes
 *   nothing; a new leader with the same decision writes nothing), each write
 *   guarded by leadership and by the publication fence (decision 0015: a
 *   write whose outcome is unknown can never land after a later one),
 *   batched under the store's limits.
 * - A departed instance's record keeps only its splits still withheld for it
 *   and is deleted once there are none, so no split is ever named in two
 *   records and records of pods that never return do not accumulate.
 * - A record that would exceed the request limit is refused (metric + error
 *   log), never truncated; the others are still published.
 * - A write that fails is simply retried on the next step: the diff against
 *   the view finds it again.
 */
import type { ColumnarDecision, ColumnarPool } from '../assignment/codec.js';
import type { AssignmentInput, AssignmentResult, AssignmentStats } from '../assignment/types.js';
import { isSplitfleetError } from '../errors.js';
import { assignKey, publishKey } from '../protocol/keys.js';
import { encodeRecord, fingerprintHash, SCHEMA_VERSION } from '../protocol/records.js';
import { operatorHold, type OperatorHold } from '../protocol/control.js';
import { reservedSplits, type ReservedWindowState, type SplitOwnership } from '../protocol/reserved.js';
import { cmp, op, type Compare, type Op, type Store } from '../store/store.js';
import type { LeaderView } from './leader-view.js';
import type { Logger } from './log.js';
import type { Metrics } from './metrics.js';

/** Computes a desired assignment in the object form: a custom engine (tests, experiments). */
export type Assigner = (input: AssignmentInput) => Promise<AssignmentResult>;

/** Computes a desired assignment on the leader's columns (the default: WASM, on a pool thread at scale). */
export type ColumnarAssigner = (pool: ColumnarPool) => Promise<ColumnarDecision>;

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
  window: ReservedWindowState | undefined;
  /** The object-form engine when one was configured; else `decide`. */
  assigner: Assigner | undefined;
  decide: ColumnarAssigner;
  metrics: Metrics;
  log: Logger;
}

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
  hold: OperatorHold = { paused: false, evacuated: new Set() },
): PreparedDecision {
  const { pool } = view;
  const live = new Set(view.workers.keys());
  // Previous assignees: departed instances' records first, so a live member's record wins.
  const previous = new Map<string, string>();
  const records = [...view.assigns.values()].sort((a, b) => Number(live.has(a.rec.instance)) - Number(live.has(b.rec.instance)));
  for (const { rec } of records) for (const id of rec.splits) previous.set(id, rec.instance);
  for (const id of previousIds) if (!previous.has(id)) pool.setPrevious(id, null);
  previousIds.clear();
  for (const [id, instance] of previous) if (pool.setPrevious(id, instance)) previousIds.add(id);

  const hidden: [string, string][] = [];
  for (const [id, lease] of view.leases) {
    const prev = previous.get(id);
    if (prev !== undefined && live.has(prev) && lease.rec.owner !== prev && pool.setLeaseOwner(id, null)) hidden.push([id, lease.rec.owner]);
  }

  const owned = new Set<string>([...view.leases.keys(), ...view.owners.keys(), ...previous.keys()]);
  const ownership: SplitOwnership[] = [];
  for (const id of owned) {
    if (view.statusOf(id) !== 'runnable') continue;
    ownership.push({ id, leaseOwner: view.leases.get(id)?.rec.owner ?? null, recordOwner: view.owners.get(id) ?? null, previous: previous.get(id) ?? null });
  }
  const r = reservedSplits({ previous: window, now, live, splits: ownership, rebalanceDelayMs });
  pool.setReserved(r.reserved);
  // An evacuated member (or every member, paused) is no member to the engine: its splits go to the
  // others at once (it is live, so nothing is withheld for it), and publishAssignments gives it [].
  pool.setMembers(hold.paused ? [] : [...view.workers.values()]
    .filter((w) => !hold.evacuated.has(w.rec.instance))
    .map((w) => ({ id: w.rec.instance, cap: w.rec.maxInFlight })));
  return {
    window: r.state,
    nextChangeAt: r.nextChangeAt,
    reserved: new Set(r.reserved),
    restore: () => {
      for (const [id, owner] of hidden) if (view.leases.get(id)?.rec.owner === owner) pool.setLeaseOwner(id, owner);
    },
  };
}

/** A decision per member: every live member, its split ids in JS string order. */
export function assignmentOf(pool: ColumnarPool, decision: ColumnarDecision): Map<string, string[]> {
  const lists: string[][] = decision.members.map(() => []);
  const { assignee } = decision;
  for (let r = 0; r < assignee.length; r++) {
    const j = assignee[r]!;
    if (j < 0) continue;
    const id = pool.idAt(r);
    if (id !== undefined) lists[j]!.push(id);
  }
  const out = new Map<string, string[]>();
  decision.members.forEach((m, j) => out.set(m, lists[j]!.sort(byString)));
  return out;
}

const byString = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

/** The hold the operators' record puts on this decision (pause, evacuations of live runs). */
export function holdOf(view: LeaderView): OperatorHold {
  return operatorHold(view.control?.rec, new Map([...view.workers.values()].map((w) => [w.rec.instance, w.rec.nonce])));
}

/** One publishing step: decide, diff against the view, write what changed. */
export async function publishAssignments(ctx: PublishContext, previousIds: Set<string>): Promise<PublishResult> {
  const { view } = ctx;
  const hold = holdOf(view);
  const prepared = prepareDecision(view, ctx.now, ctx.window, ctx.rebalanceDelayMs, previousIds, hold);
  let assignment: Map<string, string[]>;
  let stats: AssignmentStats;
  // The engines leave computeMs to their caller; measured here, around the whole decision (the
  // pool thread's round trip included), on the wall clock: it is a metric, never an input.
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
  // Held members are live: an empty record drains them (a missing one would mean "hold everything").
  for (const w of view.workers.values()) if (!assignment.has(w.rec.instance)) assignment.set(w.rec.instance, []);
  if (!(stats.computeMs > 0)) stats = { ...stats, computeMs: performance.now() - started };
  ctx.metrics.decisionSeconds.observe(stats.computeMs / 1000);
  ctx.metrics.improvingMoves.inc(stats.improvingMoves);
  ctx.metrics.imbalance.set(stats.imbalance);

  const fp = fingerprintHash(ctx.fingerprint);
  const maxBytes = ctx.store.limits.maxRequestBytes - 4096;
  const writes: Op[][] = [];
  let refused = 0;
  let deleted = 0;
  for (const [instance, splits] of assignment) {
    const current = view.assigns.get(instance)?.rec.splits;
    if (current && sameList(current, splits)) continue;
    try {
      const value = encodeRecord('assign', { v: SCHEMA_VERSION, fp, instance, generation: ctx.generation, splits }, { maxBytes });
      writes.push([op.put(assignKey(view.prefix, instance), value)]);
    } catch (e) {
      if (!isSplitfleetError(e, 'RECORD_TOO_LARGE')) throw e;
      refused++;
      ctx.metrics.recordsRefused.inc();
      ctx.log.error({ instance, err: e.message }, 'assignment record refused');
    }
  }
  for (const [instance, seen] of view.assigns) {
    if (assignment.has(instance)) continue;
    // A departed instance's record keeps only the splits still withheld for it: the others
    // (a live member held them, or the window has closed) are now assigned elsewhere, and
    // leaving them in would name them in two records.
    const kept = seen.rec.splits.filter((id) => prepared.reserved.has(id));
    if (kept.length === 0) {
      writes.push([op.delete(assignKey(view.prefix, instance))]);
      deleted++;
    } else if (kept.length < seen.rec.splits.length) {
      const value = encodeRecord('assign', { v: SCHEMA_VERSION, fp, instance, generation: ctx.generation, splits: kept }, { maxBytes });
      writes.push([op.put(assignKey(view.prefix, instance), value)]);
    }
  }

  let written = 0;
  let complete = true;
  let revision = 0;
  const fenceKey = publishKey(view.prefix);
  const fenceValue = encodeRecord('publish', { v: SCHEMA_VERSION, fp, generation: ctx.generation });
  if (writes.length > 0 && ctx.fence.revision === undefined) {
    try {
      const kv = await ctx.store.get(fenceKey);
      ctx.fence.revision = kv?.modRevision ?? 0;
    } catch (e) {
      ctx.log.warn({ err: (e as Error).message }, 'reading the publication fence failed; will retry');
      return { written, deleted: 0, refused, window: prepared.window, nextChangeAt: prepared.nextChangeAt, complete: false, revision, stats };
    }
    // A write of ours (a step that timed out) landed after this decision's view: decide again once the view has it.
    if (ctx.fence.revision > view.revision) {
      return { written, deleted: 0, refused, window: prepared.window, nextChangeAt: prepared.nextChangeAt, complete: false, revision: ctx.fence.revision, stats };
    }
  }
  // One op of each transaction is the fence's put.
  for (const batch of batches(writes, ctx.store.limits.maxOpsPerTxn - 2, maxBytes - fenceValue.length - fenceKey.length - 64)) {
    try {
      const res = await ctx.store.txn({
        compares: [ctx.guard, cmp.modRevision(fenceKey, ctx.fence.revision ?? 0)],
        success: [...batch, op.put(fenceKey, fenceValue)],
      });
      if (!res.won) {
        ctx.fence.revision = undefined; // leadership gone, or the fence moved: read it again
        complete = false;
        break;
      }
      ctx.fence.revision = res.revision;
      written += batch.filter((o) => o.op === 'put').length;
      revision = res.revision;
    } catch (e) {
      // Unknown outcome: it may still land. The fence makes it fail if a later write lands first.
      ctx.fence.revision = undefined;
      complete = false;
      ctx.log.warn({ err: (e as Error).message }, 'publishing assignments failed; will retry');
      break;
    }
  }
  ctx.metrics.recordsPublished.inc(written);
  return { written, deleted, refused, window: prepared.window, nextChangeAt: prepared.nextChangeAt, complete, revision, stats };
}

function sameList(a: readonly string[], b: readonly string[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/** Groups single-op writes into transactions of at most `maxOps` ops and about `maxBytes`. */
export function* batches(writes: Op[][], maxOps: number, maxBytes: number): Generator<Op[]> {
  let batch: Op[] = [];
  let bytes = 0;
  for (const w of writes) {
    const size = w.reduce((s, o) => s + Buffer.byteLength(o.key) + (o.op === 'put' ? Buffer.byteLength(o.value) : 0) + 32, 0);
    if (batch.length > 0 && (batch.length + w.length > maxOps || bytes + size > maxBytes)) {
      yield batch;
      batch = [];
      bytes = 0;
    }
    batch.push(...w);
    bytes += size;
  }
  if (batch.length > 0) yield batch;
}
