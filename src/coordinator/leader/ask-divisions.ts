/**
 * DivisionAsker: the leader's side of dividing running splits (substrate.md,
 * "Dividing a running split"; decision 0063). While it leads, it looks at the
 * fleet after each change of its view (at most every DIVISION_ROUND_MS) and
 * every DIVISION_LOOK_MS: when lanes would idle, it reads the progress
 * records of the heaviest running splits, lets `divisionAsks` (protocol/,
 * pure) choose, and writes the asks as `divide.{instance}` records, guarded
 * by leadership. It never divides a split itself.
 *
 * Invariants:
 * - One round at a time; a round that fails is logged and the next tries again.
 * - A term starts from the `divide.` records it finds (a previous leader's
 *   asks stand until they are answered or lapse) and ends writing nothing.
 * - An instance's record is written only when its asks change, and deleted
 *   once it has none.
 */
import type { Clock } from '../../clock.js';
import type { Config } from '../../config.js';
import { divisionAsks, type RunningSplit } from '../../protocol/division-asks.js';
import { kindPrefix, parseKey, progressKey } from '../../protocol/keys.js';
import { divideTxn } from '../../protocol/leader-txns.js';
import { decodeRecord, type DivisionAsk, type ProgressRecord } from '../../protocol/records.js';
import { op, type Compare, type Store } from '../../store/store.js';
import { background, type OnUnexpected } from '../background.js';
import type { Logger } from '../log.js';
import type { Metrics } from '../metrics.js';
import type { LeaderView } from './leader-view.js';

/** Least time between two rounds started by view changes: a round reads up to a few dozen keys. */
export const DIVISION_ROUND_MS = 100;
/** A round every this often regardless (handlers' `done` shares move without the leader seeing them). */
export const DIVISION_LOOK_MS = 1000;
/** How long an ask is expected to be answered (its idle lane kept for it); after, it stands unanswered. */
export const ANSWER_WAIT_MS = 2000;
/** Running splits whose progress one round reads, at most, beyond the asks outstanding: the heaviest by weight. */
const CANDIDATES = 64;

export interface DivisionAskerContext {
  store: Store;
  clock: Clock;
  config: Config;
  prefix: string;
  fp: string;
  log: Logger;
  metrics: Metrics;
  /** The term's generation and leadership guard, or undefined when not leading. */
  publishing: () => { readonly generation: number; readonly guard: Compare } | undefined;
  unexpected: OnUnexpected;
}

type Outstanding = DivisionAsk & { owner: string };

export class DivisionAsker {
  /** The asks as written (or found at the term's start), by instance. */
  private written = new Map<string, readonly DivisionAsk[]>();
  private outstanding = new Map<string, Outstanding>();
  /** When each outstanding ask was first written (this leader's clock). */
  private askedAt = new Map<string, number>();
  private job: LeaderView | undefined;
  private running: Promise<void> | undefined;
  private again = false;
  private lastRound = -Infinity;
  private cancelTimer: (() => void) | undefined;
  private cancelLook: (() => void) | undefined;

  constructor(private readonly ctx: DivisionAskerContext) {}

  /** A term's view is built: read the `divide.` records there are, then look every DIVISION_LOOK_MS. */
  start(job: LeaderView): void {
    this.stop();
    this.job = job;
    background('division asks', async () => {
      const { kvs } = await this.ctx.store.listAll(kindPrefix(this.ctx.prefix, 'divide'));
      if (this.job !== job) return;
      for (const kv of kvs) {
        const parsed = parseKey(this.ctx.prefix, kv.key);
        if (parsed.kind !== 'divide') continue;
        try {
          const rec = decodeRecord('divide', kv.key, kv.value, this.ctx.fp);
          this.written.set(parsed.id, rec.asks);
          for (const a of rec.asks) this.outstanding.set(a.id, { ...a, owner: parsed.id });
        } catch {
          this.written.set(parsed.id, []); // unreadable: rewritten or deleted by the next round
        }
      }
      const look = (): void => {
        if (this.job !== job) return;
        this.viewChanged();
        this.cancelLook = this.ctx.clock.setTimer(DIVISION_LOOK_MS, look);
      };
      look();
    }, this.ctx.unexpected);
  }

