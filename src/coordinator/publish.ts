/**
 * publishAssignments: the leader's step from observed state to published
 * `assign.{instance}` records.
 *
 * Invariants:
 * - Inputs come from the view only: live members with their own lane budgets,
 *   every split with a spec and a record, lease owners from live lease keys,
 *   record owners, previous assignees from the existing assignment records (a
 *   live member's record wins over a departed one's), and the reserved set of
 *   the rebalance-delay window.
 * - Only records whose split list changed are written (a steady fleet writes
 *   nothing; a new leader with the same decision writes nothing), each write
 *   guarded by leadership, batched under the store's limits.
 * - A departed instance's record keeps only its splits still withheld for it
 *   and is deleted once there are none, so no split is ever named in two records and records of
 *   pods that never return do not accumulate.
 * - A record that would exceed the request limit is refused (metric + error
 *   log), never truncated; the others are still published.
 * - A write that fails is simply retried on the next step: the diff against
 *   the view finds it again.
 */
import type { AssignmentInput, AssignmentResult, SplitInput } from '../assignment/types.js';
import { isSplitfleetError } from '../errors.js';
import { assignKey } from '../protocol/keys.js';
import { encodeRecord, fingerprintHash, SCHEMA_VERSION } from '../protocol/records.js';
import { reservedSplits, type ReservedWindowState } from '../protocol/reserved.js';
import { op, type Compare, type Op, type Store } from '../store/store.js';
import type { Logger } from './log.js';
import type { Metrics } from './metrics.js';
import type { JobView } from './view.js';

/** Computes a desired assignment (off the event loop when backed by the pool). */
export type Assigner = (input: AssignmentInput) => Promise<AssignmentResult>;

export interface PublishContext {
  store: Store;
  view: JobView;
  seed: string;
  fingerprint: string;
  generation: number;
  guard: Compare;
  rebalanceDelayMs: number;
  now: number;
  window: ReservedWindowState | undefined;
  assigner: Assigner;
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
  stats: AssignmentResult['stats'];
}

/** Builds the assignment input from the view (and the delay window). */
export function assignmentInputFromView(
  view: JobView, seed: string, now: number, window: ReservedWindowState | undefined, rebalanceDelayMs: number,
): { input: AssignmentInput; window: ReservedWindowState | undefined; nextChangeAt: number | undefined } {
  const live = new Set(view.workers.keys());
  // Previous assignees: departed instances' records first, so a live member's record wins.
  const previous = new Map<string, string>();
  const records = [...view.assigns.values()].sort((a, b) => Number(live.has(a.rec.instance)) - Number(live.has(b.rec.instance)));
  for (const { rec } of records) for (const id of rec.splits) previous.set(id, rec.instance);

  const splits: SplitInput[] = [];
  const ownership: { id: string; leaseOwner?: string | null; recordOwner?: string | null; previous?: string | null }[] = [];
  for (const [id, spec] of view.specs) {
    const seen = view.splits.get(id);
    if (!seen) continue;
    const leaseOwner = view.leases.get(id)?.rec.owner ?? null;
    const recordOwner = seen.rec.owner === '' ? null : seen.rec.owner;
    const prev = previous.get(id) ?? null;
    // In transit: a live member's published record names the split while another live member
    // still holds its lease (draining it toward them). The published decision is the current
    // ownership; offering the draining holder as sticky lease owner would undo the move mid-drain
    // and make successive decisions flip splits back and forth.
    const inTransit = prev !== null && live.has(prev) && leaseOwner !== null && leaseOwner !== prev;
    splits.push({ id, weight: spec.weight, status: seen.rec.status, leaseOwner: inTransit ? null : leaseOwner, recordOwner, previous: prev });
    if (seen.rec.status === 'runnable') ownership.push({ id, leaseOwner, recordOwner, previous: prev });
  }
  const r = reservedSplits({ previous: window, now, live, splits: ownership, rebalanceDelayMs });
  const members = [...view.workers.values()].map((w) => ({ id: w.rec.instance, cap: w.rec.maxInFlight }));
  return {
    input: { seed, members, splits, reserved: r.reserved },
    window: r.state,
    nextChangeAt: r.nextChangeAt,
  };
}

/** One publishing step: decide, diff against the view, write what changed. */
export async function publishAssignments(ctx: PublishContext): Promise<PublishResult> {
  const { view } = ctx;
  const { input, window, nextChangeAt } = assignmentInputFromView(view, ctx.seed, ctx.now, ctx.window, ctx.rebalanceDelayMs);
  const result = await ctx.assigner(input);
  ctx.metrics.decisionSeconds.observe(result.stats.computeMs / 1000);
  ctx.metrics.improvingMoves.inc(result.stats.improvingMoves);
  ctx.metrics.imbalance.set(result.stats.imbalance);

  const fp = fingerprintHash(ctx.fingerprint);
  const reserved = new Set(input.reserved);
  const maxBytes = ctx.store.limits.maxRequestBytes - 4096;
  const writes: Op[][] = [];
  let refused = 0;
  let deleted = 0;
  for (const [instance, splits] of Object.entries(result.assignment)) {
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
    if (instance in result.assignment) continue;
    // A departed instance's record keeps only the splits still withheld for it: the others
    // (a live member held them, or the window has closed) are now assigned elsewhere, and
    // leaving them in would name them in two records.
    const kept = seen.rec.splits.filter((id) => reserved.has(id));
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
  for (const batch of batches(writes, ctx.store.limits.maxOpsPerTxn - 1, maxBytes)) {
    try {
      const res = await ctx.store.txn({ compares: [ctx.guard], success: batch });
      if (!res.won) {
        complete = false;
        break;
      }
      written += batch.filter((o) => o.op === 'put').length;
      revision = res.revision;
    } catch (e) {
      complete = false;
      ctx.log.warn({ err: (e as Error).message }, 'publishing assignments failed; will retry');
      break;
    }
  }
  ctx.metrics.recordsPublished.inc(written);
  return { written, deleted, refused, window, nextChangeAt, complete, revision, stats: result.stats };
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
    const size = w.reduce((s, o) => s + o.key.length + (o.op === 'put' ? Buffer.byteLength(o.value) : 0) + 32, 0);
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
