/**
 * An opt-in HTTP endpoint for one process: `/metrics` (Prometheus text from a
 * registry), `/healthz` (liveness) and `/readyz` (readiness) from a health
 * function the caller supplies. Nothing starts it implicitly; it binds to
 * 127.0.0.1 unless told otherwise, and bound to loopback it answers only
 * requests whose Host is a loopback name (421 otherwise), so a web page
 * elsewhere cannot read it through DNS rebinding. It must not change the host process's
 * globals (hono's node adapter would replace `Request`/`Response` by default).
 *
 * `attachLater` serves before the coordinator exists (startCoordinator waits up
 * to startTimeoutMs for the store): a liveness probe must not kill a process
 * that is only waiting for etcd, so `/healthz` answers `starting` from process
 * start, and `attach(coordinator)` hands over once it is there.
 *
 * A serving process (`serve()`, many jobs) attaches the same way:
 * `attach(server)` serves `server.registry` (every joined job's metrics,
 * merged, labelled by job) and `server.health()` (running while it serves,
 * zero jobs included; decision 0068). Anything with a `registry` and a
 * `health()` method is attached as one.
 */
import { createAdaptorServer } from '@hono/node-server';
import { Hono } from 'hono';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { HealthState } from './coordinator/health.js';
import type { Metrics } from './coordinator/metrics.js';
import { SplitfleetError } from './errors.js';
import { refusedHost } from './loopback-host.js';


/** What a health function reports; extra fields are passed through into the JSON body. */
export interface HealthReport {
  state: HealthState;
  reason: string;
}

/** What serves Prometheus text: a prom-client `Registry` (or anything shaped like one). */
export interface MetricsSource {
  readonly contentType: string;
  /** The exposition text of every series. */
  metrics(): Promise<string>;
}

/** What `serveMetrics` serves, and where. */
export interface ServeMetricsOptions {
  /** The metrics to serve (`coordinator.metrics`); or give `registry`. */
  metrics?: Metrics;
  /** A registry to serve instead of `metrics.registry`: a serving process's `server.registry` (every job it serves), or one of your own. */
  registry?: MetricsSource;
  /**
   * Called on every `/healthz` and `/readyz` request (`() => coordinator.health()`, or `() => server.health()` for `serve()`).
   * Without it those two paths answer 404: the server cannot know.
   */
  health?: () => HealthReport;
  /**
   * Serve before the metrics and health exist: until `attach()`, `/healthz`
   * answers 200 and `/readyz` 503 with state `starting`, and `/metrics` 503
   * (unless `metrics`/`registry` was given here).
   */
  attachLater?: boolean;
  /** 0 picks a free port (see `url`). */
  port: number;
  /** Default 127.0.0.1; `0.0.0.0` (or `::`) to be scraped from other hosts. */
  host?: string;
}

/** A running endpoint (`serveMetrics`). */
export interface MetricsServer {
  /** `http://host:port`, with the port actually bound. */
  readonly url: string;
  /**
   * Once, on a server started with `attachLater`: serve these metrics and this
   * health from now on. A coordinator is one (`attach(coordinator)`: its
   * `metrics` and `health()`), and so is a serving process (`attach(server)`:
   * its `registry` and `health()`).
   */
  attach(source: Pick<ServeMetricsOptions, 'metrics' | 'registry' | 'health'>): void;
  /** Stops listening and ends open connections. */
  close(): Promise<void>;
}

/**
 * Starts the endpoint; resolves once it listens. `/healthz` is 200 unless the
 * state is `stopped` or the health function throws (503); `/readyz` is 200
 * only in `running` (503 otherwise). Both answer `{ state, reason }` as JSON
 * (state `unknown` when the health function threw).
 */