  /** No longer leading: forget the term's asks (the next leader reads them from the store). */
  stop(): void {
    this.job = undefined;
    this.cancelTimer?.();
    this.cancelLook?.();
    this.cancelTimer = this.cancelLook = undefined;
    this.written = new Map();
    this.outstanding = new Map();
    this.askedAt = new Map();
    this.again = false;
  }

  /** The leader's view changed: a round soon (at most one per DIVISION_ROUND_MS, one at a time). */
  viewChanged(): void {
    if (!this.job) return;
    if (this.running || this.cancelTimer) {
      this.again = true;
      return;
    }
    const wait = Math.max(0, this.lastRound + DIVISION_ROUND_MS - this.ctx.clock.now());
    this.cancelTimer = this.ctx.clock.setTimer(wait, () => {
      this.cancelTimer = undefined;
      const job = this.job;
      if (!job) return;
      this.lastRound = this.ctx.clock.now();
      const round = this.round(job).catch((e: unknown) => this.ctx.log.warn({ err: (e as Error).message }, 'a division round failed; the next one tries again'));
      this.running = round.finally(() => {
        this.running = undefined;
        if (this.again) {
          this.again = false;
          this.viewChanged();
        }
      });
    });
  }

  /** One round: observe, decide (`divisionAsks`), write what changed. */
  private async round(job: LeaderView): Promise<void> {
    const term = this.ctx.publishing();
    if (!term) return;
    const idleLanes = idleLanesOf(job);
    if (idleLanes <= 0 && this.outstanding.size === 0 && this.written.size === 0) return;
    const running = await this.readRunning(job, idleLanes);
    if (this.job !== job) return;
    // A divided part weighs what its progress record says, in the decisions and the totals below.
    for (const s of running) if (s.divisions > 0) job.setPartWeight(s.id, s.weight);
    const minWeight = this.ctx.config.divideMinWeight ?? defaultMinWeight(job);
    const now = this.ctx.clock.now();
    let answering = 0;
    for (const id of this.outstanding.keys()) if (now - (this.askedAt.get(id) ?? now) < ANSWER_WAIT_MS) answering++;
    const wanted = divisionAsks({ idleLanes, running, outstanding: this.outstanding, minWeight, answering });
    const puts = new Map<string, readonly DivisionAsk[]>();
    for (const [instance, asks] of wanted) if (!sameAsks(this.written.get(instance), asks)) puts.set(instance, asks);
    const deletes = [...this.written.keys()].filter((i) => !wanted.has(i));
    if (puts.size === 0 && deletes.length === 0) return;
    const res = await this.ctx.store.txn(divideTxn(this.ctx.prefix, this.ctx.fp, term.guard, term.generation, puts, deletes));
    if (!res.won || this.job !== job) return; // leadership gone: the term is ending
    let asked = 0;
    for (const [instance, asks] of puts) {
      for (const a of asks) if (!this.outstanding.has(a.id)) asked++;
      this.written.set(instance, asks);
    }
    for (const instance of deletes) this.written.delete(instance);
    this.outstanding = new Map();
    for (const [instance, asks] of wanted) for (const a of asks) this.outstanding.set(a.id, { ...a, owner: instance });
    for (const id of [...this.askedAt.keys()]) if (!this.outstanding.has(id)) this.askedAt.delete(id);
    for (const id of this.outstanding.keys()) if (!this.askedAt.has(id)) this.askedAt.set(id, now);
    if (asked > 0) {
      this.ctx.metrics.divisionAsks.inc(asked);
      this.ctx.log.info({ asked, idleLanes }, 'asked running splits to divide');
    }
  }

