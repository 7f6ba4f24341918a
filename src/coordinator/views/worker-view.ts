/**
 * WorkerView: what one instance observes of its job, and nothing more
 * (substrate.md, "Who observes what"): the `plan` and `leader` keys, its own
 * presence key and `assign.{instance}` record, and the `split.{id}` and
 * `lease.{id}` keys (plus the immutable `spec.{id}`, read once) of the splits
 * it is concerned with: named for, holding, or claiming. Each key is one
 * `KeyFollower`; `concern(ids)` re-targets the split keys as the assignment
 * and the lanes change. Memory, start-up reads and watch traffic follow the
 * instance's lane budget, never the job's split count or other members'
 * commits (committed progress lives in `progress.{id}`, which nobody watches).
 *
 * Invariants:
 * - Every record is decoded strictly. What one that cannot be read costs
 *   follows what it concerns (issue 11's blast radius): the job's `plan` or
 *   `leader` → `onFatal`, and the view stops; this instance's presence or
 *   assignment record → treated as absent (no record: hold everything); a
 *   split's record, lease key or spec → that split is unobserved (`problem`
 *   set) until a readable value replaces it. Each is reported through
 *   `onUnreadable`.
 * - A split is observed once its first read has landed (`loaded`); until
 *   then the worker treats it as unobserved and claims nothing for it.
 * - `refresh()` re-reads every followed key in a few transactions (the
 *   backstop): a missed event costs latency, never correctness.
 * - A split that reads free to claim (runnable, no owner, no lease key) is
 *   watched only once it has been followed for QUIET_MS (decision 0090): the
 *   claim and completion of a short split are this instance's own writes
 *   (`ownClaimWrite`, `ownTerminalWrite`), and the fence, not the watch,
 *   keeps it safe. Its watches resume from the read, so a split followed
 *   longer misses nothing; one whose next change someone waits on (a lost
 *   claim, a write of unknown outcome) is watched at once (`followNow`).
 *
 * I/O: reads and per-key watches. No decisions are made here.
 */
import { wallTime, type Clock } from '../../clock.js';
import { isSplitfleetError, SplitfleetError } from '../../errors.js';
import { hasLease, leaselessProblem } from '../../protocol/ephemeral.js';
import { assignKey, divideKey, leaderKey, leaseKey, planKey, specKey, splitKey, workerKey } from '../../protocol/keys.js';
import {
  decodeRecord, type AssignRecord, type DivideRecord, type LeaderRecord, type LeaseRecord, type PlanRecord, type RecordKind, type RecordTypes,
  type SpecRecord, type SplitRecord, type WorkerRecord,
} from '../../protocol/records.js';
import { op, type KeyValue, type Op, type Store } from '../../store/store.js';
import { ChangeBatcher } from './batch.js';
import { KeyFollower, type KeyUpdate } from './follow.js';
import type { Seen } from './seen.js';

/** What the worker knows of one split it is concerned with. */
export interface ObservedSplitKeys {
  /** The first read of its keys has landed. */
  loaded: boolean;
  /** Keys of this split that cannot be read now, with the problem: the split is not to be touched. */
  problems: Map<string, string>;
  record: Seen<SplitRecord> | undefined;
  lease: Seen<LeaseRecord> | undefined;
  spec: SpecRecord | undefined;
}

/** What changed: the kinds and ids (split id or instance) of one batch of updates. */
export interface WorkerViewChange {
  kinds: Set<string>;
  ids: Set<string>;
}

/** Keys read per transaction by `refresh` and `concern` (three per split: split, lease, spec). */
const READ_CHUNK = 96;

/**
 * How long a split that read free to claim goes unwatched (decision 0090): a short split is
 * claimed, run, completed and let go within it, and never costs a watch and its cancel. Its
 * watch then resumes from the read, so a longer one misses nothing.
 */
export const QUIET_MS = 1000;

/** Free to claim as read: a runnable record with no owner, no lease key, a spec, and nothing unreadable. */
function readsFree(obs: ObservedSplitKeys): boolean {
  const rec = obs.record?.rec;
  return rec !== undefined && rec.status === 'runnable' && rec.owner === '' && obs.lease === undefined && obs.spec !== undefined && obs.problems.size === 0;
}

