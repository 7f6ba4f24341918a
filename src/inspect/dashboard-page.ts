/**
 * The dashboard's one page: plain HTML, inline CSS and inline vanilla JS, no
 * build chain. The script subscribes to `/events` (Server-Sent Events, one
 * `state` message per refresh, each a whole DashboardView as JSON) and
 * redraws; it falls back to nothing else: EventSource reconnects by itself.
 *
 * Invariants:
 * - The page is static: everything job-specific arrives as data and is put
 *   in the DOM with textContent, never as markup (split ids and failure
 *   reasons come from the store, written by anyone with access to it).
 * - It reads fields it does not know defensively (optional access), so a
 *   report with more fields (`paused`, `evacuated`) or fewer still renders.
 * - dashboard/app.ts hashes DASHBOARD_SCRIPT and DASHBOARD_STYLE into its
 *   Content-Security-Policy: the page runs exactly this script and no other.
 *   What differs between two servings (where the job list is, whether the
 *   host enabled actions) is in the body's data attributes, never the script.
 * - Every URL is relative to the page (`events`, `api/split`,
 *   `actions/<name>`), so it works wherever a host mounts the dashboard.
 * - Operator buttons exist only when the body says `data-actions="true"`;
 *   the server refuses actions it was not given anyway (dashboard/actions.ts).
 */

export const DASHBOARD_STYLE = `
:root { --bg:#0f1419; --panel:#171e26; --line:#263241; --fg:#d9e1ea; --dim:#7f8ea0; --green:#3fb950; --blue:#4d9de0;
  --yellow:#d8a526; --red:#f0524f; --magenta:#c678dd; --cyan:#39c5cf; font-family: ui-sans-serif, system-ui, sans-serif; }
* { box-sizing: border-box; }
body { margin: 0; background: var(--bg); color: var(--fg); font-size: 14px; }
header { padding: 14px 20px; border-bottom: 1px solid var(--line); display: flex; flex-wrap: wrap; gap: 8px 24px; align-items: baseline; }
header h1 { font-size: 18px; margin: 0; }
.dim { color: var(--dim); }
.mono, td.id, .log .text { font-family: ui-monospace, SFMono-Regular, Menlo, monospace; }
td.id { white-space: nowrap; }
main { display: grid; grid-template-columns: minmax(0, 3fr) minmax(0, 2fr); gap: 16px; padding: 16px 20px; }
section { background: var(--panel); border: 1px solid var(--line); border-radius: 6px; padding: 12px 14px; min-width: 0; }
section h2 { font-size: 13px; text-transform: uppercase; letter-spacing: .06em; color: var(--dim); margin: 0 0 10px; font-weight: 600; }
.wide { grid-column: 1 / -1; }
section h2.gap { margin-top: 14px; }
.banner { margin: 12px 20px 0; padding: 8px 12px; border-radius: 6px; border: 1px solid var(--yellow); color: var(--yellow); }
.banner.error { border-color: var(--red); color: var(--red); }
.badge { display: inline-block; padding: 0 6px; border-radius: 9px; font-size: 11px; line-height: 18px; border: 1px solid var(--line); margin-left: 4px; }
.badge.leader { color: var(--cyan); border-color: var(--cyan); }
.badge.gone { color: var(--red); border-color: var(--red); }
.badge.flag { color: var(--yellow); border-color: var(--yellow); }
.badge.ok { color: var(--green); border-color: var(--green); }
.badge.bad { color: var(--red); border-color: var(--red); }
.bar { position: relative; height: 14px; background: #0b1015; border: 1px solid var(--line); border-radius: 3px; overflow: hidden; }
.bar .fill { position: absolute; inset: 0 auto 0 0; background: var(--blue); }
.bar .mark { position: absolute; top: 0; bottom: 0; width: 2px; background: var(--yellow); }
.bar.progress { height: 22px; }
.bar.progress .fill { background: var(--green); }
.stack { display: flex; height: 22px; border-radius: 3px; overflow: hidden; border: 1px solid var(--line); background: #0b1015; }
.stack span { height: 100%; }
.s-queued { background: #56657a; } .s-running { background: var(--blue); } .s-draining { background: var(--yellow); }
.s-completed { background: var(--green); } .s-quarantined { background: var(--red); }
.legend { display: flex; flex-wrap: wrap; gap: 6px 16px; margin-top: 8px; }
.legend i { display: inline-block; width: 10px; height: 10px; border-radius: 2px; margin-right: 5px; vertical-align: -1px; }
table { width: 100%; border-collapse: collapse; }
th { text-align: left; font-weight: 500; color: var(--dim); font-size: 12px; padding: 4px 6px; border-bottom: 1px solid var(--line); }
td { padding: 5px 6px; border-bottom: 1px solid #1d2631; vertical-align: middle; }
tr.gone td { opacity: .55; }
td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
td.loadcell { width: 38%; }
.lanes { display: inline-flex; gap: 2px; vertical-align: middle; }
.lanes b { width: 8px; height: 12px; border-radius: 1px; background: #2a3644; }
.lanes b.on { background: var(--blue); }
.log { list-style: none; margin: 0; padding: 0; max-height: 420px; overflow-y: auto; }
.log li { padding: 3px 0; border-bottom: 1px solid #1d2631; display: flex; gap: 8px; }
.log .t { color: var(--dim); font-variant-numeric: tabular-nums; white-space: nowrap; }
.log .k { min-width: 92px; font-size: 11px; text-transform: uppercase; letter-spacing: .04em; padding-top: 2px; }
.k-move { color: var(--magenta); } .k-revocation-start, .k-revocation-end { color: var(--yellow); } .k-join { color: var(--green); }
.k-leave, .k-quarantine, .k-failed { color: var(--red); } .k-paused, .k-resumed { color: var(--yellow); } .k-leader { color: var(--cyan); } .k-claim { color: var(--blue); } .k-verdict { color: var(--fg); }
.empty { color: var(--dim); font-style: italic; }
.reason { color: #f3a09e; }
.big { font-size: 22px; font-weight: 600; }
a { color: var(--blue); }
button { background: #0b1015; color: var(--fg); border: 1px solid var(--line); border-radius: 4px; padding: 2px 10px; font: inherit; cursor: pointer; }
button:hover { border-color: var(--blue); }
input { background: #0b1015; color: var(--fg); border: 1px solid var(--line); border-radius: 4px; padding: 3px 8px; font: inherit; min-width: 24ch; }
#actions { display: inline-flex; gap: 6px; align-items: baseline; }
#action-result.ok { color: var(--green); }
.fields td:first-child { color: var(--dim); width: 14ch; }
`;

