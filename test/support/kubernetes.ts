/**
 * The Kubernetes example's manifests (examples/kubernetes/*.yaml), parsed with
 * the `yaml` package, and the worker container's environment resolved as the
 * kubelet would (`value`, and `fieldRef: metadata.name` as the pod's name);
 * and a way to run examples/kubernetes/worker.mjs with exactly that
 * environment. Shared by the manifest test and the one on etcd.
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

/** The environment the pod `ordinal` of `set` gets: every entry resolved, anything else refused. */
export function podEnv(set: Manifest, ordinal = 0): Record<string, string> {
  const container = set.spec.template.spec.containers[0];
  const env: Record<string, string> = {};
  for (const e of container.env as { name: string; value?: string; valueFrom?: { fieldRef?: { fieldPath: string } } }[]) {
    if (typeof e.value === 'string') env[e.name] = e.value;
    else if (e.valueFrom?.fieldRef?.fieldPath === 'metadata.name') env[e.name] = `${set.metadata.name}-${ordinal}`;
    else throw new Error(`env ${e.name}: not a value or metadata.name (the test cannot resolve it as the kubelet would)`);
  }
  return env;
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