interface Followed {
  obs: ObservedSplitKeys;
  /** Its first read is in flight (a failed one is tried again by the next `concern` or `refresh`). */
  loading: boolean;
  split: KeyFollower;
  lease: KeyFollower;
  spec: KeyFollower | undefined;
}

export class WorkerView {
  plan: Seen<PlanRecord> | undefined;
  /**
   * A plan record was seen: its absence now means the job was deleted (`splitfleet delete
   * --force`), which must stop this process rather than start the job over from nothing.
   */
  planSeen = false;
  leader: Seen<LeaderRecord> | undefined;
  /** This instance's presence key, as the store holds it (ours, or another run's). */
  self: Seen<WorkerRecord> | undefined;
  assign: Seen<AssignRecord> | undefined;
  /** Our `divide.{instance}` record: the divisions the leader asks of our running splits. */
  divide: Seen<DivideRecord> | undefined;
  /** Highest store revision this view has seen (reads and events). */
  revision = 0;
  /** Watch updates applied, for the metrics (what this instance pays in watch traffic). */
  updates = 0;

  private readonly job: KeyFollower[];
  private readonly leaderFollower: KeyFollower;
  private readonly splits = new Map<string, Followed>();
  private readonly batcher = new ChangeBatcher<WorkerViewChange>(
    (into, more) => {
      for (const k of more.kinds) into.kinds.add(k);
      for (const id of more.ids) into.ids.add(id);
    },
    () => this.failed || this.closed,
  );
  private failed = false;
  private closed = false;
  /** Splits whose next change someone waits on: their watches open at once (`concern`'s `urgent`). */
  private urgent: ReadonlySet<string> = new Set();
  /** Splits brought up to date by `followNow`: read again, then watched at once. */
  private readonly woken = new Set<string>();

  constructor(
    private readonly store: Store,
    readonly prefix: string,
    readonly fp: string,
    readonly instance: string,
    private readonly onFatal: (error: SplitfleetError) => void,
    private readonly clock: Clock,
    /** A record that cannot be read, and what it costs (see the invariants); reported on every such value. */
    private readonly onUnreadable: (key: string, error: SplitfleetError) => void = () => undefined,
  ) {
    this.job = [
      this.follower(planKey(prefix), (u) => {
        this.plan = this.seen('plan', u, 'fatal');
        if (this.plan) this.planSeen = true;
        this.notify('plan');
      }),
      (this.leaderFollower = this.follower(leaderKey(prefix), (u) => {
        this.leader = this.seen('leader', u, 'fatal');
        this.notify('leader');
      })),
      this.follower(workerKey(prefix, instance), (u) => {
        this.self = this.seen('worker', u, 'absent');
        this.notify('worker', instance);
      }),
      this.follower(assignKey(prefix, instance), (u) => {
        this.assign = this.seen('assign', u, 'absent');
        this.notify('assign', instance);
      }),
      // The divisions the leader asks of our running splits (decision 0063); unreadable: none asked.
      this.follower(divideKey(prefix, instance), (u) => {
        this.divide = this.seen('divide', u, 'absent');
        this.notify('divide', instance);
      }),
    ];
  }

  /**
   * The revision `leader` is known as of (its key's own watch and reads): a
   * leader judges its term by this, never by `revision`, which the plan
   * key's watch can carry past a leader key put not yet delivered.
   */
  get leaderRevision(): number {
    return this.leaderFollower.appliedRevision;
  }

  /** Subscribes to batched changes (delivered on a microtask after the updates). */
  onChange(listener: (change: WorkerViewChange) => void): void {
    this.batcher.subscribe(listener);
  }

  /** Reads the job-level keys in one transaction and follows them; resolves once read. */
  async start(): Promise<void> {
    const res = await this.store.txn({ compares: [], success: this.job.map((f) => op.get(f.key)) });
    this.saw(res.revision);
    this.job.forEach((f, i) => f.offer(res.reads[i], res.revision));
    if (this.failed) return;
    for (const f of this.job) f.follow(res.revision + 1);
  }

  /** The splits this view follows, as observed (missing: not followed, or not read yet). */
  split(id: string): ObservedSplitKeys | undefined {
    const f = this.splits.get(id);
    return f?.obs.loaded ? f.obs : undefined;
  }

