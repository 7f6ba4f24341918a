/**
 * The demo's output: a live frame for a terminal (redrawn in place with ANSI
 * escapes) and plain lines for anything else (a pipe, a CI log).
 *
 * The frame: per-worker load bars by weight held, lanes in use, split states,
 * the job's progress bar, and the latest moves, revocations and chaos as they
 * happen. Pure rendering: state in, text out; the runner writes it.
 */
import { bar } from '../inspect/render.js';
import type { JobReport } from '../inspect/report.js';
import type { MemberState } from './fleet.js';
import type { Narrative } from './observer.js';

export interface FrameState {
  elapsedMs: number;
  title: string;
  report: JobReport;
  members: { instance: string; state: MemberState }[];
  lanes: number;
  unitsProcessed: number;
  units: number;
  leaderChanges: number;
  moves: number;
  revocations: { cooperative: number; forced: number };
  recent: readonly Narrative[];
  /** The weight of one unit, to show loads in units (MiB for the synthetic job). */
  unitWeight: number;
  unitName: string;
}

const MiB = 1048576;

const CODES = { bold: '1', dim: '2', red: '31', green: '32', yellow: '33', blue: '34', magenta: '35', cyan: '36' } as const;
export type Paint = (code: keyof typeof CODES, s: string) => string;
export const paint = (on: boolean): Paint => (code, s) => (on ? `\x1b[${CODES[code]}m${s}\x1b[0m` : s);

/** Seconds with one decimal, right-aligned to 6. */
export function seconds(ms: number): string {
  return `${(ms / 1000).toFixed(1)}s`.padStart(6);
}

