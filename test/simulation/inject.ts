/**
 * What one fault of a schedule (schedule.ts, `Fault`) does to a running
 * fleet: which process it hits (by `target`, modulo the processes it may
 * hit), and the harness call that makes it happen. A fault with nothing to
 * hit (no live process, a full fleet, a hostile record that does not apply)
 * does nothing.
 *
 * Invariants: the choice is a function of the fleet's state and the fault;
 * the only randomness is the hostile writer's seeded source. It never
 * waits on virtual time itself (the caller advances the fleet), but a
 * hostile record's repair is put on the fleet's agenda.
 */
import type { Fleet, SimProcess } from './harness.js';
import type { HostileWriter } from './hostile.js';
import { operate } from './operator.js';
import type { Fault } from './schedule.js';

/** Most members alive at once ("fleet sizes 2–6"). */
export const MAX_FLEET = 6;

/** What a fault needs besides the fleet. */
export interface Injector {
  fleet: Fleet;
  hostile: HostileWriter;
  hostileRandom: () => number;
  leaseMs: number;
  newInstance: () => string;
}

const pick = (ps: SimProcess[], t: number): SimProcess | undefined => (ps.length === 0 ? undefined : ps[t % ps.length]);

/** Ids that may run again: every incarnation crashed or stopped (a leaving one still holds its presence key). */
export function restartable(fleet: Fleet): string[] {
  const busy = new Set(fleet.procs.filter((p) => p.state !== 'crashed' && p.state !== 'stopped' && p.state !== 'exited').map((p) => p.instance));
  return [...new Set(fleet.procs.filter((p) => !busy.has(p.instance)).map((p) => p.instance))];
}

const running = (fleet: Fleet) => fleet.live.filter((p) => p.state === 'running' && !p.paused);

/** Injects `f` into the fleet. */
export async function inject(x: Injector, f: Fault): Promise<void> {
  const { fleet, leaseMs } = x;
  switch (f.kind) {
    case 'crash': {
      const p = pick(fleet.live, f.target);
      if (p) fleet.crash(p);
      return;
    }
    case 'restart': {
      const ids = restartable(fleet);
      const id = ids[f.target % Math.max(1, ids.length)];
      if (id !== undefined && fleet.live.length < MAX_FLEET) fleet.start(id);
      return;
    }
    case 'pause': {
      const p = pick(running(fleet), f.target);
      if (p) fleet.pause(p, Math.round((leaseMs * f.tenths) / 10));
      return;
    }
    case 'leaderKill': {
      const p = fleet.leader;
      if (p) fleet.crash(p);
      return;
    }
    case 'leaderPause': {
      const p = fleet.leader;
      if (p && !p.paused) fleet.pause(p, Math.round((leaseMs * f.tenths) / 10));
      return;
    }
    case 'join':
      if (fleet.live.length < MAX_FLEET) fleet.start(x.newInstance());
      return;
    case 'leave': {
      const p = pick(running(fleet), f.target);
      if (p) fleet.leave(p);
      return;
    }
    case 'expire': {
      const p = pick(running(fleet), f.target);
      if (p) fleet.expireLeases(p);
      return;
    }
    case 'delay': {
      const p = pick(fleet.live, f.target);
      if (p) fleet.delay(p, f.latencyMs, f.durationMs);
      return;
    }
    case 'skew': {
      const p = pick(fleet.live, f.target);
      if (p) fleet.skew(p, f.latencyMs, f.durationMs);
      return;
    }
    case 'slow': {
      const p = pick(fleet.live, f.target);
      if (p) fleet.slowLink(p, f.latencyMs, f.durationMs);
      return;
    }
    case 'operator':
      await operate(fleet, f.action, pick(running(fleet), f.target)?.instance);
      return;
    case 'hostile':
      return hostileWrite(x, f);
  }
}

/** A hostile record written, and its repair put on the agenda when the fault says when. */
async function hostileWrite(x: Injector, f: Extract<Fault, { kind: 'hostile' }>): Promise<void> {
  const { fleet, hostile } = x;
  const what = await hostile.write(f.record, f.mutation, f.target, x.hostileRandom);
  if (what === undefined) return;
  fleet.note(`hostile write: ${what}`);
  if (f.repairAfterMs === undefined) return;
  fleet.at(fleet.clock.now() + f.repairAfterMs, async () => {
    const done = await hostile.repairOne();
    if (done !== undefined) fleet.note(`hostile writer: ${done}`);
  });
}