  /** Split ids followed now. */
  get followed(): IterableIterator<string> {
    return this.splits.keys();
  }

  /**
   * Follows exactly `ids`: new ones are read (a few transactions) and then
   * watched from that read; ones no longer wanted are let go. Cheap when
   * nothing changed.
   */
  async concern(ids: ReadonlySet<string>, urgent: ReadonlySet<string> = new Set()): Promise<void> {
    if (this.failed || this.closed) return;
    this.urgent = urgent;
    for (const id of urgent) this.followNow(id);
    const added: string[] = [];
    for (const id of ids) {
      const known = this.splits.get(id);
      if (known) {
        // Its first read failed (the store was away): read it again, or it stays unobserved.
        if (!known.obs.loaded && !known.loading) added.push(id);
        continue;
      }
      const obs: ObservedSplitKeys = { loaded: false, problems: new Map(), record: undefined, lease: undefined, spec: undefined };
      const followed: Followed = {
        obs,
        split: this.follower(splitKey(this.prefix, id), (u) => {
          const before = obs.record;
          obs.record = this.seen('split', u, obs.problems);
          // First sight of this revision: what a backoff's wait counts from on our clock (a re-read keeps it).
          if (obs.record) obs.record.seenAt = before?.modRevision === obs.record.modRevision ? before.seenAt : wallTime(this.clock);
          this.notify('split', id);
        }),
        lease: this.follower(leaseKey(this.prefix, id), (u) => {
          obs.lease = this.seen('lease', u, obs.problems);
          this.notify('lease', id);
        }),
        spec: undefined,
        loading: false,
      };
      this.splits.set(id, followed);
      added.push(id);
    }
    const dropped: Followed[] = [];
    for (const [id, f] of this.splits) {
      if (ids.has(id)) continue;
      this.splits.delete(id);
      this.woken.delete(id);
      dropped.push(f);
    }
    // Let go in the background: a cancellation waits for etcd's answer on the watch stream,
    // which queues behind other watches' set-up, and the next claim must not wait for it.
    void Promise.all(dropped.flatMap((f) => [f.split.close(), f.lease.close(), f.spec?.close()])).catch(() => undefined);
    if (added.length > 0) await this.load(added);
  }

  /** Reads the keys of `ids` (split, lease, spec), then follows split and lease (and a missing spec). */
  private async load(ids: string[]): Promise<void> {
    for (let i = 0; i < ids.length; i += READ_CHUNK / 3) {
      const chunk = ids.slice(i, i + READ_CHUNK / 3).filter((id) => this.splits.has(id));
      if (chunk.length === 0) continue;
      const reads = chunk.flatMap((id) => [op.get(splitKey(this.prefix, id)), op.get(leaseKey(this.prefix, id)), op.get(specKey(this.prefix, id))]);
      const loading = chunk.map((id) => this.splits.get(id)!);
      for (const f of loading) f.loading = true;
      let res;
      try {
        res = await this.store.txn({ compares: [], success: reads });
      } finally {
        for (const f of loading) f.loading = false;
      }
      if (this.failed || this.closed) return;
      this.saw(res.revision);
      chunk.forEach((id, j) => {
        const f = this.splits.get(id);
        if (!f) return; // let go while the read was in flight
        f.split.offer(res.reads[3 * j], res.revision);
        f.lease.offer(res.reads[3 * j + 1], res.revision);
        this.offerSpec(id, f, res.reads[3 * j + 2], res.revision);
        f.obs.loaded = true;
        // A split that reads free to claim is followed only if it outlives QUIET_MS (decision 0090):
        // its claim and its completion are our own writes, and a short split is let go before then.
        const woken = this.woken.delete(id);
        if (woken || this.urgent.has(id) || !readsFree(f.obs)) {
          f.split.follow(res.revision + 1);
          f.lease.follow(res.revision + 1);
        } else {
          f.split.followLater(res.revision + 1, QUIET_MS);
          f.lease.followLater(res.revision + 1, QUIET_MS);
        }
        this.notify('split', id);
      });
    }
  }

