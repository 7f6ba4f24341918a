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
 * - At most `maxClients` event streams at once (default 64); one more is
 *   answered 503 with the reason. A stream whose client stops reading is
 *   dropped once its socket has stayed full for `stalledStreamMs`
 *   (stalled-stream.ts), so such clients cannot hold every place.
 * - Each view is serialised once, whatever the number of streams and
 *   `/api/state` requests it goes to (decision 0051).
 */
import { createHash } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { serve, type HttpBindings, type ServerType } from '@hono/node-server';
import { Hono } from 'hono';
import { streamSSE, type SSEStreamingApi } from 'hono/streaming';
import { refusedHost } from '../loopback-host.js';
import { SplitfleetError } from '../errors.js';
import type { Store } from '../store/store.js';
import { DASHBOARD_HTML, DASHBOARD_SCRIPT, DASHBOARD_STYLE } from './dashboard-page.js';
import type { DashboardView } from './dashboard-view.js';
import { LiveJob } from './live.js';
import { DEFAULT_MAX_UNSENT_BYTES, DEFAULT_STALLED_MS, watchStream, type StallLimits, type StreamSample } from './stalled-stream.js';

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
  /** Event streams open at once (default 64); one more is refused with 503. */
  maxClients?: number;
  /**
   * An event stream whose client reads nothing for this long while bytes wait for it (its socket
   * buffer full) is dropped, freeing its place among `maxClients`, ms (default 10,000). A browser
   * reconnects by itself.
   */
  stalledStreamMs?: number;
  /** Above this many splits the job is followed by its leader's summary only, without per-split lists (default 200,000; decision 0042). */
  followRecordsUpTo?: number;
}

/** Default cap on open event streams: each holds a connection and gets every view. */
export const DEFAULT_MAX_CLIENTS = 64;

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
 * Starts the dashboard; resolves once the job has been read and the port is bound. The routes are
 * `dashboardApp`'s, each event stream `sendViews`; here, the one live job and the one set of open
 * streams that close() must end.
 */
export async function serveDashboard(options: DashboardOptions): Promise<Dashboard> {
  const host = options.host ?? '127.0.0.1';
  const maxClients = options.maxClients ?? DEFAULT_MAX_CLIENTS;
  if (!Number.isInteger(maxClients) || maxClients < 1) {
    throw new SplitfleetError('INVALID_CONFIG', `serveDashboard: maxClients must be an integer ≥ 1 (got ${maxClients})`);
  }
  const stalledMs = options.stalledStreamMs ?? DEFAULT_STALLED_MS;
  if (!Number.isInteger(stalledMs) || stalledMs < 1) {
    throw new SplitfleetError('INVALID_CONFIG', `serveDashboard: stalledStreamMs must be an integer ≥ 1, ms (got ${stalledMs})`);
  }
  const live = new LiveJob({
    store: options.store, job: options.job, root: options.root, refreshMs: options.refreshMs, maxEvents: options.maxEvents,
    followRecordsUpTo: options.followRecordsUpTo,
  });
  try {
    await live.start();
  } catch (e) {
    await live.close();
    throw e;
  }

  const streams = new Set<() => void>();
  const app = dashboardApp(host, maxClients, { stalledMs, maxUnsentBytes: DEFAULT_MAX_UNSENT_BYTES }, live, streams);
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

/**
 * The latest view's JSON, as text (for the streams) and as bytes (for `/api/state`), made once per
 * view and shared by every response. A view is a new object at each refresh (live.ts), and only
 * then, so the view itself is the key: no change counter is needed.
 */
class ViewJson {
  private view: DashboardView | undefined;
  private data = '';
  private bytes: Uint8Array<ArrayBuffer> | undefined;

  text(view: DashboardView): string {
    if (this.view !== view) {
      this.view = view;
      this.data = JSON.stringify(view);
      this.bytes = undefined;
    }
    return this.data;
  }

  body(view: DashboardView): Uint8Array<ArrayBuffer> {
    const text = this.text(view);
    this.bytes ??= new TextEncoder().encode(text);
    return this.bytes;
  }
}

/** The route table: the Host check, the page, the state, the event stream (refused past `maxClients`). */
function dashboardApp(host: string, maxClients: number, limits: StallLimits, live: LiveJob, streams: Set<() => void>): Hono<{ Bindings: HttpBindings }> {
  // Streams counted from the request on (not from when the stream starts), so a burst cannot overshoot the cap.
  let clients = 0;
  const json = new ViewJson();
  const app = new Hono<{ Bindings: HttpBindings }>();
  app.use('*', async (c, next) => {
    const refused = refusedHost(host, c.req.header('host'));
    if (refused !== undefined) return c.text(`${refused}\n`, 421);
    await next();
  });
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
  // The same bytes for every request until the view changes. No cap on these requests beyond
  // that: serialising, the only work that grows with the job, now happens at most once per refresh
  // (refreshMs) whatever the request rate, and what is left is the cost of any request to this
  // server (the page, a 404). A cap on those belongs to the server as a whole; a cap on requests in
  // flight here would let clients that never read lock scripts out, as they could the streams.
  app.get('/api/state', (c) => {
    c.header('cache-control', 'no-store');
    return c.body(json.body(live.view()), 200, { 'content-type': 'application/json' });
  });
  app.get('/events', (c) => {
    if (clients >= maxClients) {
      c.header('cache-control', 'no-store');
      return c.text(`refused: ${maxClients} event streams are open already (the dashboard's maxClients); close one or try later\n`, 503);
    }
    clients++;
    // Once: a dropped stream frees its place at once, and again when its loop ends.
    let counted = true;
    const leave = () => {
      if (counted) clients--;
      counted = false;
    };
    const outgoing = c.env?.outgoing;
    return streamSSE(c, (stream) => sendViews(stream, live, (view) => json.text(view), streams, leave, outgoing && { outgoing, limits }));
  });
  return app;
}

/** What `watchStream` reads of a response: what waits for its socket, and what the kernel has taken. */
function sampleOf(outgoing: HttpBindings['outgoing']): () => StreamSample {
  return () => {
    const socket = outgoing.socket;
    return { unsent: outgoing.writableLength, sent: socket ? socket.bytesWritten - socket.writableLength : 0 };
  };
}

/**
 * One event stream: one state message now, then one per refresh (the client replaces its whole view
 * each time), until the client leaves, close() ends it (`streams`) or it stalls (`guard`: the
 * connection is destroyed, which also ends a write waiting for the socket); `ended` runs as it stops.
 */
async function sendViews(
  stream: SSEStreamingApi, live: LiveJob, dataOf: (view: DashboardView) => string, streams: Set<() => void>, ended: () => void,
  guard: { outgoing: HttpBindings['outgoing']; limits: StallLimits } | undefined,
): Promise<void> {
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
  const unwatch = guard === undefined ? () => undefined : watchStream(sampleOf(guard.outgoing), guard.limits, () => {
    end();
    ended();
    guard.outgoing.destroy();
  });
  try {
    while (!done) {
      if (queued !== undefined) {
        const view = queued;
        queued = undefined;
        await stream.writeSSE({ event: 'state', data: dataOf(view), id: String(view.generatedAt) });
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
    unwatch();
    unsubscribe();
    streams.delete(end);
    ended();
  }
}
