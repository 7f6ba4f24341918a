/**
 * examples/kubernetes (issue 31 item 5): the manifests parse, say what
 * docs/kubernetes.md says (stable names from the downward API, probes on the
 * endpoint's port, a grace period above the drain deadline, a dedicated etcd
 * with compaction and a quota), and the example worker, run with exactly the
 * environment the StatefulSet sets, serves /healthz from process start with
 * state `starting` while that etcd is nowhere to be found.
 */
import { describe, expect, it } from 'vitest';
import { find, manifests, podEnv, probe, startWorker } from '../support/kubernetes.js';
import { waitUntil, within } from '../support/wait.js';

const workerDocs = manifests('statefulset.yaml');
const etcdDocs = manifests('etcd.yaml');
const worker = find(workerDocs, 'StatefulSet', 'splitfleet-worker');
const pod = worker.spec.template.spec;
const container = pod.containers[0];
const env = podEnv(worker);
/** opTimeoutMs's default: resigning and revoking the lease after the drain take up to one each. */
const OP_TIMEOUT_MS = 10_000;

describe('the manifests', () => {
  it('run the workers as a StatefulSet whose pod names are the instance ids', () => {
    expect(worker.spec.serviceName).toBe('splitfleet-worker');
    expect(find(workerDocs, 'Service', 'splitfleet-worker').spec.clusterIP).toBe('None');
    expect(container.env.find((e: { name: string }) => e.name === 'POD_NAME').valueFrom.fieldRef.fieldPath).toBe('metadata.name');
    expect(env.POD_NAME).toBe('splitfleet-worker-0');
  });

  it('probe /healthz and /readyz on the port the worker serves', () => {
    const port = container.ports.find((p: { name: string }) => p.name === 'metrics');
    expect(String(port.containerPort)).toBe(env.METRICS_PORT);
    expect(container.livenessProbe.httpGet).toEqual({ path: '/healthz', port: 'metrics' });
    expect(container.readinessProbe.httpGet).toEqual({ path: '/readyz', port: 'metrics' });
  });

  it('give a stopping pod longer than its drain deadline and the lease revocation', () => {
    expect(pod.terminationGracePeriodSeconds * 1000).toBeGreaterThanOrEqual(Number(env.DRAIN_DEADLINE_MS) + 2 * OP_TIMEOUT_MS);
  });

  it("point the workers at the job's own etcd, which compacts and has a quota", () => {
    const etcd = find(etcdDocs, 'StatefulSet', 'splitfleet-etcd');
    const hosts = env.ETCD_ENDPOINTS!.split(',').map((u) => new URL(u).hostname);
    expect(hosts).toEqual(Array.from({ length: etcd.spec.replicas }, (_, i) => `splitfleet-etcd-${i}.splitfleet-etcd`));
    const args: string[] = etcd.spec.template.spec.containers[0].command;
    expect(args).toContain('--auto-compaction-mode=periodic');
    expect(args.some((a) => a.startsWith('--quota-backend-bytes='))).toBe(true);
    const cluster = args.find((a) => a.startsWith('--initial-cluster='))!.split('=').slice(1).join('=').split(',');
    expect(cluster).toHaveLength(etcd.spec.replicas);
    expect(find(etcdDocs, 'Service', 'splitfleet-etcd').spec.publishNotReadyAddresses).toBe(true);
  });
});

describe('the example worker with the StatefulSet environment', () => {
  it("serves /healthz 'starting' from process start while etcd is unreachable, and stops on SIGTERM", async () => {
    const w = startWorker(env);
    try {
      const healthz = await waitUntil('/healthz to answer', () => probe(env.METRICS_PORT!, '/healthz'), {
        timeoutMs: 20_000, describe: () => w.output(),
      });
      expect(healthz).toMatchObject({ status: 200, body: { state: 'starting' } });
      expect(await probe(env.METRICS_PORT!, '/readyz')).toMatchObject({ status: 503, body: { state: 'starting' } });
      expect(w.output()).not.toContain('could not start');
    } finally {
      w.child.kill('SIGTERM');
      await within('the worker to exit on SIGTERM', w.exited, 20_000);
    }
  }, 60_000);
});