const ANSI = /\x1b\[[0-9;?]*[A-Za-z]/g;

/** Visible width of a string (ANSI escapes excluded). */
export function visible(s: string): number {
  return s.replace(ANSI, '').length;
}

/** Cuts `s` to `width` visible characters, keeping escapes (and resetting at the cut). */
export function truncate(s: string, width: number): string {
  if (visible(s) <= width) return s;
  let out = '';
  let n = 0;
  for (let i = 0; i < s.length;) {
    if (s[i] === '\x1b') {
      const m = /^\x1b\[[0-9;?]*[A-Za-z]/.exec(s.slice(i));
      if (m) {
        out += m[0];
        i += m[0].length;
        continue;
      }
    }
    if (n >= width - 1) {
      out += '…';
      break;
    }
    out += s[i];
    n++;
    i++;
  }
  return `${out}\x1b[0m`;
}

const KIND_CODE: Record<Narrative['kind'], keyof typeof CODES> = {
  join: 'green', leave: 'red', leader: 'magenta', move: 'cyan', revoke: 'yellow', claim: 'blue', expire: 'red',
  quarantine: 'red', chaos: 'red', drain: 'yellow', note: 'dim',
};

/** One narrative line. */
export function narrativeLine(n: Narrative, p: Paint): string {
  return `${p('dim', seconds(n.at))}  ${p(KIND_CODE[n.kind], n.kind.padEnd(10))} ${n.text}`;
}

/** The live frame, as lines (no trailing newline), each cut to `width`. */
export function frame(s: FrameState, width: number, p: Paint, recentLines = 8): string[] {
  const r = s.report;
  const lines: string[] = [];
  lines.push(`${p('bold', 'splitfleet demo')} ${p('bold', seconds(s.elapsedMs))}  ${s.title}`);
  const leader = r.leader
    ? `${p('magenta', r.leader.instance)} (generation ${r.leader.generation})`
    : r.progress.verdict !== null ? p('dim', 'none (job finished)') : p('yellow', 'none (election due)');
  lines.push(`leader ${leader} · leader changes ${s.leaderChanges} · moves ${s.moves} · `
    + `revocations ${s.revocations.cooperative} cooperative / ${s.revocations.forced} forced`);
  lines.push('');

  const byInstance = new Map(r.members.map((m) => [m.instance, m]));
  const names = [...new Set([...s.members.map((m) => m.instance), ...r.members.map((m) => m.instance)])]
    .sort((a, b) => a.localeCompare(b, 'en', { numeric: true }));
  const state = new Map(s.members.map((m) => [m.instance, m.state]));
  const maxLoad = Math.max(1, ...r.members.map((m) => m.load));
  const barWidth = Math.max(10, Math.min(40, width - 52));
  lines.push(p('dim', ` ${'worker'.padEnd(8)} ${'state'.padEnd(8)} lanes  ${`load held (${s.unitName})`.padEnd(barWidth + 7)} notes`));
  for (const name of names) {
    const m = byInstance.get(name);
    const st = state.get(name) ?? (m?.live ? 'running' : 'gone');
    const shown = st === 'killed' && !m?.live ? 'dead' : st;
    const stCode: keyof typeof CODES = st === 'killed' || st === 'failed' ? 'red' : st === 'stalled' ? 'yellow' : st === 'finished' ? 'dim' : 'green';
    const star = r.leader?.instance === name ? p('magenta', '★') : ' ';
    const held = m?.held.length ?? 0;
    const lanes = m?.maxInFlight != null ? `${held}/${m.maxInFlight}` : held > 0 ? `${held}/?` : '—';
    const load = m?.load ?? 0;
    const loadText = `${Math.round(load / s.unitWeight)}`.padStart(5);
    const notes: string[] = [];
    if (m && m.revoking.length > 0) notes.push(p('yellow', `draining ${m.revoking.length}`));
    if (m && m.live && m.claiming.length > 0) notes.push(p('blue', `claiming ${m.claiming.length}`));
    if (m && !m.live && m.claiming.length > 0) notes.push(p('yellow', `${m.claiming.length} withheld (rebalance delay)`));
    if (m && !m.live && held > 0) notes.push(p('red', 'lease still live'));
    const barText = st === 'killed' && held === 0 ? ' '.repeat(barWidth) : p(st === 'running' ? 'cyan' : 'dim', bar(load / maxLoad, barWidth));
    lines.push(` ${name.padEnd(6)}${star} ${p(stCode, shown.padEnd(8))} ${lanes.padStart(5)}  ${barText} ${loadText}  ${notes.join(' ')}`);
  }
  lines.push('');

  const c = r.splits;
  lines.push(`splits  queued ${c.queued} · running ${p('cyan', String(c.running))} · draining ${c.draining > 0 ? p('yellow', String(c.draining)) : '0'} · `
    + `done ${p('green', String(c.completed))} · quarantined ${c.quarantined > 0 ? p('red', String(c.quarantined)) : '0'}   (of ${r.plan?.planned ?? c.total})`);
  const fraction = s.units > 0 ? s.unitsProcessed / s.units : 0;
  const jobBar = Math.max(10, Math.min(50, width - 50));
  lines.push(`job     ${p('green', bar(fraction, jobBar))} ${(fraction * 100).toFixed(0).padStart(3)}%  ${s.unitsProcessed}/${s.units} units · `
    + `${c.completed}/${r.plan?.planned ?? c.total} splits`);
  lines.push('');
  lines.push(p('bold', 'recent'));
  const recent = s.recent.slice(-recentLines);
  for (const n of recent) lines.push(`  ${narrativeLine(n, p)}`);
  for (let i = recent.length; i < recentLines; i++) lines.push('');
  return lines.map((l) => truncate(l, width));
}

/** One plain progress line. */
export function progressLine(s: FrameState): string {
  const r = s.report;
  const c = r.splits;
  const pct = s.units > 0 ? Math.floor((s.unitsProcessed / s.units) * 100) : 0;
  const live = r.members.filter((m) => m.live).length;
  return `${seconds(s.elapsedMs)}  progress ${s.unitsProcessed}/${s.units} units (${pct}%), ${c.completed}/${r.plan?.planned ?? c.total} splits done; `
    + `running ${c.running}, draining ${c.draining}, queued ${c.queued}, quarantined ${c.quarantined}; `
    + `${live} workers live; leader ${r.leader?.instance ?? 'none'}`;
}

export { MiB };
