/**
 * An experiment behind docs/decisions/0001-move-rule.md: join and leave churn
 * of three improving-move rules on the workload of bench/quality.ts.
 *
 * This is NOT the engine. It is a small, deliberately naive model (O(n) scans
 * per move, no caps, no scaled units, ties by member index) of the reference's
 * sticky and fill passes with a swappable improve pass:
 *
 *   best-gain    the move (from, to, s) that most reduces the sum of squared
 *                loads: to = the lightest member, s ≈ (load(from) − load(to)) / 2
 *   heaviest     from = the heaviest member that has an admissible move,
 *                to = the lightest, s = the reference's split choice
 *   keeps-most   from = the member that keeps the most load after giving its
 *                lightest split (the reference's rule), same split choice
 *
 * The split choice: the heaviest split that takes neither side across the
 * mean, else the donor's lightest. Every rule admits a move only when
 * load(from) > load(to) + w, so each ends locally optimal. The keeps-most
 * row should match bench/quality.ts's reference figures closely (tie-breaks
 * differ).
 *
 * Usage: npm run build:ts && node dist/bench/probes/move-rules.js [--seeds 7]
 */
import { prng } from '../../src/prng.js';
import { median } from '../stats.js';
import { benchArgs, numberArg } from '../args.js';

type Rule = 'best-gain' | 'heaviest' | 'keeps-most';
const RULES: Rule[] = ['best-gain', 'heaviest', 'keeps-most'];

/** owner[i] = member index of split i (weights sorted heaviest first), -1 = unowned. */
function decide(w: number[], m: number, owner0: Int32Array, rule: Rule): { owner: Int32Array; moves: number } {
  const n = w.length;
  const owner = Int32Array.from(owner0);
  const load = new Float64Array(m);
  for (let i = 0; i < n; i++) if (owner[i]! >= 0) load[owner[i]!]! += w[i]!;
  // Fill, heaviest first, to the least-loaded member.
  for (let i = 0; i < n; i++) {
    if (owner[i]! >= 0) continue;
    let to = 0;
    for (let j = 1; j < m; j++) if (load[j]! < load[to]!) to = j;
    owner[i] = to;
    load[to]! += w[i]!;
  }
  const mean = load.reduce((a, b) => a + b, 0) / m;
  let moves = 0;
  for (;;) {
    // Each member's splits (indices ascending = weights non-increasing).
    const held: number[][] = Array.from({ length: m }, () => []);
    for (let i = 0; i < n; i++) held[owner[i]!]!.push(i);
    let to = 0;
    for (let j = 1; j < m; j++) if (load[j]! < load[to]!) to = j;
    const choose = (from: number): number => {
      const list = held[from]!;
      const room = Math.min(load[from]! - mean, mean - load[to]!);
      for (const i of list) if (w[i]! <= room) return i;
      return list[list.length - 1]!;
    };
    let pick = -1;
    let from = -1;
    if (rule === 'best-gain') {
      let best = 0;
      for (let j = 0; j < m; j++) {
        if (j === to) continue;
        for (const i of held[j]!) {
          const gain = w[i]! * (load[j]! - load[to]! - w[i]!);
          if (gain > best) {
            best = gain;
            pick = i;
            from = j;
          }
        }
      }
    } else {
      const order = Array.from({ length: m }, (_, j) => j).filter((j) => held[j]!.length > 0);
      const key = (j: number): number =>
        rule === 'heaviest' ? load[j]! : load[j]! - w[held[j]![held[j]!.length - 1]!]!;
      order.sort((a, b) => key(b) - key(a) || a - b);
      for (const j of order) {
        if (j === to) continue;
        const lightest = held[j]![held[j]!.length - 1]!;
        if (!(load[j]! > load[to]! + w[lightest]!)) {
          if (rule === 'keeps-most') break; // no donor keeps more: nothing is admissible
          continue;
        }
        from = j;
        pick = choose(j);
        break;
      }
    }
    if (pick < 0) break;
    owner[pick] = to;
    load[from]! -= w[pick]!;
    load[to]! += w[pick]!;
    moves++;
  }
  return { owner, moves };
}

function main(): void {
  const seeds = numberArg('seeds', benchArgs({ seeds: { type: 'string' } }).values.seeds, 7);
  const members = 200;
  console.log(`Move rules, ${members} members, lognormal weights (σ = 1), no caps, seeds 1–${seeds}: median (worst)\n`);
  console.log('| splits/member | rule       | join moved/newcomer | join splits moved | leave moved/former | leave splits moved |');
  console.log('|---------------|------------|---------------------|-------------------|--------------------|--------------------|');
  for (const perMember of [20, 50]) {
    for (const rule of RULES) {
      const join: number[] = [];
      const joinCount: number[] = [];
      const leave: number[] = [];
      const leaveCount: number[] = [];
      for (let seed = 1; seed <= seeds; seed++) {
        const rand = prng(seed);
        const w = Array.from({ length: members * perMember }, () => {
          const u = rand() || 1e-12;
          return Math.round(64 * 2 ** 20 * Math.exp(Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * rand())));
        }).sort((a, b) => b - a);
        const cold = decide(w, members, new Int32Array(w.length).fill(-1), rule).owner;
        // Join: member `members` is new.
        const joined = decide(w, members + 1, cold, rule).owner;
        let moved = 0;
        let count = 0;
        let newcomer = 0;
        for (let k = 0; k < w.length; k++) {
          if (joined[k] !== cold[k]) (moved += w[k]!), count++;
          if (joined[k] === members) newcomer += w[k]!;
        }
        join.push(moved / newcomer);
        joinCount.push(count);
        // Leave: a seeded member goes; the others are renumbered.
        const leaver = Math.floor(rand() * members);
        const renumber = (j: number): number => (j === leaver ? -1 : j > leaver ? j - 1 : j);
        const before = cold.map(renumber);
        const left = decide(w, members - 1, before, rule).owner;
        moved = 0;
        count = 0;
        let former = 0;
        for (let k = 0; k < w.length; k++) {
          if (cold[k] === leaver) former += w[k]!;
          if (left[k] !== before[k]) (moved += w[k]!), count++;
        }
        leave.push(moved / former);
        leaveCount.push(count);
      }
      const f = (xs: number[]): string => `${median(xs).toFixed(2)} (${Math.max(...xs).toFixed(2)})`;
      console.log(
        `| ${String(perMember).padEnd(13)} | ${rule.padEnd(10)} | ${f(join).padEnd(19)} | ${String(median(joinCount)).padEnd(17)} | ${f(leave).padEnd(18)} | ${String(median(leaveCount)).padEnd(18)} |`,
      );
    }
  }
}

main();
