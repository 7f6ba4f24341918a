/**
 * LeaderRecords: the whole job as the leader holds it, applied key by key
 * from listings and watch events, in a compact form: the sparse maps (the
 * members, assignment records, live lease keys, record owners, the plan,
 * leader and control records) and the dense split columns (split-columns.ts).
 * No descriptor, no progress and no per-split record object is kept.
 *
 * Invariants:
 * - Every record is decoded strictly. The job's own records (plan, leader)
 *   that this build cannot read throw (the view stops); any other unreadable
 *   record is reported once through `onUnreadable` and costs only what it
 *   concerns (a member its membership, a split its place: parked). An
 *   unreadable control record holds the job paused (fail safe, decision 0026).
 * - A deletion of a sparse kind at or below `floor` (the last listing's
 *   revision) is already reflected and is ignored; a put older than what is
 *   held is ignored.
 *
 * No I/O: LeaderView (leader-view.ts) lists and watches and feeds it.
 */
import { SplitfleetError, storeFailure } from '../../errors.js';
import { hasLease, leaselessProblem } from '../../protocol/ephemeral.js';
import { dueAt } from '../../protocol/retry-policy.js';
import { parseKey, specKey, type KeyKind } from '../../protocol/keys.js';
import { isResidualId } from '../../protocol/residual-ids.js';
import { PackedView } from './packed-view.js';
import {
  decodeRecord, SCHEMA_VERSION, type AssignRecord, type ControlRecord, type LeaderRecord, type LeaseRecord, type PlanRecord, type RecordTypes, type WorkerRecord,
} from '../../protocol/records.js';
import type { KeyValue } from '../../store/store.js';
import { AssignRecords } from './assign-records.js';
import { OwnWrites } from './own-writes.js';
import type { Seen } from '../views/seen.js';
import { SplitColumns } from './split-columns.js';

/** The sparse kinds as one listing found them (the backstop's). */
export interface SparseListing {
  workers: Map<string, Seen<WorkerRecord>>;
  assigns: Map<string, Seen<AssignRecord>>;
  leases: Map<string, Seen<LeaseRecord>>;
  plan: Seen<PlanRecord> | undefined;
  leader: Seen<LeaderRecord> | undefined;
  control: SeenControl | undefined;
}

/**
 * The control record as held: an unreadable one stands as paused (fail safe: an operator's
 * pause must never be lifted by a record nobody can read), with the reason.
 */
export type SeenControl = Seen<ControlRecord> & { unreadable?: string };

export function emptyListing(): SparseListing {
  return { workers: new Map(), assigns: new Map(), leases: new Map(), plan: undefined, leader: undefined, control: undefined };
}

export type BacklogFigures = Record<'queued' | 'running' | 'draining' | 'completed' | 'quarantined', { splits: number; weight: number }>;

export class LeaderRecords {
  plan: Seen<PlanRecord> | undefined;
  leader: Seen<LeaderRecord> | undefined;
  /** The operators' record (pause, evacuations; decision 0011); undefined when absent, paused when unreadable. */
  control: SeenControl | undefined;
  readonly workers = new Map<string, Seen<WorkerRecord>>();
  readonly assigns = new AssignRecords();
  /** Live lease keys, by split id (at most the fleet's lanes). */
  readonly leases = new Map<string, Seen<LeaseRecord>>();
  /** Record owners, by split id: only records whose `owner` is set. */
  readonly owners = new Map<string, string>();
  /**
   * Failed splits' backoffs, by split id: only runnable records with a `notBefore` (sparse: the
   * failures not yet claimed again), each when it falls due for this leader (retry-policy.ts `dueAt`).
   */
  readonly notBefore = new Map<string, number>();
  /** When this leader first saw each backoff's record revision (its wall clock). */
  private readonly backoffSeen = new Map<string, { modRevision: number; seenAt: number }>();
  readonly columns: SplitColumns;
  /** The leader's own seeding writes whose echo has not arrived: applied from what was written (own-writes.ts). */
  readonly own = new OwnWrites();
  unknownKeys = 0;
  /** Residuals of divided splits whose spec has been seen (the summary's count; decision 0063). */
  readonly residuals = new Set<string>();
  /** The stored summary's text, undecoded: a new term reads its event history once (history-tap.ts). */
  summaryText: string | undefined;
  /** A packed job's pages and folded records (packed-view.ts). */
  readonly pages: PackedView;
  /** The last listing's revision: events of the sparse kinds at or below it are already in the maps. */
  floor = 0;

