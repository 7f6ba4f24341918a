/**
 * examples/kubernetes (issue 31 item 5; a standing fleet since issue 50): the
 * manifests parse and say what docs/kubernetes.md says (a Deployment whose
 * pod names are the instance ids, a rollout that waits for new pods to be
 * ready, probes on the endpoint's port, a grace period above the drain
 * deadline, a dedicated etcd with compaction and a quota, a submit Job that
 * submits then waits on the workers' etcd and root), and the example worker,
 * run with exactly the environment the Deployment sets, serves /healthz from
 * process start with state `starting` while that etcd is nowhere to be found.
 */
import { describe, expect, it } from 'vitest';
import { cliArgs, containerEnv, find, manifests, podEnv, probe, startWorker } from '../support/kubernetes.js';
import { waitUntil, within } from '../support/wait.js';

const workerDocs = manifests('deployment.yaml');
const etcdDocs = manifests('etcd.yaml');
const submitDocs = manifests('submit-job.yaml');
const worker = find(workerDocs, 'Deployment', 'splitfleet-worker');
const pod = worker.spec.template.spec;
const container = pod.containers[0];
const env = podEnv(worker);
/** opTimeoutMs's default: resigning and revoking the lease after the drain take up to one each. */
const OP_TIMEOUT_MS = 10_000;

/** The value of `--name` in a command's arguments. */
const flag = (args: string[], name: string): string | undefined => {
  const i = args.indexOf(`--${name}`);
  return i < 0 ? undefined : args[i + 1];
};

describe('the manifests', () => {
  it("run the workers as a Deployment whose pod names are the instance ids, rolled one new ready pod first", () => {
    expect(container.env.find((e: { name: string }) => e.name === 'POD_NAME').valueFrom.fieldRef.fieldPath).toBe('metadata.name');
    expect(env.POD_NAME).toMatch(/^splitfleet-worker-/);
    expect(worker.spec.selector.matchLabels).toEqual(worker.spec.template.metadata.labels);
    expect(worker.spec.strategy).toEqual({ type: 'RollingUpdate', rollingUpdate: { maxSurge: 1, maxUnavailable: 0 } });
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

  it("point the workers at the fleet's own etcd, which compacts and has a quota", () => {
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

  it("submit a job of the workers' kind, then wait for it, on the workers' etcd and root", () => {
    const job = submitDocs.find((d) => d.kind === 'Job')!;
    const spec = job.spec.template.spec;
    expect(spec.restartPolicy).toBe('Never');
    const [submit] = spec.initContainers;
    const [wait] = spec.containers;
    const [s, w] = [cliArgs(submit), cliArgs(wait)];
    expect([s[0], w[0]]).toEqual(['submit', 'wait']);
    expect(flag(w, 'job')).toBe(flag(s, 'job'));
    expect(flag(s, 'kind')).toBe('chunks');
    expect(JSON.parse(flag(s, 'params')!)).toEqual({ splits: expect.any(Number), unitsPerSplit: expect.any(Number) });
    for (const c of [submit, wait]) {
      const e = containerEnv(c, 'submit');
      expect(e.SPLITFLEET_ETCD_ENDPOINTS).toBe(env.ETCD_ENDPOINTS);
      expect(e.SPLITFLEET_ROOT).toBe(env.SPLITFLEET_ROOT);
    }
  });
});

describe('the example worker with the Deployment environment', () => {
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
    expect(await w.exited).toEqual({ code: 0, signal: null });
  }, 60_000);
});
