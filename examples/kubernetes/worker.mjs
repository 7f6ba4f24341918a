#!/usr/bin/env node
// One pod of a standing splitfleet fleet on Kubernetes (docs/kubernetes.md):
// it serves every job of its kinds submitted under the root (submit-job.yaml,
// `splitfleet submit`, or submitJob() from any process), sharing its lanes
// among them, and stays up, idle and ready, while there are none. Configured
// only by the environment deployment.yaml sets:
//
//   POD_NAME           the instance id in every job it serves (downward API)
//   ETCD_ENDPOINTS     comma-separated client URLs of the fleet's own etcd (etcd.yaml)
//   SPLITFLEET_ROOT    the key prefix root jobs are submitted under (the CLI reads the same variable)
//   MAX_IN_FLIGHT      lanes in this pod, shared among the jobs it serves
//   DRAIN_DEADLINE_MS  how long a drain may take; terminationGracePeriodSeconds must exceed it
//   METRICS_PORT       /metrics, /healthz, /readyz on 0.0.0.0 (the probes)
//   UNIT_MS            the stand-in kind's cost of one unit (replace the kind with yours)
//
// The endpoint is served before etcd is reached (`attachLater`), so /healthz
// answers `starting` while it is not and the liveness probe leaves the pod
// alone; serve() retries the store for startTimeoutMs (60 s), then the process
// exits 1 and Kubernetes restarts it. On SIGTERM, server.close() drains every
// job's lanes (the last advance() is committed), revokes their leases, and the
// process exits 0; a second SIGTERM exits at once.
//
// In your own project, import from 'splitfleet', 'splitfleet/etcd' and 'splitfleet/http'.
import { serve } from '../../dist/src/index.js';
import { EtcdStore } from '../../dist/src/etcd.js';
import { serveMetrics } from '../../dist/src/http.js';

function env(name, parse = (v) => v) {
  const raw = process.env[name];
  const value = raw === undefined || raw === '' ? undefined : parse(raw);
  if (value === undefined) {
    console.error(`worker: ${name} is required (see examples/kubernetes/deployment.yaml)${raw ? `; got ${JSON.stringify(raw)}` : ''}`);
    process.exit(2);
  }
  return value;
}
const positive = (v) => (/^[1-9][0-9]*$/.test(v) ? Number(v) : undefined);

const instance = env('POD_NAME');
const endpoints = env('ETCD_ENDPOINTS', (v) => v.split(',').map((s) => s.trim()).filter(Boolean));
const root = env('SPLITFLEET_ROOT');
const maxInFlight = env('MAX_IN_FLIGHT', positive);
const drainDeadlineMs = env('DRAIN_DEADLINE_MS', positive);
const port = env('METRICS_PORT', positive);
const unitMs = env('UNIT_MS', positive);

const log = (msg, fields = {}) => console.log(JSON.stringify({ time: new Date().toISOString(), instance, msg, ...fields }));
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// First the probes: from process start, before etcd is reachable.
const http = await serveMetrics({ attachLater: true, port, host: '0.0.0.0' });
log('serving /metrics, /healthz, /readyz', { url: http.url });

// Until serve() resolves this process holds nothing: a SIGTERM ends it at once.
let server;
const stopEarly = () => process.exit(0);
process.once('SIGTERM', stopEarly);

const store = new EtcdStore({ endpoints });
try {
  server = await serve({
    store, root, instance, maxInFlight,
    options: { drainDeadlineMs },
    kinds: {
      // The stand-in kind: params { splits, unitsPerSplit }; each unit stands for a batch of real
      // work (a page of rows, a file's chunk). Replace it with yours, or add kinds beside it.
      chunks: {
        planner: ({ splits, unitsPerSplit }) => ({
          final: true,
          splits: Array.from({ length: splits }, (_, i) => ({ id: `chunk-${String(i).padStart(5, '0')}`, weight: unitsPerSplit, descriptor: { units: unitsPerSplit } })),
        }),
        // advance() says how far it got; the lane commits it every autoCommitMs (1 s) and on release,
        // so a drain needs no commit of its own: return, and the next owner resumes there.
        handler: async (split) => {
          let done = split.progress?.done ?? 0;
          while (done < split.descriptor.units) {
            if (split.signal.aborted || split.drainSignal.aborted) return;
            await sleep(unitMs);
            split.advance({ done: ++done });
          }
          await split.complete();
        },
        onFinished: (f) => log('job finished (once across the fleet)', { job: f.job, verdict: f.verdict, planned: f.planned }),
      },
    },
    onJobStarted: (job, kind) => log('job joined', { job, kind }),
    onJobEnded: (job, verdict, error) => log('job left', { job, ...(verdict ? { verdict } : {}), ...(error ? { err: error.message } : {}) }),
    onError: (e) => log('error', { code: e.code, err: e.message }),
  });
} catch (e) {
  // Still no etcd after startTimeoutMs (or a refusal): exit, and let Kubernetes restart the pod.
  log('could not start', { code: e.code, err: e.message });
  await http.close();
  await store.close().catch(() => undefined);
  process.exit(1);
}
process.off('SIGTERM', stopEarly);
http.attach(server); // server.registry (every job's metrics, by job) and server.health()
log('serving', { root, kinds: ['chunks'], maxInFlight });

process.once('SIGTERM', async () => {
  process.once('SIGTERM', () => process.exit(1)); // a second one: no more waiting
  log('draining', { jobs: server.jobs().map((j) => j.job), signal: 'SIGTERM' });
  await server.close();
  await store.close();
  await http.close();
  log('stopped', { signal: 'SIGTERM' });
  process.exit(0);
});