  constructor(
    readonly prefix: string,
    readonly fp: string,
    seed: string,
    private readonly onUnreadable: (key: string, error: SplitfleetError) => void,
    /** This process's wall clock (epoch ms): a backoff is bounded from when its record was first seen. */
    private readonly wallNow: () => number = Date.now,
  ) {
    this.columns = new SplitColumns(seed, this.owners, this.leases);
    this.pages = new PackedView(prefix, fp, this.columns, () => this.plan !== undefined, onUnreadable, () => this.unknownKeys++);
  }

  /**
   * The backlog by state, in splits and weight (the leader's metric). Held
   * splits are running while their holder's record names them (or it has no
   * record: it holds everything) and draining otherwise; queued is the rest
   * of the runnable ones. Costs the leases (sparse), not the split count.
   */
  backlog(): BacklogFigures {
    const running = { splits: 0, weight: 0 };
    const draining = { splits: 0, weight: 0 };
    for (const [id, lease] of this.leases) {
      if (this.columns.statusOf(id) !== 'runnable') continue;
      const splits = this.assigns.get(lease.rec.owner)?.rec.splits;
      const into = splits === undefined || sortedHas(splits, id) ? running : draining;
      into.splits++;
      into.weight += this.columns.weightOf(id) ?? 0;
    }
    const w = this.columns.statusWeights;
    const c = this.columns.statusCounts;
    return {
      queued: { splits: Math.max(0, c.runnable - running.splits - draining.splits), weight: Math.max(0, w.runnable - running.weight - draining.weight) },
      running, draining,
      completed: { splits: c.completed, weight: w.completed },
      quarantined: { splits: c.quarantined, weight: w.quarantined },
    };
  }

  /**
   * Replaces the sparse kinds by a listing at `revision` (the backstop): what
   * is not listed is gone, unless an event newer than the listing says
   * otherwise; per key, whichever is newer wins.
   */
  replaceSparse(listed: SparseListing, revision: number): void {
    const merge = <R>(mine: Map<string, Seen<R>>, from: Map<string, Seen<R>>, apply: (id: string, s: Seen<R> | undefined) => void) => {
      for (const [id, s] of mine) if (!from.has(id) && s.modRevision <= revision) apply(id, undefined);
      for (const [id, s] of from) if ((mine.get(id)?.modRevision ?? 0) < s.modRevision) apply(id, s);
    };
    merge(this.workers, listed.workers, (id, s) => (s ? this.workers.set(id, s) : this.workers.delete(id)));
    merge(this.assigns, listed.assigns, (id, s) => (s ? this.assigns.set(id, s) : this.assigns.delete(id)));
    merge(this.leases, listed.leases, (id, s) => this.setLease(id, s));
    const { plan, leader, control } = listed;
    if (plan && (this.plan?.modRevision ?? 0) < plan.modRevision) this.plan = plan;
    if (!leader && this.leader && this.leader.modRevision <= revision) this.leader = undefined;
    else if (leader && (this.leader?.modRevision ?? 0) < leader.modRevision) this.leader = leader;
    if (!control && this.control && this.control.modRevision <= revision) this.control = undefined;
    else if (control && (this.control?.modRevision ?? 0) < control.modRevision) this.control = control;
    this.floor = revision;
  }

  /** Reads one listed key of the sparse kinds into `into` (unreadable ones are reported and left out). */
  listSparse(kv: KeyValue, into: SparseListing): void {
    const parsed = parseKey(this.prefix, kv.key);
    const seen = <R>(rec: R): Seen<R> => meta(rec, kv);
    const put = <K extends 'worker' | 'assign' | 'lease'>(kind: K, to: Map<string, Seen<RecordTypes[K]>>, id: string) => {
      if (kind !== 'assign' && !this.live(kind as 'worker' | 'lease', kv.key, kv)) return;
      const rec = this.readable(kind, kv.key, kv.value, kind === 'lease' ? id : undefined);
      if (rec) to.set(id, seen(rec));
    };
    switch (parsed.kind) {
      case 'worker': put('worker', into.workers, parsed.id); break;
      case 'assign': put('assign', into.assigns, parsed.id); break;
      case 'lease': put('lease', into.leases, parsed.id); break;
      case 'plan': into.plan = seen(decodeRecord('plan', kv.key, kv.value, this.fp)); break;
      case 'leader': into.leader = seen(decodeRecord('leader', kv.key, kv.value, this.fp)); break;
      case 'control': into.control = this.readControl(kv.key, kv.value, kv); break;
      default: break;
    }
  }

