/**
 * Lifecycle events: the typed map of what a coordinator reports (leadership,
 * claims and how each lane ended, drains, session loss and rejoin, health,
 * fatal errors), the emitter behind `coordinator.on / once / off`, and the
 * pure mapping from a lane's end to its events.
 *
 * Invariants:
 * - Delivery is asynchronous, one microtask per event, in emission order: a
 *   listener never runs inside a coordinator step, so it cannot re-enter a
 *   half-done one (calling `stop()` from a listener is safe).
 * - A listener sees the events emitted while it was registered; adding one
 *   twice adds it once (a Set, unlike Node's EventEmitter).
 * - A listener that throws, or whose promise rejects, is logged and skipped:
 *   the coordinator and the other listeners carry on.
 * - Payloads are plain data (the instance, ids, epochs, counts, reasons), no
 *   handles and no timestamps of their own; health's `since` is the one clock
 *   reading (split-failed's `retryAt` is the record's `notBefore`, as written).
 *
 * It must not decide anything the coordinator acts on: events are reports.
 */
import type { SplitfleetError } from '../errors.js';
import type { DrainHandlerState } from '../protocol/reconcile.js';
import type { Json } from '../protocol/records.js';
import type { FailureKind } from '../protocol/retry-policy.js';
import type { Health } from './health.js';
import type { LaneEnd } from './lanes/lane.js';
import type { Logger } from './log.js';

/**
 * How a split came to this instance: a claim's kind ('create' a fresh split,
 * 'released' after a release, 'expired' a dead owner's, 'reclaim' our
 * earlier run's live lease; protocol/claims.ts `ClaimKind`, spelled out so the
 * public type does not reach into the protocol; the worker's emit fails to
 * compile if the two drift), or 'adopted': a tenancy of ours whose claim reply was lost.
 */
export type ClaimEventKind = 'create' | 'released' | 'expired' | 'reclaim' | 'adopted';

/**
 * Why a lane released its split (owner cleared at its last commit):
 * 'handler' the handler returned or called `release()`; 'drained' a
 * cooperative drain; 'forced' a drain forced at `drainDeadlineMs` or after
 * the handler threw while draining; 'declined' the handler called
 * `decline()`; 'store-failure' the handler stopped on a retryable store
 * error (no attempt consumed); 'stopping' claimed while stopping, given back.
 */
export type ReleaseCause = 'handler' | 'drained' | 'forced' | 'declined' | 'store-failure' | 'stopping';

/** Why a drain began: the split is no longer assigned here, or `stop()` is draining every lane. */
export type DrainReason = 'revoked' | 'stopping';

/** How a drain ended: the handler finished it, it was forced (deadline, or the handler threw), declined, or the lane was lost. */
export type DrainOutcome = 'cooperative' | 'forced' | 'declined' | 'lost';

/**
 * `leadership-lost`'s reason when the leader key no longer names the term
 * (gone with its lease, or another term's): the one end the simulation checks
 * against the store, since a view that lags can judge it wrongly.
 */
export const DEPOSED_REASON = 'the leader key no longer names this term';

