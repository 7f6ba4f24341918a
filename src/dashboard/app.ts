/**
 * The dashboard's route table, on hono. Every URL is relative to the base
 * the host mounts it at:
 *
 *   /                  the job list, or the page of the job named at start (`job`)
 *   /jobs/             the job list, always
 *   /api/jobs          the job list as JSON (job-list.ts)
 *   /job/<name>/       a job's page; under it `events` (Server-Sent Events),
 *                      `api/state` (the view as JSON), `api/split?id=` (one
 *                      split), and, when enabled, POST `actions/<name>`
 *   /events, /api/state, /api/split, /actions/<name>
 *                      the same for the job named at start, as before there was a list
 *
 * Invariants:
 * - GET only, except the actions, which exist only when `actions` is set.
 * - The Host check (DNS rebinding, decision 0051) applies only when
 *   `loopbackHost` is given: `inspect --serve` bound to loopback. A host app
 *   owns its own authentication and names (decision 0067).
 * - Each page runs only its own inline script (a hashed Content-Security-Policy).
 * - At most `maxClients` event streams at once, over every job; one more is
 *   answered 503 with the reason.
 */
import { createHash } from 'node:crypto';
import type { HttpBindings } from '@hono/node-server';
import { Hono, type Context } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import { streamSSE } from 'hono/streaming';
import { isSplitfleetError } from '../errors.js';
import { DASHBOARD_SCRIPT, DASHBOARD_STYLE, dashboardHtml } from '../inspect/dashboard-page.js';
import { readSplit } from '../inspect/split-read.js';
import type { StallLimits } from '../inspect/stalled-stream.js';
import { refusedHost } from '../loopback-host.js';
import { checkJobNames } from '../operator/job.js';
import type { Store } from '../store/store.js';
import { ACTION_HEADER, ACTIONS, runAction, type ActionName } from './actions.js';
import type { JobList } from './job-list.js';
import { LIST_SCRIPT, LIST_STYLE, listPageHtml } from './list-page.js';
import { OpenRefused, type LiveJobs, type OpenJob } from './live-jobs.js';
import { sendViews } from './view-stream.js';

/** What the routes serve from. */
export interface DashboardRoutes {
  store: Store;
  root: string;
  /** The job whose page is the base, if any (pinned in `jobs`). */
  job: string | undefined;
  actions: boolean;
  /** Refuse a Host that is not a loopback name, as a server bound to this address (inspect --serve). */
  loopbackHost: string | undefined;
  maxClients: number;
  limits: StallLimits;
  jobs: LiveJobs;
  list: JobList;
  /** Each open event stream's `end`, for the dashboard's close(). */
  streams: Set<() => void>;
}

/** The bindings a Node server gives (absent under another runtime: then no stall guard). */
type Env = { Bindings: Partial<HttpBindings> };

