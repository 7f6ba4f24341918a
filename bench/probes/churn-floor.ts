/**
 * The floor under leave churn (issue 14, item 3): on small instances, an
 * exact search for the least weight any assignment must move when a member
 * leaves a settled fleet, set beside what the engine moves.
 *
 * An admissible target is any assignment of the claimable pool that the
 * spec's invariants allow as an output: total (lanes never bind here, cap
 * 1000), no split twice, and locally optimal (no split s on `from` with
 * load(from) > load(to) + w(s), in the engine's scaled units, which are the
 * weights themselves at these sizes). Every assignment is reachable from the
 * settled state (the leader publishes any target at once), so the floor is
 * the minimum of moved weight over admissible targets. The orphans must
 * move, so floor ≥ 1 × the leaver's load.
 *
 * Search: splits heaviest first; each tries its current owner first (cost
 * 0), then the others (cost w); branch and bound on moved weight (the
 * orphans still unplaced count in the bound), starting from the engine's own
 * answer; local optimality checked at the leaves, and a branch is cut once
 * some member keeps more than another could reach with every split left.
 *
 *   npm run build:ts && node dist/bench/probes/churn-floor.js [--members 5] [--per-member 6] [--seeds 20]
 */
import { churn } from '../../src/assignment/quality.js';
import { desiredAssignment } from '../../src/assignment/engine.js';
import type { AssignmentInput, SplitInput } from '../../src/assignment/types.js';
import { rng } from '../inputs.js';
import { median } from '../stats.js';
import { benchArgs, numberArg } from '../args.js';

const { values: args } = benchArgs({ members: { type: 'string' }, 'per-member': { type: 'string' }, seeds: { type: 'string' } });
const M = numberArg('members', args.members, 5);
const PER = numberArg('per-member', args['per-member'], 6);
const SEEDS = numberArg('seeds', args.seeds, 20);

function instance(seed: number): { settled: AssignmentInput; left: AssignmentInput; held: Record<string, string[]> } {
  const r = rng(seed);
  const n = M * PER;
  const lognormal = (): number => {
    const u = r() || 1e-9;
    return Math.max(1, Math.round(64 * 2 ** 20 * Math.exp(Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * r()))));
  };
  const members = Array.from({ length: M }, (_, j) => ({ id: `m-${j}`, cap: 1000 }));
  const splits: SplitInput[] = Array.from({ length: n }, (_, i) => ({ id: `s-${i}`, weight: lognormal() }));
  const cold: AssignmentInput = { seed: `floor-${seed}`, members, splits };
  const held = desiredAssignment(cold, { engine: 'reference' }).assignment;
  const owner = new Map<string, string>();
  for (const [mm, ids] of Object.entries(held)) for (const id of ids) owner.set(id, mm);
  const settledSplits = splits.map((s) => {
    const o = owner.get(s.id) ?? null;
    return { id: s.id, weight: s.weight, leaseOwner: o, recordOwner: o, previous: o };
  });
  const settled = { ...cold, splits: settledSplits };
  const left: AssignmentInput = {
    ...cold,
    members: members.filter((mm) => mm.id !== 'm-0'),
    splits: settledSplits.map((s) => (s.leaseOwner === 'm-0' ? { ...s, leaseOwner: null } : s)),
  };
  return { settled, left, held };
}

