/**
 * Renders a JobReport as text for a terminal or a log: a header (leader,
 * plan, progress, splits by status), a members table (lanes, held and
 * assigned load by weight), each instance's assignment against what it holds,
 * revocations in flight, quarantined splits and problems.
 *
 * Pure: report in, string out. Colour only when asked (ANSI SGR codes), and
 * the only control characters in the output are those codes and newlines:
 * every text from the store goes through `printable` first (decision 0030).
 */
import { printable, printableDeep } from './printable.js';
import { displayWidth, padEndDisplay, padStartDisplay } from './width.js';
import type { JobReport, MemberReport } from './report.js';

export interface RenderOptions {
  /** Use ANSI colours. Default false. */
  color?: boolean;
  /** How many split ids to list per line before "+N more". Default 8. */
  maxIds?: number;
  /** Width of the progress bar, in cells. Default 30. */
  barWidth?: number;
}

const SGR = { bold: '1', dim: '2', red: '31', green: '32', yellow: '33', cyan: '36' } as const;

/** Integer with thousands separators (`12 345 678`); weights are integers. */
export function formatWeight(n: number): string {
  const s = String(Math.round(n));
  return s.replace(/\B(?=(\d{3})+(?!\d))/g, ' ');
}

/** A bar of `width` cells, `fraction` of them full. */
export function bar(fraction: number, width: number): string {
  const f = Math.max(0, Math.min(1, Number.isFinite(fraction) ? fraction : 0));
  const full = Math.round(f * width);
  return '█'.repeat(full) + '░'.repeat(width - full);
}

// By display width, not .length: a CJK or emoji instance id takes two cells a character (width.ts).
const pad = padEndDisplay;
const padLeft = padStartDisplay;

/** Lists ids, at most `max` of them, then "+N more"; each id printable (it came from the store). */
export function idList(ids: readonly string[], max: number): string {
  if (ids.length === 0) return '—';
  const shown = ids.slice(0, max).map(printable).join(' ');
  return ids.length > max ? `${shown} +${ids.length - max} more` : shown;
}

/** Wraps text in an SGR code, or leaves it plain when colour is off. */
type Paint = (code: keyof typeof SGR, s: string) => string;

/**
 * The report as text, ending with a newline: the printed page, section by section in the order they
 * print (docs/inspect-example.txt), each section a function below.
 */
export function renderReport(raw: JobReport, options: RenderOptions = {}): string {
  // Every string of the report escaped once, here, before anything is measured or printed: a field
  // added later cannot be forgotten, and table widths are those of the text as printed. Id lists
  // stay raw (they can be long) and are escaped as idList shows them.
  const report = printableReport(raw);
  const color = options.color ?? false;
  const maxIds = options.maxIds ?? 8;
  const c: Paint = (code, s) => (color ? `\x1b[${SGR[code]}m${s}\x1b[0m` : s);
  const out: string[] = [];

  out.push(`${c('bold', `job ${report.job}`)} under ${report.root}/ (prefix ${report.prefix}, revision ${report.revision})`);
  if (!report.exists) {
    out.push('nothing is stored under this prefix: no such job (check --root and --job)');
    return `${out.join('\n')}\n`;
  }
  out.push(...headerLines(report, c, options.barWidth ?? 30));
  out.push('', ...memberTable(report, c));
  out.push('', ...assignmentLines(report, c, maxIds));
  out.push('', ...attentionLines(report, c));
  return `${out.join('\n')}\n`;
}

/** Source, leader, plan, progress, operator actions and the splits by status, a line each. */
function headerLines(report: JobReport, c: Paint, barWidth: number): string[] {
  const out: string[] = [];
  if (report.source) out.push(`source     every record, split by split (${report.source.reason})`);
  const leader = report.leader;
  out.push(`leader     ${leader
    ? `${leader.instance}, generation ${leader.generation}${leader.live ? '' : c('yellow', ' (no presence key: departing)')}`
    : c('yellow', 'none (an election is due; held work continues)')}`);
  out.push(...planLines(report, c, barWidth));
  const s = report.splits;
  out.push(`splits     queued ${s.queued}  running ${s.running}  draining ${s.draining}  completed ${s.completed}  `
    + `${s.quarantined > 0 ? c('red', `quarantined ${s.quarantined}`) : 'quarantined 0'}  (total ${s.total})`);
  return out;
}

