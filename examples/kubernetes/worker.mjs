#!/usr/bin/env node
// One pod of a splitfleet fleet on Kubernetes (docs/kubernetes.md), configured
// only by the environment statefulset.yaml sets:
//
//   POD_NAME           the instance id: the pod's stable StatefulSet name (downward API)
//   ETCD_ENDPOINTS     comma-separated client URLs of the job's own etcd (etcd.yaml)
//   SPLITFLEET_JOB     the job's name: every key lives under splitfleet/<job>/
//   MAX_IN_FLIGHT      lanes in this pod
//   DRAIN_DEADLINE_MS  how long a drain may take; terminationGracePeriodSeconds must exceed it
//   METRICS_PORT       /metrics, /healthz, /readyz on 0.0.0.0 (the probes)
//   SPLITS, UNITS_PER_SPLIT, UNIT_MS   the stand-in job below (replace planner and handler with yours)
//
// The endpoint is served before the coordinator starts (`attachLater`), so
// /healthz answers `starting` while etcd is unreachable and the liveness probe
// leaves the pod alone. On SIGTERM, run() drains every lane (final commits),
// revokes the lease, and the process exits by itself. After the job's verdict
// the pod stays up, idle and live, until it is stopped: a StatefulSet would
// otherwise restart an exited pod for ever. Scale it to zero once the job is done.
//
// In your own project, import from 'splitfleet', 'splitfleet/etcd' and 'splitfleet/http'.
import { once } from 'node:events';
import { startCoordinator } from '../../dist/src/index.js';
import { EtcdStore } from '../../dist/src/etcd.js';
import { serveMetrics } from '../../dist/src/http.js';

function env(name, parse = (v) => v) {
  const raw = process.env[name];
  const value = raw === undefined || raw === '' ? undefined : parse(raw);
  if (value === undefined) {
    console.error(`worker: ${name} is required (see examples/kubernetes/statefulset.yaml)${raw ? `; got ${JSON.stringify(raw)}` : ''}`);
    process.exit(2);
  }
  return value;
}
const positive = (v) => (/^[1-9][0-9]*$/.test(v) ? Number(v) : undefined);

const instance = env('POD_NAME');
const endpoints = env('ETCD_ENDPOINTS', (v) => v.split(',').map((s) => s.trim()).filter(Boolean));
const job = env('SPLITFLEET_JOB');
const maxInFlight = env('MAX_IN_FLIGHT', positive);
const drainDeadlineMs = env('DRAIN_DEADLINE_MS', positive);
const port = env('METRICS_PORT', positive);
const splits = env('SPLITS', positive);
const unitsPerSplit = env('UNITS_PER_SPLIT', positive);
const unitMs = env('UNIT_MS', positive);

const log = (msg, fields = {}) => console.log(JSON.stringify({ time: new Date().toISOString(), instance, msg, ...fields }));

// First the probes: from process start, before etcd is reachable.
const http = await serveMetrics({ attachLater: true, port, host: '0.0.0.0' });
log('serving /metrics, /healthz, /readyz', { url: http.url });

const store = new EtcdStore({ endpoints });
let coordinator;
try {
  coordinator = await startCoordinator({
    store, job, instance, maxInFlight, drainDeadlineMs,
    fingerprint: `k8s-example-v1:${splits}x${unitsPerSplit}`,
    // The leader's planner: one split per chunk of the work, the same ids every time.
    planner: () => ({
      final: true,
      splits: Array.from({ length: splits }, (_, i) => ({ id: `chunk-${String(i).padStart(5, '0')}`, weight: unitsPerSplit, descriptor: { units: unitsPerSplit } })),
    }),
    // Each unit stands for a batch of real work (a page of rows, a file's chunk): resume, commit, honour drains.
    handler: async (split) => {
      let done = split.progress?.done ?? 0;
      while (done < split.descriptor.units) {
        if (split.signal.aborted) return;
        if (split.drainSignal.aborted) {
          await split.commit({ done });
          return;
        }
        await new Promise((r) => setTimeout(r, unitMs));
        done++;
        await split.commit({ done });
      }
      await split.complete({ done });
    },
  });
} catch (e) {
  // Still no etcd after startTimeoutMs (or a refusal): exit, and let Kubernetes restart the pod.
  log('could not start', { code: e.code, err: e.message });
  await http.close();
  await store.close().catch(() => undefined);
  process.exit(1);
}

let finished;
http.attach({
  metrics: coordinator.metrics,
  // Idle after the verdict: live and ready, not `stopped`, or the liveness probe would restart the pod in a loop.
  health: () => (finished ? { state: 'running', reason: `job ${finished}: idle until the pod is stopped` } : coordinator.health()),
});
log('started', { job });

const { outcome, signal } = await coordinator.run();
log('coordinator ended', { outcome, ...(signal ? { signal } : {}) });
if (outcome !== 'stopped') {
  finished = outcome;
  await once(process, 'SIGTERM');
}
await store.close();
await http.close();
process.exitCode = outcome === 'stalled' ? 1 : 0;
