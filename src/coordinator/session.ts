/**
 * Session: this process's one etcd lease and its presence key.
 *
 * Invariants:
 * - The lease is renewed every leaseDuration / 3 by this process's own timer
 *   (not etcd3's keep-alive), so a wedged event loop stops renewing and the
 *   fleet sees the process as gone.
 * - Loss is declared within one renewal interval: at once when a renewal
 *   says the lease is gone, and, when the store cannot be reached, as soon as
 *   the time since the last confirmed renewal plus one interval reaches the
 *   lease duration (past that point the lease may have expired unseen).
 *   Declared loss is final for this session; the coordinator opens another.
 * - `worker.{instance}` is created under the lease. An existing presence key
 *   of another run is taken over at once (a restart after a crash pays
 *   nothing); a process whose key then carries another run's nonce is a
 *   live duplicate and stops (DUPLICATE_INSTANCE).
 * - Every store call is bounded by the coordinator's one decorator
 *   (InstrumentedStore, opTimeoutMs on the injected clock); a renewal gets a
 *   deadline of its own, never past one renewal interval (`withCallOptions`),
 *   so the loss check runs on time even when opTimeoutMs > leaseDuration / 3.
 */
import { randomUUID } from 'node:crypto';
import type { Clock } from '../clock.js';
import type { Config } from '../config.js';
import { isSplitfleetError, SplitfleetError } from '../errors.js';
import { hasLease } from '../protocol/ephemeral.js';
import { workerKey } from '../protocol/keys.js';
import { decodeRecord, encodeRecord, fingerprintHash, SCHEMA_VERSION } from '../protocol/records.js';
import { withCallOptions } from '../store/instrumented.js';
import type { Store } from '../store/store.js';

export type SessionEnd = { kind: 'lost'; reason: string } | { kind: 'closed' };

/** A lease granted before its session opened, and when its grant was sent (the server's clock started then at the latest). */
export interface GrantedLease {
  leaseId: string;
  sentAt: number;
}

export class Session {
  readonly nonce = randomUUID();
  /** Revision at which this session last created its presence key (0 before). */
  presenceRevision = 0;
  private lastRenewedAt: number;
  private cancelTimer: (() => void) | undefined;
  private ended: SessionEnd | undefined;
  private readonly endListeners: ((end: SessionEnd) => void)[] = [];
  /** Told of every renewal's outcome (undefined: confirmed), for the coordinator's health. */
  private renewalListener: ((error: unknown) => void) | undefined;

  private constructor(
    private readonly store: Store,
    private readonly config: Config,
    private readonly clock: Clock,
    readonly leaseId: string,
    readonly prefix: string,
    grantSentAt: number,
  ) {
    this.lastRenewedAt = grantSentAt;
  }

  /** Grants a session's lease (`open` takes it, so a caller may grant while it reads the job). */
  static async grant(store: Store, config: Config, clock: Clock): Promise<GrantedLease> {
    const sentAt = clock.now();
    return { leaseId: await store.grantLease(Math.round(config.leaseDurationMs / 1000)), sentAt };
  }

  /**
   * Creates the presence key under `granted` (granted here when absent),
   * taking over a previous run's key at once.
   */
  static async open(store: Store, config: Config, clock: Clock, prefix: string, stopping: () => boolean = () => false, granted?: GrantedLease): Promise<Session> {
    const { leaseId, sentAt } = granted ?? (await Session.grant(store, config, clock));
    const session = new Session(store, config, clock, leaseId, prefix, sentAt);
    try {
      await session.createPresence(stopping);
    } catch (e) {
      await store.revokeLease(leaseId).catch(() => undefined);
      // Our fresh lease expired before the presence key was written (the process or the store
      // stalled past the lease; found by the step nemesis): a new session may well open, so the
      // start-up and rejoin loops retry it rather than failing the process.
      if (isSplitfleetError(e, 'LEASE_LOST')) {
        throw new SplitfleetError('LEASE_LOST', `the new session's lease expired before its presence key was written: ${e.message}`, { retryable: true, cause: e });
      }
      throw e;
    }
    session.schedule();
    return session;
  }

  get presenceKey(): string {
    return workerKey(this.prefix, this.config.instance);
  }

  /** The presence record's encoding (used to recreate it if deleted by hand). */
  presenceValue(): string {
    return encodeRecord('worker', {
      v: SCHEMA_VERSION,
      fp: fingerprintHash(this.config.fingerprint),
      instance: this.config.instance,
      maxInFlight: this.config.maxInFlight,
      // Absent at 0: the record a build without prefetch writes, byte for byte.
      ...(this.config.prefetch > 0 ? { prefetch: this.config.prefetch } : {}),
      nonce: this.nonce,
    });
  }