/** What plan, progress and operator lines read: the same in the full report and the summary's. */
export interface PlanFacts {
  plan: { final: boolean; planned: number; seeded: number; generation: number; layout?: 'packed'; buckets?: number } | null | undefined;
  progress: { fraction: number; completed: number; planned: number; verdict?: string | null | undefined };
  paused: boolean;
  evacuated: readonly { instance: string; inForce: boolean }[];
}

/** A packed plan's layout (decision 0037); nothing for the `keys` layout, which every older job has. */
function layoutText(plan: { layout?: 'packed'; buckets?: number }): string {
  if (plan.layout !== 'packed') return '';
  return plan.buckets === undefined ? ', packed layout (no queue pages yet)' : `, packed layout (${plan.buckets} bucket${plan.buckets === 1 ? '' : 's'})`;
}

/** The plan, progress and (when any) operator-action lines, shared by `inspect` from records and from the summary. */
export function planLines(report: PlanFacts, c: (code: 'yellow' | 'green' | 'red', s: string) => string, barWidth: number): string[] {
  const out: string[] = [];
  const plan = report.plan;
  out.push(`plan       ${plan
    ? `${plan.final ? 'final' : 'open (re-planned periodically)'}, ${plan.planned} planned, ${plan.seeded} seeded, generation ${plan.generation}${layoutText(plan)}`
    : c('yellow', 'none yet (no leader has planned)')}`);
  const p = report.progress;
  const verdict = p.verdict === 'complete' ? c('green', ' complete') : p.verdict === 'stalled' ? c('red', ' STALLED (quarantined splits)') : '';
  out.push(`progress   ${bar(p.fraction, barWidth)} ${(p.fraction * 100).toFixed(1)}% by weight, `
    + `${p.completed}/${p.planned} splits completed${verdict}`);
  if (report.paused || report.evacuated.length > 0) {
    const evac = report.evacuated.map((e) => `${e.instance}${e.inForce ? '' : ' (restarted or gone: no longer held)'}`);
    out.push(`operators  ${[
      report.paused ? c('yellow', 'PAUSED (every assignment empty; `splitfleet resume` undoes it)') : '',
      evac.length > 0 ? `evacuated ${evac.join(', ')}` : '',
    ].filter((x) => x !== '').join('; ')}`);
  }
  return out;
}

/** The members table, its columns as wide as their widest cell. */
function memberTable(report: JobReport, c: Paint): string[] {
  const out: string[] = [];
  const live = report.members.filter((m) => m.live).length;
  out.push(c('bold', `members (${live} live${report.members.length > live ? `, ${report.members.length - live} departed` : ''})`));
  const rows: string[][] = [['instance', 'lanes', 'held', 'load held', 'assigned', 'load assigned', '']];
  for (const m of report.members) rows.push(memberRow(m));
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => displayWidth(r[i]!))));
  rows.forEach((r, i) => {
    const line = r.map((cell, j) => (j === 0 || j === r.length - 1 ? pad(cell, widths[j]!) : padLeft(cell, widths[j]!))).join('  ').trimEnd();
    out.push(`  ${i === 0 ? c('dim', line) : line}`);
  });
  return out;
}

/** Each member's assignment against what it holds, claims, withholds and is revoking. */
function assignmentLines(report: JobReport, c: Paint, maxIds: number): string[] {
  const out: string[] = [c('bold', 'assignment vs holdings')];
  for (const m of report.members) {
    out.push(`  ${m.instance}${m.assigned === null ? '  (no assignment record: holds what it has, claims nothing)' : `  (record of generation ${m.assignmentGeneration})`}`);
    if (m.assigned !== null) out.push(`    assigned  ${idList(m.assigned, maxIds)}`);
    out.push(`    held      ${idList(m.held, maxIds)}`);
    if (m.claiming.length > 0 && m.live) out.push(`    claiming  ${idList(m.claiming, maxIds)}`);
    if (m.claiming.length > 0 && !m.live) out.push(`    ${c('yellow', 'withheld')}  ${idList(m.claiming, maxIds)}  (departed: kept for it during the rebalance delay)`);
    if (m.revoking.length > 0) out.push(`    ${c('yellow', 'revoking')}  ${idList(m.revoking, maxIds)}`);
  }
  return out;
}

