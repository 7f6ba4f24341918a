/**
 * The dashboard as a server of its own (`splitfleet inspect --serve PORT`):
 * the mounted dashboard (mount.ts) behind a Node HTTP server, with the one
 * thing a host app would otherwise provide: the Host check.
 *
 * Invariants:
 * - Binds 127.0.0.1 unless told otherwise. Bound to loopback, it answers only
 *   requests whose Host is a loopback name, so a web page elsewhere cannot
 *   read the jobs through DNS rebinding (decision 0051). It has no
 *   authentication: what it shows is the jobs' state (never credentials).
 * - Read-only unless `actions` (`inspect --serve --actions`).
 * - close() ends open event streams (which would hold the server's close
 *   forever), every watch, then the server.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { DashboardView } from '../inspect/dashboard-view.js';
import { openDashboard, type DashboardAppOptions } from './mount.js';

/** What `serveDashboard` shows, and where it listens. */
export interface DashboardOptions extends Omit<DashboardAppOptions, 'basePath'> {
  /** Address to bind (default `127.0.0.1`). */
  host?: string;
  /** Port to bind; 0 (the default) picks a free one. */
  port?: number;
}

/** A running dashboard server (`serveDashboard`). */
export interface Dashboard {
  /** The base's address, e.g. `http://127.0.0.1:8080/`: the job's page when `job` was given, else the job list. */
  url: string;
  host: string;
  port: number;
  /** The view the page of the job named by `job` shows now (throws without one). */
  view(): DashboardView;
  /** Stops the server (open streams included) and every watch. */
  close(): Promise<void>;
}

/** Starts the dashboard; resolves once the job (or, without one, the job list) has been read and the port is bound. */
export async function serveDashboard(options: DashboardOptions): Promise<Dashboard> {
  const host = options.host ?? '127.0.0.1';
  const dashboard = await openDashboard(options, { loopbackHost: host });
  const server = await new Promise<Server>((resolve, reject) => {
    const s = createServer(dashboard.handler);
    s.once('error', reject);
    s.listen(options.port ?? 0, host, () => {
      s.off('error', reject);
      resolve(s);
    });
  }).catch(async (e: unknown) => {
    await dashboard.close();
    throw e;
  });
  const address = server.address() as AddressInfo;
  const urlHost = address.family === 'IPv6' || host.includes(':') ? `[${address.address}]` : host;
  let closing: Promise<void> | undefined;
  return {
    url: `http://${urlHost}:${address.port}/`,
    host,
    port: address.port,
    view: () => dashboard.view(),
    close: () => {
      closing ??= (async () => {
        await dashboard.close();
        await new Promise<void>((resolve) => {
          server.close(() => resolve());
          // Open event streams would hold close() forever.
          server.closeAllConnections();
        });
      })();
      return closing;
    },
  };
}
