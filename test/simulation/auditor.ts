/**
 * The auditor: the one history recorder (test/support/history.ts) keeps
 * every change from revision 1; the process facades attribute each revision to the process whose
 * request made it (an unattributed revision is a lease expiry); the handlers
 * write the one ledger (src/testing/ledger.ts): processed units and how each
 * tenancy ended. `audit()`
 * replays the history revision by revision and checks the properties:
 *
 * Committed progress lives in `progress.{id}` (`{id, epoch, progress}`),
 * written only by the owner's fenced transactions; `split.{id}` carries
 * ownership only (epoch, status, owner, attempts) and moves only when
 * ownership does.
 *
 * - no-loss: every committed progress step (a → b at epoch e, a put of
 *   `progress.{id}`) is covered by units a+1..b processed by the tenancy of
 *   epoch e; with progress monotone and ending at the split's size, every unit
 *   was processed at least once.
 * - monotone: committed progress never goes backwards, nor does the epoch a
 *   progress record names; a terminal record is never rewritten (nor its
 *   progress); neither a split nor a progress record is ever deleted (but by
 *   a packed job's fold-back); a claim never writes progress; `split.{id}`
 *   never carries progress; epochs move by +1 only on a claim.
 * - one owner per epoch: each epoch is installed by exactly one claim, made by
 *   the process it names; every later write at that epoch (a progress commit,
 *   release, complete) comes from that same incarnation, names that epoch, and
 *   lands while that incarnation's lease key is live; units are processed only by
 *   the claimer of their epoch; a claim never lands over another owner's live
 *   lease key; at every revision a live `lease.{id}` agrees with `split.{id}`
 *   (owner, epoch, runnable) and hangs off a lease of the process it names.
 * - lane budget: a process never holds more splits than its maxInFlight (live
 *   lease keys on its etcd lease), however many are named for it (prefetch,
 *   substrate.md): checked after every revision in which it put a lease key.
 * - fenced leader: spec, plan, assign and seeding writes come only from the
 *   process holding the `leader` key at that revision; no split is named in
 *   two assignment records at any revision (assigned-once.ts).
 * - a packed job (decision 0037): promotion, fold-back, folded bits, its keys
 *   deleted only by a fold-back, one completion per split
 *   (test/support/packed-invariants.ts, first in the replay, so that the
 *   deletions a keys job may never make are judged by its layout; reported as
 *   packed-audit.ts says).
 * - divisions (decision 0063): each is one revision of the parent's owner
 *   creating its residual, no commit passes a divided split's end, and a
 *   residual's units start at its `from` (divisions.ts).
 * - bounded replay, and completion (checked by the caller when the run
 *   finished): replay.ts.
 *
 * The rules the chaos auditor (test/chaos/checks.ts) checks too are written
 * once and reported here under the properties above: each split's ownership
 * step (test/support/ownership-transitions.ts: the claim's lease key and the
 * attempt it consumes, a quarantine's, the fence of an owner's writes, a lease
 * key agreeing with its record), the epoch and owner fence, the lease rule and
 * progress monotonicity (test/support/invariants.ts), and the units ledger
 * (test/support/units-ledger.ts: units by their epoch's claimer, committed
 * steps covered, duplicates bounded). This auditor adds what only it knows:
 * which process wrote each revision (the claimer, the lease's holder, the
 * leader), the lives the hostile writer's deletions start, and the lanes.
 *
 * It reads records with JSON.parse, not the production codecs, so a codec
 * bug cannot hide from it. It never writes. Revisions written from outside
 * the fleet (the hostile writer's) are left out of the replay (assigned-once.ts
 * still follows what their assignment records name), but for what the fleet's
 * next writes depend on: a deletion, the put that restores it, a lease or
 * presence key written with no etcd lease. A split whose record, queue page
 * or folded record the writer deleted may be created again and run again: a
 * new life of it (lives.ts), its epochs from 0, its tenancies named by life
 * and epoch, with the allowances lives.ts lists and no others.
 */
import type { Clock } from '../../src/clock.js';
import type { MemoryStore } from '../../src/store/memory.js';
import { Ledger, type LaneEvent, type UnitEntry } from '../../src/testing/ledger.js';
import { HistoryRecorder, type HistoryEvent } from '../support/history.js';
import { onlyRevisions, replayHistory, type Revision } from '../support/history-replay.js';
import { invariantCheckers } from '../support/invariants.js';
import { ownershipStep, stepOf, type SplitRecords } from '../support/ownership-transitions.js';
import { packedChecker } from '../support/packed-invariants.js';
import { missingUnits, unitClaimProblem } from '../support/units-ledger.js';
import { AssignedOnce } from './assigned-once.js';
import { DivisionFacts } from './divisions.js';
import { Lives, tenancyAt, tenancyKey } from './lives.js';
import { packedEndViolations, packedViolations } from './packed-audit.js';
import { finalStateViolations, replayViolations } from './replay.js';

