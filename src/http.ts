/**
 * `splitfleet/http`: the two opt-in HTTP servers, on hono: the metrics and
 * health endpoint of one process (`serveMetrics`) and the live dashboard of a
 * job (`serveDashboard`). Its own entry point so that `import 'splitfleet'`
 * never loads hono. Add new exports as one line each.
 */
export { serveMetrics } from './metrics-server.js';
export type { HealthReport, MetricsServer, MetricsSource, ServeMetricsOptions } from './metrics-server.js';
export { serveDashboard } from './inspect/serve.js';
export type { Dashboard, DashboardOptions } from './inspect/serve.js';
export type { DashboardEvent, DashboardMember, DashboardReport, DashboardView } from './inspect/dashboard-view.js';