const sha256 = (text: string) => `'sha256-${createHash('sha256').update(text).digest('base64')}'`;
const csp = (script: string, style: string) => [
  "default-src 'none'",
  `script-src ${sha256(script)}`,
  `style-src ${sha256(style)}`,
  "connect-src 'self'",
  "img-src 'self' data:",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');
const JOB_CSP = csp(DASHBOARD_SCRIPT, DASHBOARD_STYLE);
const LIST_CSP = csp(LIST_SCRIPT, LIST_STYLE);

/** Largest action body: `{"split": ID}` and no more. */
const MAX_ACTION_BYTES = 16 * 1024;

/**
 * A job's name from its path segment: decoded by the router, with the `~` that the list page puts
 * before a name made of dots (`.` and `..` would be path steps) taken off. Undefined when no job
 * can have that name.
 */
export function jobOfSegment(segment: string): string | undefined {
  const name = /^~\.+$/.test(segment) ? segment.slice(1) : segment;
  try {
    checkJobNames(name, 'splitfleet');
    return name;
  } catch {
    return undefined;
  }
}

export function dashboardApp(r: DashboardRoutes): Hono<Env> {
  const app = new Hono<Env>();
  if (r.loopbackHost !== undefined) {
    const boundTo = r.loopbackHost;
    app.use('*', async (c, next) => {
      const refused = refusedHost(boundTo, c.req.header('host'));
      if (refused !== undefined) return c.text(`${refused}\n`, 421);
      await next();
    });
  }
  app.use('*', async (c, next) => {
    await next();
    c.header('x-content-type-options', 'nosniff');
    c.header('referrer-policy', 'no-referrer');
  });
  const listPage = (c: Context<Env>, home: string) => {
    c.header('content-security-policy', LIST_CSP);
    c.header('cache-control', 'no-store');
    return c.html(listPageHtml(home));
  };
  const jobPage = (c: Context<Env>, home: string) => {
    c.header('content-security-policy', JOB_CSP);
    c.header('cache-control', 'no-store');
    return c.html(dashboardHtml(home, r.actions));
  };
  app.get('/', (c) => (r.job !== undefined ? jobPage(c, '') : listPage(c, '')));
  app.get('/jobs', (c) => c.redirect('jobs/', 308));
  app.get('/jobs/', (c) => listPage(c, '../'));
  app.get('/api/jobs', async (c) => {
    c.header('cache-control', 'no-store');
    try {
      return c.json(await r.list.view());
    } catch (e) {
      return c.text(`cannot list the jobs under ${r.root}/: ${(e as Error).message}\n`, 503);
    }
  });
  app.get('/job/:job', (c) => c.redirect(`${encodeURIComponent(c.req.param('job'))}/`, 308));
  app.get('/job/:job/', (c) => (jobOfSegment(c.req.param('job')) === undefined ? noSuchName(c) : jobPage(c, '../../')));
  // The job named at start answers at the base too; without one, these paths name no job.
  const atBase = () => r.job;
  const inPath = (c: Context<Env>) => jobOfSegment(c.req.param('job') ?? '');
  // Streams counted from the request on (not from when the stream starts), so a burst cannot overshoot the cap.
  const clients = { open: 0 };
  for (const [prefix, jobOf] of [['', atBase], ['/job/:job', inPath]] as const) jobRoutes(app, r, clients, prefix, jobOf);
  return app;
}

/** One job's data routes under `prefix`, for the job `jobOf` names (undefined: 404). */
function jobRoutes(
  app: Hono<Env>, r: DashboardRoutes, clients: { open: number }, prefix: string, jobOf: (c: Context<Env>) => string | undefined,
): void {
  app.get(`${prefix}/api/state`, (c) => withJob(c, r, jobOf, (open) => {
    c.header('cache-control', 'no-store');
    try {
      return c.body(open.json.body(open.live.view()), 200, { 'content-type': 'application/json' });
    } finally {
      open.release();
    }
  }));
  app.get(`${prefix}/events`, (c) => {
    if (clients.open >= r.maxClients) {
      c.header('cache-control', 'no-store');
      return c.text(`refused: ${r.maxClients} event streams are open already (the dashboard's maxClients); close one or try later\n`, 503);
    }
    clients.open++;
    let counted = true;
    // Once: a dropped stream frees its place at once, and again when its loop ends.
    const leave = () => {
      if (counted) clients.open--;
      counted = false;
    };
    return withJob(c, r, jobOf, (open) => {
      const outgoing = c.env?.outgoing;
      return streamSSE(c, (stream) => sendViews(
        stream, open.live, (view) => open.json.text(view), r.streams, () => {
          leave();
          open.release();
        }, outgoing && { outgoing, limits: r.limits },
      ));
    }, leave);
  });
  app.get(`${prefix}/api/split`, async (c) => {
    const job = jobOf(c);
    if (job === undefined) return noSuchName(c);
    c.header('cache-control', 'no-store');
    const id = c.req.query('id') ?? '';
    try {
      const { page, split } = await readSplit({ store: r.store, root: r.root, job, id });
      if (!page.exists) return c.json({ ok: false, error: `no job ${job} under ${r.root}/` }, 404);
      if (split === null) return c.json({ ok: false, error: `job ${job} has no split ${JSON.stringify(id)}` }, 404);
      return c.json({ ok: true, split });
    } catch (e) {
      if (isSplitfleetError(e, 'INVALID_INPUT')) return c.json({ ok: false, error: `${JSON.stringify(id)}: ${e.message}` }, 400);
      return c.json({ ok: false, error: `cannot read split ${JSON.stringify(id)}: ${(e as Error).message}` }, 503);
    }
  });
  if (!r.actions) return;
  app.post(`${prefix}/actions/:action`, bodyLimit({ maxSize: MAX_ACTION_BYTES, onError: (c) => c.json({ ok: false, error: `refused: an action's body is at most ${MAX_ACTION_BYTES} bytes` }, 413) }), async (c) => {
    const job = jobOf(c);
    const name = c.req.param('action');
    if (job === undefined) return noSuchName(c);
    if (!(ACTIONS as readonly string[]).includes(name)) return c.json({ ok: false, error: `no action ${JSON.stringify(name)} (the actions: ${ACTIONS.join(', ')})` }, 404);
    const body: unknown = await c.req.json().catch(() => undefined);
    const answer = await runAction(r.store, r.root, {
      name: name as ActionName, job, header: c.req.header(ACTION_HEADER), contentType: c.req.header('content-type'), body,
    });
    return c.json(answer.body, answer.status);
  });
}

/** Runs `use` with the job open; a job that cannot be followed now is 503 with the reason, a name no job can have 404. */
async function withJob(
  c: Context<Env>, r: DashboardRoutes, jobOf: (c: Context<Env>) => string | undefined, use: (open: OpenJob) => Response | Promise<Response>,
  failed?: () => void,
): Promise<Response> {
  const job = jobOf(c);
  if (job === undefined) {
    failed?.();
    return noSuchName(c);
  }
  let open: OpenJob;
  try {
    open = await r.jobs.open(job);
  } catch (e) {
    failed?.();
    c.header('cache-control', 'no-store');
    if (e instanceof OpenRefused) return c.text(`${e.message}\n`, 503);
    return c.text(`cannot read job ${job} under ${r.root}/: ${(e as Error).message}\n`, 503);
  }
  return use(open);
}

function noSuchName(c: Context<Env>): Response {
  const why = c.req.param('job') === undefined
    ? 'this dashboard was started without a job: a job\'s data is under job/<name>/ (the list at jobs/ links them)'
    : 'a job name is 1 to 128 of A-Z a-z 0-9 . _ -';
  return c.text(`no such job: ${why}\n`, 404);
}
