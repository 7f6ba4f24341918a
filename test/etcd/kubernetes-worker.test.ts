/**
 * The Kubernetes example (a standing fleet) on a real (throwaway) etcd: two
 * workers with the Deployment's environment (their own pod names and ports,
 * ETCD_ENDPOINTS pointed at that etcd) are ready while idle; the submit Job's
 * two commands, run as the CLI, submit a job and wait for its verdict
 * (exit 0, complete), its onFinished logged once across both pods; a longer
 * job shows in each pod's /metrics under its job label and in /readyz; on
 * SIGTERM both drain and exit 0 by themselves, as pods do within
 * terminationGracePeriodSeconds.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../support/cli.js';
import { cliArgs, containerEnv, find, manifests, podEnv, podName, probe, startWorker, type RunningWorker } from '../support/kubernetes.js';
import { waitUntil, within } from '../support/wait.js';
import { startEtcd, type EtcdHandle } from '../support/etcd.js';

let etcd: EtcdHandle;
beforeAll(async () => {
  etcd = await startEtcd();
});
afterAll(async () => {
  await etcd?.stop();
});

/** `args` with the value of `--name` replaced. */
const withFlag = (args: string[], name: string, value: string): string[] => args.map((a, i) => (args[i - 1] === `--${name}` ? value : a));

describe('the Kubernetes example on etcd: a standing fleet serving submitted jobs', () => {
  it('idle and ready; the submit Job submits and awaits a job; a running job in /metrics; SIGTERM drains and exits 0', async () => {
    const deployment = find(manifests('deployment.yaml'), 'Deployment', 'splitfleet-worker');
    const base = 20_000 + Math.floor(Math.random() * 20_000);
    const envs = ['a1b2c', 'd3e4f'].map((suffix, i) => ({
      ...podEnv(deployment, podName(deployment, suffix)),
      ETCD_ENDPOINTS: etcd.endpoint, METRICS_PORT: String(base + i), UNIT_MS: '20', MAX_IN_FLIGHT: '4', DRAIN_DEADLINE_MS: '10000',
    }));
    const workers: RunningWorker[] = envs.map((env) => startWorker(env));
    const output = () => workers.map((w) => w.output()).join('\n');
    const readyz = (i: number) => probe(envs[i]!.METRICS_PORT!, '/readyz');
    try {
      // Idle: live and ready, serving nothing.
      for (const i of [0, 1]) {
        await waitUntil(`worker ${i} ready`, async () => (await readyz(i))?.status === 200, { timeoutMs: 30_000, describe: output });
        expect((await readyz(i))?.body).toMatchObject({ state: 'running', reason: 'serving no job: idle, waiting for jobs of kind chunks' });
      }

      // The submit Job, as the CLI: submit (smaller parameters), then wait for the verdict.
      const job = manifests('submit-job.yaml').find((d) => d.kind === 'Job')!.spec.template.spec;
      const submitEnv = { ...containerEnv(job.initContainers[0], 'submit'), SPLITFLEET_ETCD_ENDPOINTS: etcd.endpoint };
      const submitted = await runCli(withFlag(cliArgs(job.initContainers[0]), 'params', '{"splits":6,"unitsPerSplit":5}'), submitEnv);
      expect(submitted.code, submitted.stderr).toBe(0);
      expect(submitted.stdout).toMatch(/^job example-1: submitted: chunks \{"splits":6,"unitsPerSplit":5\}/);
      const waited = await runCli(cliArgs(job.containers[0]), { ...containerEnv(job.containers[0], 'submit'), SPLITFLEET_ETCD_ENDPOINTS: etcd.endpoint });
      expect(waited.code, waited.stderr + output()).toBe(0);
      expect(waited.stdout).toMatch(/^job example-1: complete; 6 planned, 6 completed, 0 quarantined/);
      await waitUntil('onFinished logged', () => output().includes('job finished (once across the fleet)'), { timeoutMs: 20_000, describe: output });

      // A longer job: each pod serves it, its series labelled by job, its name in the readiness reason.
      const long = await runCli(['submit', '--job', 'long', '--kind', 'chunks', '--params', '{"splits":8,"unitsPerSplit":500}'], submitEnv);
      expect(long.code, long.stderr).toBe(0);
      for (const i of [0, 1]) {
        await waitUntil(`worker ${i} holds lanes of job long`, async () => {
          const text = await (await fetch(`http://127.0.0.1:${envs[i]!.METRICS_PORT}/metrics`)).text();
          return /^splitfleet_lanes\{splitfleet_job="long",splitfleet_kind="chunks"\} [1-9]/m.test(text) && /^splitfleet_served_jobs 1$/m.test(text);
        }, { timeoutMs: 20_000, describe: output });
        expect((await readyz(i))?.body).toMatchObject({ state: 'running', reason: 'serving 1 job (long)' });
      }
    } finally {
      for (const w of workers) w.child.kill('SIGTERM');
    }
    const exits = await within('both workers to exit after SIGTERM', Promise.all(workers.map((w) => w.exited)), 40_000);
    expect(exits).toEqual([{ code: 0, signal: null }, { code: 0, signal: null }]);
    // onFinished ran once for example-1 across both pods; each pod drained 'long' and stopped.
    expect(output().match(/job finished \(once across the fleet\)","job":"example-1"/g)).toHaveLength(1);
    for (const w of workers) expect(w.output()).toMatch(/"msg":"draining","jobs":\["long"\],"signal":"SIGTERM"\}[\s\S]*"msg":"stopped"/);
  }, 120_000);
});
