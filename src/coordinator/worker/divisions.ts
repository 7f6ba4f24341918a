/**
 * Divisions: the worker's side of the leader's division asks (decision 0063).
 * `serviceDivisionAsks` answers each ask of our `divide.{instance}` record
 * once, on the lane that holds the split in the tenancy the ask names
 * (answer-division.ts), and reports what became of it (event, metric, log).
 *
 * Invariants:
 * - One answer per (split, epoch, seq), however often the record is seen
 *   again; answered keys are forgotten once no ask names them.
 * - An ask for a split we do not hold in that epoch, or whose lane is not
 *   running (draining, ended), is left alone: the leader's ask lapses with
 *   the tenancy, and a draining lane is on its way elsewhere.
 */
import type { DivisionAsk } from '../../protocol/records.js';
import { background, type OnUnexpected } from '../background.js';
import type { Emit } from '../events.js';
import type { Lane } from '../lanes/lane.js';
import { answerDivision } from '../lanes/answer-division.js';
import type { Logger } from '../log.js';
import type { Metrics } from '../metrics.js';

export interface DivisionsContext {
  prefix: string;
  me: string;
  lanes: ReadonlyMap<string, Lane>;
  metrics: Metrics;
  log: Logger;
  emit: () => Emit;
  unexpected: OnUnexpected;
}

const askKey = (a: DivisionAsk): string => `${a.epoch}:${a.seq}:${a.id}`;

export class Divisions {
  /** Asks answered or being answered, by askKey. */
  private readonly answered = new Set<string>();

  constructor(private readonly ctx: DivisionsContext) {}

  /** Answers the asks of our record not answered yet. Cheap when nothing is new. */
  serviceDivisionAsks(asks: readonly DivisionAsk[]): void {
    const named = new Set<string>();
    for (const ask of asks) {
      const key = askKey(ask);
      named.add(key);
      if (this.answered.has(key)) continue;
      const lane = this.ctx.lanes.get(ask.id);
      if (!lane || lane.state.kind !== 'running' || lane.record.epoch !== ask.epoch) continue;
      this.answered.add(key);
      background('divide', () => this.answer(lane, ask, key), this.ctx.unexpected);
    }
    for (const key of this.answered) if (!named.has(key)) this.answered.delete(key);
  }

  private async answer(lane: Lane, ask: DivisionAsk, key: string): Promise<void> {
    const out = await answerDivision(lane, ask, this.ctx.prefix, this.ctx.me);
    if (out.kind === 'unanswered') {
      // No onDivide yet: nothing written. The ask stands and is answered once the handler sets one
      // (the lane calls serviceDivisionAsks then): a handler may set it after some set-up of its own.
      this.answered.delete(key);
      return;
    }
    this.ctx.metrics.divisions.inc({ outcome: out.kind });
    if (out.kind !== 'landed') {
      this.ctx.log.debug({ split: ask.id, seq: ask.seq, outcome: out.kind }, 'division not made');
      return;
    }
    this.ctx.log.info({ split: ask.id, seq: ask.seq, residual: out.residual, residualWeight: out.residualWeight, weight: out.weight }, 'split divided');
    this.ctx.emit()('split-divided', {
      id: ask.id, epoch: ask.epoch, seq: ask.seq, residual: out.residual, residualWeight: out.residualWeight, weight: out.weight, end: out.end,
    });
  }
}
