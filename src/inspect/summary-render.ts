/**
 * Renders a SummaryReport (summary-read.ts) as text: which summary it is and
 * how old, leader, plan, progress, splits and weights by state, members with
 * their lane budgets, revocations in flight, and where the per-split views
 * are (`--splits`, `--split ID`).
 *
 * Pure: report in, string out. Every text from the store goes through
 * `printable` (decision 0030); colour only when asked.
 */
import { printableDeep } from './printable.js';
import { formatWait, formatWeight, planLines } from './render.js';
import type { SummaryReport } from './summary-read.js';
import { displayWidth, padEndDisplay, padStartDisplay } from './width.js';

const SGR = { bold: '1', dim: '2', red: '31', green: '32', yellow: '33' } as const;

/** The summary report as text, ending with a newline. */
export function renderSummaryReport(raw: SummaryReport, options: { color?: boolean; barWidth?: number; maxMembers?: number } = {}): string {
  const report = printableDeep(raw);
  const color = options.color ?? false;
  const c = (code: keyof typeof SGR, s: string) => (color ? `\x1b[${SGR[code]}m${s}\x1b[0m` : s);
  const out: string[] = [];
  out.push(`${c('bold', `job ${report.job}`)} under ${report.root}/ (prefix ${report.prefix}, revision ${report.revision})`);
  out.push(`source     the leader's summary (generation ${report.summary.generation}, written ${formatWait(report.summary.ageMs)} ago; `
    + 'per split: --splits, --split ID)');
  const l = report.leader;
  out.push(l === null
    ? 'leader     none: the job has finished and its fleet has stopped'
    : `leader     ${l.instance}, generation ${l.generation}${l.live ? '' : c('yellow', ' (no presence key: departing)')}`);
  out.push(...planLines(report, c, options.barWidth ?? 30));
  const s = report.splits;
  const w = report.weights;
  out.push(`splits     queued ${s.queued}  backoff ${s.backoff}  held ${s.held}  completed ${s.completed}  `
    + `${s.quarantined > 0 ? c('red', `quarantined ${s.quarantined}`) : 'quarantined 0'}  (total ${s.total})`);
  out.push(`weight     queued ${formatWeight(w.queued)}  backoff ${formatWeight(w.backoff)}  held ${formatWeight(w.held)}  `
    + `completed ${formatWeight(w.completed)}  quarantined ${formatWeight(w.quarantined)}  (total ${formatWeight(w.total)})`);
  // Residuals (decision 0063) are splits like the others, counted in the states above.
  if (s.residuals > 0) out.push(`divided    ${s.residuals} residual${s.residuals === 1 ? '' : 's'} of running splits divided while lanes would idle (inspect --split ID shows parent and residuals)`);
  if (s.parked > 0) out.push(c('red', `parked     ${s.parked} split${s.parked === 1 ? '' : 's'} with a record this build cannot read (inspect --splits names them)`));
  // The leader's own words (health's `degraded` reason): which splits, and why (issue 49, partial stalls).
  if (report.stuck) out.push(c('red', `stuck      ${report.stuck}`));
  out.push(`in flight  ${s.revoking === 0 ? 'no revocations' : c('yellow', `${s.revoking} revocation${s.revoking === 1 ? '' : 's'} (held, no longer assigned)`)}`);

  out.push('');
  out.push(c('bold', `members (${report.members.length} live; the summary counted ${report.lanes.members} with ${report.lanes.total} lanes)`));
  const max = options.maxMembers ?? 50;
  const rows = [['instance', 'lanes', ''], ...report.members.slice(0, max).map((m) => [`${m.instance}${m.leader ? ' *' : ''}`, String(m.maxInFlight), m.leader ? 'leader' : ''])];
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => displayWidth(r[i]!))));
  rows.forEach((r, i) => {
    const line = r.map((cell, j) => (j === 1 ? padStartDisplay(cell, widths[j]!) : padEndDisplay(cell, widths[j]!))).join('  ').trimEnd();
    out.push(`  ${i === 0 ? c('dim', line) : line}`);
  });
  if (report.members.length > max) out.push(`  +${report.members.length - max} more`);
  if (report.problems.length > 0) {
    out.push('');
    out.push(c('red', `problems (${report.problems.length} records this build cannot read)`));
    for (const line of report.problems.slice(0, 20)) out.push(`  ${line}`);
    if (report.problems.length > 20) out.push(`  +${report.problems.length - 20} more`);
  }
  return `${out.join('\n')}\n`;
}