/** The least moved weight of any admissible target, given an upper bound to beat. */
function floor(left: AssignmentInput, held: Record<string, string[]>, bound: number): { moved: number; nodes: number } {
  const owner = new Map<string, string>();
  for (const [mm, ids] of Object.entries(held)) for (const id of ids) owner.set(id, mm);
  const live = left.members.map((mm) => mm.id);
  const splits = [...left.splits].sort((a, b) => b.weight - a.weight);
  const w = splits.map((s) => s.weight);
  const home = splits.map((s) => live.indexOf(owner.get(s.id) ?? ''));
  const m = live.length;
  // Orphan weight still to place after index i (each orphan costs its weight wherever it goes).
  const orphanRest = new Array<number>(splits.length + 1).fill(0);
  for (let i = splits.length - 1; i >= 0; i--) orphanRest[i] = orphanRest[i + 1]! + (home[i]! < 0 ? w[i]! : 0);
  const load = new Array<number>(m).fill(0);
  // Heaviest first: the last split placed on a member is its lightest.
  const lightest = new Array<number>(m).fill(Infinity);
  let best = bound;
  let nodes = 0;
  const locallyOptimal = (): boolean => {
    for (let a = 0; a < m; a++) {
      if (lightest[a] === Infinity) continue;
      for (let b = 0; b < m; b++) if (a !== b && load[a]! > load[b]! + lightest[a]!) return false;
    }
    return true;
  };
  const rest = new Array<number>(splits.length + 1).fill(0);
  for (let i = splits.length - 1; i >= 0; i--) rest[i] = rest[i + 1]! + w[i]!;
  // What a keeps after giving its lightest never falls as splits are added
  // (heaviest first), and b can gain at most the rest: a violation beyond that is final.
  const hopeless = (i: number): boolean => {
    for (let a = 0; a < m; a++) {
      if (lightest[a] === Infinity) continue;
      const keeps = load[a]! - lightest[a]!;
      for (let b = 0; b < m; b++) if (a !== b && keeps > load[b]! + rest[i]!) return true;
    }
    return false;
  };
  const dfs = (i: number, cost: number): void => {
    nodes++;
    if (cost + orphanRest[i]! >= best || hopeless(i)) return;
    if (i === splits.length) {
      if (locallyOptimal()) best = cost;
      return;
    }
    const order = home[i]! >= 0 ? [home[i]!, ...live.keys()].filter((j, k, a) => a.indexOf(j) === k) : [...live.keys()];
    for (const j of order) {
      const c = j === home[i] ? 0 : w[i]!;
      const prevLight = lightest[j]!;
      load[j] += w[i]!;
      lightest[j] = w[i]!;
      dfs(i + 1, cost + c);
      load[j] -= w[i]!;
      lightest[j] = prevLight;
    }
  };
  dfs(0, 0);
  return { moved: best, nodes };
}

const rows: { seed: number; engine: number; floor: number; nodes: number }[] = [];
for (let seed = 1; seed <= SEEDS; seed++) {
  const { left, held } = instance(seed);
  const leaverLoad = held['m-0']!.reduce((a, id) => a + left.splits.find((s) => s.id === id)!.weight, 0);
  const result = desiredAssignment(left, { engine: 'reference' });
  const weightOf = new Map(left.splits.map((s) => [s.id, s.weight]));
  const engineMoved = churn(held, result.assignment, (id) => weightOf.get(id) ?? 0).movedWeight;
  const f = floor(left, held, engineMoved + 1);
  // The bound was engineMoved + 1: nothing better found means the engine's own answer is the floor.
  rows.push({ seed, engine: engineMoved / leaverLoad, floor: Math.min(f.moved, engineMoved) / leaverLoad, nodes: f.nodes });
}
console.log(`leave churn floor: ${M} members (one leaves), ${PER} splits/member, lognormal σ = 1, ${SEEDS} seeds, reference engine`);
console.log('| seed | engine moved / leaver | floor moved / leaver | gap (engine / floor) | search nodes |');
console.log('|---:|---:|---:|---:|---:|');
for (const r of rows) console.log(`| ${r.seed} | ${r.engine.toFixed(3)} | ${r.floor.toFixed(3)} | ${(r.engine / r.floor).toFixed(3)} | ${r.nodes} |`);
console.log(`median: engine ${median(rows.map((r) => r.engine)).toFixed(3)}, floor ${median(rows.map((r) => r.floor)).toFixed(3)}, gap ${median(rows.map((r) => r.engine / r.floor)).toFixed(3)}; worst gap ${Math.max(...rows.map((r) => r.engine / r.floor)).toFixed(3)}`);
