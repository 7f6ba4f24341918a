/**
 * The assignment quality report: balance from cold, and churn when one member
 * joins or leaves a settled fleet. Not a timing benchmark (see
 * bench/probes/reference-timing.ts); every figure is a ratio of weights.
 *
 * Workload: 200 members (cap 1000 unless --cap: lanes never bind, so the
 * move rule alone is measured), 20 and 50 splits per member, lognormal weights
 * (median 64 MiB, σ = 1) from a seeded mulberry32; each figure is the median
 * over the seeds, with the worst seed beside it.
 *
 *   cold     max load / lower bound (quality.ts `lowerBound`)
 *   join     a member joins the settled fleet: moved weight / the newcomer's
 *            final load (target ≤ 1.2; 1.0 means only what it had to take moved)
 *   leave    a member leaves: moved weight (every split whose owner changed,
 *            the leaver's orphans included) / the leaver's former load
 *            (target ≤ 1.8; 1.0 means only the orphans moved)
 *   moves    improving moves the engine made; "splits moved" counts the
 *            splits whose owner changed (each one is a drain)
 *
 * Usage: npm run build:ts && npm run bench:quality [-- --seeds 9 --cap 40 --engine reference --json]
 */
import { churn, desiredAssignment, type AssignmentInput, type EngineName, type SplitInput } from '../src/engine.js';
import { prng } from '../src/prng.js';
import { benchArgs, numberArg } from './args.js';
import { median } from './stats.js';

interface Options {
  seeds: number;
  members: number;
  perMember: number[];
  engine: EngineName;
  /** Lane budget of every member; default 1000 (never binds). */
  cap: number;
  json: boolean;
}

function options(argv: string[]): Options {
  const { values: v } = benchArgs({
    seeds: { type: 'string' }, members: { type: 'string' }, 'per-member': { type: 'string' }, engine: { type: 'string' }, cap: { type: 'string' }, json: { type: 'boolean' },
  }, argv);
  return {
    seeds: numberArg('seeds', v.seeds, 7),
    members: numberArg('members', v.members, 200),
    perMember: (v['per-member'] ?? '20,50').split(',').map((x) => numberArg('per-member', x, NaN)),
    engine: (v.engine ?? 'reference') as EngineName,
    cap: numberArg('cap', v.cap, 1000),
    json: v.json === true,
  };
}

const MEDIAN_WEIGHT = 64 * 2 ** 20;
const SIGMA = 1;

interface Run {
  cold: number;
  coldMoves: number;
  settledMoves: number;
  join: number;
  joinMoves: number;
  joinMoved: number;
  leave: number;
  leaveMoves: number;
  leaveMoved: number;
}

