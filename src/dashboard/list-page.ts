/**
 * The dashboard's job list page: plain HTML, inline CSS and vanilla JS, as
 * the job page is (inspect/dashboard-page.ts, whose style it extends). The
 * script reads `api/jobs` every two seconds (the server reads the store at
 * most that often, whatever the number of viewers: job-list.ts) and redraws
 * the table; each job links to its own page, `job/<name>/`.
 *
 * Invariants:
 * - Static: job names, kinds and problems arrive as data and are put in the
 *   DOM with textContent; a link's href is built from an encoded name.
 * - Every URL is relative to the dashboard's base (`data-home` on the body:
 *   '' at the base, '../' one level down), so the page works wherever a host
 *   mounts the dashboard.
 * - app.ts hashes LIST_SCRIPT and LIST_STYLE into the page's
 *   Content-Security-Policy.
 */
import { DASHBOARD_STYLE, PAGE_HELPERS } from '../inspect/dashboard-page.js';

export const LIST_STYLE = `${DASHBOARD_STYLE}
main.list { display: block; }
td.job a { color: var(--blue); text-decoration: none; }
td.job a:hover { text-decoration: underline; }
td.progresscell { width: 28%; }
.st-running, .st-planning { color: var(--blue); border-color: var(--blue); }
.st-complete { color: var(--green); border-color: var(--green); }
.st-stalled, .st-unknown { color: var(--red); border-color: var(--red); }
.st-paused, .st-submitted { color: var(--yellow); border-color: var(--yellow); }
`;

export const LIST_SCRIPT = `
${PAGE_HELPERS}const home = document.body.dataset.home || '';
const num = (n) => (typeof n === 'number' && Number.isFinite(n) ? n : 0);
const clock = (ms) => new Date(ms).toLocaleTimeString([], { hour12: false });
// A job named '.' or '..' would be a path step: a '~' (in no job name) keeps it a name (app.ts strips it).
const segment = (job) => (/^\\.+$/.test(job) ? '~' + job : encodeURIComponent(job));
function rate(r) {
  if (typeof r !== 'number') return '–';
  return r >= 1 ? r.toFixed(1) + ' /s' : (r * 60).toFixed(1) + ' /min';
}
const finished = (state) => state === 'complete' || state === 'stalled';

function row(j) {
  const planned = num(j.planned);
  const fraction = planned > 0 ? num(j.done) / planned : 0;
  const name = el('td', { class: 'job id' }, el('a', { href: home + 'job/' + segment(j.job) + '/', text: j.job }));
  if (j.problem) name.append(el('div', { class: 'reason', text: j.problem }));
  const bar = el('div', { class: 'bar progress' }, el('span', { class: 'fill', style: { width: (fraction * 100).toFixed(1) + '%' } }));
  return el('tr', { 'data-job': j.job, 'data-state': j.state },
    name,
    el('td', { class: 'kind', text: j.kind ?? '–' }),
    el('td', {}, el('span', { class: 'badge st-' + j.state, text: j.state })),
    el('td', { class: 'progresscell' }, bar),
    el('td', { class: 'num done', text: num(j.done) + ' / ' + planned + (j.openPlan && j.state !== 'submitted' ? '+' : '') }),
    el('td', { class: 'num', text: String(num(j.quarantined)) }),
    el('td', { class: 'num rate', text: finished(j.state) ? '–' : rate(j.ratePerSecond) }),
    el('td', { class: 'num eta', text: typeof j.etaMs === 'number' ? wait(j.etaMs) + (j.openPlan ? ' (so far)' : '') : '–' }),
    el('td', { class: 'num', text: String(num(j.members)) }));
}

function render(view) {
  $('root').textContent = 'jobs under ' + view.root + '/';
  $('updated').textContent = 'updated ' + clock(view.generatedAt);
  const banners = $('banners');
  banners.replaceChildren();
  if (view.error) banners.append(el('div', { class: 'banner error', text: view.error }));
  const jobs = view.jobs || [];
  $('jobs-count').textContent = String(jobs.length);
  $('jobs-body').replaceChildren(...(jobs.length === 0
    ? [el('tr', {}, el('td', { colspan: 9, class: 'empty', text: 'no jobs under ' + view.root + '/ yet' }))]
    : jobs.map(row)));
}

async function refresh() {
  try {
    const res = await fetch(home + 'api/jobs', { cache: 'no-store' });
    if (!res.ok) throw new Error(await res.text());
    render(await res.json());
  } catch (e) {
    $('banners').replaceChildren(el('div', { class: 'banner error', text: 'cannot read the job list: ' + e.message }));
  } finally {
    setTimeout(refresh, 2000);
  }
}
refresh();
`;

/** The page, for a dashboard whose base is `home` relative to where the page is served. */
export function listPageHtml(home: string): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>splitfleet · jobs</title>
<link rel="icon" href="data:,">
<style>${LIST_STYLE}</style>
</head>
<body data-home="${home}">
<header>
  <h1 id="root">splitfleet</h1>
  <span id="updated" class="dim"></span>
</header>
<div id="banners"></div>
<main class="list">
  <section>
    <h2>Jobs <span class="dim" id="jobs-count"></span></h2>
    <table>
      <thead><tr><th>job</th><th>kind</th><th>state</th><th>progress</th><th>done / planned</th><th>quarantined</th><th>rate</th><th>ETA</th><th>members</th></tr></thead>
      <tbody id="jobs-body"></tbody>
    </table>
  </section>
</main>
<script>${LIST_SCRIPT}</script>
</body>
</html>
`;
}
