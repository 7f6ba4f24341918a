/**
 * The figures of one bench:peers run, computed from the workers' lines alone
 * (pure: no I/O, no clock), the same way for every system:
 *
 * - duplicates: processings of a unit beyond its first;
 * - redoneUnits: of those, the ones processed again although a progress at or
 *   past them had already been acknowledged for the item (work a resume from
 *   the committed progress would have skipped);
 * - staleWrites: progress or completion writes the store acknowledged from an
 *   attempt that was no longer the item's latest one when the write was sent
 *   (another attempt had started it since): the writes a fence would have
 *   refused. Judged at the send time `s`, not at the answer `t`: a write sent
 *   before a stall landed before the takeover, and its answer read after the
 *   resume is not stale (counting it so made splitfleet's fenced run report 1);
 * - lost: units never processed;
 * - makespan over the lower bound max(total / lanes, heaviest item) (with
 *   `bound: 'lanes'`, total / lanes alone: a divisible item bounds nothing), useful
 *   lane utilisation (distinct units × unitMs over lanes × makespan), units per
 *   worker (max / mean), items per second;
 * - recoveryMs: from a kill (or stall) until the last of the worker's items in
 *   hand runs a unit elsewhere; joinBusyMs: from a joiner's `go` to its first unit;
 *   firstUnitMs: from `go` to the first unit anywhere;
 * - divisions: residuals created (splitfleet's `divided` lines).
 *
 * Units are counted per item (`id`, `u`), whatever part of it ran them, so a
 * unit processed in a parent and again in a residual is a duplicate and a unit
 * in neither is lost. Attempts, progress and completions are per part (`p`,
 * else the item itself): each part is a split of its own, resumed from its own
 * progress, and the job is done when every part is.
 */
import type { Item, PeerLine } from './items.js';

export interface RunShape {
  items: readonly Item[];
  lanes: number;
  unitMs: number;
  t0: number;
  /** Worker killed or stopped at `at`. */
  fault?: { worker: string; at: number };
  join?: { worker: string; at: number };
  /** The store says every item is done (a killed worker can lose the line of a completion that landed). */
  storeDone?: boolean;
  /** 'lanes': the lower bound is total / lanes, not raised to the heaviest item (giant: the item is meant to be divided). */
  bound?: 'lanes';
}

export interface PeerFigures {
  complete: boolean;
  makespanMs: number;
  lowerBoundMs: number;
  makespanRatio: number;
  utilisation: number;
  lost: number;
  duplicates: number;
  redoneUnits: number;
  staleWrites: number;
  refusedWrites: number;
  itemsPerSecond: number;
  perWorkerMaxOverMean: number;
  recoveryMs: number | null;
  joinBusyMs: number | null;
  joinerUnits: number | null;
  /** From `go` to the first unit anywhere: start-up (splitfleet: election and plan), part of the makespan. */
  firstUnitMs: number | null;
  /** Parts (items, or a division's residuals) done in the store whose `done` line was lost (their last unit stands in for it). */
  doneLinesMissing: number;
  /** Residuals the divisions created (0 for a system that cannot divide). */
  divisions: number;
}