/** A handler's exit, as the one ledger's 'exit' lane event (instance: the process incarnation; t: virtual ms). */
export type HandlerExit = Pick<LaneEvent, 'instance' | 'id' | 'epoch' | 't'> & { how: string; progress: number };

export interface Violation { property: string; message: string; revision?: number; context?: unknown }

export interface AuditStats {
  revisions: number;
  claims: number;
  takeovers: number;
  releases: number;
  forcedReleases: number;
  duplicates: number;
  leaderTerms: number;
  /** A packed job's promotions and fold-backs (0 for the keys layout). */
  promotions: number;
  folds: number;
  /** Divisions landed (decision 0063). */
  divisions: number;
}

export interface SplitRec { id: string; epoch: number; status: string; owner: string; attempts: number }
export interface ProgressRec { id: string; epoch: number; progress: unknown }
interface LeaseRec { id: string; owner: string; epoch: number }
/** One tenancy: a claim's epoch in one of its split's lives (lives.ts), and when it was claimed (`at`, virtual ms). */
export interface Tenancy { epoch: number; life: number; at: number; proc: string | undefined; revision: number; resume: number; last: number; takeover: boolean; end?: 'released' | 'completed' | 'failed' | 'taken-over' | 'quarantined' }

/** The shared ownership rules (test/support/ownership-transitions.ts) under this auditor's properties; the rest are 'one-owner-per-epoch'. */
const PROPERTY: Record<string, string> = {
  'split-deleted': 'monotone', 'progress-deleted': 'monotone', 'bad-seed': 'monotone', 'terminal-rewritten': 'monotone',
  'progress-after-terminal': 'monotone', 'progress-while-unowned': 'monotone', 'claim-wrote-progress': 'monotone',
  'progress-in-split': 'layout', 'rewritten-keeping-owner': 'layout',
  'claim-miscounted': 'attempts', 'quarantine-miscounted': 'attempts', 'quarantine-after-release': 'attempts', 'quarantine-burned-committed': 'attempts',
};
const ATTEMPT_RULES = new Set(['claim-miscounted', 'quarantine-miscounted', 'quarantine-after-release', 'quarantine-burned-committed']);

/** A record as the store holds it, parsed (undefined when absent or not JSON: the hostile writer's, say). */
function parsed<T>(kv: { value: string } | undefined): T | undefined {
  if (!kv) return undefined;
  try {
    return JSON.parse(kv.value) as T;
  } catch {
    return undefined;
  }
}

/** Split `id`'s records as `state` holds them. */
function recordsOf(state: ReadonlyMap<string, { value: string }>, P: string, id: string): SplitRecords {
  return { split: parsed(state.get(`${P}split.${id}`)), lease: parsed(state.get(`${P}lease.${id}`)), progress: parsed(state.get(`${P}progress.${id}`)) };
}

export class Auditor {
  private readonly recorder: HistoryRecorder;
  /** The one ledger (src/testing/ledger.ts): units by process incarnation, and each handler's exit as an 'exit' lane event. */
  readonly ledger = new Ledger();
  private readonly writers = new Map<number, { proc: string; what: string }>();
  private readonly leaseProc = new Map<string, string>();
  /** Each process's lane budget (maxInFlight), when the harness told it: the 'lane-budget' property. */
  private readonly procLanes = new Map<string, number>();
  private readonly procInstance = new Map<string, string>();
  private readonly externals = new Set<number>();
  /** Per split, an operator's retries of it: each may replay what the tenancy that ended in quarantine left uncommitted. */
  private readonly retries = new Map<string, number>();

  /** `clock`: the simulation's virtual clock (receive times; the run reads no wall clock). */
  constructor(store: MemoryStore, readonly prefix: string, clock: Clock) {
    this.recorder = new HistoryRecorder(store, prefix, prefix, { fromRevision: 1, clock });
  }

  /**
   * Every change to the job's keys, in revision order (the one history
   * recorder's), without the hostile writer's: the fleet's own writes are
   * replayed as if a foreign value had never been there (a write over one is
   * checked against the value the fleet last wrote).
   */
  get changes(): readonly HistoryEvent[] {
    const all = this.recorder.events;
    return this.externals.size === 0 ? all : all.filter((e) => !this.externals.has(e.rev));
  }