  /** Forgets everything but the control record (a fresh listing follows). */
  clear(): void {
    this.plan = this.leader = undefined;
    this.workers.clear();
    this.assigns.clear();
    for (const id of [...this.leases.keys()]) this.setLease(id, undefined);
    for (const id of [...this.owners.keys()]) this.setOwner(id, '');
    this.notBefore.clear();
    this.backoffSeen.clear();
    this.columns.clear();
    this.own.clear();
    this.pages.clear();
    this.residuals.clear();
    this.summaryText = undefined;
  }

  /** Applies a put of `key`; returns its kind when it changed what a decision sees. */
  put(key: string, value: string, modRevision: number, lease: string | undefined): KeyKind | undefined {
    const parsed = parseKey(this.prefix, key);
    const kv = { modRevision, ...(lease !== undefined ? { lease } : {}) };
    switch (parsed.kind) {
      case 'unknown':
        this.unknownKeys++;
        return undefined;
      case 'progress':
        return undefined; // outside both ranges; a store that sends one anyway costs nothing more
      case 'plan':
        // The job's own records: one this build cannot read stops the leader (its caller fails).
        this.plan = meta(decodeRecord('plan', key, value, this.fp), kv);
        // The layout is fixed at creation (decision 0037): a packed job's splits come from its pages.
        if (this.plan.rec.layout === 'packed' && !this.columns.packed) this.columns.usePacked();
        this.unknownKeys += this.pages.planSeen();
        // Seen before any spec (`plan` sorts first): room for the planned splits before a listing brings them.
        if (this.columns.specCount === 0) this.columns.reserveListing(this.plan.rec.planned);
        return 'plan';
      case 'leader':
        this.leader = meta(decodeRecord('leader', key, value, this.fp), kv);
        return 'leader';
      case 'publish':
        return undefined; // the leader's own fence: it tracks the revision itself (decision 0015)
      case 'summary':
        // The leader's own summary, for the tools: no decision reads it (decision 0040); a new term continues its history.
        this.summaryText = value;
        return undefined;
      case 'control':
        // Unreadable: held paused (fail safe), reported; `splitfleet pause`/`resume` overwrite it.
        this.control = this.readControl(key, value, kv);
        return 'control';
      case 'worker':
        // Unreadable, or with no etcd lease: not a member (it costs that instance its membership, not the job).
        if (!this.live('worker', key, kv)) {
          if (!this.workers.has(parsed.id)) return undefined;
          this.workers.delete(parsed.id);
          return 'worker';
        }
        return this.putKeyed(this.workers, 'worker', parsed.id, key, value, kv);
      case 'assign':
        // Unreadable: as if absent, so the next decision writes a readable one over it.
        return this.putKeyed(this.assigns, 'assign', parsed.id, key, value, kv);
      case 'lease': {
        if ((this.leases.get(parsed.id)?.modRevision ?? 0) >= modRevision) return undefined;
        // With no etcd lease it holds nothing: the split is claimable, and the claim writes over it.
        const rec = this.live('lease', key, kv) ? this.readable('lease', key, value, parsed.id) : undefined;
        this.setLease(parsed.id, rec ? meta(rec, kv) : undefined);
        this.columns.problemsChanged(parsed.id);
        return 'lease';
      }
      case 'queue':
        // Listed once per term (never watched: pages are immutable, and seeding applies its own).
        return this.pages.putPage(key, value) ? 'queue' : undefined;
      case 'folded':
        return this.pages.putFolded(key, value, modRevision) ? 'folded' : undefined;
      case 'divide':
        return undefined; // the leader's own asks (ask-divisions.ts keeps them): no decision reads them
      case 'spec': {
        // A packed job's specs are copies for the workers: its weights are its pages'. A residual's
        // (decision 0063) is in no page: its spec is where its weight is, as in a keys job.
        const residual = isResidualId(parsed.id);
        if (this.columns.packed && !residual) return undefined;
        const own = this.own.size > 0 ? this.own.take(modRevision, key) : undefined;
        if (own?.kind === 'spec') {
          // Our own seeding write (its transaction's revision): what decoding it would give.
          this.columns.clearProblem(parsed.id, 'spec');
          this.columns.specSeen(parsed.id, own.weight);
          return 'spec';
        }
        const spec = this.readable('spec', key, value, parsed.id);
        this.columns.specSeen(parsed.id, spec?.weight);
        if (residual && spec) this.residuals.add(parsed.id);
        return 'spec';
      }
      case 'split':
        return this.putSplit(parsed.id, key, value, modRevision);
    }
  }