export async function serveMetrics(options: ServeMetricsOptions): Promise<MetricsServer> {
  let source = options.registry ?? options.metrics?.registry;
  const late = options.attachLater === true;
  if (!source && !late) throw new SplitfleetError('INVALID_CONFIG', 'serveMetrics: give `metrics` (coordinator.metrics) or `registry`, or `attachLater: true` and attach(coordinator) once it has started');
  if (!Number.isInteger(options.port) || options.port < 0 || options.port > 65535) {
    throw new SplitfleetError('INVALID_CONFIG', `serveMetrics: port must be an integer 0 to 65535 (0: any free port), got ${options.port}`);
  }
  const host = options.host ?? '127.0.0.1';
  const app = new Hono();
  app.use('*', async (c, next) => {
    const refused = refusedHost(host, c.req.header('host'));
    if (refused !== undefined) return c.text(`${refused}\n`, 421);
    await next();
  });
  app.get('/metrics', async (c) => {
    if (!source) return c.text('splitfleet metrics endpoint: nothing attached yet (the coordinator or serving process is starting)\n', 503);
    return c.body(await source.metrics(), 200, { 'content-type': source.contentType });
  });
  // A registry whose collect callback throws: say so, without hono's default console.error.
  app.onError((e, c) => c.text(`splitfleet metrics endpoint: ${e.message}\n`, 500));
  // The attached object itself, so that a coordinator's `health()` is called as a method.
  let healthSource: Pick<ServeMetricsOptions, 'health'> | undefined = options.health ? { health: options.health } : undefined;
  let attached = !late;
  const waiting = (): HealthReport => ({ state: 'starting', reason: 'the coordinator (or serving process) is starting: nothing attached yet' });
  if (healthSource || late) {
    const current = (): (() => HealthReport) | undefined =>
      healthSource?.health ? () => healthSource!.health!() : attached ? undefined : waiting;
    app.get('/healthz', (c) => {
      const health = current();
      if (!health) return c.notFound();
      const report = probe(health);
      return c.json(report.body, report.ok && report.body.state !== 'stopped' ? 200 : 503);
    });
    app.get('/readyz', (c) => {
      const health = current();
      if (!health) return c.notFound();
      const report = probe(health);
      return c.json(report.body, report.ok && report.body.state === 'running' ? 200 : 503);
    });
  }

  const server = createAdaptorServer({ fetch: app.fetch, overrideGlobalObjects: false }) as Server;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, host, () => {
      server.off('error', reject);
      resolve();
    });
  }).catch((e: unknown) => {
    throw new SplitfleetError('INVALID_CONFIG', `serveMetrics: cannot listen on ${host}:${options.port}: ${(e as Error).message}`, { cause: e });
  });
  const port = (server.address() as AddressInfo).port;
  let closing: Promise<void> | undefined;
  return {
    url: `http://${host.includes(':') ? `[${host}]` : host}:${port}`,
    attach: (what) => {
      if (!late) throw new SplitfleetError('INVALID_CONFIG', 'serveMetrics: attach() needs a server started with `attachLater: true`');
      if (attached) throw new SplitfleetError('INVALID_CONFIG', 'serveMetrics: attach() was already called');
      const registry = what?.registry ?? what?.metrics?.registry;
      if (!registry && !source) throw new SplitfleetError('INVALID_CONFIG', 'serveMetrics: attach() needs `metrics` (a coordinator) or `registry` (a serving process, or your own)');
      if (registry) source = registry;
      if (typeof what.health === 'function') healthSource = what;
      attached = true;
    },
    close: () => {
      closing ??= new Promise<void>((resolve) => {
        server.close(() => resolve());
        // A scraper's keep-alive connection would hold close() open until it idles out.
        server.closeAllConnections();
      });
      return closing;
    },
  };
}

/** A throwing health function is itself a failure to report, not a crash of the endpoint. */
function probe(health: () => HealthReport): { ok: boolean; body: { state: string; reason: string } } {
  try {
    const r = health();
    return { ok: true, body: { ...r, reason: r.reason ?? '' } };
  } catch (e) {
    return { ok: false, body: { state: 'unknown', reason: `health check threw: ${e instanceof Error ? e.message : String(e)}` } };
  }
}