/**
 * What the job page's and the job list's scripts share, in the page: `$`, `el` (an element from
 * props, text set as text, never as HTML) and `wait` (render.ts's formatWait). Written once.
 */
export const PAGE_HELPERS = `'use strict';
const $ = (id) => document.getElementById(id);
const el = (tag, props, ...kids) => {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(props || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === 'text') node.textContent = String(v);
    else if (k === 'class') node.className = v;
    else if (k === 'style') Object.assign(node.style, v);
    else node.setAttribute(k, String(v));
  }
  for (const kid of kids) if (kid !== null && kid !== undefined) node.append(kid);
  return node;
};
/** A wait as people read it (render.ts's formatWait, in the page). */
function wait(ms) {
  if (ms < 1000) return Math.max(0, Math.round(ms)) + ' ms';
  if (ms < 60000) return (ms / 1000).toFixed(1) + ' s';
  const s = Math.round(ms / 1000);
  if (s < 3600) return Math.floor(s / 60) + ' min' + (s % 60 === 0 ? '' : ' ' + (s % 60) + ' s');
  const m = Math.round(s / 60);
  return Math.floor(m / 60) + ' h' + (m % 60 === 0 ? '' : ' ' + (m % 60) + ' min');
}
`;

export const DASHBOARD_SCRIPT = `
${PAGE_HELPERS}const STATES = ['queued', 'running', 'draining', 'completed', 'quarantined'];
const num = (n) => (typeof n === 'number' && Number.isFinite(n) ? n : 0);
function weight(n) {
  n = num(n);
  const units = [[1e15, 'P'], [1e12, 'T'], [1e9, 'G'], [1e6, 'M'], [1e3, 'k']];
  for (const [size, unit] of units) if (Math.abs(n) >= size) return (n / size).toFixed(n / size >= 100 ? 0 : 1) + ' ' + unit;
  return String(Math.round(n));
}
const pct = (f) => (num(f) * 100).toFixed(1) + '%';
const clock = (ms) => new Date(ms).toLocaleTimeString([], { hour12: false });
// A flag whose shape this build may not know (paused, evacuated): true, a string, a list, or an object.
function flagText(v) {
  if (v === undefined || v === null || v === false) return null;
  if (v === true) return '';
  if (typeof v === 'string' || typeof v === 'number') return String(v);
  if (Array.isArray(v)) {
    if (v.length === 0) return null;
    return v.map((x) => (typeof x === 'object' && x !== null
      ? String(x.instance ?? x.id ?? JSON.stringify(x)) + (x.inForce === false ? ' (no longer in force)' : '')
      : String(x))).join(', ');
  }
  if (typeof v === 'object') {
    if (v.active === false || v.paused === false) return null;
    const parts = Object.entries(v).filter(([, x]) => x !== null && x !== undefined && x !== true).map(([k, x]) => k + ' ' + (typeof x === 'object' ? JSON.stringify(x) : String(x)));
    return parts.join(' · ');
  }
  return String(v);
}

function renderHeader(view) {
  const r = view.report;
  $('job').textContent = 'job ' + view.job;
  document.title = 'splitfleet · ' + view.job;
  const bits = [view.prefix, 'revision ' + num(r.revision)];
  if (r.leader) bits.push('leader ' + r.leader.instance + ' (generation ' + r.leader.generation + (r.leader.live ? '' : ', gone') + ')');
  else bits.push('no leader');
  if (r.plan) bits.push((r.plan.final ? 'final plan' : 'open plan') + ', ' + r.plan.planned + ' planned, ' + r.plan.seeded + ' seeded'
    + (r.plan.layout === 'packed' ? ', packed layout' + (r.plan.buckets ? ' (' + r.plan.buckets + ' buckets)' : '') : ''));
  $('meta').textContent = bits.join(' · ');
  const status = $('status');
  status.replaceChildren();
  const verdict = r.progress && r.progress.verdict;
  if (verdict) status.append(el('span', { class: 'badge ' + (verdict === 'complete' ? 'ok' : 'bad'), 'data-verdict': verdict, text: verdict }));
  status.append(el('span', { class: 'badge ' + (view.watch.live ? 'ok' : 'bad'), id: 'conn', text: view.watch.live ? 'live' : 'not live' }));

  const banners = $('banners');
  banners.replaceChildren();
  if (view.watch.error) banners.append(el('div', { class: 'banner error', text: view.watch.error }));
  // The first view of a large job: the leader's summary, until every record has been read (decision 0040).
  if (view.source && view.source.kind === 'summary') {
    banners.append(el('div', { class: 'banner', id: 'source', text: 'counts from the leader’s summary (generation ' + view.source.generation
      + ', written ' + wait(num(view.source.ageMs)) + ' ago); ' + (view.source.followsRecords === false
      ? 'a job this large is followed by its summary only, without per-split lists (splitfleet inspect --split ID reads one split)'
      : 'reading every record for the per-split lists…') }));
  }
  if (!r.exists) banners.append(el('div', { class: 'banner', text: 'nothing is stored under ' + view.prefix + ' yet: waiting for the job to appear' }));
  const paused = flagText(r.paused);
  if (paused !== null) banners.append(el('div', { class: 'banner', id: 'paused', text: 'paused' + (paused ? ': ' + paused : '') }));
  const evacuated = flagText(r.evacuated);
  if (evacuated !== null) banners.append(el('div', { class: 'banner', id: 'evacuated', text: 'evacuated' + (evacuated ? ': ' + evacuated : '') }));
}

function renderProgress(r) {
  const p = r.progress || {};
  $('progress-fill').style.width = pct(p.fraction);
  $('progress-text').textContent = pct(p.fraction) + ' by weight';
  $('progress-detail').textContent = weight(p.completedWeight) + ' of ' + weight(p.totalWeight) + ' · '
    + num(p.completed) + ' of ' + num(p.planned) + ' splits completed';
  const splits = r.splits || {};
  const total = Math.max(1, num(splits.total));
  const stack = $('states-bar');
  stack.replaceChildren(...STATES.map((s) => el('span', { class: 's-' + s, title: s, style: { width: (num(splits[s]) / total * 100) + '%' } })));
  $('states-legend').replaceChildren(...STATES.map((s) => el('span', { 'data-state': s }, el('i', { class: 's-' + s }), s + ' ' + num(splits[s]))));
}

function renderMembers(r) {
  const members = r.members || [];
  const live = members.filter((m) => m.live).length;
  $('members-count').textContent = live + ' live' + (members.length > live ? ', ' + (members.length - live) + ' departed' : '');
  const scale = Math.max(1, ...members.map((m) => Math.max(num(m.load), num(m.assignedLoad))));
  const rows = members.map((m) => {
    const lanes = num(m.maxInFlight);
    const pips = el('span', { class: 'lanes' });
    for (let i = 0; i < Math.min(lanes, 32); i++) pips.append(el('b', { class: i < num(m.heldCount) ? 'on' : '' }));
    const bar = el('div', { class: 'bar', title: 'held ' + weight(m.load) + ', assigned ' + weight(m.assignedLoad) },
      el('span', { class: 'fill', style: { width: (num(m.load) / scale * 100) + '%' } }),
      el('span', { class: 'mark', style: { left: 'calc(' + (num(m.assignedLoad) / scale * 100) + '% - 1px)' } }));
    const name = el('td', { class: 'id' }, m.instance);
    if (m.leader) name.append(el('span', { class: 'badge leader', text: 'leader' }));
    if (!m.live) name.append(el('span', { class: 'badge gone', text: 'gone' }));
    // Evacuations are listed on the report (instance, inForce); older and newer shapes both render.
    const evac = Array.isArray(r.evacuated) ? r.evacuated.find((e) => e === m.instance || (e && e.instance === m.instance)) : undefined;
    if (evac !== undefined && evac.inForce !== false) name.append(el('span', { class: 'badge flag', text: 'evacuated' }));
    for (const key of ['paused', 'evacuated', 'evacuating', 'cordoned']) {
      const f = flagText(m[key]);
      if (f !== null) name.append(el('span', { class: 'badge flag', text: key + (f ? ' ' + f : '') }));
    }
    const extra = [];
    if (num(m.claimingCount) > 0) extra.push(m.claimingCount + ' to claim');
    if (num(m.revokingCount) > 0) extra.push(m.revokingCount + ' revoking');
    return el('tr', { 'data-member': m.instance, 'data-live': String(!!m.live), class: m.live ? '' : 'gone' },
      name,
      el('td', { class: 'num' }, pips, ' ' + num(m.heldCount) + '/' + (m.maxInFlight ?? '–')),
      el('td', { class: 'loadcell' }, bar),
      el('td', { class: 'num', text: weight(m.load) + ' / ' + weight(m.assignedLoad) }),
      el('td', { class: 'dim', text: extra.join(', ') }));
  });
  const body = $('members-body');
  if (rows.length === 0) body.replaceChildren(el('tr', {}, el('td', { colspan: 5, class: 'empty', text: 'no members' })));
  else body.replaceChildren(...rows);
}

function renderLists(r) {
  const q = r.quarantined || [];
  $('quarantined-count').textContent = String(num(r.quarantinedTotal ?? q.length));
  $('quarantined-body').replaceChildren(...(q.length === 0
    ? [el('tr', {}, el('td', { colspan: 3, class: 'empty', text: 'none' }))]
    : q.map((s) => el('tr', { 'data-split': s.id }, el('td', { class: 'id', text: s.id }), el('td', { class: 'num', text: s.attempts }),
      el('td', { class: 'reason', text: s.reason ?? '(no reason recorded)' }),
      actionsOn ? el('td', {}, el('button', { type: 'button', 'data-retry': s.id, text: 'retry' })) : null))));
  const t = r.retrying || [];
  $('retrying-count').textContent = String(num(r.retryingTotal ?? t.length));
  $('retrying-body').replaceChildren(...(t.length === 0
    ? [el('tr', {}, el('td', { colspan: 3, class: 'empty', text: 'none' }))]
    : t.map((s) => el('tr', { 'data-split': s.id }, el('td', { class: 'id', text: s.id }),
      el('td', { class: 'num', text: 'retrying in ' + wait(s.retryAt - Date.now()) }),
      el('td', { class: 'reason', text: s.reason ?? '(no reason recorded)' })))));
  const v = r.revocations || [];
  $('revocations-count').textContent = String(num(r.revocationsTotal ?? v.length));
  $('revocations-body').replaceChildren(...(v.length === 0
    ? [el('tr', {}, el('td', { colspan: 4, class: 'empty', text: 'none in flight' }))]
    : v.map((x) => el('tr', { 'data-split': x.id }, el('td', { class: 'id', text: x.id }), el('td', { text: x.holder }),
      el('td', { text: x.assignedTo ?? '(nobody)' }), el('td', { class: 'num', text: weight(x.weight) })))));
  $('stuck').hidden = !r.stuck;
  $('stuck-reason').textContent = r.stuck || '';
  const problems = r.problems || [];
  $('problems').hidden = problems.length === 0;
  $('problems-list').replaceChildren(...problems.map((p) => el('li', { class: 'mono', text: p })));
}

function renderLog(events) {
  const list = $('log');
  if (events.length === 0) {
    list.replaceChildren(el('li', { class: 'empty', text: 'nothing yet: no event in the history the leader keeps, and none since the dashboard started following this job' }));
    return;
  }
  list.replaceChildren(...events.slice().reverse().map((e) => el('li', { 'data-kind': e.kind, 'data-seq': e.seq, 'data-told': e.told || 'watch' },
    el('span', { class: 't', text: clock(e.at) }), el('span', { class: 'k k-' + e.kind, text: e.kind.replace('-', ' ') }),
    el('span', { class: 'text', text: e.text }))));
}

const actionsOn = document.body.dataset.actions === 'true';
/** What an action did, in a few words (its result is the library's: ControlResult or RetryResult). */
function actionText(name, r) {
  if (name === 'retry') return 'retried ' + (r.retried || []).length + ' split(s)' + (r.verdictCleared ? '; the stalled verdict is cleared' : '');
  return (r.changed ? '' : 'already ') + (r.paused ? 'paused' : 'not paused');
}
async function act(name, body) {
  const out = $('action-result');
  out.className = 'dim';
  out.textContent = name + '…';
  try {
    // The header marks the request as the page's own (dashboard/actions.ts): a form or another site cannot send it.
    const res = await fetch('actions/' + name, { method: 'POST', headers: { 'content-type': 'application/json', 'x-splitfleet-action': '1' }, body: JSON.stringify(body || {}) });
    const answer = await res.json();
    out.className = answer.ok ? 'ok' : 'reason';
    out.textContent = answer.ok ? name + ': ' + actionText(name, answer.result || {}) : name + ' refused: ' + answer.error;
  } catch (e) {
    out.className = 'reason';
    out.textContent = name + ' failed: ' + e.message;
  }
}
function renderActions(r) {
  if (!actionsOn) return;
  $('actions').hidden = false;
  const paused = flagText(r.paused) !== null;
  $('pause').hidden = paused || !!(r.progress && r.progress.verdict);
  $('resume').hidden = !paused;
  $('retry-all').hidden = num(r.quarantinedTotal) === 0;
}

const SPLIT_FIELDS = ['status', 'owner', 'epoch', 'attempts', 'lease', 'weight', 'progress', 'reason', 'retryInMs', 'parent', 'divided', 'page', 'descriptor'];
const fieldText = (v) => (v === null || v === undefined ? '–' : typeof v === 'object' ? JSON.stringify(v) : String(v));
async function findSplit(id) {
  const out = $('split-result');
  if (!id) { out.replaceChildren(); return; }
  out.replaceChildren(el('div', { class: 'dim', text: 'reading ' + id + '…' }));
  try {
    const res = await fetch('api/split?id=' + encodeURIComponent(id), { cache: 'no-store' });
    const answer = await res.json();
    if (!answer.ok) { out.replaceChildren(el('div', { class: 'reason', id: 'split-missing', text: answer.error })); return; }
    const s = answer.split;
    out.replaceChildren(el('table', { class: 'fields', 'data-split': s.id },
      el('tbody', {}, el('tr', { 'data-field': 'id' }, el('td', { text: 'split' }), el('td', { class: 'id', text: s.id })),
        ...SPLIT_FIELDS.filter((f) => f in s).map((f) => el('tr', { 'data-field': f }, el('td', { text: f }), el('td', { class: 'mono', text: fieldText(s[f]) }))))));
  } catch (e) {
    out.replaceChildren(el('div', { class: 'reason', text: 'cannot read split ' + id + ': ' + e.message }));
  }
}
$('split-form').addEventListener('submit', (event) => {
  event.preventDefault();
  const id = $('split-id').value.trim();
  // The search is in the address, so it can be shared and reloaded.
  history.replaceState(null, '', id ? '?split=' + encodeURIComponent(id) : location.pathname);
  findSplit(id);
});
if (actionsOn) {
  $('pause').addEventListener('click', () => act('pause'));
  $('resume').addEventListener('click', () => act('resume'));
  $('retry-all').addEventListener('click', () => act('retry', { allQuarantined: true }));
  $('quarantined-body').addEventListener('click', (event) => {
    const button = event.target.closest('button[data-retry]');
    if (button) act('retry', { split: button.dataset.retry });
  });
}
{
  const wanted = new URLSearchParams(location.search).get('split');
  if (wanted) {
    $('split-id').value = wanted;
    findSplit(wanted);
  }
}

function render(view) {
  renderHeader(view);
  renderProgress(view.report);
  renderMembers(view.report);
  renderLists(view.report);
  renderActions(view.report);
  renderLog(view.events || []);
  document.body.dataset.revision = String(num(view.report.revision));
  $('updated').textContent = 'updated ' + clock(view.generatedAt);
}

const source = new EventSource('events');
source.addEventListener('state', (m) => render(JSON.parse(m.data)));
source.onerror = () => {
  const conn = $('conn');
  if (conn) { conn.textContent = 'reconnecting'; conn.className = 'badge bad'; }
};
`;

