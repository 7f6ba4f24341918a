/**
 * `splitfleet/http`: the opt-in HTTP parts, on hono: the metrics and health
 * endpoint of one process (`serveMetrics`), the dashboard as a server of its
 * own (`serveDashboard`), and the dashboard mounted in a host's app
 * (`createDashboard`: a Fetch and a Node handler; `mountDashboard`: under a
 * path of a hono app; decision 0067). Its own entry point so that
 * `import 'splitfleet'` never loads hono. Add new exports as one line each.
 */
export { serveMetrics } from './metrics-server.js';
export type { HealthReport, MetricsServer, MetricsSource, ServeMetricsOptions } from './metrics-server.js';
export { serveDashboard } from './dashboard/serve.js';
export type { Dashboard, DashboardOptions } from './dashboard/serve.js';
export { createDashboard, mountDashboard } from './dashboard/mount.js';
export type { DashboardAppOptions, MountedDashboard } from './dashboard/mount.js';
export type { JobListView, JobRow, JobState } from './dashboard/job-list.js';
export type { DashboardEvent, DashboardMember, DashboardReport, DashboardView } from './inspect/dashboard-view.js';