export function measure(lines: readonly PeerLine[], shape: RunShape): PeerFigures {
  const sorted = [...lines].sort((a, b) => a.t - b.t);
  const seen = new Map<string, number>();
  const latestAttempt = new Map<string, string>();
  const starts = new Map<string, { t: number; attempt: string }[]>(); // part → its attempts' starts, in time order
  const committed = new Map<string, number>();
  const doneAt = new Map<string, number>();
  const perWorker = new Map<string, number>();
  let duplicates = 0, redoneUnits = 0, staleWrites = 0, refusedWrites = 0, lastDone = shape.t0;
  const held = new Map<string, string>(); // part → attempt of the faulty worker in hand at the fault
  const recovered = new Map<string, number>();
  let joinFirst: number | null = null;
  let joinerUnits = 0;
  let faultSeen = false;
  let firstUnit: number | null = null;
  const lastUnit = new Map<string, number>();
  // Every part of every item: the items themselves, and the residuals divisions made, by item.
  const itemOfPart = new Map<string, string>(shape.items.map((it) => [it.id, it.id]));
  const residuals = new Set<string>();
  for (const l of sorted) {
    if (!l.id) continue;
    const attempt = `${l.w}/${l.n}`;
    const part = l.p ?? l.id;
    if (!itemOfPart.has(part)) itemOfPart.set(part, l.id);
    if (shape.fault && !faultSeen && l.t >= shape.fault.at) {
      faultSeen = true;
      for (const [id, a] of latestAttempt) if (a.startsWith(`${shape.fault.worker}/`) && !doneAt.has(id)) held.set(id, a);
    }
    switch (l.ev) {
      case 'divided':
        if (l.r === undefined) break;
        residuals.add(l.r);
        itemOfPart.set(l.r, l.id);
        break;
      case 'start':
        latestAttempt.set(part, attempt);
        if (!starts.has(part)) starts.set(part, []);
        starts.get(part)!.push({ t: l.t, attempt });
        break;
      case 'unit': {
        const key = `${l.id}#${l.u}`;
        const count = seen.get(key) ?? 0;
        if (count > 0) {
          duplicates++;
          if ((committed.get(part) ?? 0) >= l.u!) redoneUnits++;
        }
        seen.set(key, count + 1);
        firstUnit ??= l.t;
        lastUnit.set(part, l.t);
        perWorker.set(l.w, (perWorker.get(l.w) ?? 0) + 1);
        if (shape.join && l.w === shape.join.worker) {
          joinerUnits++;
          if (joinFirst === null && l.t >= shape.join.at) joinFirst = l.t;
        }
        if (held.has(part) && l.w !== shape.fault!.worker && !recovered.has(part)) recovered.set(part, l.t);
        break;
      }
      case 'commit':
      case 'done':
        if (!l.ok) {
          refusedWrites++;
          break;
        }
        if (latestAttemptAt(starts.get(part), l.s ?? l.t) !== attempt) staleWrites++;
        if (l.ev === 'commit') committed.set(part, l.u!);
        else if (!doneAt.has(part)) {
          doneAt.set(part, l.t);
          lastDone = Math.max(lastDone, l.t);
        }
        break;
    }
  }
  let total = 0, heaviest = 0, lost = 0;
  for (const it of shape.items) {
    total += it.units;
    heaviest = Math.max(heaviest, it.units);
    for (let u = 1; u <= it.units; u++) if (!seen.has(`${it.id}#${u}`)) lost++;
  }
  let doneLinesMissing = 0;
  const itemsOpen = new Set<string>();
  for (const [part, item] of itemOfPart) {
    if (doneAt.has(part)) continue;
    itemsOpen.add(item);
    if (!shape.storeDone) continue;
    doneLinesMissing++;
    lastDone = Math.max(lastDone, lastUnit.get(part) ?? shape.t0);
  }
  const itemsDone = shape.storeDone ? shape.items.length : shape.items.length - itemsOpen.size;
  const makespanMs = Math.max(1, lastDone - shape.t0);
  const lowerBoundMs = shape.bound === 'lanes' ? (total * shape.unitMs) / shape.lanes : Math.max((total * shape.unitMs) / shape.lanes, heaviest * shape.unitMs);
  const counts = [...perWorker.values()];
  const mean = counts.reduce((a, b) => a + b, 0) / Math.max(1, counts.length);
  // Items the faulty worker finished itself (a stall shorter than the detection) have no recovery.
  const recoveries = [...held.keys()].map((id) => recovered.get(id)).filter((t): t is number => t !== undefined);
  return {
    complete: itemsOpen.size === 0 || shape.storeDone === true,
    makespanMs,
    lowerBoundMs,
    makespanRatio: makespanMs / lowerBoundMs,
    utilisation: ((total - lost) * shape.unitMs) / (shape.lanes * makespanMs),
    lost,
    duplicates,
    redoneUnits,
    staleWrites,
    refusedWrites,
    itemsPerSecond: itemsDone / (makespanMs / 1000),
    perWorkerMaxOverMean: counts.length ? Math.max(...counts) / mean : 0,
    recoveryMs: shape.fault && recoveries.length ? Math.max(...recoveries) - shape.fault.at : null,
    joinBusyMs: shape.join ? (joinFirst === null ? null : joinFirst - shape.join.at) : null,
    joinerUnits: shape.join ? joinerUnits : null,
    firstUnitMs: firstUnit === null ? null : firstUnit - shape.t0,
    doneLinesMissing,
    divisions: residuals.size,
  };
}

/** The attempt that had started the item last at time `t` (starts are in time order). */
function latestAttemptAt(starts: readonly { t: number; attempt: string }[] | undefined, t: number): string | undefined {
  let latest: string | undefined;
  for (const st of starts ?? []) if (st.t <= t) latest = st.attempt;
  return latest;
}