  /** A put of `split.{id}`: its owner, backoff and status; a packed split is keyed from here on. */
  private putSplit(id: string, key: string, value: string, modRevision: number): 'split' {
    const own = this.own.size > 0 ? this.own.take(modRevision, key) : undefined;
    if (own?.kind === 'split') {
      // Our own seeding write: an initial record (runnable, no owner, no backoff).
      this.columns.clearProblem(id, 'split');
      this.setOwner(id, '');
      this.notBefore.delete(id);
      this.columns.recordSeen(id, 'runnable');
      return 'split';
    }
    const rec = this.readable('split', key, value, id);
    this.columns.packed?.keyed.set(id, modRevision);
    this.setOwner(id, rec?.owner ?? '');
    if (rec?.status === 'runnable' && rec.notBefore !== undefined) {
      // Bounded by when this leader first saw this revision (decision 0060): a re-read keeps that time.
      const first = this.backoffSeen.get(id);
      const seenAt = first?.modRevision === modRevision ? first.seenAt : this.wallNow();
      this.backoffSeen.set(id, { modRevision, seenAt });
      this.notBefore.set(id, dueAt(rec, seenAt)!);
    } else {
      this.notBefore.delete(id);
      this.backoffSeen.delete(id);
    }
    this.columns.recordSeen(id, rec?.status);
    return 'split';
  }

  /** Applies a deletion of `key` at `revision`. */
  remove(key: string, revision: number): KeyKind | undefined {
    const parsed = parseKey(this.prefix, key);
    switch (parsed.kind) {
      case 'unknown':
      case 'progress':
      case 'queue': // pages are never deleted while the job lives (`delete` removes the whole job)
        return undefined;
      case 'folded': {
        // The leader never deletes one (a bit is never cleared): deleted by hand or lost to a restore.
        // Promotions compare it as absent from now on, and the leader writes back the bits it saw.
        const i = this.columns.packed?.forgetFolded(parsed.bucket, parsed.page);
        if (i === undefined) return undefined;
        this.onUnreadable(key, new SplitfleetError('INVALID_RECORD', `${key} was deleted (by hand, or by a restore from an older backup); the leader writes back the completions it had seen`));
        return 'folded';
      }
      case 'plan':
        this.plan = undefined;
        return 'plan';
      case 'leader':
        this.leader = undefined;
        return 'leader';
      case 'summary':
        this.summaryText = undefined;
        return undefined;
      case 'publish':
      case 'divide':
        return undefined;
      case 'control':
        this.control = undefined;
        return 'control';
      case 'worker':
        if (revision <= this.floor) return undefined;
        this.workers.delete(parsed.id);
        return 'worker';
      case 'assign':
        if (revision <= this.floor) return undefined;
        this.assigns.delete(parsed.id);
        return 'assign';
      case 'lease':
        if (revision <= this.floor) return undefined;
        this.columns.clearProblem(parsed.id, 'lease');
        this.setLease(parsed.id, undefined);
        this.columns.problemsChanged(parsed.id);
        return 'lease';
      case 'spec': {
        if (this.columns.packed && !isResidualId(parsed.id)) return undefined;
        // A keys job's spec is deleted by nobody (a job's delete takes its plan first): by hand, or a
        // restore. A split that has still to run cannot without it: parked with the reason, visibly
        // (health, inspect, splitfleet_parked_splits), until a spec is put back.
        const status = this.columns.statusOf(parsed.id);
        if (status === 'runnable') this.specMissing(parsed.id);
        else {
          this.columns.clearProblem(parsed.id, 'spec');
          this.columns.specSeen(parsed.id, undefined);
        }
        return 'spec';
      }
      case 'split': {
        this.columns.clearProblem(parsed.id, 'split');
        this.setOwner(parsed.id, '');
        this.notBefore.delete(parsed.id);
        this.backoffSeen.delete(parsed.id);
        // A packed split without a record of its own is what its page says: folded back, or queued.
        this.columns.packed?.keyed.delete(parsed.id);
        this.columns.recordForgotten(parsed.id);
        return 'split';
      }
    }
  }