/** Every event a coordinator emits, by name, with its payload. */
export interface CoordinatorEventMap {
  /** This instance won the `leader` key and bumped the plan generation. */
  'leadership-gained': { instance: string; generation: number };
  /** This instance's term ended (resigned, stopped, deposed, or its session was lost). */
  'leadership-lost': { instance: string; generation: number; reason: string };
  /** A lane opened: `epoch` is the tenancy; `attempts` the delivery attempts consumed so far, this claim's included. */
  'split-claimed': { instance: string; id: string; epoch: number; attempts: number; kind: ClaimEventKind };
  /** The lane gave its split up at its last commit. */
  'split-released': { instance: string; id: string; epoch: number; cause: ReleaseCause };
  /** The handler completed the split (terminal). */
  'split-completed': { instance: string; id: string; epoch: number };
  /**
   * A division of a held split landed (decision 0063): `residual` is a new split of `residualWeight`,
   * the parent keeps `weight` up to `end` (its handler's own position type). `seq` numbers the
   * parent's divisions from 1.
   */
  'split-divided': { instance: string; id: string; epoch: number; seq: number; residual: string; residualWeight: number; weight: number; end: Json | undefined };
  /**
   * The handler reported a failure (`fail()`, a throw, or its heartbeat timeout): one attempt
   * consumed; `attempts` is the count after it. `kind`: 'error', 'permanent' or 'timeout';
   * `permanent`: the report quarantined at once; `retryAt`: when the split may be claimed
   * again (the record's `notBefore`, epoch ms on the writer's clock), null when quarantined.
   */
  'split-failed': { instance: string; id: string; epoch: number; reason: string; attempts: number; kind: FailureKind; permanent: boolean; retryAt: number | null };
  /** The split was parked for good: a failure or a claim reached `maxAttempts`. */
  'split-quarantined': { instance: string; id: string; reason: string; attempts: number };
  /** The lane ended without a write: fenced out, its session lost, a record unreadable, or the coordinator closed. */
  'split-lost': { instance: string; id: string; epoch: number; reason: string };
  'drain-started': { instance: string; id: string; epoch: number; reason: DrainReason };
  /** `reason` details the outcome: how a cooperative lane ended, why a drain was forced, why a lane was lost. */
  'drain-ended': { instance: string; id: string; epoch: number; outcome: DrainOutcome; reason: string };
  /** The session's lease is gone (or unconfirmed for too long): every lane was dropped; a new session is being opened. */
  'session-lost': { instance: string; reason: string };
  /** A new session replaced a lost one. */
  'session-rejoined': { instance: string };
  /** `coordinator.health()` changed (state or reason). */
  health: { instance: string } & Health;
  /** The coordinator stopped on an error it cannot recover from; `done` rejects with it. */
  fatal: { instance: string; error: SplitfleetError };
}

/** The name of an event: a key of `CoordinatorEventMap`. */
export type CoordinatorEventName = keyof CoordinatorEventMap;

/** A listener of one event; a returned promise is awaited only to log its rejection. */
export type CoordinatorListener<E extends CoordinatorEventName> = (payload: CoordinatorEventMap[E]) => unknown;

/** Listeners by event, as the `on` option of `startCoordinator` takes them (attached before start-up). */
export type CoordinatorListeners = { [E in CoordinatorEventName]?: CoordinatorListener<E> };

/** A payload as the emitting part writes it: the emitter adds `instance`. */
export type EventBody<E extends CoordinatorEventName> = Omit<CoordinatorEventMap[E], 'instance'>;

/** How the worker, the leader and the coordinator report an event. */
export type Emit = <E extends CoordinatorEventName>(event: E, body: EventBody<E>) => void;

/** For parts built without an emitter (tests of the parts alone). */
export const noEmit: Emit = () => undefined;

type Untyped = (payload: unknown) => unknown;

/** The emitter: a typed facade over a Set of listeners per event. */
export class LifecycleEvents {
  /** Listener → whether it is a `once` listener. */
  private readonly listeners = new Map<CoordinatorEventName, Map<Untyped, boolean>>();

  constructor(private readonly instance: string, private readonly log: Logger) {}

  on<E extends CoordinatorEventName>(event: E, listener: CoordinatorListener<E>): void {
    this.add(event, listener as Untyped, false);
  }

  once<E extends CoordinatorEventName>(event: E, listener: CoordinatorListener<E>): void {
    this.add(event, listener as Untyped, true);
  }

  off<E extends CoordinatorEventName>(event: E, listener: CoordinatorListener<E>): void {
    this.listeners.get(event)?.delete(listener as Untyped);
  }

  /** Listeners of `event` now. */
  listenerCount(event: CoordinatorEventName): number {
    return this.listeners.get(event)?.size ?? 0;
  }

  /** Queues `event` for the listeners registered now; nothing at all when there are none. */
  readonly emit: Emit = (event, body) => {
    const registered = this.listeners.get(event);
    if (!registered || registered.size === 0) return;
    const targets = [...registered.keys()];
    const payload = { instance: this.instance, ...body };
    queueMicrotask(() => {
      for (const listener of targets) {
        // Removed since (off, or a `once` already served by an earlier event): not for it.
        const once = registered.get(listener);
        if (once === undefined) continue;
        if (once) registered.delete(listener);
        this.call(event, listener, payload);
      }
    });
  };

  private add(event: CoordinatorEventName, listener: Untyped, once: boolean): void {
    if (typeof listener !== 'function') throw new TypeError(`listener of '${event}': must be a function`);
    let registered = this.listeners.get(event);
    if (!registered) this.listeners.set(event, (registered = new Map()));
    registered.set(listener, once);
  }