/** What needs an eye: revocations in flight, then (when any) splits retrying, quarantined splits, unreadable records, 20 of each. */
function attentionLines(report: JobReport, c: Paint): string[] {
  const out: string[] = [];
  if (report.revocations.length === 0) {
    out.push(`${c('bold', 'revocations in flight')}  none`);
  } else {
    out.push(c('bold', `revocations in flight (${report.revocations.length}: held, no longer assigned)`));
    for (const r of report.revocations) {
      out.push(`  ${r.id}  held by ${r.holder}, ${r.assignedTo === null ? 'assigned to nobody yet' : `now assigned to ${r.assignedTo}`}  (weight ${formatWeight(r.weight)})`);
    }
  }
  if ((report.retrying ?? []).length > 0) {
    out.push('');
    out.push(c('yellow', `retrying (${report.retrying.length}: failed, waiting out the backoff)`));
    for (const r of report.retrying.slice(0, 20)) {
      out.push(`  ${r.id}  retrying in ${formatWait(r.inMs)}, after ${r.attempts} attempt${r.attempts === 1 ? '' : 's'}${r.reason === null ? '' : `: ${r.reason}`}`);
    }
    if (report.retrying.length > 20) out.push(`  +${report.retrying.length - 20} more`);
  }
  if (report.quarantined.length > 0) {
    out.push('');
    out.push(c('red', `quarantined (${report.quarantined.length}: parked until \`splitfleet retry\`)`));
    for (const q of report.quarantined.slice(0, 20)) {
      out.push(`  ${q.id}  after ${q.attempts} attempts${q.reason === null ? '' : `: ${q.reason}`}`);
    }
    if (report.quarantined.length > 20) out.push(`  +${report.quarantined.length - 20} more`);
  }
  if (report.stuck) {
    out.push('');
    out.push(c('red', `stuck      ${report.stuck}`));
  }
  if (report.problems.length > 0) {
    out.push('');
    out.push(c('red', `problems (${report.problems.length} records this build cannot read)`));
    for (const line of report.problems.slice(0, 20)) out.push(`  ${line}`);
    if (report.problems.length > 20) out.push(`  +${report.problems.length - 20} more`);
  }
  return out;
}

/** The report with every string but the (long, sliced when shown) id lists made printable. */
function printableReport(report: JobReport): JobReport {
  const { members, ...rest } = report;
  return {
    ...printableDeep(rest),
    members: members.map(({ assigned, held, claiming, revoking, ...m }) => ({ ...printableDeep(m), assigned, held, claiming, revoking })),
  };
}

function memberRow(m: MemberReport): string[] {
  const name = `${m.instance}${m.leader ? ' *' : ''}`;
  const lanes = m.maxInFlight === null ? '—' : `${m.held.length}/${m.maxInFlight}`;
  const note = m.live ? (m.leader ? 'leader' : '') : 'departed (presence expired)';
  return [name, lanes, String(m.held.length), formatWeight(m.load), m.assigned === null ? '—' : String(m.assigned.length), formatWeight(m.assignedLoad), note];
}

/** A wait as people read it: 850 ms, 4.2 s, 3 min 20 s, 1 h 5 min. */
export function formatWait(ms: number): string {
  if (ms < 1000) return `${Math.max(0, Math.round(ms))} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)} s`;
  const s = Math.round(ms / 1000);
  if (s < 3600) return `${Math.floor(s / 60)} min${s % 60 === 0 ? '' : ` ${s % 60} s`}`;
  const m = Math.round(s / 60);
  return `${Math.floor(m / 60)} h${m % 60 === 0 ? '' : ` ${m % 60} min`}`;
}
