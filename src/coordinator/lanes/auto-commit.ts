/**
 * AutoCommit: a lane's automatic commits (issue 50, item 4): the handler says
 * how far it got with `split.advance(progress)`, and the lane commits the
 * latest advance every `autoCommitMs`, as kafkajs's `autoCommitInterval` or
 * KCL's checkpointer do, so a handler needs no commit timer of its own.
 *
 * Invariants:
 * - At most one automatic commit in flight; each commits the latest advance
 *   not yet committed, never an older one.
 * - The lane's ending write (a release when the handler returns, or a
 *   drain) carries the latest advance, so a cooperative drain replays
 *   nothing; `complete()` without progress completes at the latest advance.
 * - A commit that fails for good ends the lane as any commit does (the
 *   timer stops with the lane); a retryable one is tried at the next tick.
 */
import type { Clock } from '../../clock.js';
import type { Json } from '../../protocol/records.js';

export interface Advance {
  readonly progress: Json;
  readonly done: number | undefined;
}

export class AutoCommit {
  private latest: Advance | undefined;
  /** The advance last committed (automatically or by the handler's own commit). */
  private committed: Advance | undefined;
  private inFlight = false;
  private cancel: (() => void) | undefined;
  private stopped = false;

  constructor(
    private readonly clock: Clock,
    private readonly intervalMs: number,
    private readonly commit: (a: Advance) => Promise<void>,
  ) {}

  /** The handler processed up to `progress`: committed at the next tick. */
  advance(a: Advance): void {
    if (this.stopped) return;
    this.latest = a;
    this.cancel ??= this.clock.setTimer(this.intervalMs, () => this.tick());
  }

  /** The handler committed `progress` itself: nothing older is committed after it. */
  noteCommitted(progress: Json): void {
    if (this.latest && this.latest.progress === progress) this.committed = this.latest;
  }

  /** The latest advance not yet committed (what the ending write carries), if any. */
  get uncommitted(): Advance | undefined {
    return this.latest !== undefined && this.latest !== this.committed ? this.latest : undefined;
  }

  /** The latest advance, committed or not. */
  get last(): Advance | undefined {
    return this.latest;
  }

  stop(): void {
    this.stopped = true;
    this.cancel?.();
    this.cancel = undefined;
  }

  private tick(): void {
    this.cancel = undefined;
    if (this.stopped) return;
    const a = this.uncommitted;
    if (!a || this.inFlight) {
      if (a) this.cancel = this.clock.setTimer(this.intervalMs, () => this.tick());
      return;
    }
    this.inFlight = true;
    void this.commit(a).then(
      () => {
        this.committed = a;
      },
      () => undefined, // a retryable failure: the next tick tries the latest again; a lost lane stops this
    ).finally(() => {
      this.inFlight = false;
      if (!this.stopped && this.uncommitted) this.cancel ??= this.clock.setTimer(this.intervalMs, () => this.tick());
    });
  }
}