  /**
   * Writes the presence key under this session's lease. A key left by an
   * earlier run of this instance (a restart after a crash or an OOM kill) is
   * taken over at once, guarded by its revision: the restart pays nothing,
   * and its splits are reclaimed from the old run's still-live lease keys. If
   * that earlier run is in fact alive (two processes with one id), it sees
   * its key carry another nonce and stops with DUPLICATE_INSTANCE; the fence
   * keeps both safe meanwhile (decision 0003).
   */
  private async createPresence(stopping: () => boolean): Promise<void> {
    const key = this.presenceKey;
    for (;;) {
      const res = await this.store.createIfAbsent(key, this.presenceValue(), this.leaseId);
      if (res.won) {
        this.presenceRevision = res.revision;
        return;
      }
      const existing = res.reads[0];
      if (!existing) continue; // gone between the two branches: create again
      // A coordinator that is stopping takes nothing over: the key may be its successor's.
      if (stopping()) throw new SplitfleetError('CLOSED', `not taking over ${key}: this coordinator is stopping`);
      const took = await this.store.compareAndSwap(key, existing.modRevision, this.presenceValue(), this.leaseId);
      if (took.won) {
        this.presenceRevision = took.revision;
        return;
      }
      // Rewritten meanwhile (another run starting at the same moment): look again.
    }
  }

  /**
   * Recreates the presence key if it vanished while the lease lives (deleted
   * by hand), or rewrites it if what is there cannot be read (written by
   * hand or by a script), or carries no etcd lease (put by hand, restored:
   * not live): until then the leader does not count this instance as a
   * member. A readable, leased key of another run is left alone: that is a
   * duplicate, which the coordinator's presence check reports.
   */
  async ensurePresence(): Promise<void> {
    if (this.ended) return;
    const res = await this.store.createIfAbsent(this.presenceKey, this.presenceValue(), this.leaseId);
    if (res.won) {
      this.presenceRevision = res.revision;
      return;
    }
    const existing = res.reads[0];
    if (!existing) return;
    // On no etcd lease (put by hand, restored): not live, so no other run's, whatever it says (protocol/ephemeral.ts).
    let replace = !hasLease(existing);
    try {
      decodeRecord('worker', existing.key, existing.value, fingerprintHash(this.config.fingerprint));
    } catch {
      replace = true;
    }
    if (replace) {
      const took = await this.store.compareAndSwap(this.presenceKey, existing.modRevision, this.presenceValue(), this.leaseId);
      if (took.won) this.presenceRevision = took.revision;
    }
  }

  /**
   * Rewrites our presence record after the lane budget changed (`Coordinator.setLaneBudget`),
   * guarded by the revision we last wrote: a key that moved meanwhile (another run, deleted)
   * is left to `ensurePresence` and the presence check. True when it landed.
   */
  async rewritePresence(): Promise<boolean> {
    if (this.ended) return false;
    const res = await this.store.compareAndSwap(this.presenceKey, this.presenceRevision, this.presenceValue(), this.leaseId);
    if (res.won) this.presenceRevision = res.revision;
    return res.won;
  }

  /** Called when the end (loss or close) happens; at most once. */
  onEnd(listener: (end: SessionEnd) => void): void {
    if (this.ended) listener(this.ended);
    else this.endListeners.push(listener);
  }

  /** Called after every renewal: with undefined when it was confirmed, else with its error. */
  onRenewal(listener: (error: unknown) => void): void {
    this.renewalListener = listener;
  }

  get alive(): boolean {
    return this.ended === undefined;
  }

  /** Ends the session: deletes presence (by revoking the lease, which drops every key on it). */
  async close(): Promise<void> {
    if (this.ended) return;
    this.end({ kind: 'closed' });
    await this.store.revokeLease(this.leaseId).catch(
      () => undefined,
    );
  }

  /** Declares the lease lost (e.g. a fenced write found our lease key gone). */
  lose(reason: string): void {
    this.end({ kind: 'lost', reason });
  }

  private get interval(): number {
    return Math.max(1, Math.floor(this.config.leaseDurationMs / 3));
  }

  private schedule(): void {
    if (this.ended) return;
    this.cancelTimer = this.clock.setTimer(this.interval, () => void this.renew());
  }

  private async renew(): Promise<void> {
    if (this.ended) return;
    const started = this.clock.now();
    try {
      // Its own deadline, within one renewal interval (opTimeoutMs may be longer): a renewal that
      // hangs must still come back in time for the loss check below to run on schedule.
      await withCallOptions(this.store, { label: 'renewing the session lease', deadlineMs: Math.min(this.config.opTimeoutMs, this.interval) }, this.clock)
        .keepAliveOnce(this.leaseId);
      // Count from when the renewal was sent: the server's clock started then at the latest.
      this.lastRenewedAt = started;
      this.renewalListener?.(undefined);
    } catch (e) {
      if (isSplitfleetError(e, 'LEASE_LOST')) {
        this.end({ kind: 'lost', reason: `lease ${this.leaseId} no longer exists` });
        return;
      }
      this.renewalListener?.(e);
    }
    if (this.clock.now() - this.lastRenewedAt + this.interval >= this.config.leaseDurationMs) {
      this.end({ kind: 'lost', reason: `no confirmed renewal for ${Math.round(this.clock.now() - this.lastRenewedAt)} ms` });
      return;
    }
    this.schedule();
  }

  private end(end: SessionEnd): void {
    if (this.ended) return;
    this.ended = end;
    this.cancelTimer?.();
    for (const l of this.endListeners.splice(0)) l(end);
  }
}