  /**
   * `changes`, and the hostile writer's writes of presence and lease keys: one written with no etcd
   * lease outlives its process's lease, and only the writer's repair deletes it (what the audit's
   * replay applies too).
   */
  private get withEphemeral(): readonly HistoryEvent[] {
    const all = this.recorder.events;
    const P = this.prefix;
    return this.externals.size === 0 ? all : all.filter((e) => !this.externals.has(e.rev) || e.key.startsWith(`${P}lease.`) || e.key.startsWith(`${P}worker.`));
  }

  /** A revision written from outside the fleet (the hostile writer's, test/simulation/hostile.ts). */
  external(revision: number): void {
    this.externals.add(revision);
  }

  attribute(revision: number, proc: string, what: string): void {
    this.writers.set(revision, { proc, what });
  }

  noteLease(id: string, proc: string): void {
    this.leaseProc.set(id, proc);
  }

  noteProc(proc: string, instance: string, maxInFlight?: number): void {
    this.procInstance.set(proc, instance);
    if (maxInFlight !== undefined) this.procLanes.set(proc, maxInFlight);
  }

  /** A processed unit, in the one ledger's shape (test/support/units-ledger.ts; instance: the process incarnation, t: virtual ms). */
  unit(u: UnitEntry): void {
    this.ledger.unit(u);
  }

  exit(e: HandlerExit): void {
    this.ledger.lane({ ...e, ev: 'exit' });
  }

  async close(): Promise<void> {
    await this.recorder.close();
  }

