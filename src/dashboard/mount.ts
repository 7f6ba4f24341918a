/**
 * The dashboard as a part of a host's app (decision 0067): `createDashboard`
 * returns a Fetch-API handler (`fetch`, for hono's `mount()` and any runtime
 * that speaks Request/Response) and a Node request handler (`handler`, for
 * `http.createServer` or any framework that passes Node's req and res), both
 * serving the job list, each job's page and, if the host says so, the
 * operator actions. `mountDashboard` puts it under a path of a hono app.
 *
 * Invariants:
 * - No authentication and no Host check of its own when mounted: the host's
 *   middleware runs first and decides who gets in. (`inspect --serve`, which
 *   has no host app, checks the Host itself: serve.ts.)
 * - Actions are off unless `actions: true`; read-only otherwise.
 * - Every URL the pages use is relative, so the base path is the host's
 *   choice; `basePath` only tells `handler` what to strip from `req.url`.
 * - close() ends open event streams and every watch; the store is the caller's.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { getRequestListener } from '@hono/node-server';
import type { Hono } from 'hono';
import { mount } from 'hono/mount';
import { SplitfleetError } from '../errors.js';
import type { DashboardView } from '../inspect/dashboard-view.js';
import { DEFAULT_MAX_UNSENT_BYTES, DEFAULT_STALLED_MS } from '../inspect/stalled-stream.js';
import { checkJobNames } from '../operator/job.js';
import type { Store } from '../store/store.js';
import { dashboardApp } from './app.js';
import { JobList } from './job-list.js';
import { DEFAULT_IDLE_MS, DEFAULT_MAX_OPEN_JOBS, LiveJobs } from './live-jobs.js';

/** Default cap on open event streams: each holds a connection and gets every view of its job. */
export const DEFAULT_MAX_CLIENTS = 64;

/** What a dashboard shows and how much it may hold. */
export interface DashboardAppOptions {
  /** Where the jobs live. Only read from, unless `actions`; the caller closes it. */
  store: Store;
  /** Key prefix root whose jobs are listed (default `splitfleet`). */
  root?: string;
  /**
   * A job whose page is the dashboard's base (`/`), followed from the start (its first read failing
   * rejects). Without it the base is the job list; either way the list is at `jobs/`.
   */
  job?: string;
  /** Offer pause, resume and retry on each job's page and accept them (POST only; default false). */
  actions?: boolean;
  /** The path the host serves the dashboard under, stripped from `req.url` by `handler` (e.g. `/ops/jobs`; default none). */
  basePath?: string;
  /** Least time between two refreshes of a job's view, ms (default 250). */
  refreshMs?: number;
  /** Least time between two reads of the job list, ms (default 2000). */
  listRefreshMs?: number;
  /** Events kept in each job's log (default 300). */
  maxEvents?: number;
  /** Event streams open at once, over every job (default 64); one more is refused with 503. */
  maxClients?: number;
  /** Jobs followed at once (default 16): each holds a watch. One more closes one nobody views, or is refused with 503. */
  maxOpenJobs?: number;
  /**
   * An event stream whose client reads nothing for this long while bytes wait for it (its socket
   * buffer full) is dropped, freeing its place among `maxClients`, ms (default 10,000).
   */
  stalledStreamMs?: number;
  /** Above this many splits a job is followed by its leader's summary only (default 200,000; decision 0042). */
  followRecordsUpTo?: number;
}

/** A dashboard ready to be mounted (`createDashboard`). */
export interface MountedDashboard {
  /** The Fetch-API handler: the request's path is taken as relative to the dashboard's base. */
  fetch: (request: Request, env?: unknown) => Response | Promise<Response>;
  /** The Node request handler; `basePath` is stripped from `req.url` (a request outside it is 404). */
  handler: (req: IncomingMessage, res: ServerResponse) => void;
  /** The view of the job named by `job` (throws without one). */
  view(): DashboardView;
  /** Ends open event streams and every watch. */
  close(): Promise<void>;
}

/** Internal: what serve.ts adds (the Host check of a server bound to loopback). */
export interface HostCheck {
  loopbackHost?: string;
}

function positiveInt(name: string, value: number): number {
  if (!Number.isInteger(value) || value < 1) throw new SplitfleetError('INVALID_CONFIG', `dashboard: ${name} must be an integer ≥ 1 (got ${value})`);
  return value;
}