function runOnce(seed: number, memberCount: number, perMember: number, cap: number, engine: EngineName): Run {
  const rand = prng(seed);
  const lognormal = (): number => {
    const u = rand() || 1e-12;
    const z = Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * rand());
    return Math.round(MEDIAN_WEIGHT * Math.exp(SIGMA * z));
  };
  const splits: SplitInput[] = Array.from({ length: memberCount * perMember }, (_, i) => ({ id: `s-${i}`, weight: lognormal() }));
  const weight = new Map(splits.map((s) => [s.id, s.weight]));
  const weightOf = (id: string): number => weight.get(id)!;
  const members = Array.from({ length: memberCount }, (_, i) => ({ id: `m-${i}`, cap }));
  const job = `quality-${seed}`;
  const decide = (input: AssignmentInput) => desiredAssignment(input, { engine });

  const cold = decide({ seed: job, members, splits });
  const owner = new Map<string, string>();
  for (const [m, ids] of Object.entries(cold.assignment)) for (const id of ids) owner.set(id, m);
  const settledSplits = splits.map((s) => {
    const o = owner.get(s.id) ?? null;
    return { ...s, leaseOwner: o, recordOwner: o, previous: o };
  });
  const settled = decide({ seed: job, members, splits: settledSplits });

  const joined = decide({ seed: job, members: [...members, { id: 'm-new', cap }], splits: settledSplits });
  const joinChurn = churn(cold.assignment, joined.assignment, weightOf);
  const newcomerLoad = joined.assignment['m-new']!.reduce((sum, id) => sum + weightOf(id), 0);

  const leaver = members[Math.floor(rand() * memberCount)]!.id;
  const left = decide({ seed: job, members: members.filter((m) => m.id !== leaver), splits: settledSplits });
  const leaveChurn = churn(cold.assignment, left.assignment, weightOf);
  const leaverLoad = cold.assignment[leaver]!.reduce((sum, id) => sum + weightOf(id), 0);

  return {
    cold: cold.stats.maxLoad / cold.stats.lowerBound,
    coldMoves: cold.stats.improvingMoves,
    settledMoves: settled.stats.improvingMoves,
    join: joinChurn.movedWeight / newcomerLoad,
    joinMoves: joined.stats.improvingMoves,
    joinMoved: joinChurn.movedCount,
    leave: leaveChurn.movedWeight / leaverLoad,
    leaveMoves: left.stats.improvingMoves,
    leaveMoved: leaveChurn.movedCount,
  };
}

function main(): void {
  const o = options(process.argv.slice(2));
  const rows = o.perMember.map((perMember) => {
    const runs = Array.from({ length: o.seeds }, (_, i) => runOnce(i + 1, o.members, perMember, o.cap, o.engine));
    const col = (k: keyof Run): number[] => runs.map((r) => r[k]);
    return {
      perMember,
      splits: perMember * o.members,
      cold: { median: median(col('cold')), worst: Math.max(...col('cold')) },
      coldMoves: median(col('coldMoves')),
      settledMoves: Math.max(...col('settledMoves')),
      join: { median: median(col('join')), worst: Math.max(...col('join')) },
      joinMoves: median(col('joinMoves')),
      joinMoved: median(col('joinMoved')),
      leave: { median: median(col('leave')), worst: Math.max(...col('leave')) },
      leaveMoves: median(col('leaveMoves')),
      leaveMoved: median(col('leaveMoved')),
    };
  });
  if (o.json) {
    console.log(JSON.stringify({ engine: o.engine, members: o.members, seeds: o.seeds, cap: o.cap, sigma: SIGMA, rows }, null, 2));
    return;
  }
  const f = (x: number): string => x.toFixed(2);
  const fc = (x: number): string => x.toFixed(4);
  console.log(
    `Assignment quality: ${o.engine} engine, ${o.members} members (cap ${o.cap}), lognormal weights ` +
      `(median 64 MiB, σ = ${SIGMA}), seeds 1–${o.seeds}: median (worst seed)\n`,
  );
  const header = [
    'splits/member', 'splits', 'cold max/LB', 'cold moves', 'settled moves',
    'join moved/newcomer (≤ 1.2)', 'join moves', 'join splits moved',
    'leave moved/former (≤ 1.8)', 'leave moves', 'leave splits moved',
  ];
  const table = rows.map((r) => [
    String(r.perMember), String(r.splits), `${fc(r.cold.median)} (${fc(r.cold.worst)})`, String(r.coldMoves),
    String(r.settledMoves), `${f(r.join.median)} (${f(r.join.worst)})`, String(r.joinMoves), String(r.joinMoved),
    `${f(r.leave.median)} (${f(r.leave.worst)})`, String(r.leaveMoves), String(r.leaveMoved),
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...table.map((row) => row[i]!.length)));
  const line = (cells: string[]): string => `| ${cells.map((c, i) => c.padEnd(widths[i]!)).join(' | ')} |`;
  console.log(line(header));
  console.log(`|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`);
  for (const row of table) console.log(line(row));
  console.log('\n"settled moves" is the worst seed: a settled fleet must re-decide itself with 0 moves.');
}

main();