  /** Replays the recorded history and returns every property violation (empty when all hold). */
  audit(sizes: ReadonlyMap<string, number>, commitEvery: number): { violations: Violation[]; stats: AuditStats } {
    const v: Violation[] = [];
    const stats: AuditStats = { revisions: 0, claims: 0, takeovers: 0, releases: 0, forcedReleases: 0, duplicates: 0, leaderTerms: 0, promotions: 0, folds: 0, divisions: 0 };
    const P = this.prefix;
    const state = new Map<string, { value: string; lease?: string }>();
    /** The highest generation a term has led (a new term's is higher: two terms never share one). */
    let ledGeneration = 0;
    const tenancies = new Map<string, Tenancy[]>();
    // A split created again after a deletion from outside (lives.ts) starts its epochs again: a tenancy is of its current life.
    const lives = new Lives();
    const tenancy = (id: string, epoch: number) => tenancies.get(id)?.find((t) => t.epoch === epoch && t.life === lives.life(id));
    // Revisions of the fleet's last lease key put, and of the writer's last deletion of a split record, by split:
    // a lease key put before its record was deleted is that record's leftover, coherent with no later one.
    const leasePutAt = new Map<string, number>();
    const splitDeletedAt = new Map<string, number>();
    /** A packed promotion of a split whose record the writer deleted puts the spec it left again (packed-txns.ts). */
    const respec = (id: string, group: readonly HistoryEvent[]): boolean => packed.layout === 'packed' && splitDeletedAt.has(id)
      && !state.has(`${P}split.${id}`) && group.some((x) => x.key === `${P}split.${id}` && x.type === 'put');
    // Committed steps of progress, checked against the units their tenancy processed once the replay has every tenancy.
    const commits: { id: string; t: Tenancy | undefined; writer: string | undefined; from: number; to: number; rev: number; context: unknown }[] = [];
    const instanceOf = (proc: string | undefined) => (proc === undefined ? undefined : this.procInstance.get(proc));
    // Divisions (divisions.ts): residuals start at their `from`, divided splits end at their last end.
    const divisions = new DivisionFacts(this.changes, P);
    /** A committed progress as a position: nothing committed (null) is where the split's units start. */
    const at = (id: string, p: unknown): number => (typeof p === 'number' ? p : divisions.startOf(id));
    /** Committed progress of split `id` as `state` holds it (before the revision being replayed). */
    const committed = (id: string): number => {
      const kv = state.get(`${P}progress.${id}`);
      return at(id, kv ? (JSON.parse(kv.value) as ProgressRec).progress : undefined);
    };

    // Assignment records, as the store holds them: the 'assigned-once' property (assigned-once.ts).
    const assigned = new AssignedOnce(P);
    // The packed queue's checker (test/support/packed-invariants.ts), first in the replay: its layout is this revision's.
    const packed = packedChecker();
    // This auditor's checker of the one replay (test/support/history-replay.ts), revision by revision.
    // Keys whose value in the store is the hostile writer's (a fleet write replaces it): a claim read that value, not `state`'s.
    const foreignNow = new Set<string>();
    const properties = ({ rev, events: group }: Revision): void => {
      if (this.externals.has(rev)) {
        for (const c of group) {
          foreignNow.add(c.key);
          // What the fleet does next depends on these, so they are replayed (hostile.ts): a deletion and
          // the put that restores it, and a presence or lease key written again with no etcd lease (not
          // live, decision 0059). A rewrite of any other record stays out (checked against the fleet's last value).
          const ephemeral = c.key.startsWith(`${P}lease.`) || c.key.startsWith(`${P}worker.`);
          // A lease key the writer put is as much a leftover of the record it later deletes as the fleet's.
          if (c.type === 'put' && c.key.startsWith(`${P}lease.`) && c.id !== undefined) leasePutAt.set(c.id, rev);
          if (c.type === 'delete') {
            if (c.key.startsWith(`${P}split.`) && c.id !== undefined) splitDeletedAt.set(c.id, rev);
            // The store forgets what a deleted progress record held: those units may run again (lives.ts).
            if (c.key.startsWith(`${P}progress.`) && state.has(c.key) && c.id !== undefined) {
              lives.progressDeleted(c.id, rev);
              state.delete(c.key);
              lives.forget(c.id, committed(c.id));
            }
            state.delete(c.key);
          } else if (ephemeral || !state.has(c.key)) state.set(c.key, c.lease !== undefined ? { value: c.value!, lease: c.lease } : { value: c.value! });
        }
        return assigned.external(group);
      }
      assigned.before(group);
      stats.revisions++;
      const w = this.writers.get(rev);
      const writer = w?.proc;
      const fail = (property: string, message: string, context?: unknown) =>
        v.push({ property, message, revision: rev, context: { writer: w, ...(context as object) } });
      const leaderBefore = state.get(`${P}leader`);
      // A campaign creates the key and bumps the plan in one revision (decision 0084): the key it
      // creates guards the group's other writes.
      const leaderNow = leaderBefore ?? group.find((c) => c.key === `${P}leader` && c.type === 'put');
      const leaderProc = leaderNow?.lease ? this.leaseProc.get(leaderNow.lease) : undefined;
      const guarded = (what: string) => {
        if (!writer || writer !== leaderProc) fail('fenced-leader', `${what} written by ${writer ?? 'nobody'} while the leader key is held by ${leaderProc ?? 'nobody'}`);
      };
      // The splits whose keys this revision wrote (their ownership step is checked once it is applied), and those an operator retried.
      const stepped = new Set<string>();
      const retried = new Set<string>();

      for (const c of group) {
        const rest = c.key.slice(P.length);
        const dot = rest.indexOf('.');
        const kind = dot < 0 ? rest : rest.slice(0, dot);
        const id = dot < 0 ? '' : rest.slice(dot + 1);
        const before = state.get(c.key);
        switch (kind) {
          case 'leader':
            if (c.type === 'put') {
              if (before) fail('fenced-leader', 'leader key overwritten while present');
              const owner = c.lease ? this.leaseProc.get(c.lease) : undefined;
              if (!owner || owner !== writer) fail('fenced-leader', `leader key put by ${writer} on lease of ${owner}`);
              // The term's generation, bumped on the plan in the same revision (decision 0084), above every earlier term's.
              const generation = (JSON.parse(c.value!) as { generation: number }).generation;
              if (generation <= ledGeneration) fail('fenced-leader', `a term of generation ${generation} after one of ${ledGeneration}: two terms share a generation`);
              ledGeneration = Math.max(ledGeneration, generation);
              const bump = group.find((x) => x.key === `${P}plan` && x.type === 'put');
              const planned = bump ? (JSON.parse(bump.value!) as { generation?: unknown }).generation : undefined;
              if (planned !== generation) fail('fenced-leader', `a term of generation ${generation} won without the plan bumped to it in its revision (plan: ${String(planned)})`);
              stats.leaderTerms++;
            }
            break;
          case 'plan': {
            // An operator's retry clears a stalled verdict (and nothing else); every other plan write is the leader's.
            const prevPlan = before ? JSON.parse(before.value) as { verdict?: string } : undefined;
            const nextPlan = c.value !== undefined ? JSON.parse(c.value) as { verdict?: string } : undefined;
            if (writer === undefined && prevPlan?.verdict === 'stalled' && nextPlan && nextPlan.verdict === undefined) break;
            // A retry puts any other plan back as it was read, to fence a verdict decided before it (decision 0058).
            if (writer === undefined && before !== undefined && c.value === before.value && group.some((g) => g.key.startsWith(`${P}split.`))) break;
            guarded('plan');
            break;
          }
          case 'publish':
            // The leader's publication fence, put with every assignment write.
            guarded('publish');
            break;
          case 'summary': {
            // The leader's job summary for the tools (decision 0040): only the leader in office writes it, of its own
            // generation. An operator's retry deletes it with the records it returns to runnable (retryTxn).
            if (c.type === 'delete' && writer === undefined) break;
            guarded('summary');
            if (c.type === 'put') {
              const wrote = (JSON.parse(c.value!) as { generation?: unknown }).generation;
              const term = leaderBefore ? (JSON.parse(leaderBefore.value) as { generation?: unknown }).generation : undefined;
              if (wrote !== term) fail('fenced-leader', `summary of generation ${String(wrote)} written while the leader key names generation ${String(term)}`);
            }
            break;
          }
          case 'control':
            // The operators' record: written from outside the fleet, never by one of its processes.
            if (writer !== undefined) fail('layout', `control written by ${writer}: only operators write it`);
            break;
          case 'spec':
            // A residual's spec is its dividing owner's, in the division's revision (checked with its parent's progress).
            if (!divisions.isDivision(id, group)) guarded(`spec.${id}`);
            // A packed job's fold-back deletes it (packed-invariants.ts judges it); a keys job's never goes.
            if (c.type === 'delete' && packed.layout === 'keys') fail('monotone', `spec.${id} deleted`);
            else if (c.type === 'put' && before && !respec(id, group)) fail('monotone', `spec.${id} rewritten`);
            break;
          case 'queue':
          case 'folded':
            // A packed job's pages and folded bits (decision 0037): the leader's alone; the rest is packed-invariants.ts's.
            guarded(`${kind}.${id}`);
            break;
          case 'result':
            // A fold-back's kept results (decision 0069): the leader's, in a fold-back's revision; the rest
            // (what they hold, never rewritten or deleted) is packed-invariants.ts's.
            guarded(`${kind}.${id}`);
            if (!group.some((x) => x.key.startsWith(`${P}folded.`) && x.type === 'put')) fail('fold-back', `${c.key} written outside a fold-back`);
            break;
          case 'assign':
            guarded(`assign.${id}`);
            break;
          case 'divide':
            // The leader's division asks (decision 0063): its alone, like the assignment records.
            guarded(`divide.${id}`);
            break;
          case 'worker':
            if (c.type === 'put') {
              const owner = c.lease ? this.leaseProc.get(c.lease) : undefined;
              if (instanceOf(writer) !== id || owner !== writer) fail('presence', `worker.${id} put by ${writer} on lease of ${owner}`);
            }
            break;
          case 'lease':
            stepped.add(id);
            if (c.type === 'put') {
              leasePutAt.set(id, rev);
              const rec = JSON.parse(c.value!) as LeaseRec;
              const owner = c.lease ? this.leaseProc.get(c.lease) : undefined;
              if (!owner || owner !== writer || instanceOf(writer) !== rec.owner) {
                fail('one-owner-per-epoch', `lease.${id} (owner ${rec.owner}) put by ${writer} on a lease of ${owner}`);
              }
              const splitPut = group.find((x) => x.key === `${P}split.${id}` && x.type === 'put');
              if (!splitPut) fail('one-owner-per-epoch', `lease.${id} put without a claim of split.${id}`);
            }
            break;
          case 'progress': {
            stepped.add(id);
            if (c.type === 'delete') {
              // A keys job's never goes (ownership-transitions.ts); a packed job's fold-back is the leader's.
              if (packed.layout === 'packed') guarded(`fold-back of progress.${id}`);
              break;
            }
            const next = JSON.parse(c.value!) as ProgressRec;
            const prevRaw = before && (JSON.parse(before.value) as ProgressRec);
            const from = at(id, prevRaw?.progress);
            const endBefore = typeof (prevRaw as { end?: unknown } | undefined)?.end === 'number'
              ? (prevRaw as unknown as { end: number }).end
              : divisions.residuals.get(id)?.to ?? sizes.get(id);
            for (const m of divisions.progressProblems(id, prevRaw, next, group, endBefore)) fail('division', m, { prev: prevRaw, next });
            if (((next as { divisions?: number }).divisions ?? 0) > ((prevRaw as { divisions?: number } | undefined)?.divisions ?? 0)) stats.divisions++;
            // Progress and its epoch never going back: progressNeverRegresses, below. Only the owner of the split's
            // current tenancy commits, at its epoch, under its live lease key, never a claim: ownership-transitions.ts,
            // after this loop. Here: that the writer is the incarnation that claimed the epoch and holds the key.
            const splitBefore = state.get(`${P}split.${id}`);
            const sr = splitBefore && (JSON.parse(splitBefore.value) as SplitRec);
            if (!sr || sr.status !== 'runnable' || sr.owner === '') break;
            const t = tenancy(id, sr.epoch);
            if (!t || t.proc !== writer) {
              fail('one-owner-per-epoch', `progress.${id} written at epoch ${sr.epoch} by ${writer}, but that epoch was claimed by ${t?.proc}`, { next });
            }
            const lease = state.get(`${P}lease.${id}`);
            if (lease && (!lease.lease || this.leaseProc.get(lease.lease) !== writer)) {
              fail('one-owner-per-epoch', `progress.${id} written by ${writer}, but its lease key hangs off ${lease.lease ? `a lease of ${this.leaseProc.get(lease.lease)}` : 'no etcd lease'}`, { next });
            }
            // No loss: the committed step is covered by this tenancy's processing (checked after the replay).
            commits.push({ id, t, writer, from, to: at(id, next.progress), rev, context: { writer: w, prev: prevRaw, next } });
            lives.committed(id, at(id, next.progress));
            // The highest it committed: a writer's deletion of progress.{id} may send a tenancy back (an adoption resumes from nothing).
            if (t) t.last = Math.max(t.last, at(id, next.progress));
            break;
          }
          case 'split': {
            stepped.add(id);
            if (c.type === 'delete') {
              // Only a packed job's fold-back deletes a split record (packed-invariants.ts checks it is one; a keys
              // job's deletion is ownership-transitions.ts's).
              if (packed.layout === 'packed') guarded(`fold-back of split.${id}`);
              break;
            }
            const next = JSON.parse(c.value!) as SplitRec;
            if (!before) {
              if (!divisions.isDivision(id, group)) guarded(`seeding split.${id}`);
              // Created again after a deletion from outside named it (lives.ts): a new life, from its progress record if one is left.
              const reborn = tenancies.has(id) && lives.created(id, rev, packed.rerun.get(id));
              if (reborn) lives.forget(id, committed(id));
              else if (state.has(`${P}progress.${id}`)) fail('monotone', `split.${id} seeded over an existing progress.${id}`);
              if (!tenancies.has(id)) tenancies.set(id, []);
              break;
            }
            const prev = JSON.parse(before.value) as SplitRec;
            if (prev.status === 'quarantined' && writer === undefined) {
              // An operator's retry: runnable again, attempts reset, same epoch, nobody owning it (and none of the fleet's steps).
              retried.add(id);
              this.retries.set(id, (this.retries.get(id) ?? 0) + 1);
              if (next.status !== 'runnable' || next.attempts !== 0 || next.epoch !== prev.epoch || next.owner !== '') {
                fail('monotone', `split.${id} rewritten by an operator other than as a retry`, { prev, next });
              }
              break;
            }
            if (next.epoch === prev.epoch + 1) {
              // A claim: installs a tenancy.
              stats.claims++;
              if (next.owner === '' || next.status !== 'runnable') fail('one-owner-per-epoch', `split.${id} epoch bumped without an owner`, { next });
              if (instanceOf(writer) !== next.owner) fail('one-owner-per-epoch', `split.${id} claimed for ${next.owner} by ${writer}`);
              // A claim over another owner's live lease key: noSplitHeldTwice, below; without its own lease key,
              // or charging the wrong attempts: ownership-transitions.ts, after this loop.
              const ts = tenancies.get(id) ?? [];
              const last = ts[ts.length - 1];
              const takeover = prev.owner !== '';
              // A failed split waits out its backoff: no claim before its notBefore (seen here no earlier than written).
              const notBefore = (prev as SplitRec & { notBefore?: number }).notBefore;
              if (notBefore !== undefined && c.at < notBefore) {
                fail('backoff', `split.${id} claimed at t=${c.at}, before its notBefore ${notBefore}`, { prev, next });
              }
              if (takeover) {
                stats.takeovers++;
                if (last && !last.end) last.end = 'taken-over';
              }
              ts.push({ epoch: next.epoch, life: lives.life(id), at: c.at, proc: writer, revision: rev, resume: committed(id), last: committed(id), takeover });
              tenancies.set(id, ts);
            } else if (next.epoch === prev.epoch) {
              if (prev.owner !== '' && next.status === 'quarantined' && next.attempts === prev.attempts + 1
              && (tenancy(id, prev.epoch)?.proc !== writer || !state.has(`${P}lease.${id}`))) {
                // (Its own expired tenancy too: an incarnation whose leases expired takes its split over like anyone.)
                // A claim that would reach max_attempts parks the split instead (an expired takeover): its attempts
                // and the lease key it finds are ownership-transitions.ts's.
                const last = tenancies.get(id)?.at(-1);
                if (last && !last.end) last.end = 'quarantined';
              } else if (prev.owner !== '') {
                const t = tenancy(id, prev.epoch);
                if (!t || t.proc !== writer) {
                  fail('one-owner-per-epoch', `split.${id} written at epoch ${prev.epoch} by ${writer}, but that epoch was claimed by ${t?.proc}`, { prev, next });
                }
                // An owner change without a claim: splitFence, below. A write that keeps the owner, or one not
                // fenced by the owner's live lease key (deleted in the same transaction): ownership-transitions.ts.
                // Here: that key hangs off the writer's etcd lease.
                const lease = state.get(`${P}lease.${id}`);
                if (lease && (!lease.lease || this.leaseProc.get(lease.lease) !== writer)) {
                  fail('one-owner-per-epoch', `split.${id} released/ended by ${writer}, but its lease key hangs off ${lease.lease ? `a lease of ${this.leaseProc.get(lease.lease)}` : 'no etcd lease'}`, { prev, next });
                }
                // The simulated source completes with its final progress: both land in one transaction.
                if (next.status === 'completed' && !group.some((x) => x.key === `${P}progress.${id}` && x.type === 'put')) {
                  fail('terminal', `split.${id} completed without its final progress in the same transaction`, { prev, next });
                }
                if (t) {
                  if (next.status === 'completed') t.end = 'completed';
                  else if (next.status === 'quarantined') t.end = 'quarantined';
                  else if (next.owner === '' && next.attempts === prev.attempts) t.end = 'released';
                  else if (next.owner === '') t.end = 'failed';
                }
              }
              // A write of an ownerless split other than a claim: ownership-transitions.ts.
            }
            // An epoch moving other than by +1 or 0: splitFence, below.
            break;
          }
          default:
            fail('layout', `unexpected key ${c.key}`);
        }
      }

      const before = new Map([...stepped].map((id) => [id, recordsOf(state, P, id)]));
      for (const c of group) {
        if (c.type === 'put') state.set(c.key, c.lease !== undefined ? { value: c.value!, lease: c.lease } : { value: c.value! });
        else state.delete(c.key);
      }
      // Each split's ownership step (test/support/ownership-transitions.ts), an operator's retry but for the retry's own check above.
      for (const id of stepped) {
        if (retried.has(id)) continue;
        const { problems } = ownershipStep(stepOf(id, group, before.get(id)!, recordsOf(state, P, id), packed.layout === 'packed'));
        for (const p of problems) {
          // Over a record the hostile writer left (an owner it named, say), the claimer judged that record:
          // its charge is not this replay's to check against the fleet's last one.
          if (ATTEMPT_RULES.has(p.rule) && foreignNow.has(`${P}split.${id}`)) continue;
          // The lease key of a record the writer deleted: its holder drops it once the split is created again (decision 0071).
          if (p.rule === 'lease-record-disagree' && (leasePutAt.get(id) ?? Infinity) < (splitDeletedAt.get(id) ?? -Infinity)) continue;
          fail(PROPERTY[p.rule] ?? 'one-owner-per-epoch', p.detail);
        }
      }
      // Lane budget: whoever put a lease key here holds no more than its lanes, prefetch or not.
      const budget = writer !== undefined ? this.procLanes.get(writer) : undefined;
      if (budget !== undefined && group.some((c) => c.type === 'put' && c.key.startsWith(`${P}lease.`))) {
        const held: string[] = [];
        for (const [key, kv] of state) if (key.startsWith(`${P}lease.`) && kv.lease !== undefined && this.leaseProc.get(kv.lease) === writer) held.push(`${key.slice(P.length)}@${kv.lease}`);
        if (held.length > budget) fail('lane-budget', `${writer} holds ${held.length} splits (live lease keys on its leases: ${held.join(', ')}), over its maxInFlight of ${budget}`);
      }

      assigned.after(group, state, this.externals.size > 0, (message) => fail('assigned-once', message));
      for (const c of group) foreignNow.delete(c.key);
    };

    // The invariants every suite checks alike (test/support/invariants.ts), plugged into the same replay; they
    // see the fleet's own writes only (`changes`: the hostile writer's revisions skipped). Regressions and
    // epoch moves are 'monotone'.
    const shared = invariantCheckers();
    const own = (rev: number) => !this.externals.has(rev);
    // The packed checker forgets the fleet's assignment records the hostile writer replaced (packed-invariants.ts).
    const packedRevision = (r: Revision) => (own(r.rev) ? packed.revision(r) : packed.external(r));
    // The shared checkers see the hostile writer's lease keys too (a key written with no etcd lease ends the tenancy it held).
    const sharedRevision = (c: (typeof shared)[number]) => ({
      revision: (r: Revision) => (own(r.rev) ? c.revision(r) : c.revision({ ...r, events: r.events.filter((e) => e.kind === 'lease') })),
    });
    replayHistory(this.recorder.events, [{ revision: packedRevision }, { revision: properties }, ...shared.map(sharedRevision)]);
    v.push(...packedViolations(packed.problems, this.writers));
    stats.promotions = packed.promotions;
    stats.folds = packed.folds.size;
    const monotone = new Set(['progress-regressed', 'progress-epoch-regressed', 'epoch-moved']);
    for (const p of shared.flatMap((c) => c.problems)) {
      // A comparison across a split's new life, or its progress across the writer's deletion of it (lives.ts).
      if (lives.excuses(p)) continue;
      const revision = p.revisions[p.revisions.length - 1]!;
      v.push({ property: monotone.has(p.rule) ? 'monotone' : 'one-owner-per-epoch', message: p.detail, revision, context: { writer: this.writers.get(revision) } });
    }

    // Processing happens only inside a tenancy, by its claimer: units processed, by tenancy (split, life,
    // epoch; lives.ts), unit → processing procs. One by a process that claimed no such epoch counts where
    // that epoch's last claim before it was (as the one claim of an epoch when its split has one life).
    const processed = new Map<string, Map<number, string[]>>();
    for (const u of this.ledger.units) {
      const ts = tenancies.get(u.id);
      const t = tenancyAt(ts, u.epoch, u.instance, u.t, u.unit);
      // The units ledger's rule (test/support/units-ledger.ts): the claimers of that epoch, none of them this incarnation.
      const owned = t ? undefined : unitClaimProblem(u, (ts ?? []).filter((x) => x.epoch === u.epoch && x.proc !== undefined).map((x) => x.proc!));
      if (owned) v.push({ property: 'one-owner-per-epoch', message: owned.detail });
      const life = t?.life ?? (ts ?? []).filter((x) => x.epoch === u.epoch && x.at <= u.t).at(-1)?.life ?? 0;
      const k = tenancyKey(u.id, life, u.epoch);
      let m = processed.get(k);
      if (!m) processed.set(k, (m = new Map()));
      m.set(u.unit, [...(m.get(u.unit) ?? []), u.instance]);
    }
    // No loss: each committed step a → b is covered by units a+1..b its tenancy processed (units-ledger.ts).
    for (const c of commits) {
      const done = c.t && c.t.proc === c.writer ? processed.get(tenancyKey(c.id, c.t.life, c.t.epoch)) : undefined;
      const lost = missingUnits((u) => done?.get(u)?.includes(c.writer ?? '') ?? false, c.from + 1, c.to);
      if (lost.length > 0) {
        v.push({ property: 'no-loss', message: `progress.${c.id} committed unit ${lost[0]} at epoch ${c.t?.epoch ?? '?'} that its tenancy never processed`, revision: c.rev, context: c.context });
      }
    }

    // Bounded replay: replay.ts.
    // Units in each split's whole range (a residual's from its `from`); a later owner of a divided split stops at its end.
    const parts = divisions.sizes(sizes);
    const exits = this.ledger.events.filter((e) => e.ev === 'exit').map((e) => ({ ...e, life: tenancyAt(tenancies.get(e.id!), e.epoch!, e.instance, e.t)?.life ?? 0 }));
    v.push(...replayViolations(tenancies, processed, exits, parts.ranges, commitEvery, stats, this.foreignWrites(), parts.starts, lives.forgotten));
    for (const u of this.ledger.units) {
      const past = divisions.pastEnd(u.id, u.epoch, u.unit);
      if (past !== undefined) v.push({ property: 'division', message: past });
    }
    return { violations: v, stats };
  }