  /**
   * Decodes a record; one this build cannot read is reported and, for a
   * split's records (`id` given), sets that split aside as a problem until a
   * readable value (or a deletion) replaces it. Undefined when unreadable.
   */
  /** A put of an instance's record (`kind` in `map`), unless older than the one held; an unreadable one is dropped. */
  private putKeyed<K extends 'worker' | 'assign'>(
    map: Map<string, Seen<RecordTypes[K]>>, kind: K, id: string, key: string, value: string, kv: { modRevision: number; lease?: string },
  ): K | undefined {
    if ((map.get(id)?.modRevision ?? 0) >= kv.modRevision) return undefined;
    const rec = this.readable(kind, key, value);
    if (rec) map.set(id, meta(rec, kv));
    else map.delete(id);
    return kind;
  }

  /** A keys job's runnable split whose spec is gone (deleted, or missing at a listing): parked with the reason, reported once. */
  specMissing(id: string): void {
    const key = specKey(this.prefix, id);
    const problem = `${key} is missing (deleted by hand, or by a restore): the split cannot run without its spec; put it back (the planner's weight and descriptor)`;
    this.columns.setProblem(id, 'spec', problem);
    this.onUnreadable(key, new SplitfleetError('INVALID_RECORD', problem));
    this.columns.specSeen(id, undefined);
  }

  /** Whether a presence or lease key lives on an etcd lease; one that does not is reported (as unreadable) and ignored. */
  private live(kind: 'worker' | 'lease', key: string, kv: { lease?: string }): boolean {
    if (hasLease(kv)) return true;
    this.onUnreadable(key, new SplitfleetError('INVALID_RECORD', leaselessProblem(key, kind)));
    return false;
  }

  readable<K extends 'control' | 'worker' | 'assign' | 'lease' | 'spec' | 'split'>(kind: K, key: string, value: string, id?: string): RecordTypes[K] | undefined {
    try {
      const rec = decodeRecord(kind, key, value, this.fp);
      if (id !== undefined) this.columns.clearProblem(id, kind);
      return rec;
    } catch (e) {
      const err = storeFailure(e);
      if (id !== undefined) this.columns.setProblem(id, kind, err.message);
      this.onUnreadable(key, err);
      return undefined;
    }
  }

  /** The control record at `key`; an unreadable one stands as paused, with the reason (reported once per problem). */
  private readControl(key: string, value: string, kv: { modRevision: number; lease?: string }): SeenControl {
    try {
      return meta(decodeRecord('control', key, value, this.fp), kv);
    } catch (e) {
      const err = storeFailure(e);
      const reason = `${err.message}; the job is held paused until an operator rewrites it (splitfleet pause or resume)`;
      this.onUnreadable(key, new SplitfleetError(err.code, reason, { cause: err }));
      const paused: ControlRecord = { v: SCHEMA_VERSION, fp: this.fp, paused: true, evacuated: [] };
      return { ...meta(paused, kv), unreadable: reason };
    }
  }

  setOwner(id: string, owner: string): void {
    if (owner === '') {
      if (this.owners.delete(id)) this.columns.pool.setRecordOwner(id, null);
    } else if (this.owners.get(id) !== owner) {
      this.owners.set(id, owner);
      this.columns.pool.setRecordOwner(id, owner);
    }
  }

  setLease(id: string, seen: Seen<LeaseRecord> | undefined): void {
    if (seen) this.leases.set(id, seen);
    else this.leases.delete(id);
    this.columns.pool.setLeaseOwner(id, seen?.rec.owner ?? null);
  }
}

function meta<R>(rec: R, kv: { modRevision: number; lease?: string }): Seen<R> {
  const out: Seen<R> = { rec, modRevision: kv.modRevision };
  if (kv.lease !== undefined && kv.lease !== '0') out.lease = kv.lease;
  return out;
}

/** Binary search in ids sorted in JS string order (assignment records are). */
function sortedHas(ids: readonly string[], id: string): boolean {
  let lo = 0;
  let hi = ids.length - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    const v = ids[mid]!;
    if (v === id) return true;
    if (v < id) lo = mid + 1;
    else hi = mid - 1;
  }
  return false;
}