  /** The running splits a round weighs: the asks outstanding and the heaviest others, with their progress records read. */
  private async readRunning(job: LeaderView, idleLanes: number): Promise<RunningSplit[]> {
    const held: { id: string; owner: string; epoch: number; weight: number }[] = [];
    for (const [id, lease] of job.leases) {
      if (job.statusOf(id) !== 'runnable' || !job.workers.has(lease.rec.owner)) continue;
      held.push({ id, owner: lease.rec.owner, epoch: lease.rec.epoch, weight: job.weightOf(id) ?? 0 });
    }
    if (idleLanes <= 0) {
      // Only the asks outstanding are looked at (to see them answered), none is added.
      return this.withProgress(held.filter((h) => this.outstanding.has(h.id)));
    }
    held.sort((a, b) => b.weight - a.weight || (a.id < b.id ? -1 : 1));
    const chosen = held.filter((h, i) => i < CANDIDATES || this.outstanding.has(h.id));
    return this.withProgress(chosen);
  }

  private async withProgress(held: readonly { id: string; owner: string; epoch: number; weight: number }[]): Promise<RunningSplit[]> {
    const out: RunningSplit[] = [];
    const chunk = Math.max(1, this.ctx.store.limits.maxOpsPerTxn);
    for (let i = 0; i < held.length; i += chunk) {
      const part = held.slice(i, i + chunk);
      const res = await this.ctx.store.txn({ compares: [], success: part.map((h) => op.get(progressKey(this.ctx.prefix, h.id))) });
      part.forEach((h, k) => {
        const kv = res.reads[k];
        let rec: ProgressRecord | undefined;
        try {
          rec = kv ? decodeRecord('progress', kv.key, kv.value, this.ctx.fp) : undefined;
        } catch {
          return; // unreadable: its split is the parked kind's business, not divided
        }
        out.push({
          id: h.id, owner: h.owner, epoch: h.epoch, weight: rec?.weight ?? h.weight, done: rec?.done ?? 0, divisions: rec?.divisions ?? 0,
          declined: rec?.declined === undefined ? undefined : { seq: rec.declined, epoch: rec.epoch },
        });
      });
    }
    return out;
  }
}

/** Lanes per part of the job's weight below which a part is not divided (see defaultMinWeight). */
export const PARTS_PER_LANE = 8;

/**
 * The least weight a part keeps by default: the job's weight over PARTS_PER_LANE × the fleet's
 * lanes. The makespan can be no shorter than weight ÷ lanes; once every part is at most an eighth
 * of that, the tail a further division could save is under an eighth of the bound (the 1.3
 * target leaves room for it), and each division costs a transaction and a claim. Weights are the
 * planner's unit, so the rule is relative: `divideMinWeight` sets it in that unit.
 */
export function defaultMinWeight(job: Pick<LeaderView, 'workers' | 'backlog'>): number {
  const b = job.backlog();
  const weight = b.queued.weight + b.running.weight + b.draining.weight + b.completed.weight + b.quarantined.weight;
  let lanes = 0;
  for (const w of job.workers.values()) lanes += w.rec.maxInFlight;
  return Math.max(1, Math.ceil(weight / (PARTS_PER_LANE * Math.max(1, lanes))));
}

/** Lanes of the live members less what runs and what is queued for them to take (≤ 0: none would idle). */
export function idleLanesOf(job: Pick<LeaderView, 'workers' | 'backlog' | 'control'>): number {
  if (job.control?.rec.paused) return 0;
  let lanes = 0;
  for (const w of job.workers.values()) lanes += w.rec.maxInFlight;
  const b = job.backlog();
  return lanes - b.running.splits - b.draining.splits - b.queued.splits;
}

function sameAsks(a: readonly DivisionAsk[] | undefined, b: readonly DivisionAsk[]): boolean {
  if (!a || a.length !== b.length) return false;
  return a.every((x, i) => x.id === b[i]!.id && x.epoch === b[i]!.epoch && x.seq === b[i]!.seq && x.share === b[i]!.share);
}