  /**
   * Per split id, the revisions written to its keys from outside the fleet: the hostile writer's, and an
   * operator's retries (a quarantine ends a tenancy without a takeover, so what it left uncommitted is
   * replayed once the split is retried).
   */
  private foreignWrites(): Map<string, number> {
    const n = new Map<string, number>(this.retries);
    for (const e of this.recorder.events) {
      if (this.externals.has(e.rev) && e.id !== undefined) n.set(e.id, (n.get(e.id) ?? 0) + 1);
    }
    return n;
  }

  /** Final-state checks once every live coordinator reported 'complete' and leases had time to lapse. */
  finalState(sizes: ReadonlyMap<string, number>): Violation[] {
    // A packed job's folded splits have no records left: their last ones are what the fold-back deleted. The
    // checker learns the hostile writer's deletions (a page's splits seeded into another page, say).
    const packed = packedChecker();
    replayHistory(this.recorder.events, [{ revision: (r) => (this.externals.has(r.rev) ? packed.external(r) : packed.revision(r)) }]);
    // A folded split whose progress record the writer deleted before its fold-back: what the store forgot (lives.ts).
    const forgot = new Set(this.recorder.events.filter((e) => this.externals.has(e.rev) && e.kind === 'progress' && e.type === 'delete' && e.id !== undefined).map((e) => e.id!));
    // Every part ends at its own size: a divided split at its last end, each residual at its `to`.
    const parts = new DivisionFacts(this.changes, this.prefix).sizes(sizes);
    return [...finalStateViolations(this.withEphemeral, this.prefix, parts.sizes, packed.folds, forgot), ...packedEndViolations(packed, sizes)];
  }
}
