/**
 * The live dashboard's HTTP side (`splitfleet inspect --serve PORT`): one
 * page (`/`), the current view as JSON (`/api/state`) and a Server-Sent
 * Events stream of views (`/events`), all fed by one LiveJob (live.ts).
 *
 * Invariants:
 * - Read-only: GET only; nothing here or in live.ts writes to the store.
 * - Binds 127.0.0.1 unless told otherwise. Bound to loopback, it answers only
 *   requests whose Host is a loopback name, so a web page elsewhere cannot
 *   read the job through DNS rebinding. It has no authentication: what it
 *   shows is the job's state (never credentials: it never sees them).
 * - The page runs only its own inline script (a hashed Content-Security-Policy).
 * - The only file that imports hono.
 */
import { createHash } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { serve, type ServerType } from '@hono/node-server';
import { Hono } from 'hono';
import { streamSSE } from 'hono/streaming';
import type { Store } from '../store/store.js';
import { DASHBOARD_HTML, DASHBOARD_SCRIPT, DASHBOARD_STYLE } from './dashboard-page.js';
import { LiveJob, type DashboardView } from './live.js';

/** Which job `serveDashboard` shows, and where it listens. */
export interface DashboardOptions {
  /** Where the job lives. Only read from; the caller closes it. */
  store: Store;
  job: string;
  /** Key prefix root (default `splitfleet`). */
  root?: string;
  /** Address to bind (default `127.0.0.1`). */
  host?: string;
  /** Port to bind; 0 (the default) picks a free one. */
  port?: number;
  /** Least time between two refreshes of the view, ms (default 250). */
  refreshMs?: number;
  /** Events kept in the log (default 300). */
  maxEvents?: number;
}

/** A running dashboard server (`serveDashboard`). */
export interface Dashboard {
  /** The page's address, e.g. `http://127.0.0.1:8080/`. */
  url: string;
  host: string;
  port: number;
  /** The view the page shows now. */
  view(): DashboardView;
  /** Stops the server (open streams included) and the watch. */
  close(): Promise<void>;
}

const LOOPBACK_NAMES = new Set(['localhost', '127.0.0.1', '::1', '[::1]']);

/** Whether `host` names this machine's loopback interface. */
export function isLoopback(host: string): boolean {
  return LOOPBACK_NAMES.has(host.toLowerCase()) || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(host);
}

/** The hostname of a Host header (`name:port`, `[v6]:port`). */
function hostnameOf(header: string): string {
  if (header.startsWith('[')) return header.slice(0, header.indexOf(']') + 1);
  const colon = header.lastIndexOf(':');
  return colon < 0 ? header : header.slice(0, colon);
}

const sha256 = (text: string) => `'sha256-${createHash('sha256').update(text).digest('base64')}'`;
const CSP = [
  "default-src 'none'",
  `script-src ${sha256(DASHBOARD_SCRIPT)}`,
  `style-src ${sha256(DASHBOARD_STYLE)}`,
  "connect-src 'self'",
  "img-src 'self' data:",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

/**
 * Starts the dashboard; resolves once the job has been read and the port is bound. Long (about
 * 100 lines) on purpose: it is the server's whole route table (Host check, page, state, event
 * stream, refusals) around one live job and one set of open streams that close() must end.
 */
export async function serveDashboard(options: DashboardOptions): Promise<Dashboard> {
  const host = options.host ?? '127.0.0.1';
  const live = new LiveJob({
    store: options.store, job: options.job, root: options.root, refreshMs: options.refreshMs, maxEvents: options.maxEvents,
  });
  try {
    await live.start();
  } catch (e) {
    await live.close();
    throw e;
  }

  const streams = new Set<() => void>();
  const app = new Hono();
  if (isLoopback(host)) {
    app.use('*', async (c, next) => {
      const name = hostnameOf(c.req.header('host') ?? '');
      if (!isLoopback(name)) return c.text(`refused: Host ${JSON.stringify(name)} is not a loopback name (the dashboard is bound to ${host})\n`, 421);
      await next();
    });
  }
  app.use('*', async (c, next) => {
    await next();
    c.header('x-content-type-options', 'nosniff');
    c.header('referrer-policy', 'no-referrer');
  });
  app.get('/', (c) => {
    c.header('content-security-policy', CSP);
    c.header('cache-control', 'no-store');
    return c.html(DASHBOARD_HTML);
  });
  app.get('/api/state', (c) => {
    c.header('cache-control', 'no-store');
    return c.json(live.view());
  });
  app.get('/events', (c) => streamSSE(c, async (stream) => {
    // One state message now, then one per refresh; the client replaces its whole view each time.
    let queued: DashboardView | undefined = live.view();
    let wake: (() => void) | undefined;
    let done = false;
    const end = () => {
      done = true;
      wake?.();
    };
    const unsubscribe = live.subscribe((view) => {
      queued = view;
      wake?.();
    });
    streams.add(end);
    stream.onAbort(end);
    try {
      while (!done) {
        if (queued !== undefined) {
          const view = queued;
          queued = undefined;
          await stream.writeSSE({ event: 'state', data: JSON.stringify(view), id: String(view.generatedAt) });
          continue;
        }
        // Wake on the next view, the client leaving or close(); a comment every 15 s keeps idle proxies from cutting the stream.
        await new Promise<void>((resolve) => {
          const ping = setTimeout(resolve, 15_000);
          wake = () => {
            clearTimeout(ping);
            resolve();
          };
        });
        wake = undefined;
        if (!done && queued === undefined) await stream.write(': ping\n\n');
      }
    } finally {
      unsubscribe();
      streams.delete(end);
    }
  }));

  const server = await new Promise<ServerType>((resolve, reject) => {
    const s = serve({ fetch: app.fetch, hostname: host, port: options.port ?? 0 }, () => resolve(s));
    s.once('error', reject);
  }).catch(async (e: unknown) => {
    await live.close();
    throw e;
  });
  const address = server.address() as AddressInfo;
  const urlHost = address.family === 'IPv6' || host.includes(':') ? `[${address.address}]` : host;
  let closing: Promise<void> | undefined;
  return {
    url: `http://${urlHost}:${address.port}/`,
    host,
    port: address.port,
    view: () => live.view(),
    close: () => {
      closing ??= (async () => {
        for (const end of [...streams]) end();
        await live.close();
        await new Promise<void>((resolve) => {
          server.close(() => resolve());
          // Open event streams would hold close() forever.
          if ('closeAllConnections' in server) server.closeAllConnections();
        });
      })();
      return closing;
    },
  };
}
