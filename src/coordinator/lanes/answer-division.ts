/**
 * A lane's answer to one division the leader asked for (decision 0063): the
 * handler's `onDivide` callback, then the division it proposed or a decline,
 * each one fenced write in the lane's order (Lane.writeDivision).
 *
 * Invariants:
 * - A request is answered once per (split, epoch, seq): the worker keeps
 *   the asks it has answered and the lane ignores a second while one runs.
 * - A callback that returns (or throws) without calling `divide` declines:
 *   `declined` is written, so the leader stops asking this tenancy. A lane
 *   whose handler set no callback answers nothing and writes nothing: its
 *   ask stands, unanswered (a handler that never divides costs no write, and
 *   the leader asks it once a tenancy), and is answered if the handler sets
 *   a callback later (divisions.ts; the lane tells the worker when).
 * - A bad proposal is refused (INVALID_INPUT, naming the field) before
 *   anything is written, and the request counts as declined.
 * - A division that did not land on a lane still running (the residual's
 *   keys existed) is declined too: the split stays whole in this tenancy.
 */
import { SplitfleetError } from '../../errors.js';
import { declineRecord, divisionWrite, proposalProblem, type DivisionProposal } from '../../protocol/division.js';
import type { DivisionAsk, Json } from '../../protocol/records.js';
import type { DivisionRequest } from '../types.js';
import type { DivisionWritten, Lane } from './lane.js';

/** What became of one ask. */
export type DivisionOutcome =
  | { kind: 'landed'; residual: string; residualWeight: number; weight: number; end: Json | undefined }
  | { kind: 'declined' }
  /** The handler set no onDivide: nothing written, the ask left standing. */
  | { kind: 'unanswered' }
  /** Proposed but not landed: the split stays whole (lost meanwhile, or the residual's keys already exist). */
  | { kind: 'not-landed' };

/** Answers `ask` on `lane` (whose split and epoch it names); resolves once the answer is written or known lost. */
export async function answerDivision(lane: Lane, ask: DivisionAsk, prefix: string, me: string): Promise<DivisionOutcome> {
  let proposed: Promise<DivisionWritten> | undefined;
  let write: ReturnType<typeof divisionWrite> | undefined;
  const request: DivisionRequest = {
    seq: ask.seq, share: ask.share, weight: lane.handle.weight, progress: lane.committed, end: lane.handle.end,
    divide: (proposal: DivisionProposal) => {
      if (proposed) return Promise.reject(new SplitfleetError('INVALID_INPUT', `split ${lane.id}: divide() may be called once per request`));
      const problem = proposalProblem(proposal);
      if (problem !== undefined) return Promise.reject(new SplitfleetError('INVALID_INPUT', `split ${lane.id}: ${problem}`));
      proposed = lane.writeDivision('divide', (held) => {
        write = divisionWrite({ prefix, me, spec: lane.spec, ...held }, ask, proposal);
        return { committed: write.committed, also: write.also };
      });
      // Lost: the split is no longer ours and the outcome may be either; the handler must stop.
      return proposed.then((w) => {
        if (w === 'lost') throw new SplitfleetError('LEASE_LOST', `split ${lane.id}: the division's outcome is unknown or fenced out, and the split is no longer ours`);
        return w === 'landed';
      });
    },
  };
  const callback = lane.divider;
  if (!callback) return { kind: 'unanswered' };
  if (lane.state.kind === 'running') {
    try {
      await callback(request);
    } catch {
      // A callback that throws has not divided: a decline (below), unless it proposed first.
    }
  }
  if (!proposed) {
    await lane.writeDivision('decline', (held) => ({ committed: declineRecord({ prefix, me, spec: lane.spec, ...held }, ask.seq) }));
    return { kind: 'declined' };
  }
  const landed = (await proposed.catch(() => 'lost' as const)) === 'landed';
  if (!landed || !write) {
    // Still ours, so the residual's keys were there already (forged, or a restore): nothing was
    // written; the decline tells the leader not to wait on this ask. Lost: the ask lapses with us.
    if (lane.state.kind === 'running') await lane.writeDivision('decline', (held) => ({ committed: declineRecord({ prefix, me, spec: lane.spec, ...held }, ask.seq) }));
    return { kind: 'not-landed' };
  }
  return { kind: 'landed', residual: write.residualId, residualWeight: write.residualWeight, weight: write.committed.weight!, end: write.committed.end };
}