  private call(event: CoordinatorEventName, listener: Untyped, payload: unknown): void {
    const report = (e: unknown) => this.log.error({ event, err: e instanceof Error ? e.message : String(e) }, 'a lifecycle event listener failed; ignored');
    try {
      const result = listener(payload);
      if (result && typeof (result as PromiseLike<unknown>).then === 'function') (result as PromiseLike<unknown>).then(undefined, report);
    } catch (e) {
      report(e);
    }
  }
}

/** What `laneEndEvents` needs to know of a lane that just ended. */
export interface LaneEndFacts {
  id: string;
  /** The tenancy the lane held (its claim's epoch). */
  epoch: number;
  end: LaneEnd;
  /** Why it ended, as the lane says (the write that ended it, or why it was lost). */
  reason: string;
  /** The split record as the lane last wrote it (after a failure: attempts, reason, status, notBefore). */
  record: { attempts: number; status: string; reason?: string; notBefore?: number };
  /** How a failure report came about (lanes that ended 'failed'); default 'error'. */
  failureKind?: FailureKind;
  /** The lane was draining when it ended. */
  draining: boolean;
  drainHandlerState: DrainHandlerState;
  /** Set by the worker when it, not the handler, ended the lane with a release. */
  releaseCause?: ReleaseCause;
}

/** One event to emit. */
export type LifecycleEvent = { [E in CoordinatorEventName]: { event: E; body: EventBody<E> } }[CoordinatorEventName];

/**
 * The events of one lane's end, in order: the split's own event (released,
 * completed, failed and maybe quarantined, lost), then `drain-ended` when a
 * drain was under way. Pure.
 */
export function laneEndEvents(f: LaneEndFacts): LifecycleEvent[] {
  const { id, epoch } = f;
  const out: LifecycleEvent[] = [];
  switch (f.end) {
    case 'completed':
      out.push({ event: 'split-completed', body: { id, epoch } });
      break;
    case 'failed': {
      const reason = f.record.reason ?? f.reason;
      const kind = f.failureKind ?? 'error';
      const quarantined = f.record.status === 'quarantined';
      out.push({ event: 'split-failed', body: {
        id, epoch, reason, attempts: f.record.attempts, kind, permanent: kind === 'permanent',
        retryAt: quarantined ? null : (f.record.notBefore ?? null),
      } });
      if (f.record.status === 'quarantined') out.push({ event: 'split-quarantined', body: { id, reason, attempts: f.record.attempts } });
      break;
    }
    case 'released':
      out.push({ event: 'split-released', body: { id, epoch, cause: f.draining ? 'drained' : (f.releaseCause ?? 'handler') } });
      break;
    case 'forced':
      out.push({ event: 'split-released', body: { id, epoch, cause: f.drainHandlerState === 'declined' ? 'declined' : 'forced' } });
      break;
    case 'lost':
      out.push({ event: 'split-lost', body: { id, epoch, reason: f.reason } });
      break;
    default: {
      const never: never = f.end;
      throw new Error(`unhandled lane end ${String(never)}`);
    }
  }
  if (f.draining) out.push({ event: 'drain-ended', body: { id, epoch, ...drainEnd(f) } });
  return out;
}

/** Emits `laneEndEvents(f)`, in order. */
export function emitLaneEnd(emit: Emit, f: LaneEndFacts): void {
  for (const e of laneEndEvents(f)) emit(e.event, e.body);
}

function drainEnd(f: LaneEndFacts): { outcome: DrainOutcome; reason: string } {
  switch (f.end) {
    case 'lost':
      return { outcome: 'lost', reason: f.reason };
    case 'forced':
      if (f.drainHandlerState === 'declined') return { outcome: 'declined', reason: 'the handler declined the drain' };
      if (f.drainHandlerState === 'failed') return { outcome: 'forced', reason: 'the handler threw while draining' };
      return { outcome: 'forced', reason: 'drain deadline reached' };
    default:
      // The handler ended the lane itself while draining (returned, completed, failed).
      return { outcome: 'cooperative', reason: f.end };
  }
}

/** What the worker reports through: its events, and each reconciliation (the coordinator's start-up ends at the first). */
export interface LifecycleHooks {
  emit?: Emit;
  reconciled?: () => void;
}