  /** The spec is immutable: read once; followed only while it is missing (seeding still in flight). */
  private offerSpec(id: string, f: Followed, kv: KeyValue | undefined, revision: number): void {
    if (kv) {
      f.obs.spec = this.decode('spec', kv, f.obs.problems);
      if (f.obs.spec) return;
    }
    if (f.spec) return;
    // Missing (seeding in flight) or unreadable: follow it until a readable spec appears.
    f.spec = this.follower(specKey(this.prefix, id), (u) => {
      if (!u.kv) return;
      f.obs.spec = this.decode('spec', u.kv, f.obs.problems);
      this.notify('spec', id);
    });
    f.spec.follow(revision + 1);
  }

  /**
   * This instance's own write to a followed split landed at `revision`: the split record it
   * put (encoded) and its lease key deleted (a lane's terminal write: completion, release,
   * failure). Applied as a read at that revision would be, so the watch's own event for it is
   * dropped as not newer: the worker decides on it at once instead of one watch hop later.
   */
  ownTerminalWrite(id: string, splitValue: string | undefined, revision: number): void {
    const f = this.splits.get(id);
    if (!f?.obs.loaded || this.failed || this.closed) return;
    this.saw(revision);
    if (splitValue !== undefined) {
      f.split.offer({ key: splitKey(this.prefix, id), value: splitValue, modRevision: revision, createRevision: revision }, revision);
    }
    f.lease.offer(undefined, revision);
  }

  /**
   * This instance's claim of a followed split landed at `revision`: its puts (the split record
   * and the lease key) applied as a read at that revision would be. A split followed quietly
   * (decision 0090) would otherwise show the record as the claim found it for as long as the
   * quiet lasts; one followed by watches drops their echo of it as not newer.
   */
  ownClaimWrite(id: string, ops: readonly Op[], revision: number): void {
    const f = this.splits.get(id);
    if (!f?.obs.loaded || this.failed || this.closed) return;
    this.saw(revision);
    for (const o of ops) {
      if (o.op !== 'put') continue;
      const follower = o.key === f.split.key ? f.split : o.key === f.lease.key ? f.lease : undefined;
      const kv: KeyValue = { key: o.key, value: o.value, modRevision: revision, createRevision: revision };
      if (o.lease !== undefined) kv.lease = o.lease;
      follower?.offer(kv, revision);
    }
  }

  /**
   * Brings a quietly followed split up to date now: a claim of it lost, or the outcome of our
   * write to it is unknown, and what counts next is someone else's write, which only a watch or
   * a read shows. It is read again (unobserved until the read lands, so nothing is decided on
   * what the quiet may have hidden) and then watched from that read. A split already watched
   * is left as it is.
   */
  followNow(id: string): void {
    const f = this.splits.get(id);
    if (!f || !(f.split.quiet || f.lease.quiet) || this.failed || this.closed) return;
    f.obs.loaded = false;
    this.woken.add(id);
    if (!f.loading) void this.load([id]).catch(() => undefined); // a failed read: the next concern or refresh reads it
  }

  /** Re-reads the split and lease keys of `ids` now (a question the watches may answer late). */
  async reread(ids: readonly string[]): Promise<void> {
    const chunk = ids.filter((id) => this.splits.get(id)?.obs.loaded);
    if (chunk.length === 0 || this.failed || this.closed) return;
    const res = await this.store.txn({ compares: [], success: chunk.flatMap((id) => [op.get(splitKey(this.prefix, id)), op.get(leaseKey(this.prefix, id))]) });
    if (this.failed || this.closed) return;
    this.saw(res.revision);
    chunk.forEach((id, j) => {
      const f = this.splits.get(id);
      if (!f) return;
      f.split.offer(res.reads[2 * j], res.revision);
      f.lease.offer(res.reads[2 * j + 1], res.revision);
    });
  }

