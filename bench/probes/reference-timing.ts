/**
 * Wall time of the reference engine's decision: 10k and 100k splits over 100
 * and 1,000 members, lognormal weights (median 64 MiB, σ = 1), every member's
 * cap 2 × ceil(splits / members). Two scenarios: `cold` (nobody owns
 * anything: sticky finds nothing, fill places everything) and `join` (the
 * cold result settled, then one member joins: the improving pass works).
 * Each case is decided once to warm up, then `--runs` times (default 5); the
 * median is reported, as measured by desiredAssignment's own `computeMs`.
 *
 * Usage: npm run build:ts && node dist/bench/probes/reference-timing.js [--runs 5] [--engine reference]
 */
import { cpus, loadavg } from 'node:os';
import { desiredAssignment, type AssignmentInput, type EngineName } from '../../src/engine.js';
import { prng } from '../../src/prng.js';
import { median } from '../stats.js';
import { benchArgs, numberArg } from '../args.js';

function coldInput(splitCount: number, memberCount: number, seed: number): AssignmentInput {
  const rand = prng(seed);
  const lognormal = (): number => {
    const u = rand() || 1e-12;
    return Math.round(64 * 2 ** 20 * Math.exp(Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * rand())));
  };
  const cap = 2 * Math.ceil(splitCount / memberCount);
  return {
    seed: `timing-${seed}`,
    members: Array.from({ length: memberCount }, (_, i) => ({ id: `member-${i}`, cap })),
    splits: Array.from({ length: splitCount }, (_, i) => ({ id: `split-${String(i).padStart(6, '0')}`, weight: lognormal() })),
  };
}

/** `cold` settled on `assignment`, plus one new member with the same cap. */
function joinInput(cold: AssignmentInput, assignment: Record<string, string[]>): AssignmentInput {
  const owner = new Map<string, string>();
  for (const [m, ids] of Object.entries(assignment)) for (const id of ids) owner.set(id, m);
  return {
    ...cold,
    members: [...cold.members, { id: 'member-new', cap: cold.members[0]!.cap! }],
    splits: cold.splits.map((s) => {
      const o = owner.get(s.id) ?? null;
      return { ...s, leaseOwner: o, recordOwner: o, previous: o };
    }),
  };
}

function main(): void {
  const { values: args } = benchArgs({ runs: { type: 'string' }, engine: { type: 'string' } });
  const runs = numberArg('runs', args.runs, 5);
  const engine = (args.engine ?? 'reference') as EngineName;
  console.log(`${engine} engine, median of ${runs} runs after one warm-up (node ${process.version}, load average ${loadavg()[0]!.toFixed(2)} on ${cpus().length} CPUs)\n`);
  console.log('| scenario | splits  | members | median ms | min ms | max ms | improving moves |');
  console.log('|----------|---------|---------|-----------|--------|--------|-----------------|');
  for (const scenario of ['cold', 'join'] as const) for (const splits of [10_000, 100_000]) {
    for (const members of [100, 1_000]) {
      const cold = coldInput(splits, members, 1);
      const input = scenario === 'cold' ? cold : joinInput(cold, desiredAssignment(cold, { engine }).assignment);
      desiredAssignment(input, { engine });
      const times: number[] = [];
      let moves = 0;
      for (let i = 0; i < runs; i++) {
        const r = desiredAssignment(input, { engine });
        times.push(r.stats.computeMs);
        moves = r.stats.improvingMoves;
      }
      const cells = [
        scenario.padEnd(8),
        splits.toLocaleString('en').padEnd(7),
        members.toLocaleString('en').padEnd(7),
        median(times).toFixed(1).padStart(9),
        Math.min(...times).toFixed(1).padStart(6),
        Math.max(...times).toFixed(1).padStart(6),
        String(moves).padStart(15),
      ];
      console.log(`| ${cells.join(' | ')} |`);
    }
  }
}

main();