/** `/ops/jobs/` → `/ops/jobs`; '' for none; refused unless it starts with '/'. */
function normalBase(basePath: string | undefined): string {
  if (basePath === undefined || basePath === '' || basePath === '/') return '';
  if (!basePath.startsWith('/') || /[?#]/.test(basePath)) {
    throw new SplitfleetError('INVALID_CONFIG', `dashboard: basePath must be a path starting with '/', without ? or # (got ${JSON.stringify(basePath)})`);
  }
  return basePath.replace(/\/+$/, '');
}

/**
 * Makes a dashboard of every job under `root`, to mount in a host app; resolves once the job
 * list (and the `job`, if named) has been read, so a store that cannot be reached fails here.
 */
export async function createDashboard(options: DashboardAppOptions): Promise<MountedDashboard> {
  return openDashboard(options, {});
}

/** `createDashboard`, with serve.ts's Host check. */
export async function openDashboard(options: DashboardAppOptions, check: HostCheck): Promise<MountedDashboard> {
  const root = options.root ?? 'splitfleet';
  try {
    checkJobNames(options.job ?? 'x', root);
  } catch (e) {
    throw new SplitfleetError('INVALID_CONFIG', `dashboard: ${(e as Error).message}`);
  }
  const maxClients = positiveInt('maxClients', options.maxClients ?? DEFAULT_MAX_CLIENTS);
  const stalledMs = positiveInt('stalledStreamMs, ms,', options.stalledStreamMs ?? DEFAULT_STALLED_MS);
  const maxOpen = positiveInt('maxOpenJobs', options.maxOpenJobs ?? DEFAULT_MAX_OPEN_JOBS);
  const base = normalBase(options.basePath);
  const jobs = new LiveJobs({
    store: options.store, root, refreshMs: options.refreshMs, maxEvents: options.maxEvents, followRecordsUpTo: options.followRecordsUpTo,
  }, maxOpen, DEFAULT_IDLE_MS);
  const list = new JobList({ store: options.store, root, refreshMs: options.listRefreshMs });
  const streams = new Set<() => void>();
  let pinned: { view(): DashboardView } | undefined;
  try {
    if (options.job !== undefined) pinned = await jobs.pin(options.job);
    else await list.view();
  } catch (e) {
    await jobs.close();
    throw e;
  }
  const app = dashboardApp({
    store: options.store, root, job: options.job, actions: options.actions === true, loopbackHost: check.loopbackHost,
    maxClients, limits: { stalledMs, maxUnsentBytes: DEFAULT_MAX_UNSENT_BYTES }, jobs, list, streams,
  });
  const fetch = (request: Request, env?: unknown) => app.fetch(request, env as never);
  // The host's globals stay its own (by default the adapter would replace Request and Response).
  const listener = getRequestListener(fetch, { overrideGlobalObjects: false });
  let closing: Promise<void> | undefined;
  return {
    fetch,
    handler: (req, res) => {
      const url = req.url ?? '/';
      if (base !== '') {
        const path = url.split('?')[0]!;
        // The pages' relative URLs need the trailing slash at the base.
        if (path === base) return void res.writeHead(308, { location: `${base}/${url.slice(path.length)}` }).end();
        if (!path.startsWith(`${base}/`)) return void res.writeHead(404, { 'content-type': 'text/plain' }).end(`not under the dashboard's base path ${base}/\n`);
        req.url = url.slice(base.length);
      }
      void listener(req, res);
    },
    view: () => {
      if (pinned === undefined) throw new SplitfleetError('INVALID_INPUT', 'dashboard: view() needs the dashboard made with a job');
      return pinned.view();
    },
    close: () => {
      closing ??= (async () => {
        for (const end of [...streams]) end();
        await jobs.close();
      })();
      return closing;
    },
  };
}

/**
 * Mounts `dashboard` at `path` of a hono app (`/ops/jobs`): `path` redirects to `path/`, and every
 * request under `path/` goes to the dashboard, after whatever middleware the app registered for it
 * first (its authentication).
 */
export function mountDashboard(app: Hono<never, never, never> | Hono, path: string, dashboard: Pick<MountedDashboard, 'fetch'>): void {
  const base = normalBase(path);
  if (base === '') throw new SplitfleetError('INVALID_CONFIG', `mountDashboard: path must be a path below '/' such as '/dashboard' (got ${JSON.stringify(path)})`);
  const host = app as Hono;
  host.get(base, (c) => c.redirect(`${base}/`, 308));
  host.all(`${base}/*`, mount(dashboard.fetch));
}