/**
 * The job page. `home`: the dashboard's base relative to the page ('' when the page is the base,
 * `../../` under `job/<name>/`), for the link to the job list; `actions`: show the operator buttons.
 * Why one function: it is one HTML document with two values put in; cut in parts it would be read in parts.
 */
export function dashboardHtml(home: string, actions: boolean): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>splitfleet</title>
<link rel="icon" href="data:,">
<style>${DASHBOARD_STYLE}</style>
</head>
<body data-actions="${actions ? 'true' : 'false'}">
<header>
  <a id="all-jobs" href="${home}jobs/">all jobs</a>
  <h1 id="job">splitfleet</h1>
  <span id="meta" class="dim mono">connecting…</span>
  <span id="status"></span>
  <span id="updated" class="dim"></span>
  <span id="actions" hidden>
    <button type="button" id="pause" hidden>pause</button>
    <button type="button" id="resume" hidden>resume</button>
    <button type="button" id="retry-all" hidden>retry all quarantined</button>
    <span id="action-result" class="dim"></span>
  </span>
</header>
<div id="banners"></div>
<main>
  <section class="wide">
    <h2>Progress</h2>
    <div class="big" id="progress-text">–</div>
    <div class="bar progress"><span class="fill" id="progress-fill"></span></div>
    <div class="dim" id="progress-detail"></div>
    <h2 class="gap">Splits by state</h2>
    <div class="stack" id="states-bar"></div>
    <div class="legend" id="states-legend"></div>
  </section>
  <section>
    <h2>Members <span class="dim" id="members-count"></span></h2>
    <table>
      <thead><tr><th>instance</th><th>lanes in use</th><th>load by weight (bar: held · mark: assigned)</th><th>held / assigned</th><th></th></tr></thead>
      <tbody id="members-body"></tbody>
    </table>
  </section>
  <section>
    <h2>Events</h2>
    <ul class="log" id="log"></ul>
  </section>
  <section>
    <h2>Revocations in flight <span class="dim" id="revocations-count"></span></h2>
    <table>
      <thead><tr><th>split</th><th>held by</th><th>assigned to</th><th>weight</th></tr></thead>
      <tbody id="revocations-body"></tbody>
    </table>
  </section>
  <section>
    <h2>Retrying <span class="dim" id="retrying-count"></span></h2>
    <table>
      <thead><tr><th>split</th><th>when</th><th>last failure</th></tr></thead>
      <tbody id="retrying-body"></tbody>
    </table>
  </section>
  <section>
    <h2>Quarantined <span class="dim" id="quarantined-count"></span></h2>
    <table>
      <thead><tr><th>split</th><th>attempts</th><th>reason</th></tr></thead>
      <tbody id="quarantined-body"></tbody>
    </table>
  </section>
  <section class="wide" id="find">
    <h2>Find a split</h2>
    <form id="split-form"><input id="split-id" name="split" placeholder="split id" autocomplete="off"> <button type="submit">find</button></form>
    <div id="split-result"></div>
  </section>
  <section class="wide" id="stuck" hidden>
    <h2>Part of the job cannot move</h2>
    <p class="mono" id="stuck-reason"></p>
  </section>
  <section class="wide" id="problems" hidden>
    <h2>Records this build cannot read</h2>
    <ul id="problems-list"></ul>
  </section>
</main>
<script>${DASHBOARD_SCRIPT}</script>
</body>
</html>
`;
}
