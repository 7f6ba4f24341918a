/**
 * What the leader ran in its longest stalls: reads a directory written by
 * `bench:fleet --leader-prof DIR` (the leader's CPU profile and its
 * stalls-<run>.jsonl, on-cpu-stalls.ts) and prints, for each of the `--top`
 * stalls with the most of the leader's own CPU, the functions sampled in it:
 * self time first, then the call paths by inclusive samples.
 *
 * Why: a long turn in a profile is hard to see (turns that follow each other
 * through setImmediate leave no idle sample between them), and a loop delay
 * alone cannot tell a long task from time spent waiting for a core.
 *
 *   node dist/bench/stall-profile.js DIR [--top 10] [--run 10M]
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Stall } from './on-cpu-stalls.js';
import { benchArgs } from './args.js';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}
interface Profile {
  nodes: ProfileNode[];
  startTime: number;
  samples: number[];
  timeDeltas: number[];
}

const { values, positionals } = benchArgs({ top: { type: 'string', default: '10' }, run: { type: 'string' } });
const dir = positionals[0];
if (dir === undefined) throw new Error('usage: stall-profile DIR [--top 10] [--run LABEL]');
const files = readdirSync(dir);
const profileFiles = files.filter((f) => f.endsWith('.cpuprofile'));
const stallFiles = files.filter((f) => f.startsWith('stalls-') && f.endsWith('.jsonl') && (values.run === undefined || f.includes(values.run)));
if (profileFiles.length === 0 || stallFiles.length === 0) throw new Error(`${dir}: needs a .cpuprofile and a stalls-*.jsonl (bench:fleet --leader-prof ${dir})`);

/** A profile with each sample's time and each node's parent. One per leader process (a baseline run has its own). */
interface Loaded { profile: Profile; byId: Map<number, ProfileNode>; parent: Map<number, number>; times: number[] }
const loaded: Loaded[] = profileFiles.map((f) => {
  const profile = JSON.parse(readFileSync(join(dir, f), 'utf8')) as Profile;
  const parent = new Map<number, number>();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  let clock = profile.startTime;
  return { profile, byId: new Map(profile.nodes.map((n) => [n.id, n])), parent, times: profile.timeDeltas.map((d) => (clock += d)) };
});
const name = (n: ProfileNode): string => `${n.callFrame.functionName || '(anonymous)'} ${n.callFrame.url.split('/').slice(-2).join('/')}:${n.callFrame.lineNumber + 1}`;

const stalls = stallFiles.flatMap((f) => readFileSync(join(dir, f), 'utf8').trim().split('\n').filter(Boolean).map((l) => JSON.parse(l) as Stall));
stalls.sort((a, b) => b.ownMs - a.ownMs);
const top = (m: Map<string, number>, k: number) => [...m].sort((a, b) => b[1] - a[1]).slice(0, k);
for (const s of stalls.slice(0, Number(values.top))) {
  // The stall ends at endUs; it began its delay (plus the timer's 10 ms interval) before.
  const from = s.endUs - (s.delayMs + 10) * 1000;
  const l = loaded.find((x) => x.times.length > 0 && x.times[0]! <= s.endUs && s.endUs <= x.times[x.times.length - 1]!);
  if (l === undefined) {
    console.log(`\n${s.ownMs} ms own of a ${s.delayMs} ms stall: in no profile`);
    continue;
  }
  const { profile, byId, parent, times } = l;
  const self = new Map<string, number>();
  const incl = new Map<string, number>();
  let n = 0;
  for (let i = 0; i < profile.samples.length; i++) {
    if (times[i]! < from || times[i]! > s.endUs) continue;
    n++;
    const leaf = name(byId.get(profile.samples[i]!)!);
    self.set(leaf, (self.get(leaf) ?? 0) + 1);
    const seen = new Set<string>();
    for (let id: number | undefined = profile.samples[i]; id !== undefined; id = parent.get(id)) {
      const k = name(byId.get(id)!);
      if (k.startsWith('(root)') || seen.has(k)) continue;
      seen.add(k);
      incl.set(k, (incl.get(k) ?? 0) + 1);
    }
  }
  const faults = s.faults === undefined ? '' : `, ${s.faults} page faults`;
  console.log(`\n${s.ownMs} ms own of a ${s.delayMs} ms stall${faults}, +${((s.endUs - profile.startTime) / 1e6).toFixed(1)} s into the profile: ${n} samples`);
  console.log(`  self: ${top(self, 5).map(([k, v]) => `${v} ${k}`).join(' | ')}`);
  for (const [k, v] of top(incl, 12)) console.log(`  ${String(v).padStart(5)}  ${k}`);
}
