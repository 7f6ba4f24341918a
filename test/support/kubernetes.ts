/**
 * The Kubernetes example's manifests (examples/kubernetes/*.yaml), parsed with
 * the `yaml` package, and a container's environment resolved as the kubelet
 * would (`value`, and `fieldRef: metadata.name` as the pod's name); a way to
 * run examples/kubernetes/worker.mjs with exactly that environment, and the
 * submit Job's commands as arguments of the CLI. Shared by the manifest test
 * and the one on etcd.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { parseAllDocuments } from 'yaml';

export const examples = fileURLToPath(new URL('../../examples/kubernetes/', import.meta.url));

/** A parsed document: the tests read it field by field, as loosely as YAML is. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- no schema for every Kubernetes kind here
export type Manifest = Record<string, any>;

/** Every document of one manifest file; a YAML error fails loudly. */
export function manifests(file: string): Manifest[] {
  return parseAllDocuments(readFileSync(`${examples}${file}`, 'utf8')).map((d) => {
    if (d.errors.length > 0) throw new Error(`${file}: ${d.errors.map((e) => e.message).join('; ')}`);
    return d.toJS() as Manifest;
  });
}

export function find(docs: Manifest[], kind: string, name: string): Manifest {
  const doc = docs.find((d) => d.kind === kind && d.metadata?.name === name);
  if (!doc) throw new Error(`no ${kind} ${name} in the manifests`);
  return doc;
}

/** A Deployment's pod name: the workload's, a ReplicaSet hash, and a suffix of the pod's own. */
export const podName = (workload: Manifest, suffix = 'x7k2p'): string => `${workload.metadata.name}-5d8f9c7b6d-${suffix}`;

/** The environment `container` gets in the pod `pod`: every entry resolved, anything else refused. */
export function containerEnv(container: Manifest, pod: string): Record<string, string> {
  const env: Record<string, string> = {};
  for (const e of container.env as { name: string; value?: string; valueFrom?: { fieldRef?: { fieldPath: string } } }[]) {
    if (typeof e.value === 'string') env[e.name] = e.value;
    else if (e.valueFrom?.fieldRef?.fieldPath === 'metadata.name') env[e.name] = pod;
    else throw new Error(`env ${e.name}: not a value or metadata.name (the test cannot resolve it as the kubelet would)`);
  }
  return env;
}

/** The environment of the workload's (first) container in one of its pods. */
export function podEnv(workload: Manifest, pod = podName(workload)): Record<string, string> {
  return containerEnv(workload.spec.template.spec.containers[0], pod);
}

/** A container's command as `splitfleet` arguments: the CLI's binary first, then what it is given. */
export function cliArgs(container: Manifest): string[] {
  const [bin, ...args] = container.command as string[];
  if (!/(^|\/)splitfleet$/.test(bin!)) throw new Error(`${container.name}: runs ${bin}, not the splitfleet CLI`);
  return args;
}

export interface RunningWorker {
  child: ChildProcess;
  output: () => string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/** Starts the example worker (from dist/) with exactly `env`: nothing of this process's environment. */
export function startWorker(env: Record<string, string>): RunningWorker {
  const child = spawn(process.execPath, [`${examples}worker.mjs`], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout!.on('data', (d: Buffer) => (out += d));
  child.stderr!.on('data', (d: Buffer) => (out += d));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => child.on('exit', (code, signal) => resolve({ code, signal })));
  return { child, output: () => out, exited };
}

/** GET on the worker's endpoint: status and JSON body, or undefined while nothing listens. */
export async function probe(port: string, path: string): Promise<{ status: number; body: { state?: string; reason?: string } } | undefined> {
  try {
    const res = await fetch(`http://127.0.0.1:${port}${path}`);
    const text = await res.text();
    return { status: res.status, body: text.startsWith('{') ? JSON.parse(text) : {} };
  } catch {
    return undefined;
  }
}