  /**
   * The backstop: re-reads every followed key, treating a missing one as
   * deleted. A failure rejects (the caller logs it and tries next interval).
   */
  async refresh(): Promise<void> {
    if (this.failed || this.closed) return;
    const jobRes = await this.store.txn({ compares: [], success: this.job.map((f) => op.get(f.key)) });
    this.saw(jobRes.revision);
    this.job.forEach((f, i) => f.offer(jobRes.reads[i], jobRes.revision));
    // A split whose first read failed is read again, as a first read (then followed).
    const unloaded = [...this.splits.entries()].filter(([, f]) => !f.obs.loaded && !f.loading).map(([id]) => id);
    if (unloaded.length > 0) await this.load(unloaded);
    const loaded = [...this.splits.entries()].filter(([, f]) => f.obs.loaded);
    for (let i = 0; i < loaded.length; i += READ_CHUNK / 3) {
      const chunk = loaded.slice(i, i + READ_CHUNK / 3);
      const res = await this.store.txn({
        compares: [],
        success: chunk.flatMap(([id]) => [op.get(splitKey(this.prefix, id)), op.get(leaseKey(this.prefix, id)), op.get(specKey(this.prefix, id))]),
      });
      if (this.failed || this.closed) return;
      this.saw(res.revision);
      chunk.forEach(([id, f], j) => {
        if (this.splits.get(id) !== f) return;
        f.split.offer(res.reads[3 * j], res.revision);
        f.lease.offer(res.reads[3 * j + 1], res.revision);
        if (!f.obs.spec) this.offerSpec(id, f, res.reads[3 * j + 2], res.revision);
      });
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    this.batcher.clear();
    const all = [...this.job, ...[...this.splits.values()].flatMap((f) => [f.split, f.lease, ...(f.spec ? [f.spec] : [])])];
    this.splits.clear();
    await Promise.all(all.map((f) => f.close()));
  }

  private follower(key: string, apply: (u: KeyUpdate) => void): KeyFollower {
    return new KeyFollower(this.store, key, this.clock, (u) => {
      if (this.failed || this.closed) return;
      this.saw(u.revision);
      this.updates++;
      apply(u);
    }, (e) => this.fail(e));
  }

  /**
   * Decodes an update. `onError` says what an unreadable value costs: 'fatal'
   * (the job's records), 'absent' (this instance's: as if missing), or a
   * split's problem map (the split is set aside until the key reads again).
   */
  private seen<K extends RecordKind>(kind: K, u: KeyUpdate, onError: 'fatal' | 'absent' | Map<string, string>): Seen<RecordTypes[K]> | undefined {
    if (!u.kv) {
      if (onError instanceof Map) onError.delete(kind);
      return undefined;
    }
    // A presence or lease key with no etcd lease is not live (protocol/ephemeral.ts): as if absent,
    // so the split it names is claimable (the claim writes over it) and our own presence is put back.
    if ((kind === 'lease' || kind === 'worker') && !hasLease(u.kv)) {
      if (onError instanceof Map) onError.delete(kind);
      this.onUnreadable(u.kv.key, new SplitfleetError('INVALID_RECORD', leaselessProblem(u.kv.key, kind)));
      return undefined;
    }
    const rec = this.decode(kind, u.kv, onError);
    if (rec === undefined) return undefined;
    const out: Seen<RecordTypes[K]> = { rec, modRevision: u.kv.modRevision };
    if (hasLease(u.kv)) out.lease = u.kv.lease;
    return out;
  }

  private decode<K extends RecordKind>(kind: K, kv: KeyValue, onError: 'fatal' | 'absent' | Map<string, string>): RecordTypes[K] | undefined {
    try {
      const rec = decodeRecord(kind, kv.key, kv.value, this.fp);
      if (onError instanceof Map) onError.delete(kind);
      return rec;
    } catch (e) {
      const err = isSplitfleetError(e) ? e : new SplitfleetError('INVALID_RECORD', String(e), { cause: e });
      if (onError === 'fatal') {
        this.fail(err);
        return undefined;
      }
      if (onError instanceof Map) onError.set(kind, err.message);
      this.onUnreadable(kv.key, err);
      return undefined;
    }
  }

  private saw(revision: number): void {
    if (revision > this.revision) this.revision = revision;
  }

  private notify(kind: string, id?: string): void {
    this.batcher.add({ kinds: new Set([kind]), ids: new Set(id === undefined ? [] : [id]) });
  }

  private fail(error: SplitfleetError): void {
    if (this.failed) return;
    this.failed = true;
    this.onFatal(error);
  }
}
