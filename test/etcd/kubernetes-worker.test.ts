/**
 * The Kubernetes example worker on a real (throwaway) etcd, with the
 * StatefulSet's environment and only ETCD_ENDPOINTS pointed at that etcd: it
 * becomes ready (`/readyz` 200, `running`), commits, and on SIGTERM drains,
 * resolves run() with `stopped` and exits 0 by itself, as a pod does on a
 * deploy within terminationGracePeriodSeconds.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { find, manifests, podEnv, probe, startWorker } from '../support/kubernetes.js';
import { waitUntil, within } from '../support/wait.js';
import { startEtcd, type EtcdHandle } from '../support/etcd.js';

let etcd: EtcdHandle;
beforeAll(async () => {
  etcd = await startEtcd();
});
afterAll(async () => {
  await etcd?.stop();
});

describe('the Kubernetes example worker on etcd', () => {
  it("gets ready, works, and on SIGTERM drains and exits 0 with outcome 'stopped'", async () => {
    const env = { ...podEnv(find(manifests('statefulset.yaml'), 'StatefulSet', 'splitfleet-worker')), ETCD_ENDPOINTS: etcd.endpoint };
    const w = startWorker(env);
    try {
      await waitUntil('/readyz 200', async () => (await probe(env.METRICS_PORT!, '/readyz'))?.status === 200, {
        timeoutMs: 30_000, describe: () => w.output(),
      });
      expect((await probe(env.METRICS_PORT!, '/readyz'))?.body.state).toBe('running');
      // Working: its lanes hold splits.
      await waitUntil('lanes in use', async () => {
        const text = await (await fetch(`http://127.0.0.1:${env.METRICS_PORT}/metrics`)).text();
        return /^splitfleet_lanes\S* [1-9]/m.test(text);
      }, { timeoutMs: 20_000, describe: () => w.output() });
    } finally {
      w.child.kill('SIGTERM');
    }
    const exit = await within('the worker to exit after SIGTERM', w.exited, 40_000);
    expect({ exit, ended: w.output().match(/"msg":"coordinator ended"[^\n]*/)?.[0] }).toEqual({
      exit: { code: 0, signal: null }, ended: '"msg":"coordinator ended","outcome":"stopped","signal":"SIGTERM"}',
    });
  }, 90_000);
});
