/**
 * The step nemesis (issue 49): pauses one process *at* its k-th store call of
 * one kind (the call itself held, unsent, until it resumes), while an
 * operator acts, so that every step of the protocol is hit, not only the
 * moments a random schedule happens to pick: campaign (with its generation bump),
 * decide → publish, promote → publish, fold read → fold, verdict decision →
 * verdict, claim, lane writes, release.
 *
 * A call's kind is its request and, for a transaction, the first operation's
 * verb and key family (`txn put assign`, `txn put lease`, `txn delete
 * lease`, `list`, `keepalive`, …): the step-pauses test counts the kinds a
 * process makes in a quiet run of a short job, then enumerates (kind, k) over
 * them.
 */
import type { Fleet, SimProcess } from './harness.js';
import { operate } from './operator.js';
import type { OperatorAction } from './schedule.js';

/** The kind of a store call, from the facade's description of it (FaultStore: `txn put <key>, …`, `get`, `list`, …). */
export function callKind(what: string, prefix: string): string {
  if (!what.startsWith('txn')) return what;
  const first = what.slice('txn '.length).split(', ')[0] ?? '';
  const [verb, key] = first.split(' ');
  if (verb === undefined || verb === '' || key === undefined) return 'txn';
  const local = key.startsWith(prefix) ? key.slice(prefix.length) : key;
  return `txn ${verb} ${local.split(/[./]/)[0]}`;
}

/** Calls counted by instance, then kind (every incarnation of an instance together). */
export type CallCounts = Map<string, Map<string, number>>;

/** Where the nemesis strikes: `instance`'s k-th call of `kind`, paused `pauseMs`, with `operator` acting meanwhile. */
export interface StepTrap {
  instance: string;
  kind: string;
  k: number;
  pauseMs: number;
  operator?: OperatorAction;
}

/**
 * The fleet's `atCall`: counts every call into `counts` and, at the trap's
 * call, pauses that process (the call held with it) and has the operator act
 * a moment later, on another live member for a per-member action.
 */
export function stepNemesis(counts: CallCounts, trap?: StepTrap): (fleet: Fleet) => (p: SimProcess, what: string) => boolean {
  return (fleet) => (p, what) => {
    const kind = callKind(what, fleet.prefix);
    const mine = counts.get(p.instance) ?? new Map<string, number>();
    counts.set(p.instance, mine);
    const n = (mine.get(kind) ?? 0) + 1;
    mine.set(kind, n);
    if (!trap || p.instance !== trap.instance || kind !== trap.kind || n !== trap.k || p.paused) return false;
    fleet.note(`step nemesis: pause ${p.id} at its call ${n} of '${kind}' for ${trap.pauseMs} ms`);
    fleet.pause(p, trap.pauseMs);
    const action = trap.operator;
    if (action) {
      fleet.at(fleet.clock.now() + 1, async () => {
        const other = fleet.live.find((q) => q !== p && q.state === 'running')?.instance;
        fleet.note(`step nemesis: operator ${action}${other ? ` ${other}` : ''}`);
        await operate(fleet, action, other);
      });
    }
    return true;
  };
}
