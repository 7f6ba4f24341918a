/**
 * KeyFollower: one key of the store, read once and then followed by a watch
 * of that key alone (etcd's `[key, key + "\0")`). What a worker observes is a
 * handful of these, so its cost follows what it holds, not the job's size.
 *
 * Invariants:
 * - Every change is applied at most once and never backwards: the follower
 *   remembers the highest revision it applied (a put's modRevision, a
 *   delete's revision, or the revision a read saw the key missing at), and
 *   ignores anything not newer. A backstop read racing a watch event cannot
 *   resurrect a deleted key or undo a newer value.
 * - A watch that stops for good (a compacted resume point, a broken stream) is
 *   replaced by a fresh read and watch, retried with jittered backoff (RETRY)
 *   while the store is unreachable; a non-retryable failure goes to `onFatal`.
 * - A watch may be started late (`followLater`): it resumes from the revision
 *   after the read, so every change since is still delivered, only later; a
 *   follower closed before then never opens one (decision 0090).
 *
 * I/O: one watch, and the reads of `reload`. No decisions are made here.
 */
import type { Clock } from '../../clock.js';
import { storeFailure, type SplitfleetError } from '../../errors.js';
import { exactKey, type KeyValue, type Store, type WatchHandle } from '../../store/store.js';
import { backoffDelay, retryRandom, type BackoffPolicy } from '../../protocol/backoff.js';

/** What the follower hands on: the key's new value (undefined: deleted or missing) at `revision`. */
export type KeyUpdate = { kv: KeyValue | undefined; revision: number };

/**
 * How a broken follower retries its read and watch while the store fails: full jitter
 * over 250 ms doubling to 4 s, drawn from a stream seeded by the key, so the thousands of
 * followers of a fleet do not re-read in lock-step after an etcd restart, and a replay
 * draws the same.
 */
const RETRY: BackoffPolicy = { base: 250, max: 4000, min: 25 };

export class KeyFollower {
  /** Highest revision applied (0: nothing yet). */
  private applied = 0;
  private handle: WatchHandle | undefined;
  private closed = false;
  private cancelRetry: (() => void) | undefined;
  private failures = 0;
  private random: (() => number) | undefined;
  /** A watch deferred by `followLater`: where it resumes, and its timer. */
  private deferred: { fromRevision: number; cancel: () => void } | undefined;

  constructor(
    private readonly store: Store,
    readonly key: string,
    private readonly clock: Clock,
    private readonly onUpdate: (update: KeyUpdate) => void,
    private readonly onFatal: (error: SplitfleetError) => void,
  ) {}

  /**
   * The revision up to which this key's changes are applied: what the key's
   * value is known as of. Only this key's watch and reads advance it; another
   * key's watch may deliver later revisions first (etcd orders events within
   * one watch only).
   */
  get appliedRevision(): number {
    return this.applied;
  }

  /** Applies a read of the key made at store revision `revision` (the initial read, or a backstop). */
  offer(kv: KeyValue | undefined, revision: number): void {
    if (this.closed) return;
    if (kv) {
      if (kv.modRevision <= this.applied) return;
      this.applied = kv.modRevision;
      this.onUpdate({ kv, revision: kv.modRevision });
    } else {
      // Missing at `revision`: a deletion we have not applied yet, or the key never existed.
      if (revision <= this.applied) return;
      const existed = this.applied > 0;
      this.applied = revision;
      if (existed) this.onUpdate({ kv: undefined, revision });
    }
  }

  /** Whether a watch is open or deferred: changes of the key reach `onUpdate` without another read. */
  get following(): boolean {
    return this.handle !== undefined || this.deferred !== undefined;
  }

  /**
   * Follows the key from `fromRevision`, but opens the watch only after `delayMs`: a key let go
   * sooner costs no watch at all (decision 0090). Nothing is missed meanwhile: the watch
   * resumes at `fromRevision` and replays what changed since.
   */
  followLater(fromRevision: number, delayMs: number): void {
    if (this.closed || this.handle || this.deferred) return;
    const cancel = this.clock.setTimer(delayMs, () => {
      this.deferred = undefined;
      this.follow(fromRevision);
    });
    this.deferred = { fromRevision, cancel };
  }

  /** A watch is deferred (`followLater`) and not open yet: what the key holds now may be unseen. */
  get quiet(): boolean {
    return this.deferred !== undefined;
  }

  /** Opens a deferred watch now (someone waits on this key's next change). */
  followNow(): void {
    const d = this.deferred;
    if (d) this.follow(d.fromRevision);
  }

  /** Follows the key from `fromRevision` (one past the read that `offer` was given). */
  follow(fromRevision: number): void {
    if (this.deferred) {
      this.deferred.cancel();
      this.deferred = undefined;
    }
    if (this.closed || this.handle) return;
    const handle = this.store.watch(this.key, {
      ...exactKey(this.key),
      fromRevision,
      onEvent: (e) => {
        if (this.closed || this.handle !== handle) return;
        if (e.modRevision <= this.applied) return;
        this.applied = e.modRevision;
        if (e.type === 'put') {
          const kv: KeyValue = { key: e.key, value: e.value ?? '', modRevision: e.modRevision, createRevision: e.createRevision ?? e.modRevision };
          if (e.lease !== undefined) kv.lease = e.lease;
          this.onUpdate({ kv, revision: e.modRevision });
        } else {
          this.onUpdate({ kv: undefined, revision: e.modRevision });
        }
      },
      onError: (e) => {
        if (this.closed || this.handle !== handle) return;
        this.handle = undefined;
        if (!e.retryable) this.onFatal(e);
        else this.reload();
      },
    });
    this.handle = handle;
    handle.ready.catch(() => undefined);
  }

  /** Reads the key afresh and follows it from there (after a watch broke for good). */
  reload(): void {
    if (this.closed || this.cancelRetry) return;
    void (async () => {
      try {
        const res = await this.store.txn({ compares: [], success: [{ op: 'get', key: this.key }] });
        if (this.closed) return;
        this.failures = 0;
        this.offer(res.reads[0], res.revision);
        this.follow(res.revision + 1);
      } catch (e) {
        if (this.closed) return;
        const err = storeFailure(e);
        if (!err.retryable) {
          this.onFatal(err);
          return;
        }
        this.random ??= retryRandom(this.key);
        this.cancelRetry = this.clock.setTimer(backoffDelay(this.failures++, RETRY, this.random), () => {
          this.cancelRetry = undefined;
          this.reload();
        });
      }
    })();
  }

  async close(): Promise<void> {
    this.closed = true;
    this.cancelRetry?.();
    this.deferred?.cancel();
    this.deferred = undefined;
    const h = this.handle;
    this.handle = undefined;
    await h?.close();
  }
}
